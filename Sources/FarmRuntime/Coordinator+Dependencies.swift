import FarmModel
import Foundation

/// Inputs that are other jobs' results (`job:KEY#output`): put in place when the job is due, from the
/// results its dependencies recorded.
extension Coordinator {
    /// The manifest with each `job:REF#output` (or `#report`) input replaced by the path that job wrote.
    /// A failure names the reference and why (the job did not succeed, wrote no such file, or is gone).
    func resolveJobResults(_ job: Job) async -> Result<String, InputFailure> {
        guard let document = try? JSONParser.parse(job.manifest) else { return .success(job.manifest) }
        let dependencies: [Job]
        do {
            dependencies = try await store.jobs(ids: job.after)
        } catch {
            return .failure(InputFailure(message: "the results of the jobs this one waited for could not be read: \(error)", retry: true))
        }
        func resolve(_ value: JSONValue) -> Result<JSONValue?, InputFailure> {
            guard case .string(let text) = value, case .success(let reference)? = JobOutputReference.parse(text) else { return .success(nil) }
            let found: Job? = switch reference.job {
            case .id(let id): dependencies.first { $0.id == id }
            case .key(let key):
                // A key given through the API is kept as "api:KEY" (or "api:TOKEN:KEY"): its submitter names it KEY.
                dependencies.filter { $0.uniqueKey == key }.max { $0.id < $1.id }
                    ?? dependencies.filter { $0.uniqueKey.map { $0.hasPrefix("api:") && $0.hasSuffix(":" + key) } ?? false }.max { $0.id < $1.id }
            }
            guard let found else {
                return .failure(InputFailure(message: "\(text): that job is no longer in the queue (pruned?); its result cannot be read", retry: false))
            }
            guard found.state == .succeeded else {
                return .failure(InputFailure(message: "\(text): job \(found.id) (\(found.name)) \(found.state.rawValue), so it has no \(reference.field.rawValue)",
                                             retry: false))
            }
            let result = found.result.flatMap { try? JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }
            let path = reference.field == .output ? result?.output : result?.report
            guard let path else {
                return .failure(InputFailure(message: "\(text): job \(found.id) (\(found.name)) wrote no \(reference.field.rawValue)", retry: false))
            }
            return .success(.string(path))
        }
        var result = document
        if let input = document["input"] {
            switch resolve(input) {
            case .success(let path?): result = result.replacing("input", with: path)
            case .success(nil): break
            case .failure(let failure): return .failure(failure)
            }
        }
        if case .array(let edits)? = document["edits"] {
            var resolved: [JSONValue] = []
            for edit in edits {
                guard let source = edit["source"] else { resolved.append(edit); continue }
                switch resolve(source) {
                case .success(let path?): resolved.append(edit.replacing("source", with: path))
                case .success(nil): resolved.append(edit)
                case .failure(let failure): return .failure(failure)
                }
            }
            result = result.replacing("edits", with: .array(resolved))
        }
        return .success(result.text)
    }
}

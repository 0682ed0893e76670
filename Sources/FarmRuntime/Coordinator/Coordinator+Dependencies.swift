import FarmModel
import Foundation

/// Inputs that are other jobs' results (`job:KEY#output`): put in place when the job is due, from the
/// results its dependencies recorded.
extension Coordinator {
    /// The manifest with each `job:REF#output` (or `#report`) source replaced by the path that job wrote.
    /// A failure names the reference and why (the job did not succeed, wrote no such file, or is gone).
    func resolveJobResults(_ job: Job, _ document: JSONValue) async -> Result<JSONValue, InputFailure> {
        let dependencies: [Job]
        do {
            dependencies = try await store.jobs(ids: job.after)
        } catch {
            return .failure(InputFailure(message: "the results of the jobs this one waited for could not be read: \(error)", retry: true))
        }
        func resolve(_ text: String) -> Result<String?, InputFailure> {
            guard case .success(let reference)? = JobOutputReference.parse(text) else { return .success(nil) }
            let found: Job? = switch reference.job {
            case .id(let id): dependencies.first { $0.id == id }
            case .key(let key):
                // A key given through the API is kept in its namespace: its submitter names it as given.
                dependencies.filter { $0.uniqueKey == key }.max { $0.id < $1.id }
                    ?? dependencies.filter { $0.uniqueKey.map { UniqueKey(stored: $0).isNamed(key) } ?? false }.max { $0.id < $1.id }
            }
            guard let found else {
                return .failure(InputFailure(message: "\(text): that job is no longer in the queue (pruned?); its result cannot be read", retry: false))
            }
            guard found.state == .succeeded else {
                return .failure(InputFailure(message: "\(text): job \(found.id) (\(found.name)) \(found.state.rawValue), so it has no \(reference.field.rawValue)",
                                             retry: false))
            }
            var result: JobResult?
            if let recorded = found.result {
                do { result = try JSONDecoder().decode(JobResult.self, from: Data(recorded.utf8)) } catch {
                    return .failure(InputFailure(message: "\(text): the result job \(found.id) (\(found.name)) recorded cannot be read: \(error)",
                                                 retry: false))
                }
            }
            let path = reference.field == .output ? result?.output : result?.report
            guard let path else {
                return .failure(InputFailure(message: "\(text): job \(found.id) (\(found.name)) wrote no \(reference.field.rawValue)", retry: false))
            }
            return .success(path)
        }
        var replacements: [String: String] = [:]
        for source in document.manifestSources {
            switch resolve(source) {
            case .success(let path?): replacements[source] = path
            case .success(nil): break
            case .failure(let failure): return .failure(failure)
            }
        }
        return .success(document.replacingManifestSources(replacements))
    }
}

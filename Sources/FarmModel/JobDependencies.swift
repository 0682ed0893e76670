import Foundation
import QualityModel

/// A job another job waits for, as a submission names it: by id, or by the unique key an earlier
/// submission gave it (the newest job with that key).
public enum JobReference: Sendable, Hashable, CustomStringConvertible {
    case id(Int64)
    case key(String)

    /// "12" is an id; "key:12" the key "12"; anything else a key.
    public init?(parsing text: String) {
        if text.hasPrefix("key:") {
            let key = String(text.dropFirst(4))
            guard !key.isEmpty else { return nil }
            self = .key(key)
        } else if let id = Int64(text), id > 0 {
            self = .id(id)
        } else if text.isEmpty || text.allSatisfy(\.isNumber) {
            return nil
        } else {
            self = .key(text)
        }
    }

    public var description: String {
        switch self {
        case .id(let id): "job \(id)"
        case .key(let key): "the job with key \"\(key)\""
        }
    }
}

/// When a job that waits for others may run.
public enum AfterPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    /// When every dependency succeeded; a dependency that fails for good (failed, dead, cancelled)
    /// fails the job, naming it.
    case success
    /// When every dependency succeeded and its quality checks (`"checks"`) passed without warnings; a
    /// dependency without checks passes. One that succeeded with warnings fails the job, naming it: a pipeline
    /// stops before it publishes what a check doubted.
    case passed
    /// When every dependency ended, however it ended: clean-up jobs.
    case always

    /// What a waiting job waits for its dependencies to do, as pages and `status` say it ("waits for 2 jobs to …").
    public var waitsTo: String {
        switch self {
        case .success: "succeed"
        case .passed: "pass their checks"
        case .always: "end"
        }
    }
}

/// What a job's dependencies, as they are now, make of it: shared by submission, retry and the
/// release of a dependency's dependents, on every backend.
public enum DependencyVerdict: Sendable, Hashable {
    /// Every dependency ended as the policy needs: the job may be queued.
    case ready
    /// This many dependencies have not ended yet.
    case waiting(Int)
    /// A dependency ended without success (and the policy needs success): the job fails, naming it.
    case failed(by: Int64, message: String)

    /// One dependency as the verdict needs it.
    public struct Dependency: Sendable, Hashable {
        public var id: Int64
        public var name: String
        public var state: JobState
        /// Its last error, for the message of a job it fails.
        public var lastError: String?
        /// What its quality checks found, when it succeeded with checks (read from its result).
        public var checks: CheckVerdict.Said?

        public init(id: Int64, name: String, state: JobState, lastError: String?, checks: CheckVerdict.Said? = nil) {
            self.id = id
            self.name = name
            self.state = state
            self.lastError = lastError
            self.checks = checks
        }

        /// The dependency, with its result's quality verdict (`result` is the job's result JSON).
        public init(id: Int64, name: String, state: JobState, lastError: String?, result: String?) {
            self.init(id: id, name: name, state: state, lastError: lastError, checks: CheckVerdict.Said(result: result))
        }

        /// It succeeded, but its checks warned: an `afterPolicy` of `passed` does not take it.
        var warned: Bool { state == .succeeded && checks?.verdict == .warnings }
    }

    public static func of(_ dependencies: [Dependency], policy: AfterPolicy) -> DependencyVerdict {
        if policy != .always,
           let failed = dependencies.filter({ ($0.state.isTerminal && $0.state != .succeeded) || (policy == .passed && $0.warned) })
               .min(by: { $0.id < $1.id }) {
            return .failed(by: failed.id, message: failureMessage(failed))
        }
        let open = dependencies.filter { !$0.state.isTerminal }.count
        return open == 0 ? .ready : .waiting(open)
    }

    /// "dependency job 12 (scan) failed: no such file; retry job 12 ...", "... was cancelled", "... is dead ...";
    /// when the dependency failed because of another job (`root`, down a graph): "dependency job 13 (cut)
    /// failed, because job 12 (scan) failed: no such file; retry job 12 ...", naming the job to retry.
    public static func failureMessage(_ d: Dependency, root: Dependency? = nil) -> String {
        func how(_ d: Dependency) -> String {
            if d.warned { return "succeeded, but its quality checks warned (\(d.checks?.problems ?? "")): \"afterPolicy\": \"passed\" needs them to pass" }
            switch d.state {
            case .cancelled: return "was cancelled"
            case .dead: return "is dead (every attempt crashed)"
            default: return d.state.rawValue
            }
        }
        guard let root else {
            if d.warned {
                // A job that succeeded is not retried: what gets past it is a new submission.
                return "dependency job \(d.id) (\(d.name)) \(how(d)); submit it again once its input is mended, or submit this job again "
                    + "with \"afterPolicy\": \"success\" to take it as it is"
            }
            return "dependency job \(d.id) (\(d.name)) \(how(d))\(d.lastError.map { ": \($0)" } ?? ""); retry job \(d.id) to run this one after it"
        }
        return "dependency job \(d.id) (\(d.name)) \(how(d)), because job \(root.id) (\(root.name)) \(how(root))"
            + "\(root.lastError.map { ": \($0)" } ?? ""); retry job \(root.id) to run this one after it"
    }
}

/// An input that is another job's result: `job:ID#output` or `job:KEY#output` (`#report` for its
/// report). The job named becomes a dependency; when the dependent is due, its coordinator puts the
/// path the dependency wrote in place of the reference.
public struct JobOutputReference: Sendable, Hashable, CustomStringConvertible {
    public enum Field: String, Sendable, Hashable, CaseIterable {
        case output, report
    }

    public var job: JobReference
    public var field: Field

    public static let scheme = "job:"

    public init(job: JobReference, field: Field) {
        self.job = job
        self.field = field
    }

    /// nil when `text` does not start with `job:`; `.failure` (saying what is wrong) when the rest is
    /// not `ID#field` or `KEY#field`.
    public static func parse(_ text: String) -> Result<JobOutputReference, JobOutputReferenceError>? {
        guard text.hasPrefix(scheme) else { return nil }
        let rest = text.dropFirst(scheme.count)
        guard let hash = rest.lastIndex(of: "#") else { return .failure(JobOutputReferenceError(text: text, problem: "it names no result (add #output or #report)")) }
        let name = String(rest[..<hash]), fieldText = String(rest[rest.index(after: hash)...])
        guard let field = Field(rawValue: fieldText) else {
            return .failure(JobOutputReferenceError(text: text, problem: "#\(fieldText) is not a result of a job (use #output or #report)"))
        }
        guard let job = JobReference(parsing: name) else {
            return .failure(JobOutputReferenceError(text: text, problem: "\"\(name)\" is not a job id or a unique key"))
        }
        return .success(JobOutputReference(job: job, field: field))
    }

    public var description: String {
        let name = switch job {
        case .id(let id): String(id)
        case .key(let key): key.allSatisfy(\.isNumber) ? "key:" + key : key
        }
        return Self.scheme + name + "#" + field.rawValue
    }
}

public struct JobOutputReferenceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String {
        "\(text): not a job's result (job:ID#output or job:KEY#output, KEY a --unique-key of an earlier submission): \(problem)"
    }
}

/// A capability a host provides (`coordinator --provides gpu`) and a job may require (`"requires": ["gpu"]`).
public enum HostCapability {
    /// Why `tag` is not a capability's name (1 to 64 of a-z, 0-9, '.', '_', '-', starting with a letter or
    /// digit); nil when it is one.
    public static func problem(_ tag: String) -> String? {
        let allowed = tag.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 46 || $0 == 95 || $0 == 45 }
        guard (1...64).contains(tag.utf8.count), allowed, let first = tag.utf8.first, first != 46 && first != 95 && first != 45 else {
            return "\"\(tag)\" is not a capability: 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit (as `coordinator --provides` names it)"
        }
        return nil
    }
}

extension CheckVerdict {
    /// A job's quality verdict as its result says it, with its findings in a line.
    public struct Said: Sendable, Hashable {
        public var verdict: CheckVerdict
        public var problems: String

        /// From a job's result JSON (its `checks` alone are read); nil when the job had no checks (or no result).
        public init?(result: String?) {
            struct Shape: Decodable { var checks: CheckReport? }
            guard let result, result.contains("\"verdict\""),
                  let decoded = try? JSONDecoder().decode(Shape.self, from: Data(result.utf8)),  // a result whose checks do not decode has no verdict to read
                  let checks = decoded.checks else { return nil }
            verdict = checks.verdict
            problems = checks.problems.joined(separator: "; ")
        }
    }
}

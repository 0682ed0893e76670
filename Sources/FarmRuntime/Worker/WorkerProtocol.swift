import FarmModel

/// The protocol between a coordinator and a worker process kept for many jobs (`mediafarm worker
/// --standby`): the coordinator writes one `WorkerAssignment` per line on the worker's stdin; the worker
/// answers with the job's events (`JobEvent`, one JSON line each, the `result` last) and then one
/// `WorkerJobEnd` line, after which it waits for the next assignment or, when it says it is retiring,
/// exits. A worker started for its job alone (`mediafarm worker` with arguments) reads only the manifest
/// and ends with its exit status instead.
public struct WorkerAssignment: Sendable, Hashable {
    public var name: String
    public var baseDirectory: String
    public var outputRoots: [String]
    public var stageToken: String?
    /// The manifest as its coordinator checked it against this host's files (its inputs put in): the
    /// worker reads it without checking them again.
    public var manifest: JSONValue
    /// Uploads an earlier attempt began for outputs bound for objects (address -> upload id): go on with them.
    public var resumeUploads: [String: String]?

    public init(name: String, baseDirectory: String, outputRoots: [String], stageToken: String?, manifest: JSONValue,
                resumeUploads: [String: String]? = nil) {
        self.name = name
        self.baseDirectory = baseDirectory
        self.outputRoots = outputRoots
        self.stageToken = stageToken
        self.manifest = manifest
        self.resumeUploads = resumeUploads
    }

    /// Why a line is no assignment.
    public struct LineError: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// The line a kept worker reads: the options, and the manifest as the JSON object it is (kept as
    /// written: its numbers' text, its keys' order), not a string inside the line.
    public var line: String {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(name)), ("baseDirectory", .string(baseDirectory)), ("outputRoots", .array(outputRoots.map(JSONValue.string))),
        ]
        if let stageToken { members.append(("stageToken", .string(stageToken))) }
        members.append(("manifest", manifest))
        if let resumeUploads {
            members.append(("resumeUploads", .object(resumeUploads.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.string($0.value)) })))
        }
        return JSONValue.object(members).text
    }

    /// Reads a line written by `line`.
    public init(line: String) throws(LineError) {
        let value: JSONValue
        do { value = try JSONParser.parse(line) } catch { throw LineError(description: "\(error)") }
        func string(_ key: String) throws(LineError) -> String? {
            switch value[key] {
            case nil, .null?: return nil
            case .string(let text)?: return text
            case let other?: throw LineError(description: "\(key): expected a string, not \(other.kindName)")
            }
        }
        func strings(_ value: JSONValue?, _ key: String) throws(LineError) -> [(String, String)] {
            guard case .object(let members)? = value else { throw LineError(description: "\(key): expected an object") }
            var pairs: [(String, String)] = []
            for member in members {
                guard case .string(let text) = member.value else { throw LineError(description: "\(key).\(member.key): expected a string") }
                pairs.append((member.key, text))
            }
            return pairs
        }
        guard case .object = value else { throw LineError(description: "expected an object, not \(value.kindName)") }
        guard let name = try string("name"), let baseDirectory = try string("baseDirectory") else {
            throw LineError(description: "name and baseDirectory are required")
        }
        guard case .array(let roots)? = value["outputRoots"] else { throw LineError(description: "outputRoots: expected an array") }
        var outputRoots: [String] = []
        for root in roots {
            guard case .string(let text) = root else { throw LineError(description: "outputRoots: expected strings") }
            outputRoots.append(text)
        }
        guard let manifest = value["manifest"] else { throw LineError(description: "manifest is required") }
        var resume: [String: String]?
        if let uploads = value["resumeUploads"] { resume = Dictionary(try strings(uploads, "resumeUploads"), uniquingKeysWith: { $1 }) }
        self.init(name: name, baseDirectory: baseDirectory, outputRoots: outputRoots, stageToken: try string("stageToken"), manifest: manifest,
                  resumeUploads: resume)
    }
}

/// The last line a kept worker writes for a job: how the job ended (the exit status a worker started for
/// that job alone would have had) and the worker's state after cleaning up.
public struct WorkerJobEnd: Codable, Sendable, Hashable {
    /// Always "ended": what tells this line from the job's events.
    public var event: String = "ended"
    /// 0 succeeded, 1 failed, 2 the manifest is invalid.
    public var status: Int32
    /// Why the worker exits now instead of waiting for another job; nil when it waits.
    public var retiring: WorkerRetirement?
    /// Its resident memory after the job (freed heap given back first).
    public var residentBytes: UInt64
    /// What the job left behind that the worker put right (a directory changed, a variable set,
    /// temporaries): each one sentence.
    public var restored: [String]

    public init(status: Int32, retiring: WorkerRetirement?, residentBytes: UInt64, restored: [String]) {
        self.status = status
        self.retiring = retiring
        self.residentBytes = residentBytes
        self.restored = restored
    }

    /// The line's JSON begins with this: a cheap test before decoding.
    static let marker = #"{"event":"ended""#
}

/// When a kept worker process is replaced by a new one (as Gunicorn's `max_requests` and Celery's
/// `max_tasks_per_child` do): after a number of jobs, when its resident memory after a job is above a
/// limit, and after any job that left something the worker cannot put right (an open file).
public struct WorkerRecycling: Sendable, Hashable {
    /// Jobs one process runs before it is replaced; 1 runs every job in a new process.
    public var jobsPerWorker: Int
    /// Resident memory (bytes) above which a process is replaced after its job; 0: no limit.
    public var residentLimit: UInt64

    public static let `default` = WorkerRecycling(jobsPerWorker: 100, residentLimit: 1 << 30)

    public init(jobsPerWorker: Int, residentLimit: UInt64) {
        self.jobsPerWorker = jobsPerWorker
        self.residentLimit = residentLimit
    }

    /// The worker's arguments that carry these settings.
    var arguments: [String] {
        ["--jobs-per-worker", String(jobsPerWorker), "--recycle-above", String(residentLimit)]
    }
}

/// Why a kept worker's process ended.
public struct WorkerRetirement: Codable, Sendable, Hashable {
    /// "jobs" (it ran its number), "memory" (resident memory above the limit), "unclean" (a job left
    /// something that cannot be put right), "died" (it ended during a job: a crash or a kill), "stopped"
    /// (the coordinator stopped it).
    public var kind: String
    /// One sentence.
    public var message: String

    public init(kind: String, message: String) {
        self.kind = kind
        self.message = message
    }
}

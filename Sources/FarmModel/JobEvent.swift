import QualityModel

/// What a running job reports, one JSON line each (`mediafarm run --json`, and a worker's stdout).
public enum JobEvent: Sendable, Codable, Equatable {
    case progress(JobProgress)
    case log(level: String, message: String)
    case result(JobResult)
    /// A multipart upload of output `address` began (its parts follow): the coordinator records it with
    /// the job, for the next attempt to go on with or for aborting.
    case upload(address: String, uploadID: String)

    private enum Keys: String, CodingKey { case event, fraction, phase, framesPerSecond, eta, level, message, job, address, uploadID }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        switch self {
        case .progress(let p):
            try c.encode("progress", forKey: .event)
            try c.encode(p.fraction, forKey: .fraction)
            try c.encode(p.phase, forKey: .phase)
            try c.encodeIfPresent(p.framesPerSecond, forKey: .framesPerSecond)
            try c.encodeIfPresent(p.eta, forKey: .eta)
        case let .log(level, message):
            try c.encode("log", forKey: .event)
            try c.encode(level, forKey: .level)
            try c.encode(message, forKey: .message)
        case .result(let r):
            try c.encode("result", forKey: .event)
            try c.encode(r, forKey: .job)
        case let .upload(address, uploadID):
            try c.encode("upload", forKey: .event)
            try c.encode(address, forKey: .address)
            try c.encode(uploadID, forKey: .uploadID)
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        switch try c.decode(String.self, forKey: .event) {
        case "progress":
            self = .progress(JobProgress(fraction: try c.decode(Double.self, forKey: .fraction), phase: try c.decode(String.self, forKey: .phase),
                                         framesPerSecond: try c.decodeIfPresent(Double.self, forKey: .framesPerSecond),
                                         eta: try c.decodeIfPresent(Double.self, forKey: .eta)))
        case "log":
            self = .log(level: try c.decode(String.self, forKey: .level), message: try c.decode(String.self, forKey: .message))
        case "result":
            self = .result(try c.decode(JobResult.self, forKey: .job))
        case "upload":
            self = .upload(address: try c.decode(String.self, forKey: .address), uploadID: try c.decode(String.self, forKey: .uploadID))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .event, in: c, debugDescription: "unknown event \(other)")
        }
    }
}

public struct JobProgress: Sendable, Codable, Equatable {
    /// 0...1 over the whole job.
    public var fraction: Double
    /// "inspecting", "copying", "encoding", "finishing", ...
    public var phase: String
    public var framesPerSecond: Double?
    /// Estimated seconds left.
    public var eta: Double?

    public init(fraction: Double, phase: String, framesPerSecond: Double? = nil, eta: Double? = nil) {
        self.fraction = fraction
        self.phase = phase
        self.framesPerSecond = framesPerSecond
        self.eta = eta
    }
}

/// How a job ended.
public struct JobResult: Sendable, Codable, Equatable {
    public var name: String
    public var succeeded: Bool
    /// What failed, naming the file and the problem.
    public var error: String?
    public var output: String?
    public var report: String?
    /// Output duration in seconds, when something was exported.
    public var duration: Double?
    public var seconds: Double
    /// The multipart uploads of the outputs bound for object storage whose parts the worker sent: the
    /// coordinator completes them to publish (and, from the queue, any rescuer can).
    public var uploads: [ObjectUpload]?
    /// A failure that another attempt may not meet (object storage unreachable, timing out, answering
    /// 5xx): the job is retried, not failed.
    public var retryable: Bool?
    /// A chunked export's first run: nothing was exported; these output frame ranges, in order, are its
    /// chunks (the coordinator makes a job of each, and the job waits to join them).
    public var split: [Range<Int>]?
    /// Answered from an earlier job's result with the same content: that job, and its output.
    public var reused: ReusedResult?
    /// How many of its numbered outputs the job wrote (pictures, a storyboard's sheets): their names are
    /// the manifest's patterns with these indexes.
    public var numbered: NumberedOutputs?
    /// A normalised export's loudness, before and after.
    public var loudness: LoudnessOutcome?
    /// What the job did that its owner should know although it succeeded (a limiter cutting deep).
    public var warnings: [String]?
    /// The streaming package it made, as its players see it (the library registers it with these facts).
    public var package: PackageSummary?
    /// What its quality checks found (`"checks"`): the verdict, and each check's result and runs. A job whose
    /// verdict is `failed` failed, and published nothing.
    public var checks: CheckReport?

    public init(name: String, succeeded: Bool, error: String? = nil, output: String? = nil, report: String? = nil,
                duration: Double? = nil, seconds: Double) {
        self.name = name
        self.succeeded = succeeded
        self.error = error
        self.output = output
        self.report = report
        self.duration = duration
        self.seconds = seconds
    }
}

/// What loudness normalisation made of an export: the programme's integrated loudness before and after
/// (LUFS), the target, the gain the whole programme got (dB; absent when parts got different gains: then
/// the lowest and the highest of them), and the limiter's deepest cut (dB, negative), when it worked.
public struct LoudnessOutcome: Sendable, Codable, Equatable {
    public var before: Double?
    public var after: Double?
    public var target: Double?
    public var gain: Double?
    /// The lowest and the highest gain, dB, when parts of the programme got different gains.
    public var gainsFrom: Double?
    public var gainsTo: Double?
    public var limiterReduction: Double?

    public init(before: Double?, after: Double?, target: Double?, gain: Double?, gains: [Double] = [], limiterReduction: Double?) {
        (self.before, self.after, self.target, self.gain, self.limiterReduction) = (before, after, target, gain, limiterReduction)
        if gain == nil, let low = gains.min(), let high = gains.max() { (gainsFrom, gainsTo) = (low, high) }
    }

    /// One line: "-29.4 → -23.0 LUFS (target -23.0), gain +6.6 dB, limiter up to -1.2 dB".
    public var summary: String {
        func lufs(_ v: Double?) -> String { v.map { String(format: "%.1f", $0) } ?? "?" }
        var text = "\(lufs(before)) → \(lufs(after)) LUFS"
        if let target { text += String(format: " (target %.1f)", target) }
        if let gain { text += String(format: ", gain %+.1f dB", gain) }
        if let gainsFrom, let gainsTo { text += String(format: ", gain %+.2f to %+.2f dB by part", gainsFrom, gainsTo) }
        text += limiterReduction.map { String(format: ", limiter up to %.1f dB", $0) } ?? ", no limiting"
        return text
    }

    /// A cut deeper than this (dB) is worth a warning: the limiter is shaping the sound, not catching peaks.
    public static let deepCut = 3.0
}

/// An output's multipart upload whose parts a worker sent, not yet completed: its address
/// (`s3://BUCKET/KEY`), upload id, size and parts (number, entity tag, size). Or an object to be published
/// by a copy on the server (`copy`: a package answered from an earlier one's objects; no upload id nor parts).
public struct ObjectUpload: Sendable, Codable, Equatable {
    /// The object copied, and the entity tag it must still have.
    public struct Copy: Sendable, Codable, Equatable {
        public var source: String
        public var etag: String
        public init(source: String, etag: String) { (self.source, self.etag) = (source, etag) }
    }

    public struct Part: Sendable, Codable, Equatable {
        public var number: Int
        public var etag: String
        public var size: Int64

        public init(number: Int, etag: String, size: Int64) {
            self.number = number
            self.etag = etag
            self.size = size
        }
    }

    public var address: String
    public var uploadID: String
    public var size: Int64
    public var parts: [Part]
    /// The file's SHA-256, hashed by the worker before it sent the parts (a package's files, recorded for reuse).
    public var sha256: String?
    public var copy: Copy?

    public init(address: String, uploadID: String, size: Int64, parts: [Part], sha256: String? = nil) {
        self.address = address
        self.uploadID = uploadID
        self.size = size
        self.parts = parts
        self.sha256 = sha256
    }

    /// An object published by copying `copy.source` (of `size` bytes, SHA-256 `sha256` when known) to `address`.
    public init(address: String, copying copy: Copy, size: Int64, sha256: String?) {
        (self.address, self.uploadID, self.size, self.parts, self.sha256, self.copy) = (address, "", size, [], sha256, copy)
    }
}

/// The earlier job a result was reused from: its id and name, its output as published and that output's
/// SHA-256 (which the copy was checked against).
public struct ReusedResult: Sendable, Codable, Equatable {
    public var job: Int64
    public var name: String
    public var output: String?
    public var sha256: String?

    public init(job: Int64, name: String, output: String?, sha256: String?) {
        self.job = job
        self.name = name
        self.output = output
        self.sha256 = sha256
    }
}

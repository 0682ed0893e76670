import Foundation

/// A file's quality in one word: `failed` when a check of severity `fail` found something, `warnings`
/// when only checks of severity `warn` did, `passed` otherwise (figures of `measure` checks never count).
public enum CheckVerdict: String, Sendable, Codable, Hashable, CaseIterable, Comparable {
    case passed, warnings, failed

    public static func < (a: CheckVerdict, b: CheckVerdict) -> Bool { a.rank < b.rank }
    private var rank: Int { self == .passed ? 0 : self == .warnings ? 1 : 2 }
}

/// What the quality checks found in one decode: the verdict, then each check's result. `mediafarm check
/// --json` prints it; a job's result and report hold it under `checks`.
public struct CheckReport: Sendable, Codable, Hashable {
    public var verdict: CheckVerdict
    public var checks: [CheckResult]
    /// Pictures and sound the checks saw, from the file's start (seconds).
    public var duration: Double
    public var frames: Int
    /// Seconds the pass took.
    public var seconds: Double

    public init(checks: [CheckResult], duration: Double, frames: Int, seconds: Double) {
        self.checks = checks
        self.duration = duration
        self.frames = frames
        self.seconds = seconds
        verdict = checks.map(\.outcome.verdict).max() ?? .passed
    }

    /// Each finding of a check that fails or warns, in one line: what, where, and the threshold.
    public var problems: [String] {
        checks.filter { $0.outcome == .failed || $0.outcome == .warning }.map { "\($0.check): \($0.summary)" }
    }
}

/// One check's result: its outcome, a sentence, the thresholds it used, and its runs in the file's timeline.
public struct CheckResult: Sendable, Codable, Hashable {
    public enum Outcome: String, Sendable, Codable, Hashable {
        /// Nothing found.
        case passed
        /// Found, and the check's severity is `warn`.
        case warning
        /// Found, and the check's severity is `fail`.
        case failed
        /// Figures only (severity `measure`), found or not.
        case measured
        /// The file has nothing this check reads (no audio, a variable frame rate for the cadence check).
        case notApplicable = "not-applicable"

        public var verdict: CheckVerdict { self == .failed ? .failed : self == .warning ? .warnings : .passed }
    }

    /// The check's name as the manifest's `checks` section spells it (`black`, `freeze`, `silence`, …).
    public var check: String
    public var severity: CheckSeverity
    public var outcome: Outcome
    /// What was found ("1 black run, 1.500 s in all, from 12.000 s"), or why nothing was.
    public var summary: String
    /// The thresholds used, by the names the manifest gives them.
    public var thresholds: [String: Double]
    /// The first `CheckResult.runLimit` runs, in time order; `runsLeftOut` says how many more there were.
    public var runs: [CheckRun]
    public var runsLeftOut: Int?
    /// Figures the check measured (loudness in LUFS, the worst share of pixels out of range, …).
    public var figures: [String: Double]?
    /// The fidelity check's worst pictures, worst first.
    public var pictures: [CheckPicture]?

    public init(check: String, severity: CheckSeverity, found: Bool, summary: String, thresholds: [String: Double], runs: [CheckRun] = [],
         figures: [String: Double]? = nil) {
        self.check = check
        self.severity = severity
        outcome = severity == .measure ? .measured : !found ? .passed : severity == .fail ? .failed : .warning
        self.summary = summary
        self.thresholds = thresholds
        self.runs = Array(runs.prefix(Self.runLimit))
        runsLeftOut = runs.count > Self.runLimit ? runs.count - Self.runLimit : nil
        self.figures = figures
    }

    /// Runs kept in a result: a picture flickering in and out of range for an hour would otherwise make a
    /// report of a hundred thousand runs (the summary counts them all), and a worker's result line is at most
    /// 1 MiB: 100 runs of each check of each of 16 tracks stay well under it.
    public static let runLimit = 100

    public static func notApplicable(_ check: String, _ severity: CheckSeverity, _ why: String) -> CheckResult {
        var result = CheckResult(check: check, severity: severity, found: false, summary: why, thresholds: [:])
        result.outcome = .notApplicable
        return result
    }
}

/// One picture's fidelity to its reference: its time (seconds from the start), PSNR (dB; absent when the two
/// are identical, FFmpeg's `inf`) and SSIM.
public struct CheckPicture: Sendable, Codable, Hashable {
    public var time: Double
    public var psnr: Double?
    public var ssim: Double
    public init(time: Double, psnr: Double?, ssim: Double) { (self.time, self.psnr, self.ssim) = (time, psnr, ssim) }
}

/// A stretch of the file where a check found something: seconds from the file's start (`end` is the
/// first time it no longer holds), with the track and channel where it is one of several.
public struct CheckRun: Sendable, Codable, Hashable {
    public var start: Double
    public var end: Double
    public var duration: Double
    /// 1-based audio track (as `inspect` numbers tracks) and channel, for sound checks.
    public var track: Int?
    public var channel: Int?
    /// The run's worst figure: the share of pixels out of range, samples at full scale.
    public var value: Double?
    /// The run lasted to the end of the file (FFmpeg's filters close such a run at the last picture's start, or never).
    public var toEnd: Bool?

    public init(start: Double, end: Double, duration: Double? = nil, track: Int? = nil, channel: Int? = nil, value: Double? = nil, toEnd: Bool = false) {
        self.start = start
        self.end = end
        self.duration = duration ?? end - start
        self.track = track
        self.channel = channel
        self.value = value
        self.toEnd = toEnd ? true : nil
    }
}

extension [CheckRun] {
    /// "2 runs, 3.500 s in all, from 12.000 s".
    public func said(_ noun: String) -> String {
        guard let first = first else { return "no \(noun) runs" }
        let total = reduce(0) { $0 + $1.duration }
        return "\(count) \(noun) run\(count == 1 ? "" : "s"), " + String(format: "%.3f s in all, the first from %.3f s to %.3f s", total, first.start, first.end)
    }
}

import FarmModel
import Foundation

/// A JUnit report that cannot be written: its path and why; `isUsage` when it is found before anything ran.
public struct JUnitReportError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var problem: String
    public var isUsage: Bool
    public var description: String { "--junit \(path): \(problem)" }
}

/// One job of a batch, as the summary and the JUnit report show it.
public struct BatchResult: Encodable, Sendable {
    public var name: String
    public var manifest: String
    public var state: String
    public var attempts: Int
    public var seconds: Double?
    public var output: String?
    public var report: String?
    public var error: String?

    public init(_ job: Job, file: String) {
        name = job.name
        manifest = file
        // A job the coordinator could not finish (stopped by a drain) is still queued or running.
        state = job.state.rawValue
        attempts = job.attempt
        let result = job.result.flatMap { try? JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }  // a result this version cannot read shows as none
        seconds = result?.seconds
        output = result?.output
        report = result?.report
        switch job.state {
        case .succeeded: error = nil
        case .waiting, .queued, .running: error = "not finished: the batch was stopped"
        case .cancelled: error = "cancelled"
        case .failed, .dead: error = job.errors.last?.message ?? result?.error ?? "failed"
        }
    }

    /// A manifest that failed validation: a failure of its own kind, every issue its message.
    public init(invalid: ManifestValidationError) {
        let file = invalid.file ?? "manifest"
        name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        manifest = file
        state = "invalid"
        attempts = 0
        error = "invalid manifest: " + invalid.issues.map { "\($0.path): \($0.message)" }.joined(separator: "; ")
    }

    /// A valid manifest that did not run because another was invalid.
    public init(notRun name: String, file: String) {
        self.name = name
        manifest = file
        state = "skipped"
        attempts = 0
        error = "not run: another manifest of the batch is invalid"
    }
}

public struct BatchSummary: Encodable, Sendable {
    public var event: String
    public var jobs: [BatchResult]
    public var succeeded: Int
    public var failed: Int
    public var seconds: Double

    public init(event: String, jobs: [BatchResult], succeeded: Int, failed: Int, seconds: Double) {
        self.event = event
        self.jobs = jobs
        self.succeeded = succeeded
        self.failed = failed
        self.seconds = seconds
    }
}

/// JUnit XML, as Jenkins, GitLab and GitHub's test reporters read it.
public enum JUnitReport {
    /// Fails (exit 2, before any job runs) when `path` cannot be written: its folder missing, it a folder,
    /// or no permission (tried by making and removing a file beside it).
    public static func checkWritable(_ path: String) throws(JUnitReportError) {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw JUnitReportError(path: path, problem: "the folder \(folder) does not exist; create it first (nothing was run)", isUsage: true)
        }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw JUnitReportError(path: path, problem: "is a folder; name the report's file (nothing was run)", isUsage: true)
        }
        let probe = folder + "/.mediafarm-junit-check-\(getpid())"
        guard FileManager.default.createFile(atPath: probe, contents: nil) else {
            throw JUnitReportError(path: path, problem: "cannot write in \(folder) (permission denied or a read-only file system; nothing was run)",
                                   isUsage: true)
        }
        try? FileManager.default.removeItem(atPath: probe)  // the probe file: a leftover is harmless
    }

    /// Writes the report (a temporary beside it, then renamed over it).
    public static func write(_ results: [BatchResult], seconds: Double, to path: String) throws {
        do {
            try Data(xml(results, seconds: seconds).utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw JUnitReportError(path: path, problem: "cannot write the JUnit report: \((error as NSError).localizedFailureReason ?? error.localizedDescription)",
                                   isUsage: false)
        }
    }

    static func xml(_ results: [BatchResult], seconds: Double) -> String {
        let failures = results.filter { $0.state != "succeeded" && $0.state != "skipped" }.count
        let skipped = results.filter { $0.state == "skipped" }.count
        var out = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        out += #"<testsuites name="mediafarm batch" tests="\#(results.count)" failures="\#(failures)" time="\#(time(seconds))">"# + "\n"
        out += #"  <testsuite name="mediafarm batch" tests="\#(results.count)" failures="\#(failures)" errors="0" skipped="\#(skipped)" time="\#(time(seconds))">"# + "\n"
        for r in results {
            let head = #"    <testcase name="\#(escape(r.name))" classname="\#(escape(r.manifest))" time="\#(time(r.seconds ?? 0))""#
            if r.state == "succeeded" {
                out += head + "/>\n"
            } else if r.state == "skipped" {
                out += head + ">\n" + #"      <skipped message="\#(escape(r.error ?? "not run"))"/>"# + "\n    </testcase>\n"
            } else {
                let message = r.error ?? r.state
                out += head + ">\n"
                out += #"      <failure message="\#(escape(message))" type="\#(r.state)">\#(escape(message))</failure>"# + "\n"
                out += "    </testcase>\n"
            }
        }
        out += "  </testsuite>\n</testsuites>\n"
        return out
    }

    static func time(_ seconds: Double) -> String { String(format: "%.3f", seconds) }

    /// Text as XML attribute or element content: markup escaped, characters XML 1.0 cannot hold dropped.
    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n": out += "&#10;"
            case "\t", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: continue
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

import FarmModel
import Foundation
import MediaCore
import MediaInspect
import QualityModel
import Synchronization

/// A job's quality checks (`"checks"`): of its input, in one pass before anything is made; or of its
/// export, as it encodes (or read back once, when it encodes nothing) and said before it is committed, so
/// a failed verdict leaves nothing published. What they found is kept here for the result, whether the job succeeds or not.
final class JobChecks: Sendable {
    private let found = Mutex<CheckReport?>(nil)

    /// The checks' report, once they ran.
    var report: CheckReport? { found.withLock { $0 } }

    /// Whether the manifest's checks are of the export (else of the input).
    static func ofExport(_ manifest: JobManifest) -> Bool {
        manifest.checks?.subject(hasExport: manifest.export != nil) == .export
    }

    /// Checks the job's one whole input, when its checks are of the input; throws `ChecksFailed` when the verdict
    /// is `failed`. In the run that makes its outputs (not in a chunked job's first run, which only plans).
    func checkInput(of runner: JobRunner, events: @escaping @Sendable (JobEvent) -> Void) async throws {
        guard let plan = runner.manifest.checks?.plan, !Self.ofExport(runner.manifest) else { return }
        let path = runner.manifest.edits[0].source
        events(.progress(JobProgress(fraction: 0.02, phase: "checking")))
        let limits = runner.limits
        let report = try await runner.pool.run(stallLimit: limits.stallTimeout) { interrupter in
            try CheckReport.check(path: path, plan: plan, limits: limits, interrupter: interrupter) { p in
                events(.progress(JobProgress(fraction: 0.02 + 0.17 * p, phase: "checking")))
            }
        }
        try keep(report)
    }

    /// What the export watches as it encodes (`ExportChecks`: every check but fidelity), and what it runs on
    /// its written file before committing it: the watched checks' findings with the file's spec and length, or,
    /// when the export watched nothing (passthrough, a join of chunks), the checks of the file read back. The
    /// fidelity check is not of the file alone: the export measured it as it encoded, into `fidelity`.
    func exportHook(plan: CheckPlan, fidelity: FidelityLog?, limits: SafetyLimits,
                    events: @escaping @Sendable (JobEvent) -> Void) -> (watch: ExportChecks?, check: @Sendable (String, Interrupter) throws -> Void) {
        let fileChecks = { var p = plan; p.fidelity = nil; return p }()
        let watch = fileChecks == CheckPlan() ? nil : ExportChecks(plan: fileChecks)
        return (watch, { [self] path, interrupter in
            events(.progress(JobProgress(fraction: 0.99, phase: "checking")))
            var report = try watch.map { try CheckReport.check(path: path, plan: fileChecks, limits: limits, interrupter: interrupter, watched: $0) }
            if let p = plan.fidelity, let fidelity {
                // Fidelity alone: the export's pictures are those it measured.
                let pictures = fidelity.entries.count
                report = CheckReport(checks: (report?.checks ?? []) + [.fidelity(p, fidelity)],
                                     duration: report?.duration ?? Double(pictures) * fidelity.frameDuration, frames: report?.frames ?? pictures,
                                     seconds: report?.seconds ?? 0)
            }
            guard let report else { return }
            try keep(report)
        })
    }

    private func keep(_ report: CheckReport) throws {
        found.withLock { $0 = report }
        if report.verdict == .failed { throw ChecksFailed(report: report) }
    }

    /// The result's words for what the checks found: warnings of checks that warn.
    static func tell(_ report: CheckReport, in result: inout JobResult) {
        result.checks = report
        let warned = report.checks.filter { $0.outcome == .warning }.map { "$.checks.\($0.check): \($0.summary)" }
        if !warned.isEmpty { result.warnings = (result.warnings ?? []) + warned }
    }
}

/// A verdict of `failed`: the job fails, naming each check that failed and what it found.
struct ChecksFailed: Error, CustomStringConvertible {
    let report: CheckReport
    var description: String {
        "quality checks failed: " + report.checks.filter { $0.outcome == .failed }.map { "$.checks.\($0.check): \($0.summary)" }.joined(separator: "; ")
            + " (nothing was published; the result's checks give every run)"
    }
}

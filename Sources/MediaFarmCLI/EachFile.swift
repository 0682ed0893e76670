import Foundation
import MediaCore

/// Files read one after another on one blocking thread, each with its progress bar, stopped by SIGINT or
/// SIGTERM, each given the stall limit: what `loudness` and `check` do. A file that cannot be read is its error
/// in words (naming it), and the others are read still.
enum EachFile {
    static func read<T: Sendable>(_ paths: [String], doing verb: String, command: String,
                                  _ body: @escaping @Sendable (String, Interrupter, @escaping @Sendable (Double) -> Void) throws -> T)
        async throws -> [(path: String, value: T?, error: String?)] {
        let pool = BlockingWorkPool(threads: 1)
        let stop = SignalStop()
        var results: [(path: String, value: T?, error: String?)] = []
        for path in paths {
            let progress = TerminalProgress(label: "\(verb) \((path as NSString).lastPathComponent)", total: 1000)
            let result: (value: T?, error: String?) = try await stop.run {
                do {
                    return (try await pool.run(stallLimit: SafetyLimits.default.stallTimeout) { interrupter in
                        try body(path, interrupter) { progress.update(Int($0 * 1000)) }
                    }, nil)
                } catch let error as MediaFileError {
                    return (nil, error.description)
                } catch {
                    return (nil, "\(path): \(error)")
                }
            }
            progress.finish()
            try stop.exitIfStopped(command)
            results.append((path, result.value, result.error))
        }
        return results
    }
}

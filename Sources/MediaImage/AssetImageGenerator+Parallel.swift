import Foundation
import MediaCore
import MediaTime
import Synchronization

extension AssetImageGenerator {
    /// Pictures at many times on `workers` threads, each with a generator of its own over a stretch of the
    /// times (in time order: a stretch decodes each keyframe's run once). `body` gets each time's index
    /// and result as it is made, on the thread that made it, one call at a time. A failure to open the file
    /// is thrown before any picture, as is the first error `body` throws (the others stop then). This
    /// generator makes the first stretch (it is used on that thread alone until this returns); the others
    /// open readers of their own, with the same settings.
    public func images(at times: [MediaTime], workers: Int, limits: SafetyLimits = .default, interrupter: Interrupter = Interrupter(),
                       body: @escaping @Sendable (Int, Result<Image, ImageGenerationError>) throws -> Void) throws {
        let order = times.indices.sorted { times[$0] < times[$1] }
        let count = max(1, min(workers, order.count))
        let stretches = (0..<count).map { w in Array(order[(w * order.count / count)..<((w + 1) * order.count / count)]) }
        let failure = FirstFailure()
        // Only the first stretch's thread touches it, and the caller waits for every thread.
        nonisolated(unsafe) let opened = self
        let (path, settings) = (self.path, self.settings)
        DispatchQueue.concurrentPerform(iterations: count) { w in
            let generator: AssetImageGenerator
            do {
                generator = w == 0 ? opened : try AssetImageGenerator(path: path, settings: settings, limits: limits, interrupter: interrupter)
            } catch {
                failure.record(error)
                return
            }
            for i in stretches[w] {
                if failure.happened || interrupter.reason == .cancelled { return }
                let result = Result { () throws(ImageGenerationError) -> Image in try generator.image(at: times[i]) }
                failure.serially { try body(i, result) }
            }
        }
        if let error = failure.error { throw error }
        if interrupter.reason == .cancelled { throw CancellationError() }
    }
}

/// The first error of work done on several threads, and a lock for what they must do one at a time.
final class FirstFailure: Sendable {
    private let first = Mutex<(any Error)?>(nil)

    var error: (any Error)? { first.withLock { $0 } }
    var happened: Bool { error != nil }

    func record(_ error: any Error) { first.withLock { if $0 == nil { $0 = error } } }

    func serially(_ work: () throws -> Void) {
        first.withLock { first in
            do { try work() } catch { if first == nil { first = error } }
        }
    }
}

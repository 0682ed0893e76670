import Foundation
import MediaCore
import MediaTime
import Synchronization

/// A media file whose properties load asynchronously, on demand, as AVAsset's do.
///
/// `Asset(url:)` opens nothing. `try await asset.load(.duration, .tracks)` loads only what is not
/// loaded yet: each key is computed by one or more stages (probe, timing, decoding); a call opens the
/// file once, runs every stage it needs on the `BlockingWorkPool` (never on Swift's cooperative
/// threads) and keeps the results. Concurrent calls share a stage in flight instead of repeating it.
/// Cancelling the calling task interrupts the FFmpeg work; the interrupted keys go back to
/// `.cancelled` and load again on the next call. A failed key stays failed.
///
/// Thread-safe: all state is behind a mutex.
public final class Asset: Sendable {
    public let url: URL
    /// The path as given, used in messages.
    public let path: String
    let options: AssetOptions
    private let state = Mutex(State())
    /// How many times each stage actually ran (for tests: a loaded key is never loaded again).
    private let runs = Mutex<[LoadStage: Int]>([:])

    func runCount(_ stage: LoadStage) -> Int { runs.withLock { $0[stage] ?? 0 } }

    private enum StageState {
        case notLoaded
        case loading(waiters: [CheckedContinuation<Void, Never>])
        case loaded
        case failed(MediaFileError)
        case cancelled
    }

    private struct State {
        var stages: [LoadStage: StageState] = [:]
        var probe: ProbeResult?
        var timing: TimingResult?
        var decoding: DecodeResult?
        var loudness: LoudnessReport?
        var transfer: RemoteTransfer?
    }

    public init(url: URL, options: AssetOptions = AssetOptions()) {
        self.url = url
        self.path = url.path
        self.options = options
    }

    public init(path: String, options: AssetOptions = AssetOptions()) {
        self.url = URL(fileURLWithPath: path)
        self.path = path
        self.options = options
    }

    // MARK: - Status

    /// The load status of `key` right now.
    public func status(of key: AssetKey) -> LoadStatus {
        status(of: key.stages)
    }

    func status(of stages: Set<LoadStage>) -> LoadStatus {
        state.withLock { s in
            var result = LoadStatus.loaded
            for stage in stages.sorted() {
                switch s.stages[stage] ?? .notLoaded {
                case .failed(let e): return .failed(e)
                case .cancelled: result = .cancelled
                case .loading: if case .loaded = result { result = .loading }
                case .notLoaded: if case .loaded = result { result = .notYetLoaded }
                case .loaded: break
                }
            }
            return result
        }
    }

    // MARK: - Loading

    /// Loads the keys (those not yet loaded) without returning values.
    public func load(keys: [AssetKey]) async throws {
        try await ensure(Set(keys.flatMap(\.stages)))
    }

    /// Makes sure every stage in `needed` is loaded; throws the first failure.
    func ensure(_ needed: Set<LoadStage>) async throws {
        while true {
            try Task.checkCancellation()
            enum Plan { case done, fail(MediaFileError), run(Set<LoadStage>), wait(LoadStage) }
            let plan: Plan = state.withLock { s in
                var claim: Set<LoadStage> = []
                var busy: LoadStage?
                for stage in needed.sorted() {
                    switch s.stages[stage] ?? .notLoaded {
                    case .loaded: continue
                    case .failed(let e): return .fail(e)
                    case .loading: busy = busy ?? stage
                    case .notLoaded, .cancelled: claim.insert(stage)
                    }
                }
                if !claim.isEmpty {
                    for stage in claim { s.stages[stage] = .loading(waiters: []) }
                    return .run(claim)
                }
                if let busy { return .wait(busy) }
                return .done
            }
            switch plan {
            case .done: return
            case .fail(let e): throw e
            case .wait(let stage): await waitFor(stage)
            case .run(let stages): try await run(stages)
            }
        }
    }

    private func waitFor(_ stage: LoadStage) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = state.withLock { s in
                guard case .loading(var waiters) = s.stages[stage] ?? .notLoaded else { return true }
                waiters.append(c)
                s.stages[stage] = .loading(waiters: waiters)
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    /// Opens the file once and runs `stages` (and the probe they stand on) on the blocking pool.
    private func run(_ stages: Set<LoadStage>) async throws {
        let path = self.path
        let options = self.options
        let known = state.withLock { $0.probe }
        typealias Outcome = (ProbeResult, TimingResult?, DecodeResult?, LoudnessReport?, [LoadStage: MediaFileError], RemoteTransfer?)
        let outcome: Outcome
        do {
            outcome = try await options.pool.run(stallLimit: options.limits.stallTimeout) { interrupter -> Outcome in
                assert(BlockingWorkPool.isPoolThread, "FFmpeg work must not run on the cooperative pool")
                let file = try InputFile(path: path, limits: options.limits, interrupter: interrupter)
                let probe = known ?? ProbeResult(file: file)
                var timing: TimingResult?
                var decoding: DecodeResult?
                var failures: [LoadStage: MediaFileError] = [:]
                if stages.contains(.timing) {
                    do throws(MediaFileError) { timing = try TimingResult.measure(file, probe: probe, options: options) }
                    catch { if case .cancelled = error.reason { throw error }; failures[.timing] = error }
                }
                if stages.contains(.decoding) {
                    // Decoding starts from the first packet again: reopen rather than seek, which
                    // some demuxers do poorly.
                    let reader = stages.contains(.timing) ? try file.reopened(interrupter: interrupter) : file
                    do throws(MediaFileError) { decoding = try DecodeResult.check(reader, probe: probe, packetLimit: options.decodeCheckPacketLimit) }
                    catch { if case .cancelled = error.reason { throw error }; failures[.decoding] = error }
                }
                var loudness: LoudnessReport?
                if stages.contains(.loudness) {
                    let reader = stages.contains(.timing) || stages.contains(.decoding) ? try file.reopened(interrupter: interrupter) : file
                    do throws(MediaFileError) { loudness = try LoudnessReport.measure(reader, requiringAudio: false) }
                    catch { if case .cancelled = error.reason { throw error }; failures[.loudness] = error }
                }
                return (probe, timing, decoding, loudness, failures, file.transfer)
            }
        } catch let error as MediaFileError {
            if case .cancelled = error.reason {
                finish(stages) { _ in .cancelled }
                throw CancellationError()
            }
            // Opening failed: every stage fails with the same error.
            finish(stages) { _ in .failed(error) }
            throw error
        } catch {
            finish(stages) { _ in .cancelled }
            throw error
        }
        let (probe, timing, decoding, loudness, failures, transfer) = outcome
        runs.withLock { r in for stage in stages { r[stage, default: 0] += 1 } }
        state.withLock { s in
            if s.probe == nil { s.probe = probe }
            if let timing { s.timing = timing }
            if let decoding { s.decoding = decoding }
            if let loudness { s.loudness = loudness }
            if let transfer {
                s.transfer = RemoteTransfer(requests: (s.transfer?.requests ?? 0) + transfer.requests, bytes: (s.transfer?.bytes ?? 0) + transfer.bytes)
            }
        }
        finish(stages) { stage in failures[stage].map { .failed($0) } ?? .loaded }
    }

    private func finish(_ stages: Set<LoadStage>, _ outcome: (LoadStage) -> StageState) {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { s in
            var all: [CheckedContinuation<Void, Never>] = []
            for stage in stages {
                if case .loading(let w) = s.stages[stage] ?? .notLoaded { all += w }
                s.stages[stage] = outcome(stage)
            }
            return all
        }
        for w in waiters { w.resume() }
    }

    // MARK: - Loaded values (internal; the public face is `load(_:)`)

    /// For an object in S3-compatible storage: the requests made and bytes fetched by every load so far.
    public var transfer: RemoteTransfer? { state.withLock { $0.transfer } }

    struct Snapshot: Sendable {
        var probe: ProbeResult?
        var timing: TimingResult?
        var decoding: DecodeResult?
        var loudness: LoudnessReport?
        var tracks: [AssetTrack]
    }

    /// The loaded results. Tracks are made afresh from the probed streams: a track keeps its asset alive,
    /// and the asset keeps no track, so there is no reference cycle.
    var snapshot: Snapshot {
        let s = state.withLock { ($0.probe, $0.timing, $0.decoding, $0.loudness) }
        return Snapshot(probe: s.0, timing: s.1, decoding: s.2, loudness: s.3,
                        tracks: s.0?.streams.map { AssetTrack(asset: self, stream: $0) } ?? [])
    }
}

import Foundation
import MediaCore
import MediaImage
import SafeFiles

/// A waveform of each finished segment's sound, drawn on a thread of its own as segments close (never
/// in the recording's way): `<segment>-waveform.png` beside it and its peaks as `<segment>-waveform.json`
/// (audiowaveform's format), never over a file; one `waveform` event each.
final class SegmentWaveforms: Sendable {
    private struct State {
        var queue: [SegmentReport] = []
        var finished = false
        var done = false
    }

    private let events: @Sendable (CaptureEvent) -> Void
    private let state = Guarded(State())

    init(events: @escaping @Sendable (CaptureEvent) -> Void) {
        self.events = events
        let thread = Thread { [self] in run() }
        thread.name = "mediafarm-segment-waveforms"
        thread.start()
    }

    func segmentClosed(_ report: SegmentReport) {
        state.withLock { $0.queue.append(report) }
    }

    /// Draws what waits, then stops.
    func finish() {
        state.withLock { $0.finished = true }
        state.wait(until: { $0.done }, then: { _ in })
    }

    private func run() {
        while true {
            let next: SegmentReport? = state.wait(until: { !$0.queue.isEmpty || $0.finished }) { s in
                guard !s.queue.isEmpty else {
                    s.done = true
                    return nil
                }
                return s.queue.removeFirst()
            }
            guard let segment = next else { return }
            let stem = (segment.path as NSString).deletingPathExtension
            let picture = stem + "-waveform.png", peaks = stem + "-waveform.json"
            do {
                var settings = Waveform.Settings()
                settings.width = max(16, min(16_384, Int((segment.duration * 20).rounded())))
                let wave = try Waveform.make(path: segment.path, settings: settings)
                try SafeFiles.create(picture, contents: Data(try wave.png()))
                try SafeFiles.create(peaks, contents: Data(wave.peaksJSON.utf8))
                events(.waveform(SegmentWaveform(segment: segment.index, path: picture, peaks: peaks, width: wave.minimums.count,
                                                 peakDB: wave.peakDBFS)))
            } catch {
                events(.waveformFailed(message: "segment \(segment.index) (\(segment.path)): \(error)"))
            }
        }
    }
}

/// A finished segment's waveform.
public struct SegmentWaveform: Sendable, Encodable {
    public var segment: Int
    public var path: String
    public var peaks: String
    public var width: Int
    /// The loudest sample in dBFS (nil: silence).
    public var peakDB: Double?
}

import Foundation
import MediaCore
import MediaImage
import SafeFiles

/// A waveform of each finished segment's sound, drawn on a thread of its own as segments close (never
/// in the recording's way): `<segment>-waveform.png` beside it and its peaks as `<segment>-waveform.json`
/// (audiowaveform's format), never over a file; one `waveform` event each.
final class SegmentWaveforms: @unchecked Sendable {  // unchecked: every field behind `condition`, which the drawing thread waits on
    private let events: @Sendable (CaptureEvent) -> Void
    private let condition = NSCondition()
    private var queue: [SegmentReport] = []
    private var finished = false
    private var done = false

    init(events: @escaping @Sendable (CaptureEvent) -> Void) {
        self.events = events
        let thread = Thread { [self] in run() }
        thread.name = "mediafarm-segment-waveforms"
        thread.start()
    }

    func segmentClosed(_ report: SegmentReport) {
        condition.lock()
        queue.append(report)
        condition.broadcast()
        condition.unlock()
    }

    /// Draws what waits, then stops.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        while !done { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !finished { condition.wait() }
            guard !queue.isEmpty else {
                done = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let segment = queue.removeFirst()
            condition.unlock()
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

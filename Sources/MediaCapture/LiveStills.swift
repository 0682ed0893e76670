import Foundation
import MediaCore
import MediaTime
import SafeFiles

/// Where a live recording's decoded pictures go besides the recording: live scanning, stills. Each takes
/// a reference to the picture and does its work on threads of its own, never delaying the recording.
protocol LivePictureSink: AnyObject, Sendable {
    func submit(_ frame: borrowing Frame, time: MediaTime, arrival: Date)
    /// Pictures that never reached the sinks (dropped before decoding).
    func countNotScanned(_ n: Int)
}

/// Hands each picture to several sinks.
final class LivePictureFan: LivePictureSink {
    let sinks: [any LivePictureSink]
    init(_ sinks: [any LivePictureSink]) { self.sinks = sinks }

    /// One sink itself, several through a fan, none nil.
    static func of(_ sinks: [(any LivePictureSink)?]) -> (any LivePictureSink)? {
        let present = sinks.compactMap { $0 }
        return present.count > 1 ? LivePictureFan(present) : present.first
    }

    func submit(_ frame: borrowing Frame, time: MediaTime, arrival: Date) {
        for sink in sinks { sink.submit(frame, time: time, arrival: arrival) }
    }

    func countNotScanned(_ n: Int) {
        for sink in sinks { sink.countNotScanned(n) }
    }
}

/// A still written while recording (AVCaptureStillImageOutput).
public struct StillReport: Sendable, Encodable {
    public var index: Int
    public var path: String
    /// Capture time of the picture (seconds from the recording's first packet), and when it arrived.
    public var time: Double
    public var wallClock: Date
    public var width: Int
    public var height: Int
    /// "every" (`--still-every`) or "request" (SIGUSR1, the API).
    public var reason: String
}

/// Stills of a live recording: the first picture at or after each multiple of `every` seconds of capture
/// time, and the next picture after each `request()`, written beside the segments as
/// `<captureID>-still-<n>.jpg` (never over a file) with the capture time and the source in their EXIF
/// (`DateTimeOriginal` with its milliseconds, UTC; `ImageDescription`). The picture waits in a one-picture
/// slot for the encoding thread: a still that is not encoded before the next one is due is replaced by it.
final class LiveStills: LivePictureSink, Sendable {
    private final class Picture {
        var frame = Frame()
        let time: MediaTime
        let arrival: Date
        let reason: String
        init(time: MediaTime, arrival: Date, reason: String) { (self.time, self.arrival, self.reason) = (time, arrival, reason) }
    }

    private struct State {
        var next: MediaTime = .zero
        var requested = false
        var slot: Picture?
        var finished = false
        var done = false
        var written = 0
    }

    private let every: MediaTime?
    private let folder: String
    private let captureID: String
    private let source: String
    private let events: @Sendable (CaptureEvent) -> Void
    private let state = Guarded(State())

    init(every: Double?, folder: String, captureID: String, source: String, events: @escaping @Sendable (CaptureEvent) -> Void) {
        self.every = every.map { MediaTime(value: Int64(($0 * 1000).rounded()), timescale: 1000) }
        (self.folder, self.captureID, self.source, self.events) = (folder, captureID, source, events)
        let thread = Thread { [self] in run() }
        thread.name = "mediafarm-live-stills"
        thread.start()
    }

    /// The next picture becomes a still.
    func request() {
        state.withLock { $0.requested = true }
    }

    func submit(_ frame: borrowing Frame, time: MediaTime, arrival: Date) {
        let every = self.every
        state.withLock { s in
            let due = every.map { _ in time >= s.next } ?? false
            guard due || s.requested else { return }
            let picture = Picture(time: time, arrival: arrival, reason: due ? "every" : "request")
            guard (try? picture.frame.reference(frame)) != nil else { return }  // a frame that cannot be kept makes no still; the next due one does
            if due, let every {
                // The next multiple after this picture's time: a late picture does not make several stills.
                while s.next <= time { s.next = s.next + every }
            } else {
                s.requested = false
            }
            s.slot = picture
        }
    }

    func countNotScanned(_ n: Int) {}

    /// Writes what waits, then stops; how many stills were written.
    @discardableResult
    func finish() -> Int {
        state.withLock { $0.finished = true }
        return state.wait(until: { $0.done }, then: { $0.written })
    }

    private func run() {
        let converter = PictureConverter()
        var samples = Frame()
        while true {
            let next: (picture: Picture, index: Int)? = state.wait(until: { $0.slot != nil || $0.finished }) { s in
                guard let picture = s.slot else {
                    s.done = true
                    return nil
                }
                s.slot = nil
                return (picture, s.written + 1)
            }
            guard let (picture, index) = next else { return }
            let path = folder + "/" + captureID + "-still-" + String(format: "%04d", index) + ".jpg"
            do {
                try converter.jpegSamples(picture.frame, width: picture.frame.width, height: picture.frame.height, into: &samples)
                let jpeg = try StillImageEncoder.encode(samples, as: .jpeg, quality: 0.9, converter: converter)
                let stamped = ExifStamp(date: picture.arrival, description: "\(source) at \(MediaTime.formatSeconds(picture.time.seconds)) s of capture \(captureID)")
                    .inserted(into: jpeg) ?? jpeg
                try SafeFiles.create(path, contents: Data(stamped))
                state.withLock { $0.written += 1 }
                events(.still(StillReport(index: index, path: path, time: picture.time.seconds, wallClock: picture.arrival,
                                          width: picture.frame.width, height: picture.frame.height, reason: picture.reason)))
            } catch {
                events(.stillFailed(message: "\(path): \(error)"))
            }
        }
    }
}

import CodeScan
import Foundation
import MediaCore
import MediaTime

/// A code as live scanning reports it (AVCaptureMetadataOutput's metadata objects): when it appears
/// (`code`) and when it has not been seen for a second (`codeGone`).
public struct CodeSighting: Sendable {
    public var symbology: Symbology
    public var payload: String?
    public var payloadBytes: [UInt8]
    /// Capture time of the picture it was seen in (the first for `code`, the last for `codeGone`).
    public var time: MediaTime
    /// When that picture arrived from the source.
    public var wallClock: Date
    public var corners: [CodePoint]
    /// From the picture's arrival to the event (for `codeGone`, the first picture a second after the
    /// last sighting).
    public var latency: Double
    /// For `codeGone`: first and last sighting, in how many scanned pictures.
    public var firstTime: MediaTime?
    public var frames: Int?
}

/// How much of the picture stream live scanning saw.
public struct LiveScanSummary: Sendable, Codable {
    public var framesScanned: Int
    /// Pictures not scanned because the scanner was still busy with an earlier one (the recording
    /// keeps every picture; scanning takes fewer under load).
    public var framesNotScanned: Int
    /// Distinct codes seen.
    public var codes: Int
}

/// Scans a live recording's pictures on threads of its own, never delaying the recording: the newest
/// picture waits in a one-picture slot while the scanner is busy, replacing (and counting) an unscanned
/// older one. Codes are reported as they appear and go; each finished segment is handed back with the
/// codes seen in it once the scanner has passed its end (or a second after it closed, whichever comes
/// first). Copied (compressed) video is decoded on a thread of its own first (`Feed`).
final class LiveScanner: LivePictureSink, Sendable {
    private final class Picture {
        var frame = Frame()
        let time: MediaTime
        let arrival: Date
        init(time: MediaTime, arrival: Date) { self.time = time; self.arrival = arrival }
    }

    private struct Key: Hashable { var symbology: Symbology; var bytes: [UInt8] }
    private struct Active { var first: DetectedCode; var last: DetectedCode; var frames: Int; var lastArrival: Date }
    private struct PendingSegment { var report: SegmentReport; var closed: Date; var deliver: (SegmentReport) -> Void }

    /// What the recording's threads and the scanning thread share.
    private struct Shared {
        var slot: Picture?
        var finished = false
        var scanned = 0
        var notScanned = 0
        var progress: MediaTime?
        var pending: [PendingSegment] = []
        var done = false
        /// Distinct codes seen.
        var codes = 0

        /// The oldest closed segment is due: waited long enough, or the scanner has passed its end.
        var hasDuePending: Bool {
            guard let first = pending.first else { return false }
            return Date().timeIntervalSince(first.closed) >= LiveScanner.segmentWait || isPast(first.report)
        }

        /// The scanner has seen the segment's last picture (within half a 30 fps frame).
        func isPast(_ report: SegmentReport) -> Bool {
            guard let progress else { return false }
            return progress.seconds >= report.start + report.duration - 0.05
        }
    }

    /// The scanning thread's own: codes on screen, codes ever seen, detections not yet reported with a segment.
    private struct Tracking {
        var active: [Key: Active] = [:]
        var seen: Set<Key> = []
        var sightings: [(time: MediaTime, codes: [DetectedCode])] = []
    }

    /// A code unseen this long is gone.
    static let goneAfter = MediaTime(value: 1, timescale: 1)
    /// A closed segment waits at most this long for the scanner.
    static let segmentWait = 1.0

    private let events: @Sendable (CaptureEvent) -> Void
    private let shared = Guarded(Shared())

    init(configuration: CodeScanner.Configuration, events: @escaping @Sendable (CaptureEvent) -> Void) {
        self.events = events
        let thread = Thread { [self] in run(CodeScanner(configuration)) }
        thread.name = "mediafarm-live-scan"
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Offers a picture shown at capture time `time`: it is scanned if the scanner gets to it before the
    /// next picture arrives. Takes a reference (no pixel copy).
    func submit(_ frame: borrowing Frame, time: MediaTime, arrival: Date) {
        let picture = Picture(time: time, arrival: arrival)
        guard (try? picture.frame.reference(frame)) != nil else { return }  // a frame that cannot be kept is skipped, counted as dropped
        shared.withLock { s in
            if s.slot != nil { s.notScanned += 1 }
            s.slot = picture
        }
    }

    /// Counts pictures that never reached the scanner (dropped before decoding).
    func countNotScanned(_ n: Int) {
        shared.withLock { $0.notScanned += n }
    }

    /// Hands `report` to `deliver` with the codes seen in it, once the scanner has passed its end.
    func segmentClosed(_ report: SegmentReport, deliver: @escaping (SegmentReport) -> Void) {
        shared.withLock { $0.pending.append(PendingSegment(report: report, closed: Date(), deliver: deliver)) }
    }

    /// Scans what waits, reports every code still seen as gone and every waiting segment; then stops.
    func finish() -> LiveScanSummary {
        shared.withLock { $0.finished = true }
        return shared.wait(until: { $0.done }) { s in
            LiveScanSummary(framesScanned: s.scanned, framesNotScanned: s.notScanned, codes: s.codes)
        }
    }

    private func run(_ scanner: CodeScanner) {
        var tracking = Tracking()
        while true {
            // The next picture (or none), and whether to stop; checked again every 0.1 s for segments come due.
            var next: (picture: Picture?, stop: Bool)?
            while next == nil {
                next = shared.wait(until: { $0.slot != nil || $0.finished || $0.hasDuePending }, deadline: Date().addingTimeInterval(0.1)) { s, ready in
                    guard ready else { return nil }
                    let picture = s.slot
                    s.slot = nil
                    return (picture, s.finished && picture == nil)
                }
            }
            let (picture, stop) = next!
            if let picture {
                let codes = (try? scanner.scan(picture.frame, at: picture.time)) ?? []  // a frame the scanner cannot read has no codes
                track(codes, at: picture.time, arrival: picture.arrival, in: &tracking)
                let seen = tracking.seen.count
                shared.withLock { s in
                    s.scanned += 1
                    s.progress = MediaTime.max(s.progress ?? picture.time, picture.time)
                    s.codes = seen
                }
            }
            deliverDue(all: stop, sightings: &tracking.sightings)
            if stop {
                for (_, a) in tracking.active { gone(a, provenAt: Date()) }
                tracking.active.removeAll()
                shared.withLock { $0.done = true }
                return
            }
        }
    }

    private func deliverDue(all: Bool, sightings: inout [(time: MediaTime, codes: [DetectedCode])]) {
        let due: [PendingSegment] = shared.withLock { s in
            var due: [PendingSegment] = []
            while let first = s.pending.first, all || Date().timeIntervalSince(first.closed) >= Self.segmentWait || s.isPast(first.report) {
                due.append(s.pending.removeFirst())
            }
            return due
        }
        for segment in due {
            let start = segment.report.start, end = segment.report.start + segment.report.duration
            var merged = CodeAggregator()
            for s in sightings where s.time.seconds >= start && s.time.seconds < end { merged.add(s.codes) }
            sightings.removeAll { $0.time.seconds < end }
            var report = segment.report
            report.codes = merged.codes
            segment.deliver(report)
        }
    }

    private func track(_ codes: [DetectedCode], at time: MediaTime, arrival: Date, in tracking: inout Tracking) {
        if !codes.isEmpty { tracking.sightings.append((time, codes)) }
        var thisFrame: Set<Key> = []
        for code in codes {
            let key = Key(symbology: code.symbology, bytes: code.payloadBytes)
            guard thisFrame.insert(key).inserted else { continue }
            if var a = tracking.active[key] {
                a.last = code
                a.frames += 1
                a.lastArrival = arrival
                tracking.active[key] = a
            } else {
                tracking.active[key] = Active(first: code, last: code, frames: 1, lastArrival: arrival)
                tracking.seen.insert(key)
                events(.code(CodeSighting(symbology: code.symbology, payload: code.payload, payloadBytes: code.payloadBytes,
                                          time: time, wallClock: arrival, corners: code.corners,
                                          latency: Date().timeIntervalSince(arrival))))
            }
        }
        for (key, a) in tracking.active where time - a.last.time >= Self.goneAfter {
            tracking.active[key] = nil
            gone(a, provenAt: arrival)
        }
    }

    /// `provenAt`: when the picture that showed the code gone arrived (the latency runs from there).
    private func gone(_ a: Active, provenAt: Date) {
        events(.codeGone(CodeSighting(symbology: a.last.symbology, payload: a.last.payload, payloadBytes: a.last.payloadBytes,
                                      time: a.last.time, wallClock: a.lastArrival, corners: a.last.corners,
                                      latency: Date().timeIntervalSince(provenAt), firstTime: a.first.time, frames: a.frames)))
    }

    /// Decodes a copied video stream on a thread of its own and offers its pictures to the scanner.
    /// Packets wait in a bounded queue; when it is full (decoding falls behind), packets are dropped up
    /// to the next keyframe and counted as pictures not scanned. One per connection to the source.
    final class Feed: @unchecked Sendable {  // unchecked: its packets behind `condition`, which the decoding thread waits on
        private let scanner: any LivePictureSink
        private let decoder: Decoder
        private let timeBase: Rational
        /// Source time → capture time.
        private let origin: MediaTime, offset: MediaTime
        private let condition = NSCondition()
        private var queue: [(PacketBox, Date)] = []
        private var ended = false
        private var running = true
        private var dropping = false
        static let capacity = 90

        init(scanner: any LivePictureSink, input: InputFile, stream: Int, origin: MediaTime, offset: MediaTime) throws(MediaFileError) {
            self.scanner = scanner
            decoder = try Decoder(file: input, streamIndex: stream, threads: 1)
            timeBase = input.streams[stream].timeBase
            self.origin = origin
            self.offset = offset
            let thread = Thread { [self] in run() }
            thread.name = "mediafarm-live-decode"
            thread.start()
        }

        /// Queues a new reference to `packet`.
        func submit(_ packet: borrowing Packet, arrival: Date) {
            condition.lock()
            defer { condition.unlock() }
            if dropping && packet.isKeyframe && queue.count < Self.capacity / 2 { dropping = false }
            if !dropping && queue.count >= Self.capacity { dropping = true }
            if dropping {
                scanner.countNotScanned(1)
                return
            }
            let box = PacketBox()
            box.packet.reference(packet)
            queue.append((box, arrival))
            condition.broadcast()
        }

        /// Decodes what is queued, then stops (the connection ended).
        func finish() {
            condition.lock()
            ended = true
            condition.broadcast()
            while running { condition.wait() }
            condition.unlock()
        }

        private func run() {
            var frame = Frame()
            defer {
                condition.lock()
                running = false
                condition.broadcast()
                condition.unlock()
            }
            while true {
                condition.lock()
                while queue.isEmpty && !ended { condition.wait() }
                guard !queue.isEmpty else { condition.unlock(); break }
                let (box, arrival) = queue.removeFirst()
                condition.unlock()
                do {
                    while try decoder.send(box.packet) == .full { try drain(&frame, arrival: arrival) }
                    try drain(&frame, arrival: arrival)
                } catch {
                    continue   // a damaged packet: its pictures are not scanned; the recording has them
                }
            }
            try? decoder.sendEndOfStream()  // draining at the end: nothing more to decode
            try? drain(&frame, arrival: Date())  // as above
        }

        private func drain(_ frame: inout Frame, arrival: Date) throws(FFmpegError) {
            while try decoder.receive(into: &frame) == .frame {
                guard let pts = frame.pts else { continue }
                let time = MediaTime(count: pts, timeBase: timeBase)
                guard time >= origin else { continue }
                scanner.submit(frame, time: offset + (time - origin), arrival: arrival)
            }
        }
    }
}

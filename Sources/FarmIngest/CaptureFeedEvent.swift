import Foundation

/// What a capture's queue feeder, and its salvage of what earlier recordings left, report: one line each
/// of `mediafarm capture`'s output. One Codable type with one encoding (`json`: sorted keys, absent values
/// left out), and its line for people (`line`).
public struct CaptureFeedEvent: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable {
        case notice, error, enqueued, assembly, salvaged, quarantined
    }

    public var event: Kind
    public var message: String?
    public var captureID: String?
    /// The segment's (enqueued, salvaged, quarantined).
    public var index: Int?
    /// The job queued for it, and whether it was queued now (false: it was queued already).
    public var job: Int64?
    public var queued: Bool?
    /// From the segment's end to its job queued.
    public var latencyMs: Double?
    public var path: String?
    public var duration: Double?
    public var packets: Int?
    /// An assembly's segments (first to last index, how many), and how many jobs it waits for.
    public var first: Int?
    public var last: Int?
    public var segments: Int?
    public var after: Int?
    public var gaps: [CaptureAssembly.Gap]?

    init(_ event: Kind, message: String? = nil) {
        self.event = event
        self.message = message
    }

    static func notice(_ message: String) -> CaptureFeedEvent { CaptureFeedEvent(.notice, message: message) }
    static func error(_ message: String) -> CaptureFeedEvent { CaptureFeedEvent(.error, message: message) }

    static func enqueued(captureID: String, index: Int, job: Int64, queued: Bool, latencyMs: Double) -> CaptureFeedEvent {
        var e = CaptureFeedEvent(.enqueued)
        (e.captureID, e.index, e.job, e.queued, e.latencyMs) = (captureID, index, job, queued, latencyMs)
        return e
    }

    static func assembly(_ assembly: CaptureAssembly, job: Int64, queued: Bool, after: Int) -> CaptureFeedEvent {
        var e = CaptureFeedEvent(.assembly)
        (e.captureID, e.job, e.queued, e.first, e.last) = (assembly.captureID, job, queued, assembly.first, assembly.last)
        (e.segments, e.after, e.duration) = (assembly.segments.count, after, assembly.duration)
        e.gaps = assembly.gaps
        return e
    }

    static func salvaged(captureID: String, index: Int, path: String, duration: Double, packets: Int) -> CaptureFeedEvent {
        var e = CaptureFeedEvent(.salvaged)
        (e.captureID, e.index, e.path, e.duration, e.packets) = (captureID, index, path, duration, packets)
        return e
    }

    static func quarantined(captureID: String, index: Int, path: String, message: String) -> CaptureFeedEvent {
        var e = CaptureFeedEvent(.quarantined, message: message)
        (e.captureID, e.index, e.path) = (captureID, index, path)
        return e
    }

    /// The event as one line of JSON.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"  // strings and numbers: always encodes
    }

    /// The event as a line for people: "segment 3: job 12", "assembly of cam (segments 1-6, 10.000 s): job 7; a gap of …".
    public var line: String {
        switch event {
        case .enqueued:
            return "segment \(index ?? 0): job \(job ?? 0)" + (queued == false ? " (already queued)" : "")
        case .assembly:
            var line = String(format: "assembly of %@ (segments %d-%d, %.3f s): job %lld", captureID ?? "?", first ?? 0, last ?? 0,
                              duration ?? 0, job ?? 0)
            if queued == false { line += " (already queued)" }
            for gap in gaps ?? [] {
                line += String(format: "; a gap of %.3f s at %.3f s (before segment %d)", gap.duration, gap.at, gap.beforeSegment)
            }
            return line
        case .salvaged:
            return "salvaged segment \(index ?? 0) of \(captureID ?? "?"): \(path ?? "")"
        case .notice, .error, .quarantined:
            return message ?? event.rawValue
        }
    }
}

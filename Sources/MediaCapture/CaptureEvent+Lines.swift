import Foundation

extension CaptureEvent {
    /// The event as one line of JSON (`mediafarm capture --json`): an `event` key naming its kind, its
    /// fields, keys sorted. Each kind has one Encodable shape.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        // Every shape holds strings, numbers and dates only: it always encodes.
        func encoded(_ value: some Encodable) -> String { (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}" }
        // A segment's and a summary's own encoding, with the event's kind first.
        func tagged(_ kind: String, _ value: some Encodable) -> String { "{\"event\":\"\(kind)\"," + encoded(value).dropFirst() }
        switch self {
        case let .started(id, source, streams): return encoded(Started(captureID: id, source: source, streams: streams))
        case .segment(let report): return tagged("segment", report)
        case let .sourceLost(message, until): return encoded(SourceLost(message: message, reconnectUntil: ISO8601DateFormatter().string(from: until)))
        case .reconnected(let gap): return encoded(Reconnected(gap: gap))
        case .code(let code): return encoded(CodeLine(code, gone: false))
        case .codeGone(let code): return encoded(CodeLine(code, gone: true))
        case .still(let still): return tagged("still", still)
        case .stillFailed(let message): return encoded(StillFailed(message: message))
        case .levels(let levels): return tagged("levels", levels)
        case .waveform(let waveform): return tagged("waveform", waveform)
        case .waveformFailed(let message): return encoded(WaveformFailed(message: message))
        case .finished(let summary): return tagged("finished", summary)
        }
    }

    /// The event as a line for people.
    public var line: String {
        switch self {
        case let .started(id, source, streams):
            return "capture \(id): recording \(source) (\(streams.joined(separator: ", ")))"
        case .segment(let report):
            return String(format: "segment %d: %@ (%.3f s from %.3f s, %lld bytes)", report.index, report.path, report.duration, report.start, report.bytes)
                + (report.gapBefore.map { String(format: ", after a gap of %.3f s", $0) } ?? "")
                + (report.codes.map { codes in ", codes: " + (codes.isEmpty ? "none" : codes.map { $0.payload ?? $0.symbology.rawValue }.joined(separator: ", ")) } ?? "")
        case let .sourceLost(message, until):
            return "source lost: \(message); reconnecting until \(ISO8601DateFormatter().string(from: until))"
        case .reconnected(let gap):
            return String(format: "reconnected after %.3f s", gap)
        case .code(let code), .codeGone(let code):
            let payload = code.payload.map { "\"\($0)\"" } ?? "\(code.payloadBytes.count) bytes"
            if case .codeGone = self {
                return String(format: "code gone: %@ %@ (%.3f-%.3f s, %d frames)", code.symbology.rawValue, payload,
                              code.firstTime?.seconds ?? code.time.seconds, code.time.seconds, code.frames ?? 0)
            }
            return String(format: "code: %@ %@ at %.3f s (%.1f ms after the picture arrived)", code.symbology.rawValue, payload,
                          code.time.seconds, code.latency * 1000)
        case .still(let still):
            return String(format: "still %d: %@ (%dx%d, at %.3f s)", still.index, still.path, still.width, still.height, still.time)
        case .stillFailed(let message):
            return "still not written: \(message)"
        case .levels(let levels):
            return String(format: "levels at %.3f s: average %.1f dB, peak %.1f dB", levels.time, levels.averageDB, levels.peakDB)
        case .waveform(let waveform):
            return "waveform of segment \(waveform.segment): \(waveform.path)"
        case .waveformFailed(let message):
            return "waveform not drawn: \(message)"
        case .finished(let summary):
            return "capture \(summary.captureID) finished: \(summary.reason.rawValue), \(summary.segments) segments, "
                + String(format: "%.1f s", summary.duration) + (summary.message.map { ": \($0)" } ?? "")
        }
    }
}

private struct Started: Encodable {
    let event = "started"
    var captureID: String
    var source: String
    var streams: [String]
}

private struct SourceLost: Encodable {
    let event = "sourceLost"
    var message: String
    var reconnectUntil: String
}

private struct WaveformFailed: Encodable {
    let event = "waveformFailed"
    var message: String
}

private struct StillFailed: Encodable {
    let event = "stillFailed"
    var message: String
}

private struct Reconnected: Encodable {
    let event = "reconnected"
    var gap: Double
}

/// A code seen (`code`) or gone from the picture (`codeGone`, with when it was first and last seen).
private struct CodeLine: Encodable {
    enum Keys: String, CodingKey {
        case event, symbology, payload, payloadBase64, time, wallClock, latencyMs, corners, firstTime, lastTime, frames
    }

    let code: CodeSighting
    let gone: Bool

    init(_ code: CodeSighting, gone: Bool) {
        self.code = code
        self.gone = gone
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(gone ? "codeGone" : "code", forKey: .event)
        try c.encode(code.symbology.rawValue, forKey: .symbology)
        // null, not absent, when the payload is no text: its bytes are in payloadBase64.
        if let payload = code.payload { try c.encode(payload, forKey: .payload) } else { try c.encodeNil(forKey: .payload) }
        try c.encode(Data(code.payloadBytes).base64EncodedString(), forKey: .payloadBase64)
        try c.encode(code.time.seconds, forKey: .time)
        try c.encode(code.wallClock.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)), forKey: .wallClock)
        try c.encode((code.latency * 10_000).rounded() / 10, forKey: .latencyMs)
        try c.encode(code.corners.map { [$0.x, $0.y] }, forKey: .corners)
        if gone {
            try c.encode(code.firstTime?.seconds ?? code.time.seconds, forKey: .firstTime)
            try c.encode(code.time.seconds, forKey: .lastTime)
            try c.encode(code.frames ?? 0, forKey: .frames)
        }
    }
}

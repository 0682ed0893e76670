import Foundation
import FarmModel
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// swift-log handler writing one JSON object per line on stderr: what log collectors (journald, Loki,
/// a container runtime) read when stderr is not a terminal. Fields: at (ISO 8601, ms), level, label,
/// message, and the metadata as strings.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    private static let lock = NSLock()

    init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let (level, message, extra) = (event.level, event.message, event.metadata)
        var object: [String: Any] = ["at": Self.timestamp(), "level": level.rawValue, "label": label, "message": message.description]
        let all = metadata.merging(extra ?? [:]) { $1 }
        if !all.isEmpty { object["metadata"] = all.mapValues { $0.description } }
        if let error = event.error { object["error"] = "\(error)" }
        // strings only: always encodes
        guard var data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        data.append(UInt8(ascii: "\n"))
        Self.lock.withLock { FileHandle.standardError.write(data) }
    }

    static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    /// JSON lines unless stderr is a terminal (MEDIAFARM_LOG_FORMAT=json|text decides otherwise).
    static var wanted: Bool {
        switch ProcessInfo.processInfo.environment["MEDIAFARM_LOG_FORMAT"] {
        case "json": true
        case "text": false
        default: isatty(STDERR_FILENO) != 1
        }
    }
}

/// swift-log's text handler with the message and metadata escaped as `UserText` does: a value quoted in a
/// log line (a job's name, a path) cannot start a line of its own or act on the terminal.
struct PrintableLogHandler: LogHandler {
    var wrapped: StreamLogHandler

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(UserText.printable(event.message.description))"
        event.metadata = event.metadata?.mapValues { .string(UserText.printable($0.description)) }
        wrapped.log(event: event)
    }
}

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where files that cannot be used are set aside with the reason: ingest's bad files and capture's
/// unreadable segments. A file keeps its name when it is free; else a number is added before its
/// extension (`C0001-2.MP4`). Nothing already in the folder is ever replaced: names are taken with moves
/// that refuse to replace (`SafeFiles.move`), so two writers at once each get their own name.
/// Beside each file, `NAME.reason.json` records where it came from and why.
public struct QuarantineFolder: Sendable {
    public let path: String

    public init(_ path: String) {
        self.path = path
    }

    /// Why a file could not be set aside (it is then where it was).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let file: String
        public let reason: String
        public var description: String { "\(file): cannot move it into quarantine: \(reason)" }
    }

    /// Moves `file` into the folder (copying across file systems) and writes its reason file. Returns the
    /// path it has now. `name` is the name it should get (default: its own); `details` are added to the
    /// reason file.
    @discardableResult
    public func place(_ file: String, name: String? = nil, reason: String, details: [String: String] = [:],
                      at date: Date = Date()) throws(Failure) -> String {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Failure(file: file, reason: "cannot make the folder \(path): \((error as NSError).localizedDescription)")
        }
        let wanted = name ?? (file as NSString).lastPathComponent
        var target = ""
        for attempt in 1...1000 {
            let candidate = path + "/" + Self.numbered(wanted, attempt)
            // A name whose reason file is left from before is not taken either.
            if FileManager.default.fileExists(atPath: candidate + Self.reasonSuffix) { continue }
            do {
                try SafeFiles.moveAcrossDevices(file, to: candidate)
                target = candidate
                break
            } catch where error.targetExists {
                continue
            } catch {
                throw Failure(file: file, reason: String(cString: strerror(error.code)))
            }
        }
        guard !target.isEmpty else { throw Failure(file: file, reason: "a thousand files of that name are there already") }
        var record = details
        record["file"] = file
        record["quarantined"] = target
        record["reason"] = reason
        record["at"] = ISO8601DateFormatter().string(from: date)
        let data = (try? JSONSerialization.data(withJSONObject: record, options: [.prettyPrinted, .sortedKeys])) ?? Data()  // strings only: always encodes
        do {
            try SafeFiles.create(target + Self.reasonSuffix, contents: data)
        } catch {
            throw Failure(file: file, reason: "moved to \(target), but its reason file could not be written: \(error)")
        }
        return target
    }

    static let reasonSuffix = ".reason.json"

    /// `name` for the first attempt, then `stem-N.ext`.
    static func numbered(_ name: String, _ attempt: Int) -> String {
        guard attempt > 1 else { return name }
        let ext = (name as NSString).pathExtension
        let stem = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
        return ext.isEmpty ? "\(stem)-\(attempt)" : "\(stem)-\(attempt).\(ext)"
    }
}

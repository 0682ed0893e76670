import FarmModel
import FarmStore
import Foundation
import SafeFiles

/// What `library verify` found on this host.
public struct VerifyReport: Sendable, Hashable, Codable {
    public struct Item: Sendable, Hashable, Codable {
        public var id: AssetID
        public var path: String
        /// The asset now at the path (changed content that is media).
        public var now: AssetID?
        public var reason: String
    }

    public var host: String
    public var checked: Int
    /// Files whose stamp changed but whose content did not (touched, copied back): stamps updated.
    public var restamped: Int
    public var missing: [Item]
    public var changed: [Item]

    public var clean: Bool { missing.isEmpty && changed.isEmpty }
}

extension AssetLibrary {
    /// Looks at every file this host registered: a file that is gone is marked missing; one whose size,
    /// modification time or inode changed is hashed again (same content: its stamp is updated; other
    /// content: a new asset at that path, and the old one missing here). Nothing is silently forgotten.
    public func verify(progress: (@Sendable (Int, Int) -> Void)? = nil) async throws(LibraryError) -> VerifyReport {
        try access.requireFull("verify the library")
        let host = host
        let rows = try await read { s in
            try await s.rows("SELECT asset_id, path, size, mtime, inode, device FROM asset_locations WHERE host = ? AND state = 'present' ORDER BY path",
                             [.text(host)])
        }
        var report = VerifyReport(host: host, checked: rows.count, restamped: 0, missing: [], changed: [])
        for (index, row) in rows.enumerated() {
            progress?(index + 1, rows.count)
            guard let id = row[0].string.flatMap(AssetID.init), let path = row[1].string else { continue }
            let registered = FileStamp(row, from: 2)
            guard let stamp = FileStamp(path: path) else {
                try await mark(id, path: path, state: "missing", kind: .locationMissing, detail: "no file there any more")
                report.missing.append(.init(id: id, path: path, now: nil, reason: "no file there any more"))
                continue
            }
            if stamp == registered { continue }
            let hash: ContentHash
            do {
                hash = try await ContentHash.reading(path)
            } catch {
                report.missing.append(.init(id: id, path: path, now: nil, reason: error.reasonOnly))
                try await mark(id, path: path, state: "missing", kind: .locationMissing, detail: error.reasonOnly)
                continue
            }
            if hash.id == id {
                let time = now()
                try await write { s in
                    try await s.execute("UPDATE asset_locations SET size = ?, mtime = ?, inode = ?, device = ?, seen_at = ? WHERE asset_id = ? AND host = ? AND path = ?",
                                        [.integer(stamp.size), .real(stamp.mtime), .integer(stamp.inode), .integer(stamp.device), SQLValue(time),
                                         .text(id.rawValue), .text(host), .text(path)])
                }
                report.restamped += 1
                continue
            }
            do {
                _ = try await record(hash, at: path, stamp: stamp, album: nil)
                report.changed.append(.init(id: id, path: path, now: hash.id, reason: "other content is there now: asset \(hash.id)"))
            } catch let error where error.isPerFile {
                try await mark(id, path: path, state: "changed", kind: .locationChanged, detail: "other content, \(error.reasonOnly)")
                report.changed.append(.init(id: id, path: path, now: nil, reason: "other content is there now, \(error.reasonOnly)"))
            }
        }
        return report
    }

    func mark(_ id: AssetID, path: String, state: String, kind: LibraryChange.Kind, detail: String) async throws(LibraryError) {
        let time = now()
        let host = host
        try await write { s in
            try await s.execute("UPDATE asset_locations SET state = ?, seen_at = ? WHERE asset_id = ? AND host = ? AND path = ?",
                                [.text(state), SQLValue(time), .text(id.rawValue), .text(host), .text(path)])
            try await record(s, kind, asset: id, path: path, detail: detail, at: time)
        }
    }
}

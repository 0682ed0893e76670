import FarmModel
import FarmStore
import Foundation
import SafeFiles

/// Where an id is on this host (PHCloudIdentifierMapping): one answer per id, never a guess.
public struct Resolution: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Hashable, Codable {
        /// One file on this host: `paths[0]`.
        case found
        /// Several files on this host hold it: all in `paths`.
        case several
        /// It was on this host and is no longer (removed, or its content changed): `paths` where it was.
        case missing
        /// Known, on other hosts only (`hosts`).
        case notOnThisHost
        /// Not in the library (or not visible to a scoped token).
        case unknown
    }

    public var id: AssetID
    public var status: Status
    public var paths: [String]
    public var hosts: [String]
    public var reason: String?

    public init(id: AssetID, status: Status, paths: [String], hosts: [String], reason: String?) {
        self.id = id
        self.status = status
        self.paths = paths
        self.hosts = hosts
        self.reason = reason
    }

    /// The one path, or an error saying why there is not one.
    public func path(host: String) throws(LibraryError) -> String {
        switch status {
        case .found: return paths[0]
        case .several: throw .invalid("asset \(id) is at several paths on \(host): \(paths.joined(separator: ", ")); remove all but one (`library forget`)")
        case .missing: throw .invalid("asset \(id) is missing on \(host): \(reason ?? "gone") (was \(paths.joined(separator: ", ")))")
        case .notOnThisHost: throw .invalid("asset \(id) is not on \(host) (it is on \(hosts.joined(separator: ", ")))")
        case .unknown: throw .unknownAsset(id)
        }
    }
}

extension AssetLibrary {
    /// Maps each id to this host's path(s). A registered file that is gone, or whose size, modification
    /// time or inode changed since, is reported missing (`library verify` hashes it again).
    public func resolve(_ ids: [AssetID]) async throws(LibraryError) -> [Resolution] {
        let unique = Array(Set(ids))
        var known: Set<AssetID> = []
        var locations: [AssetID: [(host: String, path: String, state: String, stamp: FileStamp, etag: String?)]] = [:]
        let access = access
        for chunk in stride(from: 0, to: unique.count, by: 500).map({ Array(unique[$0..<min($0 + 500, unique.count)]) }) {
            let binds = chunk.map { SQLValue.text($0.rawValue) }
            let scope = access.filter("a.id")
            let rows = try await read { s in
                let visible = try await s.rows("SELECT a.id FROM assets a WHERE a.id IN (\(Self.marks(chunk.count)))"
                                               + (scope.map { " AND \($0.sql)" } ?? ""), binds + (scope?.binds ?? []))
                let places = try await s.rows("""
                    SELECT asset_id, host, path, state, size, mtime, inode, device, etag FROM asset_locations
                    WHERE asset_id IN (\(Self.marks(chunk.count))) ORDER BY path
                    """, binds)
                return (visible, places)
            }
            for row in rows.0 { if let id = row[0].string.flatMap(AssetID.init) { known.insert(id) } }
            for row in rows.1 {
                guard let id = row[0].string.flatMap(AssetID.init), known.contains(id) else { continue }
                locations[id, default: []].append((row[1].string ?? "", row[2].string ?? "", row[3].string ?? "",
                                                   FileStamp(row, from: 4), row[8].string))
            }
        }
        var resolutions: [Resolution] = []
        for id in ids {
            guard known.contains(id) else {
                resolutions.append(Resolution(id: id, status: .unknown, paths: [], hosts: [], reason: "not in the library"))
                continue
            }
            let all = locations[id] ?? []
            let local = resolveHere(id, all.filter { $0.host != Self.everyHost }.map { ($0.host, $0.path, $0.state, $0.stamp) })
            // No file of it here: an object, reachable from every host, checked with a HEAD.
            var objectProblems: [String] = []
            if local.status != .found && local.status != .several {
                var reached: String?
                for object in all where object.host == Self.everyHost && object.state == "present" {
                    if let problem = await Self.objectProblem(object.path, size: object.stamp.size, etag: object.etag) {
                        objectProblems.append("\(object.path): \(problem)")
                    } else {
                        reached = object.path
                        break
                    }
                }
                if let reached {
                    resolutions.append(Resolution(id: id, status: .found, paths: [reached], hosts: [Self.everyHost], reason: nil))
                    continue
                }
            }
            if objectProblems.isEmpty {
                resolutions.append(local)
            } else {
                resolutions.append(Resolution(id: id, status: .missing, paths: local.paths, hosts: local.hosts,
                                              reason: ([local.reason].compactMap { $0 } + objectProblems).joined(separator: "; ")))
            }
        }
        return resolutions
    }

    /// Where `id` is on this host among its file locations `all`.
    private func resolveHere(_ id: AssetID, _ all: [(host: String, path: String, state: String, stamp: FileStamp)]) -> Resolution {
        let here = all.filter { $0.host == host }
        let others = Array(Set(all.filter { $0.host != host && $0.state == "present" }.map(\.host))).sorted()
        var present: [String] = []
        var gone: [(String, String)] = []
        for place in here {
            if place.state != "present" {
                gone.append((place.path, place.state == "changed" ? "its content changed" : "the file is gone"))
            } else if let stamp = FileStamp(path: place.path) {
                if stamp == place.stamp { present.append(place.path) } else { gone.append((place.path, "the file changed since it was registered (`library verify` hashes it again)")) }
            } else {
                gone.append((place.path, "no file there any more"))
            }
        }
        if present.count == 1 { return Resolution(id: id, status: .found, paths: present, hosts: [host], reason: nil) }
        if present.count > 1 { return Resolution(id: id, status: .several, paths: present, hosts: [host], reason: nil) }
        if !gone.isEmpty {
            return Resolution(id: id, status: .missing, paths: gone.map(\.0), hosts: others, reason: gone.map { "\($0.0): \($0.1)" }.joined(separator: "; "))
        }
        return Resolution(id: id, status: .notOnThisHost, paths: [], hosts: others,
                          reason: others.isEmpty ? "no host has it any more" : "on \(others.joined(separator: ", "))")
    }

    /// Where the content once registered at `path` on this host is now, when nothing is at `path` any more
    /// and the same bytes are registered, unchanged, at another path here (the file was renamed, and
    /// ingest or `library add` saw it at its new name): the asset and that path. nil otherwise.
    /// For an object (`s3://`), a `HEAD` says whether it is gone (an object that cannot be asked about is
    /// taken as there), and its content is looked for among the locations of every host.
    public func relocation(of path: String) async throws(LibraryError) -> (id: AssetID, path: String)? {
        let isObject = path.hasPrefix("s3://")
        if isObject {
            guard await Self.objectIsGone(path) else { return nil }
        } else {
            var info = stat()
            guard lstat(path, &info) != 0 else { return nil }
        }
        let host = isObject ? Self.everyHost : host
        let value = try await read { s in
            try await s.value("SELECT asset_id FROM asset_locations WHERE host = ? AND path = ? ORDER BY asset_id LIMIT 1",
                              [.text(host), .text(path)])
        }
        guard let id = value?.string.flatMap(AssetID.init), let found = try await resolve([id]).first else { return nil }
        switch found.status {
        case .found: return (id, found.paths[0])
        case .several: return (id, found.paths.sorted()[0])
        default: return nil
        }
    }

    /// The asset registered at `path` on this host, if any.
    public func assetID(at path: String) async throws(LibraryError) -> AssetID? {
        let isObject = path.hasPrefix("s3://")
        let real = isObject ? path : Self.realPath(path)
        let host = isObject ? Self.everyHost : host
        let rows: [SQLRow]
        do {
            rows = try await database.readRows("SELECT asset_id FROM asset_locations WHERE host = ? AND path = ? AND state = 'present'",
                                               [.text(host), .text(real)])
        } catch {
            throw LibraryError.wrap(error)
        }
        return rows.first?[0].string.flatMap(AssetID.init)
    }

    /// Which of `ids` the library does not know (or a scoped token may not see), asked in one go.
    public func unknown(_ ids: [AssetID]) async throws(LibraryError) -> Set<AssetID> {
        guard !ids.isEmpty else { return [] }
        return Set(try await resolve(ids).filter { $0.status == .unknown }.map(\.id))
    }

    /// Which of a manifest's `asset:ID` references (`AssetID.references(inManifest:)`) the library does
    /// not know, as validation issues at their JSON paths.
    public func unknownReferences(_ references: [(path: String, id: AssetID)]) async throws(LibraryError) -> [ManifestIssue] {
        Self.issues(references, unknown: try await unknown(references.map(\.id)))
    }

    /// The references to `unknown` assets, as validation issues at their JSON paths.
    public static func issues(_ references: [(path: String, id: AssetID)], unknown: Set<AssetID>) -> [ManifestIssue] {
        references.filter { unknown.contains($0.id) }.map {
            ManifestIssue(path: $0.path, message: "no asset \($0.id) in the library (`mediafarm library add FILE` registers a file; "
                          + "`library list` shows what is there)")
        }
    }

    /// Replaces every `asset:ID` in a manifest's `input` and `edits[].source` with this host's path (of
    /// several identical files, the first by path); throws naming the first id that has no file here.
    /// Nothing else changes: a `name` or a title equal to a reference stays as written.
    public func resolveManifest(_ document: JSONValue) async throws(LibraryError) -> (document: JSONValue, assets: [AssetID]) {
        var references: [(source: String, id: AssetID)] = []
        for source in document.manifestSources {
            if case .success(let id)? = AssetID.reference(source) { references.append((source, id)) }
        }
        guard !references.isEmpty else { return (document, []) }
        var unique: [AssetID] = []
        for (_, id) in references where !unique.contains(id) { unique.append(id) }
        var paths: [AssetID: String] = [:]
        for resolution in try await resolve(unique) {
            // Several files on this host with the same bytes (each checked unchanged): any of them is the
            // asset; the first by path, so that every run picks the same.
            paths[resolution.id] = resolution.status == .several ? resolution.paths.sorted()[0] : try resolution.path(host: host)
        }
        var replacements: [String: String] = [:]
        for (source, id) in references { replacements[source] = paths[id] }
        return (document.replacingManifestSources(replacements), unique)
    }

    /// The same for a manifest's text (`mediafarm run`): the text back unchanged when it names no asset.
    public func resolveManifest(_ text: String) async throws(LibraryError) -> (text: String, assets: [AssetID]) {
        // Text that is no JSON names no asset here; its validation, next, says what is wrong with it.
        guard text.contains(AssetID.scheme), let document = try? JSONParser.parse(text) else { return (text, []) }
        let (resolved, ids) = try await resolveManifest(document)
        return (ids.isEmpty ? text : resolved.text, ids)
    }
}

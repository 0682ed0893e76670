import FarmModel
import FarmStore
import Foundation
import SafeFiles
import QualityModel

/// An output a job made from an asset (ALAssetRepresentation), and how.
public struct Representation: Sendable, Hashable, Codable {
    public var source: AssetID
    public var output: AssetID
    public var jobID: Int64
    public var jobName: String
    /// The job's manifest (JSON): its edits, scale, audio and export settings.
    public var parameters: String
    public var host: String
    public var path: String
    public var createdAt: Date
    /// An export of the asset, or a picture of it.
    public var kind: RepresentationKind
}

/// What a representation is: an export of the asset, a streaming package of it (by its entry point), or a
/// picture of it.
public enum RepresentationKind: String, Sendable, Hashable, Codable, CaseIterable {
    case export, package, poster, storyboard, waveform

    /// The pictures of an asset: what the library's listings leave out (`FetchOptions.pictures`).
    public static let pictures: [RepresentationKind] = [.poster, .storyboard, .waveform]
}

/// A picture of an asset as this host reaches it: its content id (the ETag) and its path here, or its
/// object address.
public struct PictureFile: Sendable, Hashable {
    public var id: AssetID
    public var path: String
    public var isObject: Bool { path.hasPrefix("s3://") }

    public init(id: AssetID, path: String) { (self.id, self.path) = (id, path) }
}

/// Where a host keeps an asset (a local identifier) and whether it is still there.
public struct LocalIdentifier: Sendable, Hashable, Codable {
    public var host: String
    public var path: String
    /// present, missing (the file is gone) or changed (other content is there now).
    public var state: String
    public var seenAt: Date
}

/// Everything `library show` says about one asset.
public struct AssetDetail: Sendable, Hashable, Codable {
    public var asset: LibraryAsset
    public var locations: [LocalIdentifier]
    public var albums: [String]
    /// What jobs made from it.
    public var representations: [Representation]
    /// What it was made from, when a job made it.
    public var derivedFrom: [Representation]
    /// Jobs that read it (newest first, at most 50).
    public var jobs: [Int64]
    /// Its last quality checks (their verdict is the asset's `verdict`).
    public var checks: CheckReport?
}

extension AssetLibrary {
    public func detail(_ id: AssetID) async throws(LibraryError) -> AssetDetail {
        let access = access
        let time = now()
        let found: AssetDetail? = try await read { s in
            guard try await visible(s, id) else { return nil }
            guard let row = try await s.rows("SELECT \(Self.assetColumns) FROM assets a WHERE a.id = ?", [.text(id.rawValue)]).first,
                  var asset = Self.asset(row) else { return nil }
            let locations = try await s.rows("SELECT host, path, state, seen_at FROM asset_locations WHERE asset_id = ? ORDER BY host, path",
                                             [.text(id.rawValue)]).map { r in
                LocalIdentifier(host: r[0].string ?? "", path: r[1].string ?? "", state: r[2].string ?? "", seenAt: r[3].date ?? .distantPast)
            }
            // Where this host reaches it, as a listing says (`fetch`): its own file, else the object every host reads.
            asset.path = (locations.first { $0.host == host && $0.state == "present" } ?? locations.first { $0.host == Self.everyHost && $0.state == "present" })?.path
            var albums = try await s.rows("SELECT album FROM album_assets WHERE asset_id = ? ORDER BY album", [.text(id.rawValue)])
                .compactMap { $0[0].string }
            if let scope = access.albums { albums = albums.filter(scope.contains) }
            for smart in SmartAlbum.allCases {
                let condition = smart.condition(now: time)
                if try await s.value("SELECT 1 FROM assets a WHERE a.id = ? AND \(condition.sql) AND \(Self.notAPicture)",
                                     [.text(id.rawValue)] + condition.binds) != nil {
                    albums.append(smart.rawValue)
                }
            }
            let columns = "source_id, output_id, job_id, job_name, parameters, host, path, created_at, kind"
            func representation(_ r: SQLRow) -> Representation? {
                guard let source = r[0].string.flatMap(AssetID.init), let output = r[1].string.flatMap(AssetID.init) else { return nil }
                return Representation(source: source, output: output, jobID: r[2].int ?? 0, jobName: r[3].string ?? "", parameters: r[4].string ?? "{}",
                                      host: r[5].string ?? "", path: r[6].string ?? "", createdAt: r[7].date ?? .distantPast,
                                      kind: r[8].string.flatMap(RepresentationKind.init) ?? .export)
            }
            // A scoped token sees lineage between assets it can see, without the manifests that made them
            // (a manifest may name files and assets outside its albums), and only jobs that read nothing else.
            func scoped(_ column: String) -> (sql: String, binds: [SQLValue]) {
                guard let scope = access.filter(column) else { return ("", []) }
                return (" AND " + scope.sql, scope.binds)
            }
            let hidden = access.albums != nil
            let outputs = scoped("output_id"), sources = scoped("source_id")
            var made = try await s.rows("SELECT \(columns) FROM asset_representations WHERE source_id = ?\(outputs.sql) ORDER BY id",
                                        [.text(id.rawValue)] + outputs.binds).compactMap(representation)
            var from = try await s.rows("SELECT \(columns) FROM asset_representations WHERE output_id = ?\(sources.sql) ORDER BY id",
                                        [.text(id.rawValue)] + sources.binds).compactMap(representation)
            if hidden {
                for i in made.indices { made[i].parameters = "{}" }
                for i in from.indices { from[i].parameters = "{}" }
            }
            let outside: (sql: String, binds: [SQLValue]) = access.filter("other.asset_id").map {
                (" AND NOT EXISTS (SELECT 1 FROM job_inputs other WHERE other.job_id = job_inputs.job_id AND NOT (\($0.sql)))", $0.binds)
            } ?? ("", [])
            let jobs = try await s.rows("SELECT job_id FROM job_inputs WHERE asset_id = ?\(outside.sql) ORDER BY job_id DESC LIMIT 50",
                                        [.text(id.rawValue)] + outside.binds).compactMap { $0[0].int }
            let checks = try await s.value("SELECT checks FROM assets WHERE id = ?", [.text(id.rawValue)])?.string.flatMap { Self.decode(CheckReport.self, $0) }
            return AssetDetail(asset: asset, locations: locations, albums: albums, representations: made, derivedFrom: from, jobs: jobs, checks: checks)
        }
        guard let found else { throw .unknownAsset(id) }
        return found
    }

    /// The assets job `jobID` made (its outputs the library registered), by id.
    public func jobOutputs(_ jobID: Int64) async throws(LibraryError) -> [AssetID] {
        try await read { s in
            try await s.rows("SELECT DISTINCT output_id FROM asset_representations WHERE job_id = ? ORDER BY output_id", [.integer(jobID)])
                .compactMap { $0[0].string.flatMap(AssetID.init) }
        }
    }

    /// Records which assets a job reads (Failed Jobs' Inputs, and the sources of what it makes).
    public func recordJobInputs(_ jobID: Int64, _ ids: [AssetID]) async throws(LibraryError) {
        guard !ids.isEmpty else { return }
        try await write { s in
            for id in Set(ids) {
                try await s.execute("INSERT INTO job_inputs (job_id, asset_id) VALUES (?, ?) ON CONFLICT (job_id, asset_id) DO NOTHING",
                                    [.integer(jobID), .text(id.rawValue)])
            }
        }
    }

    /// Records which assets a job reads, from its manifest's sources (`edits[].source`): see `assets(in:)`.
    public func recordJobInputs(_ jobID: Int64, sources: [String]) async throws(LibraryError) {
        try await recordJobInputs(jobID, try await assets(in: sources))
    }

    /// The assets that sources stand for: those they name (`asset:ID`), and those registered at their paths
    /// on this host; in order, each once.
    public func assets(in sources: [String]) async throws(LibraryError) -> [AssetID] {
        var ids: [AssetID] = []
        for source in sources {
            let id: AssetID?
            if case .success(let named)? = AssetID.reference(source) { id = named } else { id = try await assetID(at: source) }
            if let id, !ids.contains(id) { ids.append(id) }
        }
        return ids
    }

    /// The assets a job was recorded as reading.
    public func jobInputs(_ jobID: Int64) async throws(LibraryError) -> [AssetID] {
        try await read { s in
            try await s.rows("SELECT asset_id FROM job_inputs WHERE job_id = ? ORDER BY asset_id", [.integer(jobID)]).compactMap { $0[0].string.flatMap(AssetID.init) }
        }
    }

    /// Registers a job's output (a file on this host) as an asset and as a representation of each source,
    /// with the job's lineage. Returns the output's id. `hash`: the file's, when the caller has just read it
    /// (it is not read again). `facts`: what the job knows of it, when no inspection may learn them (a
    /// package's entry point, a playlist that inspection refuses).
    @discardableResult
    public func registerOutput(_ path: String, sources: [AssetID], jobID: Int64, jobName: String, parameters: String,
                               kind: RepresentationKind = .export, hash known: ContentHash? = nil,
                               facts: AssetFacts? = nil) async throws(LibraryError) -> AssetID {
        let real: String
        let id: AssetID
        var placeHost = host
        if path.hasPrefix("s3://") {
            // An object: hashed from a stream of its bytes; every host reaches it.
            real = path
            guard let added = try await registerObject(path, album: nil, facts: facts).id else { throw .unreadable(path, "not registered") }
            id = added
            placeHost = Self.everyHost
        } else {
            real = Self.realPath(path)
            guard let stamp = FileStamp(path: real) else { throw .unreadable(path, "no regular file there") }
            let hash: ContentHash
            if let known { hash = known } else { hash = try await ContentHash.reading(real) }
            _ = try await record(hash, at: real, stamp: stamp, facts: facts, album: nil)
            id = hash.id
        }
        let time = now()
        let host = placeHost
        try await write { s in
            for source in sources where source != id {
                let rows = try await s.rows("""
                    INSERT INTO asset_representations (source_id, output_id, job_id, job_name, parameters, host, path, created_at, kind)
                    SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM assets WHERE id = ?)
                    ON CONFLICT (source_id, output_id, job_id) DO NOTHING RETURNING id
                    """, [.text(source.rawValue), .text(id.rawValue), .integer(jobID), .text(jobName), .text(parameters), .text(host), .text(real),
                          SQLValue(time), .text(kind.rawValue), .text(source.rawValue)])
                if !rows.isEmpty {
                    try await record(s, .representationAdded, asset: source, path: real, detail: "\(id) from job \(jobID) (\(jobName))", at: time)
                }
            }
        }
        return id
    }

    /// Keeps the quality checks a job ran on these assets, and their verdict: their last, replacing the ones before.
    public func recordChecks(_ ids: [AssetID], _ report: CheckReport, jobID: Int64) async throws(LibraryError) {
        guard !ids.isEmpty else { return }
        let time = now()
        let verdict = report.verdict.rawValue
        let json = Self.json(report)
        try await write { s in
            for id in ids {
                let changed = try await s.rows("UPDATE assets SET verdict = ?, checks = ? WHERE id = ? RETURNING id", [.text(verdict), .text(json), .text(id.rawValue)])
                if !changed.isEmpty { try await record(s, .assetUpdated, asset: id, detail: "quality checks \(verdict) (job \(jobID))", at: time) }
            }
        }
    }

    /// Adds codes a scan found to an asset's facts (merged with those it had).
    public func recordCodes(_ id: AssetID, _ codes: [LibraryCode]) async throws(LibraryError) {
        guard !codes.isEmpty else { return }
        let time = now()
        try await write { s in
            guard let current = try await s.value("SELECT codes FROM assets WHERE id = ?", [.text(id.rawValue)]) else { return }
            var merged = Self.decode([LibraryCode].self, current.string) ?? []
            for code in codes where !merged.contains(code) { merged.append(code) }
            try await s.execute("UPDATE assets SET codes = ?, has_codes = ? WHERE id = ?", [.text(Self.json(merged)), SQLValue(!merged.isEmpty), .text(id.rawValue)])
            try await record(s, .assetUpdated, asset: id, detail: "\(merged.count) code(s)", at: time)
        }
    }
}

extension AssetLibrary {
    /// The newest picture of `kind` made of the asset, where this host reaches it (a file present here, or an
    /// object); nil when there is none. The caller must be allowed to see the asset.
    public func picture(of id: AssetID, kind: RepresentationKind) async throws(LibraryError) -> PictureFile? {
        let host = host
        let everyHost = Self.everyHost
        let found: PictureFile?? = try await read { s in
            guard try await visible(s, id) else { return nil }
            let rows = try await s.rows("""
                SELECT r.output_id, l.path FROM asset_representations r
                JOIN asset_locations l ON l.asset_id = r.output_id AND l.host IN (?, ?) AND l.state = 'present'
                WHERE r.source_id = ? AND r.kind = ? ORDER BY r.id DESC, l.host = ? DESC LIMIT 1
                """, [.text(host), .text(everyHost), .text(id.rawValue), .text(kind.rawValue), .text(host)])
            guard let row = rows.first, let output = row[0].string.flatMap(AssetID.init), let path = row[1].string else { return .some(nil) }
            return .some(PictureFile(id: output, path: path))
        }
        guard let found else { throw .unknownAsset(id) }
        return found
    }

    /// Which of `ids` have a picture of `kind` this host reaches, in one query (a grid's posters). The caller
    /// must be allowed to see every one of them (they came from its `fetch`).
    public func pictured(_ ids: [AssetID], kind: RepresentationKind) async throws(LibraryError) -> Set<AssetID> {
        guard !ids.isEmpty else { return [] }
        let unique = Array(Set(ids.map(\.rawValue))).sorted()
        let (host, everyHost) = (host, Self.everyHost)
        return try await read { s in
            let rows = try await s.rows("""
                SELECT DISTINCT r.source_id FROM asset_representations r
                JOIN asset_locations l ON l.asset_id = r.output_id AND l.host IN (?, ?) AND l.state = 'present'
                WHERE r.kind = ? AND r.source_id IN (\(unique.map { _ in "?" }.joined(separator: ", ")))
                """, [.text(host), .text(everyHost), .text(kind.rawValue)] + unique.map { .text($0) })
            return Set(rows.compactMap { $0[0].string.flatMap(AssetID.init) })
        }
    }
}


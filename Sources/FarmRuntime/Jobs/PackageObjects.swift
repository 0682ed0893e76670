import FarmModel
import Foundation
import NIOCore
import S3Client

/// A streaming package bound for object storage (`"output": "s3://BUCKET/PREFIX"`): written whole into a
/// staged folder in the spool folder, as a package bound for a folder is beside it, then published one
/// object per file under the prefix. The publisher writes the marker first (the prefix holds a package the
/// farm made: its files, and while it replaces one, what of that one is to be deleted), then the media, the
/// media playlists, and the entry points (`master.m3u8`, `manifest.mpd`) last: on an empty prefix a reader
/// who finds an entry point finds every file it names. A package there is replaced only with
/// `"overwrite": true` (or by a retry of the job that made it); an object the farm did not make is never
/// replaced, nor deleted.
enum PackageObjects {
    /// The files of the staged package at `folder` but its marker, in the order they are published: media,
    /// media playlists, entry points. Each with its object's address under `prefix`.
    static func files(of folder: String, prefix: String) throws -> [(file: String, address: String)] {
        guard let names = PackageFolder.files(of: folder) else {
            throw JobError("\(prefix): the finished package \(folder) cannot be read to upload it")
        }
        return ordered(names).map { (folder + "/" + $0, prefix + "/" + $0) }
    }

    /// `names` in the order they are published (a chunk's report is its entry point).
    static func ordered(_ names: [String]) -> [String] { stages(names).flatMap { $0 } }

    /// `names` in the stages they are published in: the media, the media playlists, the entry points (a chunk's
    /// report is its entry point). A stage begins once the one before it is whole; within one, no order holds.
    static func stages(_ names: [String]) -> [[String]] {
        let entryPoints = Set(JobManifest.streamEntryPoints.values).union([PackageFolder.chunkReport])
        let playlists = names.filter { $0.hasSuffix(".m3u8") && !entryPoints.contains($0) }
        return [names.filter { !$0.hasSuffix(".m3u8") && !entryPoints.contains($0) }, playlists, names.filter(entryPoints.contains)]
    }

    /// Objects written at once within a stage (each upload without a coordinator sends `ObjectOutput.concurrentParts`
    /// parts at once: 4 × 4 parts of 8 MiB at most in memory).
    static let concurrentWrites = 4

    /// The address of the marker of the package at `prefix`.
    static func markerAddress(_ prefix: String) -> String { prefix + "/" + PackageFolder.marker }

    /// The name of `address` in the package at `prefix`, or nil when it is none of its objects.
    static func name(_ address: String, in prefix: String) -> String? {
        address.hasPrefix(prefix + "/") ? String(address.dropFirst(prefix.count + 1)) : nil
    }

    /// Whether `uploads` hold a package for `prefix`: its objects, an entry point among them (a chunk's: its report).
    static func sent(_ uploads: [ObjectUpload], to prefix: String) -> Bool {
        let entryPoints = Set(JobManifest.streamEntryPoints.values).union([PackageFolder.chunkReport])
        return uploads.contains { name($0.address, in: prefix).map(entryPoints.contains) == true }
    }

    /// What the prefix holds where a package would go.
    struct Earlier {
        /// A package the farm made is there (its marker).
        var isPackage = false
        /// Its files and those it was replacing: the farm's, which the new package may replace.
        var known: Set<String> = []
        /// What the publication that wrote it was to delete once published.
        var replacing: [String] = []
    }

    /// What is at `prefix` may take a package: no entry point of a presentation, or a package the farm made
    /// (its marker) when `allowExisting` or it is the publication of `token` resumed. Refuses, naming the
    /// way past, otherwise. A prefix is not listed (a bucket's prefix may hold millions of objects): what is
    /// there besides is never replaced, since the objects the farm does not know are written only where
    /// none is (`If-None-Match`).
    static func checkBeforePublishing(_ prefix: String, allowExisting: Bool, token: String? = nil, s3: S3? = nil) async throws -> Earlier {
        let (location, client) = try ObjectOutput.target(markerAddress(prefix), s3)
        var found: S3Chunk?
        do throws(S3Error) { found = try await client.get(location) } catch where error.kind == .noSuchKey {
            found = nil
        } catch {
            throw JobError("\(markerAddress(prefix)): cannot read whether a package is at the prefix: \(error.problem)", retryable: error.mayPass)
        }
        if let found {
            // A marker that does not read is no package the farm can answer for.
            guard let marker = try? JSONDecoder().decode(PackageFolder.Marker.self, from: Data(found.bytes.readableBytesView)), let files = marker.files else {
                throw JobError("\(markerAddress(prefix)): is no marker of a package MediaFarm made that it can read: nothing at the prefix is replaced; "
                               + "delete that object if the package is the farm's, or name another prefix")
            }
            guard allowExisting || marker.token == token else {
                throw JobError("\(prefix): holds another package (\(markerAddress(prefix))): set \"overwrite\": true at the manifest's top level "
                               + "to replace it, or name another prefix")
            }
            let replacing = marker.replacing ?? []
            return Earlier(isPackage: true, known: Set(files + replacing), replacing: replacing)
        }
        for name in JobManifest.streamEntryPoints.values.sorted() {
            let (entry, _) = try ObjectOutput.target(prefix + "/" + name, s3)
            let exists: Bool
            do throws(S3Error) { exists = try await client.exists(entry) } catch {
                throw JobError("\(prefix)/\(name): cannot read whether a presentation is at the prefix: \(error.problem)", retryable: error.mayPass)
            }
            if exists {
                throw JobError("\(prefix): holds \(prefix)/\(name), and no \(PackageFolder.marker): a presentation MediaFarm did not make is never "
                               + "replaced; name another prefix")
            }
        }
        return Earlier()
    }

    /// Uploads the staged package at `folder` under `prefix` (without a coordinator: each object written whole).
    static func upload(_ folder: String, to prefix: String, token: String, entryPoints: [String], allowExisting: Bool,
                       log: @escaping @Sendable (String) -> Void) async throws {
        let files = try files(of: folder, prefix: prefix)
        _ = try await publish(names: files.compactMap { name($0.address, in: prefix) }, prefix: prefix, token: token, entryPoints: entryPoints,
                              allowExisting: allowExisting, log: log) { name, mayReplace in
            try await ObjectOutput.upload(folder + "/" + name, to: prefix + "/" + name, allowExisting: mayReplace, log: log)
        }
    }

    /// Completes the uploads of the package at `prefix` (the coordinator, under the lease of `token`), or
    /// makes its copies: of objects under one of `copiesFrom` only (prefixes ending in "/": a join's chunks, the
    /// package reused), so that no record makes the coordinator copy another object. Returns each object's
    /// entity tag, by address.
    static func complete(_ uploads: [ObjectUpload], prefix: String, token: String, entryPoints: [String], allowExisting: Bool,
                         copiesFrom: [String] = [], log: @escaping @Sendable (String) -> Void) async throws -> [String: String] {
        guard sent(uploads, to: prefix) else { throw JobError("\(prefix): the worker reported success but sent no package to publish") }
        for upload in uploads {
            guard let name = name(upload.address, in: prefix) else { continue }
            guard PackageFolder.isFileName(name) else { throw JobError("\(upload.address): names no file of a package: nothing is published") }
            if let source = upload.copy?.source,
               !copiesFrom.contains(where: { source.hasPrefix($0) && PackageFolder.isFileName(String(source.dropFirst($0.count))) }) {
                throw JobError("\(upload.address): a copy of \(source), which is neither a chunk of this package nor the package it reuses: nothing is published")
            }
        }
        let byName = Dictionary(uploads.compactMap { upload in name(upload.address, in: prefix).map { ($0, upload) } }) { first, _ in first }
        let etags = try await publish(names: byName.keys.sorted(), prefix: prefix, token: token, entryPoints: entryPoints, allowExisting: allowExisting,
                                      log: log) { name, mayReplace in
            guard let upload = byName[name] else { throw JobError("\(prefix)/\(name): no upload to complete") }
            return try await ObjectOutput.complete(upload, allowExisting: mayReplace, log: log)
        }
        return Dictionary(uniqueKeysWithValues: etags.map { (prefix + "/" + $0.key, $0.value) })
    }

    /// The publication of the files `names` at `prefix`, each by `write` (told whether it may replace what is at
    /// its address): the marker first, the files in their stages, then what the package replaced deleted and
    /// the marker written again without it. Returns what `write` returned for each name (the object's entity tag).
    /// The files of a stage (`stages`) are written `concurrentWrites` at once: a failure stops the writes not begun.
    private static func publish(names: [String], prefix: String, token: String, entryPoints: [String], allowExisting: Bool,
                                log: @Sendable (String) -> Void, write: @escaping @Sendable (String, Bool) async throws -> String) async throws -> [String: String] {
        let earlier = try await checkBeforePublishing(prefix, allowExisting: allowExisting, token: token)
        let replacing = earlier.known.subtracting(names).sorted()
        let marker = PackageFolder.Marker(token: token, entryPoints: entryPoints, files: ordered(names), replacing: replacing.isEmpty ? nil : replacing)
        try await putMarker(marker, at: prefix, replacing: earlier.isPackage)
        var etags: [String: String] = [:]
        var failure: (any Error)?
        for stage in stages(names) where failure == nil {
            // A failed write is the group's error from `next()`; the writes under way are waited for (and recorded).
            await withThrowingTaskGroup(of: (name: String, etag: String).self) { writes in
                var next = stage.makeIterator()
                func add() {
                    guard failure == nil, let name = next.next() else { return }
                    let mayReplace = earlier.known.contains(name)
                    writes.addTask { (name, try await write(name, mayReplace)) }
                }
                for _ in 0..<concurrentWrites { add() }
                while !writes.isEmpty {
                    do {
                        if let written = try await writes.next() { etags[written.name] = written.etag }
                    } catch {
                        failure = failure ?? error
                    }
                    add()
                }
            }
        }
        if let error = failure {
            // A prefix that held no package holds none again: the objects written so far (each where none was)
            // are deleted, then the marker; left, they would be in the way of the next attempt, and nothing would
            // say they are the farm's.
            if !earlier.isPackage {
                for name in etags.keys.sorted() + [PackageFolder.marker] {
                    guard let (location, client) = try? ObjectOutput.target(prefix + "/" + name, nil) else { continue }  // its address was written: it parses
                    try? await client.delete(location)  // best effort: the publication's own error is the one to report
                }
            }
            throw error
        }
        guard !replacing.isEmpty else { return etags }
        var left: [String] = []
        for name in replacing {
            let (location, client) = try ObjectOutput.target(prefix + "/" + name, nil)
            do throws(S3Error) { try await client.delete(location) } catch where error.kind == .noSuchKey {
            } catch {
                log("\(prefix)/\(name): left from the package replaced, and cannot be deleted yet: \(error.problem)")
                left.append(name)
            }
        }
        log("removed \(replacing.count - left.count) object(s) left from the package replaced under \(prefix) (such as \(replacing[0]))")
        var done = marker
        done.replacing = left.isEmpty ? nil : left
        try await putMarker(done, at: prefix, replacing: true)
        return etags
    }

    /// Writes the marker of the package at `prefix`: where none is, unless it replaces a package's.
    private static func putMarker(_ marker: PackageFolder.Marker, at prefix: String, replacing: Bool) async throws {
        let (location, client) = try ObjectOutput.target(markerAddress(prefix), nil)
        let body: Data
        do { body = try JSONEncoder().encode(marker) } catch { throw JobError("\(markerAddress(prefix)): cannot encode the marker: \(error)") }
        do throws(S3Error) {
            _ = try await client.put(location, body: ByteBuffer(bytes: body), contentType: "application/json", ifNoneMatch: !replacing)
        } catch where error.kind == .alreadyExists {
            throw JobError("\(prefix): a package appeared there meanwhile (\(markerAddress(prefix))): set \"overwrite\": true to replace it, or name another prefix")
        } catch {
            throw JobError("\(markerAddress(prefix)): cannot write the package's marker: \(error.problem)", retryable: error.mayPass)
        }
    }
}

import FarmModel
import Foundation
import S3Client

/// A streaming package bound for object storage (`"output": "s3://BUCKET/PREFIX"`): written whole into a
/// staged folder in the spool folder, as a package bound for a folder is beside it, then uploaded one
/// object per file under the prefix. The marker goes first (it says the prefix holds a package the farm
/// made, so a retried publication may replace it), the entry points (`master.m3u8`, `manifest.mpd`) last:
/// a reader who finds one finds every segment it names. A package there is replaced only with
/// `"overwrite": true`, and nothing else there ever.
enum PackageObjects {
    /// The files of the staged package at `folder` in the order they are published: the marker, the media,
    /// the entry points. Each with its object's address under `prefix`.
    static func files(of folder: String, prefix: String) throws -> [(file: String, address: String)] {
        guard let names = PackageFolder.files(of: folder) else {
            throw JobError("\(prefix): the finished package \(folder) cannot be read to upload it")
        }
        let entryPoints = Set(JobManifest.streamEntryPoints.values)
        let ordered = [PackageFolder.marker] + names.filter { !entryPoints.contains($0) } + names.filter(entryPoints.contains)
        return ordered.map { (folder + "/" + $0, prefix + "/" + $0) }
    }

    /// The address of the marker of the package at `prefix`.
    static func markerAddress(_ prefix: String) -> String { prefix + "/" + PackageFolder.marker }

    /// Whether `address` is one of the package at `prefix`'s objects.
    static func holds(_ prefix: String, _ address: String) -> Bool { address.hasPrefix(prefix + "/") }

    /// What the prefix holds where a package would go.
    struct Earlier {
        /// The package the farm made there (its marker's files), replaced with `"overwrite": true`.
        var package: [String]?
        /// Whether the objects of the new package may replace what is at their addresses: only over a package.
        var replaces: Bool { package != nil }
    }

    /// What is at `prefix` may be replaced by a package: no package's entry point, or (when `allowExisting`)
    /// a package the farm made (its marker). Refuses, naming the way past, otherwise. A prefix is not listed
    /// (a bucket's prefix may hold millions of objects): what is there besides is never replaced, since each
    /// object is then written only where none is (`If-None-Match`).
    static func checkBeforePublishing(_ prefix: String, allowExisting: Bool, s3: S3? = nil) async throws -> Earlier {
        let (location, client) = try ObjectOutput.target(markerAddress(prefix), s3)
        var marker: S3Chunk?
        do throws(S3Error) { marker = try await client.get(location) } catch where error.kind == .noSuchKey {
            marker = nil
        } catch {
            throw JobError("\(prefix): cannot read what is at the package's prefix: \(error.problem)", retryable: error.mayPass)
        }
        if let marker {
            guard allowExisting else {
                throw JobError("\(prefix): holds another package (\(markerAddress(prefix))): set \"overwrite\": true at the manifest's top level "
                               + "to replace it, or name another prefix")
            }
            let files = (try? JSONDecoder().decode(PackageFolder.Marker.self, from: Data(marker.bytes.readableBytesView)))?.files  // unreadable: nothing known to remove
            return Earlier(package: files ?? [])
        }
        for name in JobManifest.streamEntryPoints.values.sorted() {
            let (entry, _) = try ObjectOutput.target(prefix + "/" + name, s3)
            let exists: Bool
            do throws(S3Error) { exists = try await client.exists(entry) } catch {
                throw JobError("\(prefix): cannot read what is at the package's prefix: \(error.problem)", retryable: error.mayPass)
            }
            if exists {
                throw JobError("\(prefix): holds \(prefix)/\(name), and no \(PackageFolder.marker): a presentation MediaFarm did not make is never "
                               + "replaced; name another prefix")
            }
        }
        return Earlier(package: nil)
    }

    /// Uploads the staged package at `folder` under `prefix` and removes what an earlier package there left
    /// (without a coordinator: each object written whole, conditionally unless `allowExisting`).
    static func upload(_ folder: String, to prefix: String, allowExisting: Bool, log: @Sendable (String) -> Void) async throws {
        let earlier = try await checkBeforePublishing(prefix, allowExisting: allowExisting)
        let files = try files(of: folder, prefix: prefix)
        for (file, address) in files {
            try await ObjectOutput.upload(file, to: address, allowExisting: earlier.replaces, log: log)
        }
        try await removeLeftovers(earlier, of: prefix, keeping: Set(files.map(\.address)), log: log)
    }

    /// Completes the uploads of the package at `prefix` (the coordinator, under the lease) in the order they
    /// were sent (`files(of:prefix:)`), then removes what an earlier package there left. A publication that
    /// is `resuming` checks nothing before: its own marker may be there already.
    static func complete(_ uploads: [ObjectUpload], prefix: String, allowExisting: Bool, resuming: Bool, log: @Sendable (String) -> Void) async throws {
        guard uploads.contains(where: { $0.address == markerAddress(prefix) }) else {
            throw JobError("\(prefix): the worker reported success but sent no package to publish")
        }
        // Resumed: its own marker, completed first, is there; what it replaces is what the interrupted one did.
        let earlier = try await checkBeforePublishing(prefix, allowExisting: allowExisting || resuming)
        for upload in uploads {
            try await ObjectOutput.complete(upload, allowExisting: earlier.replaces, log: log)
        }
        try await removeLeftovers(earlier, of: prefix, keeping: Set(uploads.map(\.address)), log: log)
    }

    /// Deletes the objects of the package replaced that the new one does not have (its other rungs, segments
    /// past its end), once the new one is published.
    private static func removeLeftovers(_ earlier: Earlier, of prefix: String, keeping: Set<String>, log: @Sendable (String) -> Void) async throws {
        let gone = (earlier.package ?? []).map { prefix + "/" + $0 }.filter { !keeping.contains($0) }
        guard let first = gone.first else { return }
        for address in gone {
            let (location, client) = try ObjectOutput.target(address, nil)
            do throws(S3Error) { try await client.delete(location) } catch {
                log("\(address): left from the package replaced, and cannot be deleted: \(error.problem)")
            }
        }
        log("removed \(gone.count) object(s) left from the package replaced under \(prefix) (such as \(first))")
    }
}

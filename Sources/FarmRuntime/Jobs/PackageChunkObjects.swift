import FarmModel
import Foundation
import MediaEdit
import S3Client
import SafeFiles
import Synchronization

/// The chunks of a package bound for a prefix, made in chunks: each chunk is a package of its own under a
/// hidden prefix beside it (`s3://BUCKET/.NAME.chunks-TAG/chunk-NNNN`, `ChunkPlan.folder`), published
/// as any package at a prefix is. The join reads their reports and the bytes it compares from the server,
/// and makes their segments the package's without moving a byte through the worker: each is recorded as a
/// copy on the server (`ObjectUpload.Copy`), which the coordinator makes as it publishes the package.
final class PackageChunkObjects: ChunkFileStore {
    private let client: S3
    /// What the server said of each chunk object looked at (`prefetch`, or asked for on the way).
    private let facts = Mutex<[String: S3Object]>([:])
    /// The copies recorded: a name in the package → the chunk object it is, with its entity tag and size.
    private let copies = Mutex<[String: Copied]>([:])
    /// The package's staged folder: each copy's target is named under it.
    private let folder: String

    struct Copied: Codable, Equatable {
        var copy: ObjectUpload.Copy
        var size: Int64
    }

    init(folder: String, client: S3? = nil) throws {
        self.folder = folder
        if let client {
            self.client = client
        } else {
            do throws(S3Error) { self.client = try S3.shared() } catch { throw JobError(error.description) }
        }
    }

    /// The chunk to join at `joined.output` (an object prefix in the plan's beside `output`): its report, read
    /// from the server.
    static func chunk(_ joined: JobManifest.JoinedChunk, of output: String, client: S3? = nil) async throws -> StreamChunk {
        let (plan, name) = (parent(joined.output), output.split(separator: "/").last.map(String.init) ?? output)
        guard parent(plan) == parent(output), (plan.split(separator: "/").last ?? "").hasPrefix("." + name + ".chunks-"),
              String(joined.output.split(separator: "/").last ?? "").range(of: "^chunk-[0-9]{4,}\\z", options: .regularExpression) != nil else {
            throw JobError("\(joined.output): not a chunk of this package's (a prefix chunk-NNNN in .\(name).chunks-TAG beside it)")
        }
        let address = joined.output + "/" + PackageFolder.chunkReport
        let (location, s3) = try ObjectOutput.target(address, client)
        let data: Data
        do throws(S3Error) { data = Data(try await s3.get(location).bytes.readableBytesView) } catch where error.kind == .noSuchKey {
            throw JobError("\(address): the chunk's report is missing (its chunks were removed): retry the job to make its chunks again")
        } catch {
            throw JobError("\(address): cannot read the chunk's report: \(error.problem)", retryable: error.mayPass)
        }
        do {
            return StreamChunk(folder: joined.output, frames: joined.frames, report: try JSONDecoder().decode(StreamReport.self, from: data))
        } catch {
            throw JobError("\(address): the chunk's report cannot be read: \(error)")
        }
    }

    /// `address` without its last step.
    private static func parent(_ address: String) -> String {
        address.lastIndex(of: "/").map { String(address[..<$0]) } ?? ""
    }

    /// Looks at every object the chunks' reports name (a HEAD each, `ResultReuse.concurrentChecks` at once), so
    /// that the join's questions are answered without a request each.
    func prefetch(_ chunks: [StreamChunk]) async throws {
        var addresses: [String] = []
        for chunk in chunks {
            for track in chunk.report.tracks {
                let files = chunk.folder + "/" + track.folder + "/"
                if !track.initialization.isEmpty { addresses.append(files + track.initialization) }
                addresses += track.segments.map { files + $0.file }
            }
        }
        let client = self.client
        try await withThrowingTaskGroup(of: (String, S3Object?).self) { group in
            var next = addresses.makeIterator()
            func add() throws {
                guard let address = next.next() else { return }
                let (location, _) = try ObjectOutput.target(address, client)
                group.addTask {
                    do throws(S3Error) { return (address, try await client.head(location)) } catch where error.kind == .noSuchKey {
                        return (address, nil)
                    } catch {
                        throw JobError("\(address): cannot look at the chunk's object: \(error.problem)", retryable: error.mayPass)
                    }
                }
            }
            for _ in 0..<ResultReuse.concurrentChecks { try add() }
            while let (address, object) = try await group.next() {
                if let object { facts.withLock { $0[address] = object } }
                try add()
            }
        }
    }

    private func object(_ path: String) -> S3Object? {
        if let known = facts.withLock({ $0[path] }) { return known }
        guard let (location, _) = try? ObjectOutput.target(path, client) else { return nil }  // no object's address: no chunk's file
        guard let object = try? client.headBlocking(location) else { return nil }  // missing, or not answered: the join says which file
        facts.withLock { $0[path] = object }
        return object
    }

    func size(of path: String) -> Int? { object(path).map { Int($0.size) } }

    func contents(of path: String) throws -> Data {
        let (location, _) = try ObjectOutput.target(path, client)
        do throws(S3Error) { return Data(try client.getBlocking(location, ifMatch: object(path)?.etag).bytes.readableBytesView) } catch {
            throw JobError("\(path): cannot read the chunk's object: \(error.problem)", retryable: error.mayPass)
        }
    }

    /// Records `target` (in the package's staged folder) as a copy of the chunk object `source`.
    func link(_ source: String, to target: String) throws {
        guard target.hasPrefix(folder + "/") else { throw JobError("\(target): not in the package's folder \(folder)") }
        guard let object = object(source) else { throw JobError("\(source): a chunk's object is missing") }
        let name = String(target.dropFirst(folder.count + 1))
        let added = copies.withLock { copies -> Bool in
            guard copies[name] == nil else { return false }
            copies[name] = Copied(copy: ObjectUpload.Copy(source: source, etag: object.etag), size: object.size)
            return true
        }
        guard added, !FileManager.default.fileExists(atPath: target) else { throw JobError("\(target): named twice in the package") }
    }

    /// The file in a staged package's folder that lists the copies its objects are made of.
    static let copiesFile = ".mediafarm-copies.json"

    /// Writes the copies recorded into the staged folder (`copiesFile`), refusing to replace a file.
    func writeCopies() throws {
        let all = copies.withLock { $0 }
        do { try SafeFiles.create(folder + "/" + Self.copiesFile, contents: try JSONEncoder().encode(all)) } catch {
            throw JobError("\(folder)/\(Self.copiesFile): cannot write it: \(error)")
        }
    }

    /// The copies a staged package's folder lists (none when it lists none).
    static func copies(in folder: String) throws -> [String: Copied] {
        guard let data = FileManager.default.contents(atPath: folder + "/" + copiesFile) else { return [:] }
        do { return try JSONDecoder().decode([String: Copied].self, from: data) } catch {
            throw JobError("\(folder)/\(copiesFile): cannot read it: \(error)")
        }
    }
}

import FarmModel
import FarmSubmit
import Foundation
import MediaEdit
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// A streaming package's folder: written whole under a staged name beside its final path, then published
/// in one rename, so that a reader never finds a package with a playlist but not its segments. An
/// existing package is replaced (with `"overwrite": true`) by exchanging the two folders in one step
/// (RENAME_EXCHANGE), then removing the old one; a folder the farm did not make as a package is never
/// replaced.
enum PackageFolder {
    /// The file that marks a folder as a package the farm made, with the attempt that made it.
    static let marker = JobManifest.packageMarker

    struct Marker: Codable {
        var version = 1
        /// The lease token (or a `mediafarm run`'s own) of the attempt that wrote the package.
        var token: String
        var entryPoints: [String]
        /// Every other file of the package, relative to its folder (what a package replaced under an object
        /// prefix leaves is known from it: a prefix is not listed). nil in a chunk's marker.
        var files: [String]?
        /// Under an object prefix, while a package is replaced: the files of the one before that the new one
        /// has not, deleted once it is published (a publication resumed finds them here).
        var replacing: [String]?
    }

    /// Makes the staged folder, and the folders it is in (nothing may be at its name: each attempt's is its
    /// own), with its writer's lock (`PackageWriting`) in it; the caller ends it once the package is whole.
    static func create(_ staged: String) throws -> PackageWriting {
        let parent = (staged as NSString).deletingLastPathComponent
        do { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
            throw JobError("\(parent): cannot make the folder the package goes in: \(error.localizedDescription)")
        }
        guard mkdir(staged, 0o755) == 0 else {
            throw JobError("\(staged): cannot make the package's folder: \(String(cString: strerror(errno)))")
        }
        do { return try PackageWriting(in: staged) } catch {
            remove(staged)
            throw error
        }
    }

    /// What a chunk of a package made in chunks reported, in its folder (`StreamReport`, as JSON).
    static let chunkReport = "segments.json"

    /// Writes a chunk's report, then the marker (its entry points: none), each synced and refusing to replace a
    /// file; then syncs every folder of the chunk.
    static func writeChunk(_ report: StreamReport, token: String, into folder: String) throws {
        try create(folder + "/" + chunkReport, try JSONEncoder.mediafarm().encode(report))
        try create(folder + "/" + marker, try JSONEncoder().encode(Marker(token: token, entryPoints: [], files: nil)))
        for track in report.tracks { SafeFiles.syncFolder(of: folder + "/" + track.folder + "/" + (track.segments.first?.file ?? track.initialization)) }
        SafeFiles.syncFolder(of: folder + "/" + marker)
    }

    /// A chunk to join, read from its folder: what it reported when it was written.
    static func chunk(_ joined: JobManifest.JoinedChunk, of output: String) throws -> StreamChunk {
        // Only a chunk of this package's own split: a folder in the chunk folder beside it (`ChunkPlan.folder`).
        let plan = (joined.output as NSString).deletingLastPathComponent
        let name = (output as NSString).lastPathComponent
        guard (plan as NSString).deletingLastPathComponent == (output as NSString).deletingLastPathComponent,
              (plan as NSString).lastPathComponent.hasPrefix("." + name + ".chunks-"),
              (joined.output as NSString).lastPathComponent.range(of: "^chunk-[0-9]{4,}\\z", options: .regularExpression) != nil else {
            throw JobError("\(joined.output): not a chunk of this package's (a folder chunk-NNNN in .\(name).chunks-TAG beside it)")
        }
        let path = joined.output + "/" + chunkReport
        guard let data = FileManager.default.contents(atPath: path) else {
            throw JobError("\(path): the chunk's report is missing (the chunk's folder was removed, or is not seen from this host): "
                           + "retry the job to make its chunks again")
        }
        do {
            return StreamChunk(folder: joined.output, frames: joined.frames, report: try JSONDecoder().decode(StreamReport.self, from: data))
        } catch {
            throw JobError("\(path): the chunk's report cannot be read: \(error)")
        }
    }

    /// Writes the presentations of `formats` over `report`'s segments, then the marker, each synced and
    /// refusing to replace a file; then syncs every folder of the package.
    static func writePresentations(_ report: StreamReport, of stream: JobManifest.StreamSettings, token: String, into folder: String) throws {
        for file in StreamPlaylists.files(report) {
            let hls = file.path.hasSuffix(".m3u8")
            guard hls ? stream.formats.contains(.hls) : stream.formats.contains(.dash) else { continue }
            try create(folder + "/" + file.path, Data(file.text.utf8))
        }
        for track in report.tracks { SafeFiles.syncFolder(of: folder + "/" + track.folder + "/" + (track.segments.first?.file ?? track.initialization)) }
        try writeMarker(token: token, entryPoints: stream.entryPoints, into: folder)
    }

    /// Writes the marker that makes `folder` a whole package, refusing to replace a file, and syncs the folder.
    static func writeMarker(token: String, entryPoints: [String], into folder: String) throws {
        guard let files = files(of: folder) else { throw JobError("\(folder): cannot list the package's files") }
        try create(folder + "/" + marker, try JSONEncoder().encode(Marker(token: token, entryPoints: entryPoints, files: files)))
        SafeFiles.syncFolder(of: folder + "/" + marker)
    }

    /// Whether `path`, recorded or reported as a package's file, is a name inside it (relative, without "." or
    /// ".." steps), and none of the farm's own files (its marker, the list of a join's copies).
    static func isFileName(_ path: String) -> Bool {
        !path.hasPrefix("/") && !path.split(separator: "/", omittingEmptySubsequences: false).contains { ["", ".", ".."].contains($0) }
            && path != marker && path != PackageChunkObjects.copiesFile
    }

    /// Every regular file of the package at `folder` but its marker, as paths relative to it, sorted; a link
    /// is never followed (nor listed). nil when the folder cannot be read.
    static func files(of folder: String) -> [String]? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return nil }  // gone or unreadable: the caller says so
        var files: [String] = []
        for name in names.sorted() where name != marker && name != PackageWriting.name && name != PackageChunkObjects.copiesFile {
            var info = stat()
            guard lstat(folder + "/" + name, &info) == 0 else { return nil }
            switch info.st_mode & S_IFMT {
            case S_IFREG: files.append(name)
            case S_IFDIR:
                guard let inner = Self.files(of: folder + "/" + name) else { return nil }
                files += inner.map { name + "/" + $0 }
            default: continue
            }
        }
        return files
    }

    private static func create(_ path: String, _ data: Data) throws {
        do { try SafeFiles.create(path, contents: data) } catch {
            throw JobError("\(path): cannot write it: \(error)")
        }
    }

    /// The marker of the package at `folder`; nil when it is no package the farm made.
    static func marker(of folder: String) -> Marker? {
        guard let data = FileManager.default.contents(atPath: folder + "/" + marker) else { return nil }
        return try? JSONDecoder().decode(Marker.self, from: data)  // unreadable: not a package of the farm's
    }

    /// The token of the attempt that made the package at `folder`; nil when it is no package the farm made.
    static func token(of folder: String) -> String? { marker(of: folder)?.token }

    /// What is at `final` may be replaced by a package: nothing, or (when `allowExisting`) a package the
    /// farm made holding none of the farm's own files and none of `inputs` (compared by real path, so a
    /// link cannot hide one). Refuses, naming the way past, otherwise.
    static func checkBeforePublishing(_ final: String, allowExisting: Bool, inputs: [String]) throws {
        if let refusal = ProtectedFiles.shared.check(final) { throw JobError("refusing to publish: \(refusal)") }
        var status = stat()
        guard lstat(final, &status) == 0 else {
            if errno == ENOENT { return }
            throw JobError("\(final): cannot check what the package's path names: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw JobError("\(final): a file that is not a folder is in the way of the package; choose another \"output\" or move it")
        }
        guard token(of: final) != nil else {
            throw JobError("\(final): the folder is there and is not a package the farm made (it has no \(marker)); it is never replaced: "
                           + "choose another \"output\", or empty it yourself")
        }
        guard allowExisting else {
            throw JobError("\(final): already holds a package; set \"overwrite\": true at the manifest's top level to replace it")
        }
        let real = realPath(final)
        for input in inputs where PathRules.isInside(realPath(input), root: real) {
            throw JobError("\(final): holds the job's input \(input): the package is not replaced")
        }
        guard let walk = FileManager.default.enumerator(atPath: final) else { throw JobError("\(final): cannot read the package that is there") }
        for case let name as String in walk where ProtectedFiles.shared.check(final + "/" + name) != nil {
            throw JobError("\(final): holds \(name), one of the farm's own files: the package is not replaced")
        }
    }

    /// `path` with every link resolved (as far as it exists).
    static func realPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Publishes the staged package at `final`; idempotent, so that a publication resumed after a
    /// coordinator died (`resuming`) finishes what it began: a package already at `final` with this
    /// attempt's token is published, and what is at the staged name is then the package it swapped out.
    static func publish(_ staged: String, to final: String, token: String, allowExisting: Bool, inputs: [String], resuming: Bool = false) throws {
        if Self.token(of: final) == token {
            if FileManager.default.fileExists(atPath: staged) { discard(staged) }
            return
        }
        guard Self.token(of: staged) == token else {
            // A package this attempt swapped out (its marker perhaps removed already) is only removed.
            if resuming { discard(staged); return }
            throw JobError("\(staged): the staged package is not this attempt's (its \(marker) is missing or another's); nothing was published")
        }
        try checkBeforePublishing(final, allowExisting: allowExisting, inputs: inputs)
        do {
            try SafeFiles.move(staged, to: final)
        } catch where error.targetExists && allowExisting {
            // A package is there (checked just now): the two are swapped, and the old one removed.
            try checkBeforePublishing(final, allowExisting: true, inputs: inputs)
            do { try SafeFiles.exchange(staged, final) } catch {
                throw JobError("\(final): cannot replace the package: \(String(cString: strerror(error.code)))")
            }
            discard(staged)
        } catch {
            throw JobError("\(final): cannot publish the package: " + (error.targetExists
                ? "a folder of that name appeared meanwhile; set \"overwrite\": true at the manifest's top level to replace a package"
                : String(cString: strerror(error.code))))
        }
        SafeFiles.syncFolder(of: final)
    }

    /// Removes a package that was swapped out: first renamed away from its staged name in one step, so that
    /// nothing resumed later takes what is left of it for a package to publish (a later attempt's
    /// `discardEarlierAttempts` removes what a crash left under the new name).
    static func discard(_ staged: String) {
        let aside = staged + StagedOutput.asideSuffix
        if (try? SafeFiles.move(staged, to: aside)) != nil { remove(aside) } else { remove(staged) }  // not movable: removed where it is
    }

    /// Removes a package's folder and everything in it (links are removed, never followed).
    static func remove(_ folder: String) {
        try? FileManager.default.removeItem(atPath: folder)  // what cannot be removed is swept with the staged files
    }
}

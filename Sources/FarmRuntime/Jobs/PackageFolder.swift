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
    static let marker = ".mediafarm-package.json"

    struct Marker: Codable {
        var version = 1
        /// The lease token (or a `mediafarm run`'s own) of the attempt that wrote the package.
        var token: String
        var entryPoints: [String]
    }

    /// Makes the staged folder, and the folders it is in (nothing may be at its name: each attempt's is its
    /// own), and returns it open and locked (`flock`): the writer holds it until the package is whole, so
    /// that `sweepAbandoned` can tell a folder being written from one whose writer was killed. The caller closes it.
    static func create(_ staged: String) throws -> Int32 {
        let parent = (staged as NSString).deletingLastPathComponent
        do { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
            throw JobError("\(parent): cannot make the folder the package goes in: \(error.localizedDescription)")
        }
        guard mkdir(staged, 0o755) == 0 else {
            throw JobError("\(staged): cannot make the package's folder: \(String(cString: strerror(errno)))")
        }
        let fd = open(staged, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            if fd >= 0 { close(fd) }
            throw JobError("\(staged): cannot lock the package's folder: \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// Removes the staged package folders beside `final` that a killed writer left: a folder under a
    /// staged name without the marker (which is written last, so a whole package waiting for its
    /// coordinator to publish it always has one), that no writer holds locked, and older than a minute (a
    /// writer locks its folder right after making it). Returns the paths removed.
    @discardableResult
    static func sweepAbandoned(beside final: String, now: Date = Date()) -> [String] {
        let parent = (final as NSString).deletingLastPathComponent
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return [] }  // no folder: nothing left in it
        var removed: [String] = []
        for name in names where name.hasPrefix(".") && name.contains(StagedOutput.marker) && !name.hasSuffix("-replaced") {
            let path = parent + "/" + name
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }  // not a folder (a staged file of an export), or gone
            defer { close(fd) }
            var st = stat()
            guard flock(fd, LOCK_EX | LOCK_NB) == 0, fstat(fd, &st) == 0,
                  now.timeIntervalSince1970 - Double(st.st_mtim.tv_sec) > 60,
                  faccessat(fd, marker, F_OK, AT_SYMLINK_NOFOLLOW) != 0 else { continue }
            var current = stat()
            guard lstat(path, &current) == 0, current.st_ino == st.st_ino, current.st_dev == st.st_dev else { continue }
            remove(path)
            removed.append(path)
        }
        return removed
    }

    /// Writes the presentations of `formats` over `report`'s segments, then the marker, each synced and
    /// refusing to replace a file; then syncs every folder of the package.
    static func writePresentations(_ report: StreamReport, formats: [StreamFormat], token: String, into folder: String) throws {
        let entryPoints = formats.compactMap { JobManifest.streamEntryPoints[$0] }
        for file in StreamPlaylists.files(report) {
            let hls = file.path.hasSuffix(".m3u8")
            guard hls ? formats.contains(.hls) : formats.contains(.dash) else { continue }
            try create(folder + "/" + file.path, Data(file.text.utf8))
        }
        let data = try JSONEncoder().encode(Marker(token: token, entryPoints: entryPoints))
        try create(folder + "/" + marker, data)
        for track in report.tracks { SafeFiles.syncFolder(of: folder + "/" + track.folder + "/" + track.initialization) }
        SafeFiles.syncFolder(of: folder + "/" + marker)
    }

    private static func create(_ path: String, _ data: Data) throws {
        do { try SafeFiles.create(path, contents: data) } catch {
            throw JobError("\(path): cannot write it: \(error)")
        }
    }

    /// The token of the attempt that made the package at `folder`; nil when it is no package the farm made.
    static func token(of folder: String) -> String? {
        guard let data = FileManager.default.contents(atPath: folder + "/" + marker) else { return nil }
        return (try? JSONDecoder().decode(Marker.self, from: data))?.token  // unreadable: not a package of the farm's
    }

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
        let aside = staged + "-replaced"
        if (try? SafeFiles.move(staged, to: aside)) != nil { remove(aside) } else { remove(staged) }  // not movable: removed where it is
    }

    /// Removes a package's folder and everything in it (links are removed, never followed).
    static func remove(_ folder: String) {
        try? FileManager.default.removeItem(atPath: folder)  // what cannot be removed is swept with the staged files
    }
}

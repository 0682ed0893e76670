import FarmModel
import FarmSubmit
import Foundation
import MediaEdit
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// Outputs published under a lease token. A worker started by a coordinator writes each finished file
/// (the exported movie, the report) to a staged name beside its final path; the coordinator renames
/// it into place only while it still holds the job's lease, so a stale attempt can never overwrite the
/// outputs of a newer one (fencing). Staged names are derived from the manifest and the token: the
/// coordinator does not take file names from the worker.
public enum StagedOutput {
    static let marker = ".mediafarm-staged-"
    /// Added to a staged package folder's name when it is renamed aside to be removed.
    static let asideSuffix = "-aside"

    /// Whether `name` (in a folder) is a staged output's: a file or a package folder, not one set aside for removal.
    static func isStagedName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.contains(marker) && !name.hasSuffix(asideSuffix)
    }

    /// `.NAME.mediafarm-staged-TOKEN` beside `finalPath`; for an object, in the spool folder
    /// (`ObjectOutput.stagedPath`).
    public static func path(for finalPath: String, token: String) -> String {
        if PathRules.isObject(finalPath) { return ObjectOutput.stagedPath(for: finalPath, token: token) }
        let url = URL(fileURLWithPath: finalPath)
        return url.deletingLastPathComponent().path + "/." + url.lastPathComponent + marker + token
    }

    /// The final paths a manifest writes. Numbered outputs (pictures every N seconds, a storyboard's sheets)
    /// are named from the manifest's patterns and the counts the job reported (`numbered`); without them,
    /// only those whose count the manifest gives are listed (`numberedPatterns` names the rest).
    public static func finalPaths(of manifest: JobManifest, numbered: NumberedOutputs? = nil) -> [String] {
        var paths = [manifest.export?.output, manifest.stream?.output, manifest.report, manifest.export?.poster?.output, manifest.poster?.output, manifest.storyboard?.output,
                     manifest.storyboard?.indexPath, manifest.waveform?.output, manifest.waveform?.peaks].compactMap { $0 }
        if let images = manifest.images, let count = numbered?.images ?? images.staticCount {
            paths += (0..<min(count, NumberedOutputs.limit)).map { NumberedOutputs.path(images.output, index: $0 + 1) }
        }
        if let storyboard = manifest.storyboard, let count = numbered?.sheets {
            paths += (0..<min(count, NumberedOutputs.limit)).map { NumberedOutputs.path(storyboard.sheetPattern, index: $0 + 1) }
        }
        if let codes = manifest.scan?.images, let count = numbered?.codes {
            paths += (0..<min(count, NumberedOutputs.limit)).map { NumberedOutputs.path(codes.output, index: $0 + 1) }
        }
        return paths
    }

    /// The pictures among `finalPaths` (all but the export, the package and the report), in the same order.
    public static func picturePaths(of manifest: JobManifest, numbered: NumberedOutputs?) -> [String] {
        Array(finalPaths(of: manifest, numbered: numbered).dropFirst([manifest.export?.output, manifest.stream?.output, manifest.report].compactMap { $0 }.count))
    }

    /// The patterns (with `{index}`) of a manifest's numbered outputs.
    public static func numberedPatterns(of manifest: JobManifest) -> [String] {
        [manifest.images?.output, manifest.storyboard?.sheetPattern, manifest.scan?.images?.output].compactMap { $0 }.filter { $0.contains("{index}") }
    }

    /// Whether any output of the manifest is an object (numbered ones by their pattern).
    public static func writesObjects(_ manifest: JobManifest) -> Bool {
        (finalPaths(of: manifest) + numberedPatterns(of: manifest)).contains(where: PathRules.isObject)
    }

    /// The first output of the attempt holding `token` that is not staged (nil: the worker finished them
    /// all): a file under its staged name, an object as an upload whose parts were sent (`uploads`).
    public static func missing(_ manifest: JobManifest, token: String, uploads: [ObjectUpload] = [], numbered: NumberedOutputs? = nil) -> String? {
        finalPaths(of: manifest, numbered: numbered).first { final in
            if PathRules.isObject(final), final == manifest.stream?.output { return !PackageObjects.sent(uploads, to: final) }
            return PathRules.isObject(final) ? !uploads.contains { $0.address == final } : !FileManager.default.fileExists(atPath: path(for: final, token: token))
        }
    }

    /// Renames every staged output of `token` into place (the caller holds the lease) and syncs the folders.
    /// Just before, each final path is checked again by file identity: it must not be one of the job's
    /// inputs (whatever its spelling), and must not exist unless `allowExisting`. Returns the paths published.
    /// `resuming` finishes a publication that was interrupted: an output whose staged file is gone
    /// while its final file is there was published by it already.
    /// An object is published by completing the upload whose parts the worker sent (`uploads`, from its
    /// result); an upload completed already, by a publication that was interrupted, is recognised
    /// (`ObjectOutput.complete`).
    /// A package's copies are made of objects under its join's chunks or `copiesFrom` only (`PackageObjects.complete`).
    public static func publish(_ manifest: JobManifest, token: String, allowExisting: Bool, resuming: Bool = false,
                               uploads: [ObjectUpload] = [], numbered: NumberedOutputs? = nil, copiesFrom: [String] = [],
                               log: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Publication {
        var published: [String] = []
        var etags: [String: String] = [:]
        let finals = finalPaths(of: manifest, numbered: numbered)
        // Every file is checked before any is moved: a picture in the way refuses the job's outputs as a
        // whole, not after some of them were published.
        var toMove = Set<String>()
        for final in finals where !PathRules.isObject(final) {
            let staged = path(for: final, token: token)
            let isStaged = FileManager.default.fileExists(atPath: staged)
            if resuming && !isStaged && FileManager.default.fileExists(atPath: final) { continue }
            guard isStaged else {
                throw JobError("\(final): the worker reported success but left no finished file to publish")
            }
            if final == manifest.stream?.output {
                // A package swapped out by an interrupted publication is only removed (`PackageFolder.publish`).
                let published = PackageFolder.token(of: final) == token, swappedOut = resuming && PackageFolder.token(of: staged) != token
                if !published && !swappedOut {
                    try PackageFolder.checkBeforePublishing(final, allowExisting: allowExisting, inputs: manifest.readPaths)
                }
            } else {
                try checkBeforePublishing(final, of: manifest, allowExisting: allowExisting)
            }
            toMove.insert(final)
        }
        for final in finals {
            if PathRules.isObject(final), let stream = manifest.stream, final == stream.output {
                // Resumed, the marker there is this attempt's own (its token).
                etags.merge(try await PackageObjects.complete(uploads.filter { PackageObjects.name($0.address, in: final) != nil }, prefix: final,
                                                              token: token, entryPoints: stream.chunking.frames == nil ? stream.entryPoints : [],
                                                              allowExisting: allowExisting,
                                                              copiesFrom: stream.chunking.join.map { $0.output + "/" } + copiesFrom, log: log)) { $1 }
                published.append(final)
                continue
            }
            if PathRules.isObject(final) {
                guard let upload = uploads.first(where: { $0.address == final }) else {
                    throw JobError("\(final): the worker reported success but left no upload to complete")
                }
                etags[final] = try await ObjectOutput.complete(upload, allowExisting: allowExisting, log: log)
                published.append(final)
                continue
            }
            guard toMove.contains(final) else { continue }
            let staged = path(for: final, token: token)
            if final == manifest.stream?.output {
                try PackageFolder.publish(staged, to: final, token: token, allowExisting: allowExisting, inputs: manifest.readPaths,
                                          resuming: resuming)
            } else if allowExisting {
                guard rename(staged, final) == 0 else {
                    throw JobError("\(final): cannot publish the finished file: \(String(cString: strerror(errno)))")
                }
            } else {
                // A file that appeared since the check is not replaced either.
                do { try SafeFiles.move(staged, to: final) } catch {
                    throw JobError("\(final): cannot publish the finished file: " + (error.targetExists
                        ? "it appeared meanwhile; set \"overwrite\": true at the manifest's top level to replace it" : String(cString: strerror(error.code))))
                }
            }
            published.append(final)
        }
        // Each folder once, when every rename in it is done (a storyboard's sheets share one).
        var synced = Set<String>()
        for final in published where !PathRules.isObject(final) {
            let folder = URL(fileURLWithPath: final).deletingLastPathComponent().path
            if synced.insert(folder).inserted { SafeFiles.syncFolder(of: final) }
        }
        return Publication(paths: published, etags: etags)
    }

    /// What a publication published: the final paths, and each object's entity tag as the server answered it
    /// (by address; a package's objects each under its own).
    public struct Publication: Sendable {
        public var paths: [String]
        public var etags: [String: String]
    }

    /// Refuses the farm's own files (`ProtectedFiles`), an input of the job (compared by device and inode,
    /// so that a symbolic link, a hard link or another spelling cannot hide it), and an existing file
    /// unless `allowExisting`.
    static func checkBeforePublishing(_ final: String, of manifest: JobManifest, allowExisting: Bool) throws {
        // An object's checks are its address's (at validation) and the conditional write's.
        if PathRules.isObject(final) { return }
        if let refusal = ProtectedFiles.shared.check(final) { throw JobError("refusing to publish: \(refusal)") }
        guard let identity = FileIdentity.of(final) else {
            throw JobError("\(final): cannot check what the output path names (a dangling symbolic link, or a folder that cannot be read)")
        }
        guard identity.exists else { return }
        for source in Set(manifest.readPaths) where FileIdentity.of(source) == identity {
            throw JobError("\(final): refusing to publish: it is the input \(source) (one file under two paths); the input is left untouched")
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: final, isDirectory: &isDirectory), isDirectory.boolValue {
            throw JobError("\(final): a folder with that name is in the way")
        }
        if !allowExisting {
            throw JobError("\(final): already exists; set \"overwrite\": true at the manifest's top level to replace it")
        }
    }

    /// Removes a staged file, or a staged package's folder and all in it.
    static func removeStaged(_ path: String) {
        if unlink(path) != 0 && errno == EISDIR { PackageFolder.remove(path) }
    }

    /// Removes the staged files that earlier attempts of a job left beside its outputs (any token but
    /// `token`): an attempt's staged file is removed by its coordinator when the attempt ends, or by the
    /// rescuer that finds its lease expired; when both died (a coordinator killed, then the one rescuing
    /// its jobs), it stays until the job's next attempt publishes, here. Lists each output's folder: call it
    /// for a retried attempt only.
    public static func discardEarlierAttempts(_ manifest: JobManifest, keeping token: String) {
        for final in finalPaths(of: manifest) where !PathRules.isObject(final) {
            let url = URL(fileURLWithPath: final)
            let folder = url.deletingLastPathComponent().path
            let prefix = "." + url.lastPathComponent + marker
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }  // nothing to remove then
            for name in names where name.hasPrefix(prefix) && name != prefix + token {
                removeStaged(folder + "/" + name)
            }
        }
        discardNumbered(manifest) { $0 != token }
    }

    /// Removes the staged files of numbered outputs (whose count an attempt that stopped did not report)
    /// whose token `matches`: the folder of each pattern is listed once.
    static func discardNumbered(_ manifest: JobManifest, token matches: (String) -> Bool) {
        for pattern in numberedPatterns(of: manifest) where !PathRules.isObject(pattern) {
            let url = URL(fileURLWithPath: pattern)
            let folder = url.deletingLastPathComponent().path
            let namePattern = "." + url.lastPathComponent
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }  // nothing to remove then
            for name in names where name.contains(marker) {
                guard let at = name.range(of: marker) else { continue }
                let staged = String(name[..<at.lowerBound])
                guard NumberedOutputs.matches(staged, pattern: namePattern), matches(String(name[at.upperBound...])) else { continue }
                unlink(folder + "/" + name)
            }
        }
    }

    /// Removes what an attempt holding `token` left: its staged files, and temporaries of writers that
    /// are gone, in the folders the manifest writes to (a crowded folder at most once a minute: it runs
    /// after every attempt, and listing 20,000 files after each job made a job cost twice as much).
    public static func discard(_ manifest: JobManifest, token: String, numbered: NumberedOutputs? = nil) {
        var folders = Set<String>()
        for final in finalPaths(of: manifest, numbered: numbered) {
            removeStaged(path(for: final, token: token))
            folders.insert(PathRules.isObject(final) ? ObjectOutput.spoolFolder : URL(fileURLWithPath: final).deletingLastPathComponent().path)
        }
        if numbered == nil {
            discardNumbered(manifest) { $0 == token }
            if numberedPatterns(of: manifest).contains(where: PathRules.isObject) { ObjectOutput.discardStaged(token: token) }
        }
        for folder in folders { AtomicOutput.sweepIfDue(folder) }
    }
}

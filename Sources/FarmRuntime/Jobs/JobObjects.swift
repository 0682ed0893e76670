import FarmLibrary
import FarmModel
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A job's outputs bound for objects (`s3://`): uploaded whole once every output is finished (no
/// coordinator), or sent in parts for the coordinator to complete under the lease. A package's folder is
/// an object per file under its prefix (`PackageObjects`).
struct JobObjects: Sendable {
    let runner: JobRunner

    var manifest: JobManifest { runner.manifest }
    var stagingToken: String? { runner.stagingToken }
    var runToken: String { runner.runToken }
    var resumeUploads: [String: String] { runner.resumeUploads }
    func writePath(_ finalPath: String) -> String { runner.writePath(finalPath) }

    /// Without a coordinator, uploads the outputs bound for objects once every output is finished (a file
    /// output is in place already). A failed job uploads nothing and leaves no staged file.
    func publish(_ succeeded: Bool, numbered: NumberedOutputs?, events: @escaping @Sendable (JobEvent) -> Void = { _ in }) async throws {
        guard stagingToken == nil else { return }
        let objects = StagedOutput.finalPaths(of: manifest, numbered: numbered).filter(PathRules.isObject)
        defer {
            for final in objects { StagedOutput.removeStaged(writePath(final)) }
            if numbered == nil, StagedOutput.numberedPatterns(of: manifest).contains(where: PathRules.isObject) {
                ObjectOutput.discardStaged(token: runToken)
            }
        }
        guard succeeded else { return }
        let log: @Sendable (String) -> Void = { events(.log(level: "notice", message: $0)) }
        for final in objects {
            if let stream = manifest.stream, final == stream.output {
                try await PackageObjects.upload(writePath(final), to: final, token: runToken, entryPoints: stream.entryPoints, allowExisting: manifest.overwrite,
                                                log: log)
            } else {
                try await ObjectOutput.upload(writePath(final), to: final, allowExisting: manifest.overwrite, log: log)
            }
        }
    }

    /// Under a coordinator, sends the parts of each output bound for an object (`ObjectOutput.uploadParts`)
    /// once every output is finished; the coordinator completes the uploads under the lease. The staged
    /// files are removed either way.
    func uploadParts(_ succeeded: Bool, numbered: NumberedOutputs?, events: @escaping @Sendable (JobEvent) -> Void) async throws -> [ObjectUpload] {
        guard let stagingToken else { return [] }
        let objects = StagedOutput.finalPaths(of: manifest, numbered: numbered).filter(PathRules.isObject)
        defer {
            for final in objects { StagedOutput.removeStaged(StagedOutput.path(for: final, token: stagingToken)) }
            if numbered == nil, StagedOutput.numberedPatterns(of: manifest).contains(where: PathRules.isObject) {
                ObjectOutput.discardStaged(token: stagingToken)
            }
        }
        guard succeeded, !objects.isEmpty else { return [] }
        events(.progress(JobProgress(fraction: 1, phase: "uploading")))
        var uploads: [ObjectUpload] = []
        // A package's files, each an object under its prefix, in the order they are to be published; those a
        // join made of its chunks' objects are copies on the server, published in their place among them.
        var files: [(file: String, address: String)] = []
        var copies: [String: PackageChunkObjects.Copied] = [:]
        for final in objects {
            let staged = StagedOutput.path(for: final, token: stagingToken)
            guard final == manifest.stream?.output else {
                files.append((staged, final))
                continue
            }
            let local = try PackageObjects.files(of: staged, prefix: final)
            for (name, copied) in try PackageChunkObjects.copies(in: staged) { copies[final + "/" + name] = copied }
            let byAddress = Dictionary(local.map { ($0.address, $0.file) }) { first, _ in first }
            let names = PackageObjects.ordered(local.compactMap { PackageObjects.name($0.address, in: final) }
                                               + copies.keys.compactMap { PackageObjects.name($0, in: final) })
            files += names.map { name in (byAddress[final + "/" + name] ?? "", final + "/" + name) }
        }
        let underWay = ObjectOutput.UnfinishedUploads()
        let package = manifest.stream?.output
        for (file, address) in files {
            if let copied = copies[address] {
                uploads.append(ObjectUpload(address: address, copying: copied.copy, size: copied.size, sha256: nil))
                continue
            }
            var upload = try await ObjectOutput.uploadParts(file, to: address, resuming: resumeUploads[address], underWay: underWay,
                                                            began: { events(.upload(address: address, uploadID: $0)) },
                                                            log: { events(.log(level: "notice", message: $0)) })
            // A package's files by content, for the coordinator to record the package for reuse.
            if let package, PackageObjects.name(address, in: package) != nil {
                do { upload.sha256 = try await ContentHash.reading(file).sha256 } catch {
                    throw JobError("\(address): cannot read the finished file \(file) to hash it: \(error)")
                }
            }
            uploads.append(upload)
        }
        return uploads
    }
}

import Crypto
import FarmLibrary
import FarmModel
import FarmStore
import Foundation
import MediaEdit
import S3Client
import SafeFiles
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Results reused by content: a job whose key (`ResultKey`: its settings, its inputs' content ids, the
/// program's versions) is that of a job that succeeded is answered from that job's result instead of
/// running: the earlier output copied to this job's staged name while its bytes are hashed (a package's
/// files unchanged since they were published linked instead; a package at a prefix copied on the server, to
/// another prefix, while its objects keep the entity tags recorded), published
/// under the lease only when they are still what was published, and the report the earlier job wrote,
/// saying so. Every job that may be reused records its result when it succeeds (table `job_results`).
final class ResultReuse: CoordinatorPart {
    let context: CoordinatorContext
    let publisher: Publisher
    let recorder: AttemptRecorder
    let library: LibraryRecorder
    /// Inputs' SHA-256 by path, while their identity and modification time stay those hashed.
    private let contentHashes = Mutex<[String: (stamp: FileStamp, sha256: String)]>([:])

    init(context: CoordinatorContext, publisher: Publisher, recorder: AttemptRecorder, library: LibraryRecorder) {
        (self.context, self.publisher, self.recorder, self.library) = (context, publisher, recorder, library)
    }

    /// The job's key, or nil when reuse does not apply to it (`ResultKey.applies`) or an input cannot be
    /// read (the worker says why).
    func resultKey(_ job: Job, _ manifest: JobManifest) async -> String? {
        guard job.chunkOf == nil, ResultKey.applies(to: manifest) else { return nil }
        var contents: [String: String] = [:]
        for source in Set(manifest.readPaths) {
            guard let sha256 = await contentHash(of: source) else { return nil }
            contents[source] = sha256
        }
        return ResultKey.of(manifest, contents: contents)
    }

    /// The SHA-256 of the file at `path`: hashed once while the file's identity and modification time stay
    /// the same (a file changed in place, or replaced, is hashed again). nil when it cannot be read.
    func contentHash(of path: String) async -> String? {
        guard let stamp = FileStamp(path: path) else { return nil }
        if let known = contentHashes.withLock({ $0[path] }), known.stamp == stamp { return known.sha256 }
        // unreadable: no reuse; the job runs, and its own read reports the cause
        guard let hash = try? await ContentHash.reading(path), FileStamp(path: path) == stamp else { return nil }
        contentHashes.withLock { hashes in
            if hashes.count >= 4096 { hashes.removeAll() }
            hashes[path] = (stamp, hash.sha256)
        }
        return hash.sha256
    }

    /// Answers the job from the newest earlier result with its key that this host can read and that still
    /// holds what was published. Returns whether it did (the attempt ended, published or not); false when
    /// there is none: the job runs. `began`: when the coordinator began the attempt (the attempt's seconds).
    func answerFromEarlier(_ claimed: ClaimedJob, key: String, began: Date) async -> Bool {
        let (job, token, manifest) = (claimed.job, claimed.token, claimed.manifest)
        let candidates: [ReusableResult]
        do {
            candidates = try await store.results.results(key: key)
        } catch {
            events(.notice("job \(job.id): cannot look for an earlier result (\(error)); running it"))
            return false
        }
        for earlier in candidates where earlier.jobID != job.id {
            if manifest.report != nil, earlier.report == nil { continue }
            guard manifest.export == nil || earlier.output != nil else { continue }
            guard !manifest.writesPictures || earlier.files != nil else { continue }
            // A package recorded before results carried its summary is made again (the copy would have none).
            guard manifest.stream == nil || earlier.files?.package?.summary != nil else { continue }
            let worker = earlier.worker
            jobs.state.withLock { $0.running[job.id]?.progress = JobProgress(fraction: 0, phase: "reusing the result of job \(worker.id)") }
            guard let staged = await stageEarlierResult(earlier, for: job, token: token, manifest: manifest) else {
                StagedOutput.discard(manifest, token: token)
                continue
            }
            guard let entry = jobs.state.withLock({ $0.running.removeValue(forKey: job.id) }) else { return true }
            defer {
                StagedOutput.discard(manifest, token: token)
                jobs.slotFreed.signal()
            }
            let seconds = now().timeIntervalSince(began)
            switch entry.stop {
            case nil:
                break
            case .lost(let state):
                events(.finished(id: job.id, name: job.name, state: state == .cancelled ? "cancelled" : "lost", attempt: job.attempt,
                                 message: "stopped while reusing the result of job \(worker.id): nothing published", seconds: seconds))
                return true
            case .timeout(let limit):
                await recorder.finish(job, token: token, outcome: .crashed(message: "timed out after \(Self.format(limit)) s reusing the result of job \(worker.id)"),
                             seconds: seconds, reason: "timed_out")
                return true
            case .drain:
                await recorder.finish(job, token: token, outcome: .released, seconds: seconds)
                return true
            }
            let numbered = earlier.files?.numbered
            let pictures = StagedOutput.picturePaths(of: manifest, numbered: numbered)
            let output = manifest.export?.output ?? manifest.stream?.output ?? manifest.poster?.output ?? manifest.storyboard?.output ?? pictures.first
            var result = JobResult(name: job.name, succeeded: true, output: output, report: manifest.report, seconds: seconds)
            result.numbered = numbered
            // A rescuer that finds this publication interrupted makes the copies from here.
            result.uploads = staged.copies.isEmpty ? nil : staged.copies
            result.package = earlier.files?.package?.summary
            // A package's output is its folder or prefix: what its copies come from (a rescuer checks them against it).
            result.reused = ReusedResult(job: worker.id, name: worker.name, output: earlier.output ?? earlier.files?.package?.folder, sha256: earlier.sha256)
            let resultJSON = try? String(decoding: JSONEncoder().encode(result), as: UTF8.self)  // a JobResult always encodes
            events(.notice("job \(job.id): answered from the result of job \(worker.id) (\(worker.name))"
                           + (worker.id != earlier.jobID ? ", copied from job \(earlier.jobID)" : "")
                           + (earlier.output.map { ": \($0) copied, its SHA-256 unchanged since it was published" } ?? "")))
            await publisher.publish(job, token: token, manifest: manifest, resultJSON: resultJSON, uploads: staged.copies, numbered: numbered,
                                    seconds: seconds, reason: "reused", copiesFrom: earlier.files?.package.map { [$0.folder + "/"] } ?? []) { publication in
                var again = earlier
                (again.jobID, again.jobName, again.output, again.report, again.createdAt) = (job.id, job.name, manifest.export?.output, staged.report, now())
                (again.originJobID, again.originJobName) = worker
                if let files = earlier.files {
                    again.files = ReusedFiles(numbered: numbered, files: zip(pictures, files.files).map { ReusedFiles.File(path: $0, sha256: $1.sha256, size: $1.size) },
                                              package: files.package.flatMap { package in
                                                  manifest.stream.map { stream in
                                                      // A copy's entity tag is its own (the server's answer to the copy).
                                                      let copied = (staged.packageFiles ?? package.files).map { file in
                                                          var file = file
                                                          if !staged.copies.isEmpty { file.etag = publication.etags[stream.output + "/" + file.path] }
                                                          return file
                                                      }
                                                      return ReusedFiles.Package(folder: stream.output, files: copied, summary: package.summary)
                                                  }
                                              })
                }
                await record(again, job: job)
                // The copy's bytes were hashed as they were copied: the library does not read them again.
                await library.registerInLibrary(claimed, outputHash: earlier.sha256.flatMap(ContentHash.init(sha256:)), package: result.package)
            }
            return true
        }
        return false
    }

    /// Writes the earlier result's output and report under this attempt's staged names. nil (with a notice)
    /// when it cannot: the output is not on this host, or no longer holds what was published (then the result
    /// is forgotten), or could not be copied.
    private func stageEarlierResult(_ earlier: ReusableResult, for job: Job, token: String,
                                    manifest: JobManifest) async -> StagedResult? {
        let note = { (what: String) in self.events(.notice("job \(job.id): the result of job \(earlier.jobID) is not reused: \(what)")) }
        if let output = manifest.export?.output, let from = earlier.output, let sha256 = earlier.sha256 {
            guard await copyChecked(from, sha256: sha256, size: earlier.size, to: StagedOutput.path(for: output, token: token), of: earlier, note: note) else {
                return nil
            }
        }
        if manifest.writesPictures, let files = earlier.files {
            // Each picture to this job's name for it (the same settings make the same files, in the same order).
            let targets = StagedOutput.picturePaths(of: manifest, numbered: files.numbered)
            guard targets.count == files.files.count else {
                note("it holds \(files.files.count) picture(s), this job names \(targets.count)")
                return nil
            }
            for (target, file) in zip(targets, files.files) {
                guard await copyChecked(file.path, sha256: file.sha256, size: file.size, to: StagedOutput.path(for: target, token: token), of: earlier,
                                        note: note) else { return nil }
            }
        }
        var packageFiles: [ReusedFiles.File]?
        var copies: [ObjectUpload] = []
        if let stream = manifest.stream {
            guard let package = earlier.files?.package else {
                note("it recorded no package")
                return nil
            }
            if PathRules.isObject(stream.output) || PathRules.isObject(package.folder) {
                guard let made = await packageCopies(package, of: earlier, to: stream.output, note: note) else { return nil }
                (copies, packageFiles) = (made, package.files)
            } else {
                guard let files = await stagePackage(package, of: earlier, to: StagedOutput.path(for: stream.output, token: token), token: token,
                                                     entryPoints: stream.entryPoints, note: note) else { return nil }
                packageFiles = files
            }
        }
        var report: String?
        if let path = manifest.report, let text = earlier.report {
            let written = Self.reusedReport(text, name: job.name, from: earlier)
            report = written
            do {
                let out = try AtomicOutput(finalPath: StagedOutput.path(for: path, token: token))
                try out.write(contents: Data(written.utf8))
                try out.commit()
            } catch {
                note("cannot write the report \(path): \(error)")
                return nil
            }
        }
        return StagedResult(report: report, packageFiles: packageFiles, copies: copies)
    }

    /// The copies on the server that publish the earlier package at `prefix`: one per object, each checked
    /// first (a HEAD each, `concurrentChecks` at once) to still have the size and entity tag recorded; the copy
    /// asks the server for that tag again (`x-amz-copy-source-if-match`). nil (with a notice) when the earlier
    /// package and this one are not both at prefixes, are at the same one, or an object cannot be copied or
    /// changed since it was published (then the result is forgotten).
    private func packageCopies(_ package: ReusedFiles.Package, of earlier: ReusableResult, to prefix: String,
                               note: (String) -> Void) async -> [ObjectUpload]? {
        guard PathRules.isObject(package.folder), PathRules.isObject(prefix) else {
            note("its package is at \(package.folder) and this one goes to \(prefix): a package is copied from a folder to a folder, or from a prefix to a prefix")
            return nil
        }
        guard package.folder != prefix else {
            note("its package is at \(prefix), where this one goes")
            return nil
        }
        var copies: [ObjectUpload] = []
        for file in package.files {
            guard PackageFolder.isFileName(file.path) else {
                note("it names \(file.path) in its package")
                return nil
            }
            let source = package.folder + "/" + file.path
            guard let etag = file.etag else {
                note("it recorded no entity tag of \(source)")
                return nil
            }
            guard file.size <= S3.maximumPartSize else {
                note("\(source) is larger than the server copies in one request (\(S3.maximumPartSize >> 30) GiB)")
                return nil
            }
            copies.append(ObjectUpload(address: prefix + "/" + file.path, copying: ObjectUpload.Copy(source: source, etag: etag), size: file.size,
                                       sha256: file.sha256))
        }
        switch await Self.firstChange(copies) {
        case nil:
            return copies
        case .failed(let message)?:
            note(message)
        case .changed(let message)?:
            note("\(message) since it was published; that result is forgotten")
            try? await store.results.forget(key: earlier.key, jobID: earlier.jobID)  // if the queue does not answer, the next job finds it changed again
        }
        return nil
    }

    /// What a check of an earlier package's objects found first.
    enum ObjectChange: Equatable {
        case changed(String)
        case failed(String)
    }

    /// The sources of `copies` looked at (a HEAD each, `concurrentChecks` at once): the first that is gone, has
    /// another size or entity tag, or cannot be asked about; nil when each is as recorded.
    static func firstChange(_ copies: [ObjectUpload]) async -> ObjectChange? {
        await withTaskGroup(of: ObjectChange?.self) { group in
            var next = copies.filter { $0.copy != nil }.makeIterator()
            func add() {
                guard let copy = next.next(), let source = copy.copy else { return }
                group.addTask {
                    let location: S3Location
                    let client: S3
                    do { (location, client) = try ObjectOutput.target(source.source, nil) } catch { return .failed("\(error)") }
                    do throws(S3Error) {
                        let object = try await client.head(location)
                        if object.etag != source.etag { return .changed("\(source.source) changed (entity tag \(object.etag), not \(source.etag))") }
                        if object.size != copy.size { return .changed("\(source.source) changed (\(object.size) bytes, not \(copy.size))") }
                        return nil
                    } catch where error.kind == .noSuchKey {
                        return .changed("\(source.source) is gone")
                    } catch {
                        return .failed("\(source.source) cannot be checked: \(error.problem)")
                    }
                }
            }
            for _ in 0..<concurrentChecks { add() }
            while let found = await group.next() {
                if let found {
                    group.cancelAll()
                    return found
                }
                add()
            }
            return nil
        }
    }

    /// Objects looked at at once.
    static let concurrentChecks = 8


    /// Copies `from`, as `earlier` published it (`sha256`, `size`), to `target`, hashing it as it is copied.
    /// false (with a notice) when it cannot be read on this host, could not be copied, or changed since (another
    /// size is known without reading it): then that result is forgotten.
    private func copyChecked(_ from: String, sha256: String, size: Int64?, to target: String, of earlier: ReusableResult,
                             note: (String) -> Void) async -> Bool {
        guard access(from, R_OK) == 0 else {
            note("\(from) cannot be read on this host")
            return false
        }
        var changed: String?
        if let size, let now = FileStamp(path: from)?.size, now != size {
            changed = "\(now) bytes, not \(size)"
        } else {
            switch await VerifiedCopy.copy(from, to: target, sha256: sha256) {
            case .copied: return true
            case .changed(let found): changed = "SHA-256 \(found), not \(sha256)"
            case .failed(let message):
                note(message)
                return false
            }
        }
        note("\(from) changed since it was published (\(changed ?? "")); that result is forgotten")
        try? await store.results.forget(key: earlier.key, jobID: earlier.jobID)  // if the queue does not answer, the next job finds it changed again
        return false
    }

    /// Writes the earlier package's files under the staged folder `staged`, then the marker with this attempt's
    /// `token`. A file whose stamp is still the one recorded is linked (`VerifiedCopy.link`: no byte is written
    /// or read); any other is copied and checked against its SHA-256. Returns the files as staged, each with
    /// its stamp (a link's is the earlier file's; a copy's, its own). nil (with a notice) when one cannot be
    /// staged or changed since it was published (then the result is forgotten); the caller removes the folder.
    private func stagePackage(_ package: ReusedFiles.Package, of earlier: ReusableResult, to staged: String, token: String,
                              entryPoints: [String], note: (String) -> Void) async -> [ReusedFiles.File]? {
        let writing: PackageWriting
        do { writing = try PackageFolder.create(staged) } catch {
            note("\(error)")
            return nil
        }
        defer { writing.end() }
        var files: [ReusedFiles.File] = []
        var folders: Set<String> = []
        for file in package.files {
            // Recorded by a coordinator from a folder it read: a name that could leave the package is no name of one.
            guard PackageFolder.isFileName(file.path) else {
                note("it names \(file.path) in its package")
                return nil
            }
            let (source, target) = (package.folder + "/" + file.path, staged + "/" + file.path)
            let folder = (target as NSString).deletingLastPathComponent
            if folders.insert(folder).inserted {
                do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
                    note("cannot make \(folder): \(error.localizedDescription)")
                    return nil
                }
            }
            writing.touch()
            var kept = file
            if let stamp = file.stamp, VerifiedCopy.link(source, to: target, stamp: stamp) {
                files.append(kept)
                continue
            }
            // Nothing is written over: a name listed twice is no package's.
            guard access(target, F_OK) != 0 else {
                note("it names \(file.path) twice in its package")
                return nil
            }
            guard await copyChecked(source, sha256: file.sha256, size: file.size, to: target, of: earlier, note: note) else { return nil }
            kept.stamp = FileStamp(path: target)
            files.append(kept)
        }
        // The links' names survive a crash once their folders are synced (a copy's folder is synced as it is renamed in).
        for folder in folders { SafeFiles.syncFolder(of: folder + "/.") }
        do { try PackageFolder.writeMarker(token: token, entryPoints: entryPoints, into: staged) } catch {
            note("\(error)")
            return nil
        }
        return files
    }

    /// An earlier result written under an attempt's staged names: the report as written.
    struct StagedResult {
        var report: String?
        /// A package's files as staged, with their stamps; or, at a prefix, as recorded.
        var packageFiles: [ReusedFiles.File]?
        /// A package bound for a prefix: the copies on the server that publish it.
        var copies: [ObjectUpload] = []
    }

    /// The earlier job's report under this job's name, saying which job's result it is.
    static func reusedReport(_ text: String, name: String, from earlier: ReusableResult) -> String {
        guard let report = try? JSONParser.parse(text) else { return text }  // a report that is no JSON is reused as it was written
        let worker = earlier.worker
        var reused: [(key: String, value: JSONValue)] = [("job", .number(String(worker.id))), ("name", .string(worker.name))]
        if let output = earlier.output { reused.append(("output", .string(output))) }
        if let sha256 = earlier.sha256 { reused.append(("sha256", .string(sha256))) }
        let copied = report.setting("name", to: .string(name)).setting("reused", to: .object(reused))
        // In the form it was written: a report laid out for people stays so.
        return text.contains("\n") ? copied.indented + (text.hasSuffix("\n") ? "\n" : "") : copied.text
    }

    /// Records the result of a job that succeeded and may be reused: its output's SHA-256 and size (read
    /// back from where it was published), its report's text. A failure is a notice: the job succeeded.
    /// Returns the output's hash (nil when it has none or it could not be read).
    /// A package at a prefix is recorded from its worker's uploads (`uploads`: each file's SHA-256 and size)
    /// and the entity tags the server answered as they were published (`etags`, by address).
    @discardableResult
    func recordResult(_ job: Job, token: String, manifest: JobManifest, key: String, numbered: NumberedOutputs?,
                      package summary: PackageSummary?, uploads: [ObjectUpload] = [], etags: [String: String] = [:]) async -> ContentHash? {
        var result = ReusableResult(key: key, jobID: job.id, jobName: job.name, output: manifest.export?.output, sha256: nil, size: nil,
                                    report: nil, createdAt: now())
        var outputHash: ContentHash?
        if manifest.writesPictures {
            // Each picture read back from where it was published.
            var files: [ReusedFiles.File] = []
            for path in StagedOutput.picturePaths(of: manifest, numbered: numbered) {
                guard let (hash, size, _) = await readBack(path, of: job) else { return nil }
                files.append(ReusedFiles.File(path: path, sha256: hash.sha256, size: size))
            }
            result.files = ReusedFiles(numbered: numbered, files: files)
        }
        if let stream = manifest.stream {
            let package = PathRules.isObject(stream.output)
                ? objectPackage(stream.output, uploads: await hashingCopies(uploads, of: job), etags: etags, summary: summary, of: job)
                : await readBackPackage(stream.output, token: token, summary: summary, of: job)
            guard let package else { return nil }
            result.files = ReusedFiles(numbered: result.files?.numbered, files: result.files?.files ?? [], package: package)
        }
        if let output = result.output {
            guard let (hash, size, _) = await readBack(output, of: job) else { return nil }
            (result.sha256, result.size, outputHash) = (hash.sha256, size, hash)
        }
        if let path = manifest.report, let data = FileManager.default.contents(atPath: path), data.count <= ReusableResult.reportLimit {
            result.report = String(decoding: data, as: UTF8.self)
        }
        await record(result, job: job)
        return outputHash
    }

    /// A file as published, read back: its hash, size and stamp (nil when the file changed while it was read:
    /// the next job that reuses it reads it again). nil (with a notice) when it cannot be read.
    private func readBack(_ path: String, of job: Job) async -> (hash: ContentHash, size: Int64, stamp: FileStamp?)? {
        let before = FileStamp(path: path)
        let hash: ContentHash
        do { hash = try await ContentHash.reading(path) } catch {
            events(.notice("job \(job.id): cannot read back \(path) to record its result for reuse: \(error)"))
            return nil
        }
        guard let stamp = FileStamp(path: path) else {
            events(.notice("job \(job.id): \(path) is gone since it was published; its result is not recorded for reuse"))
            return nil
        }
        return (hash, stamp.size, before == stamp ? stamp : nil)
    }

    /// The package this attempt (`token`) published at `folder`: each file its marker lists read back and
    /// hashed. nil (with a notice) when one cannot be, or when the package there is not this attempt's.
    private func readBackPackage(_ folder: String, token: String, summary: PackageSummary?, of job: Job) async -> ReusedFiles.Package? {
        guard let marker = PackageFolder.marker(of: folder), marker.token == token, let names = marker.files else {
            events(.notice("job \(job.id): the package at \(folder) is not the one it published (its marker is gone or another's); "
                           + "its result is not recorded for reuse"))
            return nil
        }
        var files: [ReusedFiles.File] = []
        for name in names {
            guard let (hash, size, stamp) = await readBack(folder + "/" + name, of: job) else { return nil }
            files.append(ReusedFiles.File(path: name, sha256: hash.sha256, size: size, stamp: stamp))
        }
        return ReusedFiles.Package(folder: folder, files: files, summary: summary)
    }

    /// `uploads` with the SHA-256 of each copy of a chunk's object (a package at a prefix made in chunks): as the
    /// chunk's worker hashed it when it sent it (its job's result). A copy whose hash is not found keeps none.
    private func hashingCopies(_ uploads: [ObjectUpload], of job: Job) async -> [ObjectUpload] {
        guard let plan = job.chunkPlan, uploads.contains(where: { $0.copy != nil && $0.sha256 == nil }) else { return uploads }
        // Each chunk object's hash, with the entity tag its upload's parts give it: a copy takes the hash only of the object it copied.
        var hashes: [String: (sha256: String, etag: String?)] = [:]
        let chunks = (try? await store.jobs(ids: plan.jobs)) ?? []  // unreadable: those copies keep no hash, and the result is not recorded (said by the caller)
        for chunk in chunks {
            guard let text = chunk.result, let result = try? JSONDecoder().decode(JobResult.self, from: Data(text.utf8)) else { continue }  // as above
            for upload in result.uploads ?? [] {
                if let sha256 = upload.sha256 { hashes[upload.address] = (sha256, S3.multipartETag(upload.parts.map { S3Part(number: $0.number, etag: $0.etag, size: $0.size) })) }
            }
        }
        return uploads.map { upload in
            var upload = upload
            if upload.sha256 == nil, let copy = upload.copy, let known = hashes[copy.source], known.etag == copy.etag { upload.sha256 = known.sha256 }
            return upload
        }
    }

    /// The package this attempt published at `prefix`: each object's SHA-256 and size as its worker hashed and
    /// sent it, its entity tag as the server answered its completion. nil (with a notice) when one lacks either.
    private func objectPackage(_ prefix: String, uploads: [ObjectUpload], etags: [String: String], summary: PackageSummary?,
                               of job: Job) -> ReusedFiles.Package? {
        var files: [ReusedFiles.File] = []
        for upload in uploads {
            guard let name = PackageObjects.name(upload.address, in: prefix) else { continue }
            guard let sha256 = upload.sha256, let etag = etags[upload.address] else {
                events(.notice("job \(job.id): \(upload.address) was published without its SHA-256 or entity tag; its result is not recorded for reuse"))
                return nil
            }
            files.append(ReusedFiles.File(path: name, sha256: sha256, size: upload.size, etag: etag))
        }
        return ReusedFiles.Package(folder: prefix, files: files, summary: summary)
    }

    private func record(_ result: ReusableResult, job: Job) async {
        do {
            try await store.results.record(result)
        } catch {
            events(.notice("job \(job.id): its result was not recorded for reuse: \(error)"))
        }
    }
}

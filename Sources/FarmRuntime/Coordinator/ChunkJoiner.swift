import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import MediaTime
import S3Client

/// Chunked constant-frame-rate exports: the first attempt of such a job says where to cut it; the
/// coordinator makes a job of each chunk (any worker of any host runs them) and the job waits for them;
/// when they have all succeeded it runs again and joins them. Their folder goes when the job ends.
struct ChunkJoiner: CoordinatorPart {
    let context: CoordinatorContext
    let recorder: AttemptRecorder

    /// Makes the jobs of the parts of `job`, whose attempt (holding `token`) found these `ranges`: the chunks
    /// of a chunked export (ranges of its frames), or the parts of a storyboard made in parts (ranges of its
    /// tiles); the job waits for them. Each is derived from the manifest as submitted (`JobManifest.exportChunk`,
    /// `.storyboardPart`), so its assets and other jobs' results are put in on the host that runs it.
    func split(_ claimed: ClaimedJob, ranges: [Range<Int>], seconds: Double) async {
        let (job, token, manifest) = (claimed.job, claimed.token, claimed.manifest)
        let kind = SplitWork(manifest)
        let original: JobManifest
        switch ManifestLoader.validate(text: claimed.submitted, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
        case .success(let m): original = m
        case .failure(let e):
            await recorder.finish(job, token: token, outcome: .failed(message: "cannot split \(kind.what): \(e)", result: nil), seconds: seconds)
            return
        }
        guard let end = ranges.last?.upperBound, let output = kind.output(of: manifest) else {
            await recorder.finish(job, token: token, outcome: .failed(message: "cannot split \(kind.what): the manifest has none", result: nil), seconds: seconds)
            return
        }
        let tag = String(UUID().uuidString.lowercased().filter(\.isHexDigit).prefix(10))
        let folder = ChunkPlan.folder(beside: output, tag: tag)
        let ext = kind.chunkExtension(of: manifest)
        let plan = ChunkPlan(folder: folder, frameCount: end, chunks: ranges.enumerated().map { i, range in
            ChunkPlan.Chunk(frames: range, output: ChunkPlan.output(folder: folder, index: i, extension: ext))
        })
        let chunks = plan.chunks.enumerated().map { i, chunk in
            let part = kind.part(i, of: plan.chunks.count, original: original, jobName: job.name, output: chunk.output, range: chunk.frames)
            // What the job waited for has ended (the queue's ids): a part waits for nothing else, and needs what it needed.
            let options = JobOptions(outputRoots: job.outputRoots, priority: job.priority, maxAttempts: job.maxAttempts, timeout: job.timeout,
                                     after: job.after.map(JobReference.id), requires: job.requires, baseDirectory: job.baseDirectory)
            return options.job(part, text: part.document.text)
        }
        await record(job, token: token, plan: plan, chunks: chunks, every: kind.every(of: manifest), seconds: seconds)
    }

    /// Makes the plan's folder and its chunk jobs; the job waits for them.
    private func record(_ job: Job, token: String, plan: ChunkPlan, chunks: [NewJob], every: MediaTime?, seconds: Double) async {
        let folder = plan.folder
        // The folder is made here, once: a chunk's worker never makes it, so one still running after its export
        // ended (and the folder was removed) cannot leave it behind.
        do {
            try ChunkFiles.makeFolder(of: plan.chunks[0].output)
        } catch {
            await recorder.finish(job, token: token, outcome: .failed(message: "cannot split into chunks: \(error)", result: nil), seconds: seconds)
            return
        }
        do throws(JobStoreError) {
            let waiting = try await store.split(id: job.id, token: token, chunks: chunks, plan: plan, at: now())
            let ids = waiting.chunkPlan?.jobs ?? []
            metrics.attemptEnded("split", seconds: seconds)
            events(.notice("job \(job.id) (\(job.name)) split into \(ids.count) chunks of about \(Self.format(every?.seconds ?? 0)) s "
                           + "(jobs \(ids.first ?? 0)-\(ids.last ?? 0), files in \(folder)); it joins them when every one has succeeded"))
        } catch where error.isStaleLease {
            _ = await ChunkFiles.remove(folder)
            events(.notice("job \(job.id): the lease was lost before its chunks were made; nothing was split"))
        } catch {
            _ = await ChunkFiles.remove(folder)
            await recorder.finish(job, token: token, outcome: .crashed(message: "cannot split into chunks: \(error)"), seconds: seconds)
        }
    }

    /// The manifest of a split job's last run: its export (or storyboard) joins the parts (each with its job
    /// and the attempts it took, for the report). A part that did not succeed fails the job, naming it.
    func joinManifest(_ job: Job, _ manifest: JobManifest, plan: ChunkPlan) async -> Result<JobManifest, InputFailure> {
        let chunks: [Job]
        do {
            chunks = try await store.jobs(ids: plan.jobs)
        } catch {
            return .failure(InputFailure(message: "the chunks of the export could not be read: \(error)", retry: true))
        }
        var join: [JobManifest.JoinedChunk] = []
        for chunk in plan.chunks {
            guard let found = chunks.first(where: { $0.id == chunk.job }), found.state == .succeeded else {
                let state = chunks.first { $0.id == chunk.job }?.state.rawValue ?? "gone from the queue"
                return .failure(InputFailure(message: "chunk job \(chunk.job) (frames \(chunk.frames.lowerBound)..<\(chunk.frames.upperBound)) is \(state): "
                                             + "there is nothing to join; retry this job to encode it again", retry: false))
            }
            join.append(JobManifest.JoinedChunk(output: chunk.output, frames: chunk.frames, job: found.id, attempts: found.attempt))
        }
        return .success(manifest.joining(join))
    }

    /// Removes the folders of chunked exports that ended (or were planned again), with their files, and
    /// records the progress of those still waiting for their chunks.
    func tendChunks() async {
        do {
            for (job, chunks) in try await store.waitingChunkedJobs(limit: 100) {
                guard let plan = job.chunkPlan else { continue }
                var done = 0
                var progress: [Int64: Double] = [:]
                for chunk in chunks where plan.jobs.contains(chunk.id) {
                    if chunk.state == .succeeded { done += 1 }
                    progress[chunk.id] = chunk.state == .succeeded ? 1 : chunk.state == .running ? chunk.progress ?? 0 : 0
                }
                let fraction = plan.progress(progress)
                if abs(fraction - (job.progress ?? 0)) >= 0.001 {
                    try await store.recordWaitingProgress(id: job.id, progress: fraction,
                                                          phase: "encoding chunks: \(done) of \(plan.chunks.count) done", at: now())
                }
            }
            for folder in try await store.abandonedChunkFolders(limit: 20) {
                if let problem = await ChunkFiles.remove(folder) {
                    events(.notice("chunks: \(problem)"))
                    continue
                }
                try await store.forgetChunkFolder(folder)
            }
        } catch {
            events(.notice("chunks: \(error)"))
        }
    }
}

/// What a split job is made of: an export's chunks (files of its container), a package's (folders of
/// segments) or a storyboard's parts (WebVTT files with their sheets).
private enum SplitWork {
    case export, stream, storyboard

    init(_ manifest: JobManifest) {
        self = manifest.export != nil ? .export : manifest.stream != nil ? .stream : .storyboard
    }

    var what: String { switch self { case .export: "the export"; case .stream: "the package"; case .storyboard: "the storyboard" } }

    func output(of manifest: JobManifest) -> String? {
        switch self {
        case .export: manifest.export?.output
        case .stream: manifest.stream?.output
        case .storyboard: manifest.storyboard?.output
        }
    }

    func chunkExtension(of manifest: JobManifest) -> String {
        switch self {
        case .export: (manifest.export?.fileType ?? .mp4).rawValue
        case .stream: ""
        case .storyboard: "vtt"
        }
    }

    func every(of manifest: JobManifest) -> MediaTime? {
        switch self {
        case .export: manifest.export?.chunkDuration
        case .stream: manifest.stream?.chunking.duration
        case .storyboard: manifest.storyboard?.chunkSeconds
        }
    }

    /// The manifest of part `index`, derived from the manifest as submitted (`original`).
    func part(_ index: Int, of count: Int, original: JobManifest, jobName: String, output: String, range: Range<Int>) -> JobManifest {
        switch self {
        case .export: original.exportChunk(index, of: count, jobName: jobName, output: output, frames: range)
        case .stream: original.streamChunk(index, of: count, jobName: jobName, output: output, frames: range)
        case .storyboard: original.storyboardPart(index, of: count, jobName: jobName, output: output, tiles: range)
        }
    }
}

extension ChunkFiles {
    /// Removes a chunk folder and the files in it (chunks, and the staged files of attempts that were
    /// killed; a package's chunks are folders), or the objects under a chunk prefix. Only a folder named as
    /// `ChunkPlan.folder` names them is touched: the regular files and folders in it, never what a link names. nil when it is gone; else why not.
    static func remove(_ folder: String) async -> String? {
        let name = folder.split(separator: "/").last.map(String.init) ?? ""
        guard name.hasPrefix("."), name.contains(".chunks-") else { return "\(folder): not a folder of chunks; left alone" }
        if PathRules.isObject(folder) {
            do {
                let (location, client) = try ObjectOutput.target(folder + "/", nil)
                for object in try await client.list(location) { try await client.delete(object.location) }
                return nil
            } catch {
                return "\(folder): cannot remove the chunks: \(error)"
            }
        }
        var info = stat()
        guard lstat(folder, &info) == 0 else { return nil }
        // A link put in the folder's place is not followed: only a folder of chunks is emptied.
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(folder): not a folder (a link or a file is in its place); left alone" }
        let entries: [String]
        do { entries = try FileManager.default.contentsOfDirectory(atPath: folder) } catch {
            return "\(folder): cannot list the chunks: \(error.localizedDescription)"
        }
        for entry in entries {
            let path = folder + "/" + entry
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                // A package's chunk (or an attempt's staged one): its folders and files, links removed and never followed.
                do { try FileManager.default.removeItem(atPath: path) } catch {
                    return "\(path): cannot remove it: \(error.localizedDescription)"
                }
                continue
            }
            guard info.st_mode & S_IFMT == S_IFREG else { continue }
            if unlink(path) != 0 && errno != ENOENT { return "\(path): cannot remove it: \(String(cString: strerror(errno)))" }
        }
        if rmdir(folder) != 0 && errno != ENOENT { return "\(folder): cannot remove it: \(String(cString: strerror(errno)))" }
        return nil
    }
}

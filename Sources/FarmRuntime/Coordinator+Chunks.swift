import FarmModel
import Foundation
import FarmStore
import MediaTime
import S3Client

/// Chunked constant-frame-rate exports: the first attempt of such a job says where to cut it; the
/// coordinator makes a job of each chunk (any worker of any host runs them) and the job waits for them;
/// when they have all succeeded it runs again and joins them. Their folder goes when the job ends.
extension Coordinator {
    /// Makes the chunk jobs of `job`, whose attempt (holding `token`) found these `ranges`; the job waits
    /// for them. Each chunk's manifest is the one submitted (its `asset:` and `job:` inputs resolved on the
    /// host that runs it) with the chunk's frames and file, no report, no scan, no pictures and no webhooks.
    func split(_ job: Job, token: String, submitted: String, manifest: JobManifest, ranges: [Range<Int>], seconds: Double) async {
        if manifest.export == nil, manifest.storyboard != nil {
            await splitStoryboard(job, token: token, submitted: submitted, manifest: manifest, ranges: ranges, seconds: seconds)
            return
        }
        // the submitted text was validated at submission and again at this claim
        guard let export = manifest.export, let end = ranges.last?.upperBound, let document = try? JSONParser.parse(submitted),
              let exportJSON = document["export"] else {
            await finish(job, token: token, outcome: .failed(message: "cannot split the export: the manifest has no export section", result: nil),
                         seconds: seconds)
            return
        }
        let tag = String(UUID().uuidString.lowercased().filter(\.isHexDigit).prefix(10))
        let folder = ChunkPlan.folder(beside: export.output, tag: tag)
        let plan = ChunkPlan(folder: folder, frameCount: end, chunks: ranges.enumerated().map { i, frames in
            ChunkPlan.Chunk(frames: frames, output: ChunkPlan.output(folder: folder, index: i, fileType: export.fileType))
        })
        let chunks = plan.chunks.enumerated().map { i, chunk in
            let name = "\(job.name) [chunk \(i + 1)/\(plan.chunks.count)]"
            let chunkExport = exportJSON.removing("chunkSeconds", "chunkAbove", "join", "poster")
                .setting("output", to: .string(chunk.output))
                .setting("frames", to: .array([.number(String(chunk.frames.lowerBound)), .number(String(chunk.frames.upperBound))]))
            let text = document.removing("report", "scan", "notify", "after", "afterPolicy", "poster", "images", "storyboard")
                .setting("name", to: .string(name)).setting("export", to: chunkExport).setting("overwrite", to: .bool(true)).text
            return NewJob(name: name, manifest: text, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots, priority: job.priority,
                          maxAttempts: job.maxAttempts, timeout: job.timeout, after: job.after.map(JobReference.id), requires: job.requires)
        }
        await record(job, token: token, plan: plan, chunks: chunks, every: export.chunkDuration, seconds: seconds)
    }

    /// A storyboard made in parts: each part a range of whole sheets, a job of its own writing a storyboard of
    /// those tiles into the plan's folder (`chunk-NNNN.vtt`, its sheets and index beside it).
    func splitStoryboard(_ job: Job, token: String, submitted: String, manifest: JobManifest, ranges: [Range<Int>], seconds: Double) async {
        // the submitted text was validated at submission and again at this claim
        guard let board = manifest.storyboard, let end = ranges.last?.upperBound, let document = try? JSONParser.parse(submitted),
              let boardJSON = document["storyboard"] else {
            await finish(job, token: token, outcome: .failed(message: "cannot split the storyboard: the manifest has none", result: nil), seconds: seconds)
            return
        }
        let tag = String(UUID().uuidString.lowercased().filter(\.isHexDigit).prefix(10))
        let folder = ChunkPlan.folder(beside: board.output, tag: tag)
        let plan = ChunkPlan(folder: folder, frameCount: end, chunks: ranges.enumerated().map { i, tiles in
            ChunkPlan.Chunk(frames: tiles, output: ChunkPlan.output(folder: folder, index: i, extension: "vtt"))
        })
        let chunks = plan.chunks.enumerated().map { i, chunk in
            let name = "\(job.name) [part \(i + 1)/\(plan.chunks.count)]"
            let part = boardJSON.removing("chunkSeconds", "join")
                .setting("output", to: .string(chunk.output))
                .setting("part", to: .array([.number(String(chunk.frames.lowerBound)), .number(String(chunk.frames.upperBound))]))
            let text = document.removing("report", "notify", "after", "afterPolicy")
                .setting("name", to: .string(name)).setting("storyboard", to: part).setting("overwrite", to: .bool(true)).text
            return NewJob(name: name, manifest: text, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots, priority: job.priority,
                          maxAttempts: job.maxAttempts, timeout: job.timeout, after: job.after.map(JobReference.id), requires: job.requires)
        }
        await record(job, token: token, plan: plan, chunks: chunks, every: board.chunkSeconds, seconds: seconds)
    }

    /// Makes the plan's folder and its chunk jobs; the job waits for them.
    private func record(_ job: Job, token: String, plan: ChunkPlan, chunks: [NewJob], every: MediaTime?, seconds: Double) async {
        let folder = plan.folder
        // The folder is made here, once: a chunk's worker never makes it, so one still running after its export
        // ended (and the folder was removed) cannot leave it behind.
        do {
            try ChunkFiles.makeFolder(of: plan.chunks[0].output)
        } catch {
            await finish(job, token: token, outcome: .failed(message: "cannot split into chunks: \(error)", result: nil), seconds: seconds)
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
            await finish(job, token: token, outcome: .crashed(message: "cannot split into chunks: \(error)"), seconds: seconds)
        }
    }

    /// The manifest of a split job's last run: its export joins the chunks (each with its job and the
    /// attempts it took, for the report). A chunk that did not succeed fails the job, naming it.
    func joinManifest(_ job: Job, _ document: JSONValue, plan: ChunkPlan) async -> Result<JSONValue, InputFailure> {
        let chunks: [Job]
        do {
            chunks = try await store.jobs(ids: plan.jobs)
        } catch {
            return .failure(InputFailure(message: "the chunks of the export could not be read: \(error)", retry: true))
        }
        var join: [JSONValue] = []
        for chunk in plan.chunks {
            guard let found = chunks.first(where: { $0.id == chunk.job }), found.state == .succeeded else {
                let state = chunks.first { $0.id == chunk.job }?.state.rawValue ?? "gone from the queue"
                return .failure(InputFailure(message: "chunk job \(chunk.job) (frames \(chunk.frames.lowerBound)..<\(chunk.frames.upperBound)) is \(state): "
                                             + "there is nothing to join; retry this job to encode it again", retry: false))
            }
            // A storyboard's parts are ranges of tiles.
            let key = document["export"] == nil && document["storyboard"] != nil ? "tiles" : "frames"
            join.append(.object([("output", .string(chunk.output)),
                                 (key, .array([.number(String(chunk.frames.lowerBound)), .number(String(chunk.frames.upperBound))])),
                                 ("job", .number(String(found.id))), ("attempts", .number(String(found.attempt)))]))
        }
        if let export = document["export"] { return .success(document.setting("export", to: export.setting("join", to: .array(join)))) }
        if let board = document["storyboard"] { return .success(document.setting("storyboard", to: board.setting("join", to: .array(join)))) }
        return .success(document)
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

extension ChunkFiles {
    /// Removes a chunk folder and the files in it (chunks, and the staged files of attempts that were
    /// killed), or the objects under a chunk prefix. Only a folder named as `ChunkPlan.folder` names
    /// them is touched, and only the regular files directly in it. nil when it is gone; else why not.
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
        guard FileManager.default.fileExists(atPath: folder) else { return nil }
        let entries: [String]
        do { entries = try FileManager.default.contentsOfDirectory(atPath: folder) } catch {
            return "\(folder): cannot list the chunks: \(error.localizedDescription)"
        }
        for entry in entries {
            let path = folder + "/" + entry
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            if unlink(path) != 0 && errno != ENOENT { return "\(path): cannot remove it: \(String(cString: strerror(errno)))" }
        }
        if rmdir(folder) != 0 && errno != ENOENT { return "\(folder): cannot remove it: \(String(cString: strerror(errno)))" }
        return nil
    }
}

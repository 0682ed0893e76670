import FarmModel
import FarmSubmit
import Foundation

/// The rescuer: leases that expired (their jobs back in the queue, or dead), publications a dead
/// coordinator left half done, the jobs of coordinators that died on this host, chunked exports' folders
/// and progress, and pruning of old finished jobs.
struct Rescuer: CoordinatorPart {
    let context: CoordinatorContext
    let publisher: Publisher
    let recorder: AttemptRecorder
    let joiner: ChunkJoiner

    /// The rescuer: every `rescueInterval`, jobs whose lease expired go back to the queue (or end dead);
    /// every `pruneInterval`, jobs finished longer ago than `keepFinished` are deleted.
    func run() async {
        var lastPrune: Date?
        var lastChunks: Date?
        while !Task.isCancelled, !jobs.isDraining {
            turned("rescuer")
            await rescueExpired()
            // Chunked exports' progress and folders: two queries, not worth every turn of every coordinator.
            if lastChunks.map({ now().timeIntervalSince($0) >= 5 }) ?? true {
                lastChunks = now()
                await joiner.tendChunks()
            }
            if let keep = configuration.keepFinished, lastPrune.map({ now().timeIntervalSince($0) >= configuration.pruneInterval }) ?? true {
                lastPrune = now()
                await prune(keep)
            }
            guard await Self.pause(configuration.rescueInterval) else { return }
        }
    }

    private func prune(_ keep: Double) async {
        let cutoff = now().addingTimeInterval(-keep)
        var deleted = 0
        do {
            while !Task.isCancelled {
                let n = try await store.prune(finishedBefore: cutoff, limit: 1000)
                deleted += n
                if n < 1000 { break }
            }
        } catch {
            events(.notice("pruning: \(error)"))
        }
        if deleted > 0 { events(.notice("pruned \(deleted) jobs that finished more than \(Self.format(keep / 86400)) days ago")) }
    }

    /// At start: the running jobs of coordinators of this queue that died on this host (`WorkerFolders.sweep`
    /// found their locks free) go back to the queue now, each charged an attempt as for an expired lease and
    /// its fence moved, rather than when their leases expire. Those of other hosts wait for their leases:
    /// nothing here knows that they are gone.
    func takeBackJobs(of owners: [String]) async {
        guard !owners.isEmpty else { return }
        do {
            let ended = try await store.expireLeases(ofOwners: owners, at: now())
            guard ended > 0 else { return }
            events(.notice("\(owners.joined(separator: ", ")) died on this host: taking back its \(ended) running job(s) now"))
            await rescueExpired()
        } catch {
            events(.notice("cannot take back the jobs of \(owners.joined(separator: ", ")) (died on this host): \(error); their leases will expire"))
        }
    }

    /// Removes what the expired attempt staged beside its outputs. Its manifest is checked against the
    /// files as its claim checked it (the paths resolved alike); when that no longer passes (an input gone
    /// since), its shape alone names the outputs, and the notice says why.
    private func discardStaged(_ job: Job, token: String) {
        switch ManifestLoader.validate(text: job.manifest, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
        case .success(let manifest):
            StagedOutput.discard(manifest, token: token)
        case .failure(let error):
            let said = "job \(job.id) (\(job.name)): its manifest no longer checks against the files (\(error)); "
            let document: JSONValue
            do { document = try JSONParser.parse(job.manifest) } catch {
                events(.notice(said + "what its attempt staged cannot be found: \(error)"))
                return
            }
            switch ManifestLoader.checked(document: document, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
            case .success(let manifest):
                StagedOutput.discard(manifest, token: token)
                events(.notice(said + "what its attempt staged was looked for where the manifest names its outputs"))
            case .failure(let shape):
                events(.notice(said + "what its attempt staged cannot be found: \(shape)"))
            }
        }
    }

    private func rescueExpired() async {
        await publisher.completeInterruptedPublications()
        let t = now()
        do {
            for job in try await store.rescueExpired(at: t, publishingGrace: configuration.leaseDuration) {
                let after = try? await store.job(id: job.id)  // the state only words the notice and the tally
                events(.notice("job \(job.id) (\(job.name)): lease of \(job.lease?.owner ?? "?") expired; "
                               + (after?.state == .dead ? "dead after \(job.attempt) attempts" : "back in the queue")))
                if after?.state == .dead {
                    jobs.recordEnd(job.id, .dead)
                    await recorder.abortUnfinishedUploads(job)
                }
                metrics.rescued(after?.state == .dead ? "dead" : "requeued")
                if let token = job.lease?.token { discardStaged(job, token: token) }
            }
        } catch {
            events(.notice("rescuer: \(error)"))
        }
    }
}

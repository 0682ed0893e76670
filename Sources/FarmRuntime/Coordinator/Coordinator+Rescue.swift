import FarmModel
import FarmSubmit
import Foundation

/// The rescuer's side of a coordinator: leases that expired (their jobs back in the queue, or dead),
/// publications a dead coordinator left half done, and pruning of old finished jobs.
extension Coordinator {
    /// The rescuer: every `rescueInterval`, jobs whose lease expired go back to the queue (or end dead);
    /// every `pruneInterval`, jobs finished longer ago than `keepFinished` are deleted.
    func rescueLoop() async {
        var lastPrune: Date?
        var lastChunks: Date?
        while !Task.isCancelled, !isDraining {
            turned("rescuer")
            await rescueExpired()
            // Chunked exports' progress and folders: two queries, not worth every turn of every coordinator.
            if lastChunks.map({ now().timeIntervalSince($0) >= 5 }) ?? true {
                lastChunks = now()
                await tendChunks()
            }
            if let keep = configuration.keepFinished, lastPrune.map({ now().timeIntervalSince($0) >= configuration.pruneInterval }) ?? true {
                lastPrune = now()
                await prune(keep)
            }
            guard await pause(configuration.rescueInterval) else { return }
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

    /// Attempts whose coordinator died while publishing: their worker succeeded and every output was
    /// staged, so the publication is completed here and the job finished under the expired lease's token
    /// (fenced: when several rescuers race, one records it; renaming is idempotent). One that cannot be
    /// completed is rescued as usual once the grace of one lease has passed.
    private func completeInterruptedPublications() async {
        let expired: [Job]
        do { expired = try await store.expiredPublications(at: now()) } catch {
            events(.notice("rescuer: \(error)"))
            return
        }
        for job in expired {
            guard let lease = job.lease else { continue }
            let manifest: JobManifest
            switch ManifestLoader.validate(text: job.manifest, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
            case .success(let valid): manifest = valid
            case .failure(let error):
                // Its outputs are not known without it: said, and left to the ordinary rescue.
                events(.notice("job \(job.id) (\(job.name)): \(lease.owner) stopped while publishing attempt \(job.attempt), but its manifest no "
                               + "longer validates (\(error)); the publication is not completed here, and the attempt is rescued when its "
                               + "lease's grace has passed"))
                continue
            }
            // The worker's result, recorded as publishing began, holds its objects' uploads. One that cannot
            // be read is said, and the attempt left to the ordinary rescue (its lease's grace): publishing it
            // as if it had no uploads would fail it as "left no upload", the cause lost.
            var uploads: [ObjectUpload] = []
            var numbered: NumberedOutputs?
            if let text = job.result {
                do {
                    let result = try JSONDecoder().decode(JobResult.self, from: Data(text.utf8))
                    (uploads, numbered) = (result.uploads ?? [], result.numbered)
                } catch {
                    events(.notice("job \(job.id) (\(job.name)): \(lease.owner) stopped while publishing attempt \(job.attempt), but its worker's "
                                   + "recorded result cannot be read (\(error)); the publication is not completed here, and the attempt is "
                                   + "rescued when its lease's grace has passed"))
                    continue
                }
            }
            do {
                metrics.published(try await StagedOutput.publish(manifest, token: lease.token, allowExisting: manifest.overwrite || job.attempt > 1,
                                                                 resuming: true, uploads: uploads, numbered: numbered,
                                                                 log: { self.events(.notice("job \(job.id): \($0)")) }))
                if !uploads.isEmpty { await forgetUploads(of: job, completed: uploads) }
            } catch {
                events(.notice("job \(job.id) (\(job.name)): cannot complete the publication of \(lease.owner): \(error)"))
                continue
            }
            do {
                let after = try await store.finish(id: job.id, token: lease.token, outcome: .succeeded(result: job.result), at: now())
                metrics.rescued("publication_completed")
                events(.notice("job \(job.id) (\(job.name)): \(lease.owner) stopped while publishing attempt \(job.attempt); "
                               + "publication completed here, job \(after.state.rawValue)"))
            } catch where error.isStaleLease {
                continue  // another rescuer recorded it
            } catch {
                events(.notice("job \(job.id) (\(job.name)): publication completed, but recording it failed: \(error)"))
            }
        }
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

    private func rescueExpired() async {
        await completeInterruptedPublications()
        let t = now()
        do {
            for job in try await store.rescueExpired(at: t, publishingGrace: configuration.leaseDuration) {
                let after = try? await store.job(id: job.id)  // the state only words the notice and the tally
                events(.notice("job \(job.id) (\(job.name)): lease of \(job.lease?.owner ?? "?") expired; "
                               + (after?.state == .dead ? "dead after \(job.attempt) attempts" : "back in the queue")))
                if after?.state == .dead {
                    recordEnd(job.id, .dead)
                    await abortUnfinishedUploads(job)
                }
                metrics.rescued(after?.state == .dead ? "dead" : "requeued")
                if let token = job.lease?.token, case .success(let manifest) = ManifestLoader.validate(
                    text: job.manifest, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) {
                    StagedOutput.discard(manifest, token: token)
                }
            }
        } catch {
            events(.notice("rescuer: \(error)"))
        }
    }
}

/// The end of each job a coordinator finished, in memory that does not grow with the jobs that went well:
/// a coordinator that ran 100,000 jobs keeps a count, and the ids of the jobs that are still failed (a job
/// retried and then succeeding leaves the set), which its exit status and summary need.
struct FinishedTally: Sendable {
    private(set) var succeeded = 0
    private(set) var failed: Set<Int64> = []

    mutating func record(_ id: Int64, _ state: JobState) {
        switch state {
        case .succeeded:
            succeeded += 1
            failed.remove(id)
        case .failed, .dead:
            failed.insert(id)
        default:
            // Back in the queue (a retry) or cancelled: no longer a failure of this run.
            failed.remove(id)
        }
    }
}

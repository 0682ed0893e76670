import FarmModel
import FarmStore
import FarmSubmit
import Foundation

/// How a coordinator ends an attempt: publishing its staged outputs under the lease (files renamed,
/// object uploads completed), recording the end in the queue (retried while the lease would hold), and
/// aborting the object uploads of a job that ended without success. The claimer is in
/// Coordinator+Claiming.swift, the rescuer in Coordinator+Rescue.swift.
extension Coordinator {
    /// Publishes the staged outputs while the lease is held, then records success. The lease is renewed
    /// first (a stale attempt is refused there) in phase `publishing` with the worker's result, so that
    /// if this coordinator dies while renaming or before recording success, whichever rescuer finds the
    /// expired lease completes this publication (`completeInterruptedPublications`) instead of running
    /// the job again: each output is published once. `recordPublished` runs between the publication and
    /// the success (the result kept for reuse, the library's representations), so that whoever sees the
    /// job succeed finds its outputs recorded.
    /// - Returns: whether the outputs were published.
    @discardableResult
    func publish(_ job: Job, token: String, manifest: JobManifest, resultJSON: String?, uploads: [ObjectUpload],
                 numbered: NumberedOutputs?, seconds: Double, reason: String? = nil,
                 recordPublished: () async -> Void = {}) async -> Bool {
        if let missing = StagedOutput.missing(manifest, token: token, uploads: uploads, numbered: numbered) {
            await finish(job, token: token, outcome: .failed(message: "\(missing): the worker reported success but left no finished file to publish",
                                                             result: resultJSON), seconds: seconds)
            return false
        }
        guard await confirmLease(job, token: token, result: resultJSON) else {
            metrics.attemptEnded("stale", seconds: seconds)
            events(.finished(id: job.id, name: job.name, state: "stale", attempt: job.attempt,
                             message: "the lease was lost before publishing: outputs discarded", seconds: seconds))
            // Only this attempt's uploads: a newer attempt may be uploading the same keys.
            for upload in uploads { await ObjectOutput.abort(upload) }
            return false
        }
        do {
            // A retried attempt may replace what an earlier attempt of this job published.
            metrics.published(try await StagedOutput.publish(manifest, token: token, allowExisting: manifest.overwrite || job.attempt > 1,
                                                             uploads: uploads, numbered: numbered,
                                                             log: { self.events(.notice("job \(job.id): \($0)")) }))
            if !uploads.isEmpty { await forgetUploads(of: job, completed: uploads) }
            if job.attempt > 1 { StagedOutput.discardEarlierAttempts(manifest, keeping: token) }
        } catch {
            let message = "\(error)"
            let retryable = (error as? JobError)?.retryable == true
            await finish(job, token: token, outcome: retryable ? .crashed(message: message) : .failed(message: message, result: resultJSON), seconds: seconds)
            return false
        }
        await holdingLease(job, token: token, result: resultJSON, while: recordPublished)
        await finish(job, token: token, outcome: .succeeded(result: resultJSON), seconds: seconds, reason: reason)
        return true
    }

    /// Records the end of an attempt. A queue that does not answer (a server restarting, a network
    /// down) is retried with backoff for as long as the lease would hold, so that a finished job is not
    /// rescued and run again; after that the rescuer of whichever coordinator sees it first takes over.
    func finish(_ job: Job, token: String, outcome: AttemptOutcome, seconds: Double, reason: String? = nil) async {
        let deadline = now().addingTimeInterval(configuration.leaseDuration)
        var delay = 0.1
        while true {
            do {
                // The event is dated when the end was recorded: a job that waited for this one may be claimed
                // and started (by the claimer, on the writer's thread) before this task is back to say so.
                let recorded = Date()
                let after = try await store.finish(id: job.id, token: token, outcome: outcome, at: now())
                recordEnd(job.id, after.state)
                if [.failed, .dead, .cancelled].contains(after.state) { await abortUnfinishedUploads(after) }
                metrics.attemptEnded(reason ?? outcome.metricName, seconds: seconds)
                let message: String? = switch outcome {
                case .succeeded: nil
                case .failed(let m, _), .crashed(let m): m
                case .released: "released without using up the attempt"
                }
                // The attempt's time as the queue recorded it (claimed to ended): what `status` says too.
                let took = after.startedAt.flatMap { start in after.finishedAt.map { $0.timeIntervalSince(start) } } ?? seconds
                events(.finished(id: job.id, name: job.name, state: after.state.rawValue, attempt: job.attemptNumber, message: message, seconds: took, at: recorded))
                if after.state == .failed || after.state == .dead { await reportFailedDependents(after) }
                return
            } catch let error where error.isStaleLease {
                metrics.attemptEnded("stale", seconds: seconds)
                events(.finished(id: job.id, name: job.name, state: "stale", attempt: job.attempt,
                                 message: "a newer attempt owns the job: this attempt's result is discarded", seconds: seconds))
                return
            } catch .transition(_, .illegal(_, let now)) where outcome.isRelease {
                // A release the queue recorded before its answer was lost (a server restarting): the job is
                // queued again, or claimed and run since. Nothing is left to give back, and no retry can change that.
                metrics.attemptEnded(outcome.metricName, seconds: seconds)
                events(.finished(id: job.id, name: job.name, state: now == .queued ? "queued" : "stale", attempt: job.attempt,
                                 message: "released already (the job is \(now.rawValue) now)", seconds: seconds))
                return
            } catch .transition(_, .illegal(_, let ended)) where ended.isTerminal {
                // Cancelled meanwhile (a chunk of an export that failed, or by hand): the result is not wanted.
                metrics.attemptEnded(ended == .cancelled ? "cancelled" : "stale", seconds: seconds)
                events(.finished(id: job.id, name: job.name, state: ended.rawValue, attempt: job.attempt,
                                 message: "the job was \(ended.rawValue) meanwhile: this attempt's result is discarded", seconds: seconds))
                return
            } catch {
                let giveUp = now().addingTimeInterval(delay) >= deadline
                events(.notice("job \(job.id): cannot record the end of attempt \(job.attempt): \(error)"
                               + (giveUp ? "; the lease will expire and the job be rescued" : "; trying again")))
                if giveUp { return }
                await Self.waitWhileStopping(delay)
                delay = min(delay * 2, 2)
            }
        }
    }

    /// A job that ended without success: no attempt of it will go on with the uploads of its outputs bound
    /// for objects (a worker killed while sending parts leaves one), so they are aborted.
    func abortUnfinishedUploads(_ job: Job) async {
        guard job.manifest.contains("s3://"), case .success(let manifest) = ManifestLoader.validate(
            text: job.manifest, name: job.name, baseDirectory: job.baseDirectory, outputRoots: job.outputRoots) else { return }
        let objects = StagedOutput.finalPaths(of: manifest).filter(PathRules.isObject)
        guard !objects.isEmpty else { return }
        let recorded: [RecordedUpload]
        do { recorded = try await store.recordedUploads(of: job.id) } catch {
            events(.notice("job \(job.id) (\(job.name)): cannot read its recorded uploads: \(error)"))
            recorded = []
        }
        var aborted = 0
        var done: [RecordedUpload] = []
        for address in Set(objects + recorded.map(\.address)).sorted() {
            let mine = recorded.filter { $0.address == address }
            let (ids, problem) = await ObjectOutput.abortUnfinished(address, recorded: mine.map(\.uploadID))
            aborted += ids.count
            done += mine.filter { ids.contains($0.uploadID) }
            if let problem { events(.notice("job \(job.id) (\(job.name)): \(problem)")) }
        }
        if aborted > 0 { events(.notice("job \(job.id) (\(job.name)): aborted \(aborted) unfinished upload(s) of its outputs")) }
        do { try await store.forgetUploads(done) } catch {
            events(.notice("job \(job.id) (\(job.name)): cannot forget its aborted uploads: \(error)"))
        }
    }

    /// After a publication: the job's records of the uploads it completed are forgotten.
    func forgetUploads(of job: Job, completed: [ObjectUpload]) async {
        do {
            let done = try await store.recordedUploads(of: job.id).filter { record in completed.contains { $0.uploadID == record.uploadID } }
            try await store.forgetUploads(done)
        } catch {
            events(.notice("job \(job.id) (\(job.name)): cannot forget its completed uploads: \(error)"))
        }
    }

    /// Runs `body` (which may read a large output through) with the publishing lease renewed every third
    /// of its duration, so that no rescuer takes the job meanwhile. The last renewal has ended when it returns.
    private func holdingLease(_ job: Job, token: String, result: String?, while body: () async -> Void) async {
        let renewer = Task {
            let every = configuration.leaseDuration / 3
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(every))  // cancelled: the body is done
                guard !Task.isCancelled else { return }
                let renewal = LeaseRenewal(id: job.id, token: token, progress: 1, phase: "publishing", result: result)
                _ = try? await store.renew([renewal], leaseDuration: configuration.leaseDuration, at: now())  // a failed renewal leaves it to the next
            }
        }
        await body()
        renewer.cancel()
        await renewer.value
    }

    /// Renews one lease, retrying a queue that does not answer while the lease would still hold.
    /// false: the lease is lost (or could not be confirmed in time).
    private func confirmLease(_ job: Job, token: String, result: String?) async -> Bool {
        let deadline = now().addingTimeInterval(configuration.leaseDuration)
        var delay = 0.1
        while true {
            do {
                let lost = try await store.renew([LeaseRenewal(id: job.id, token: token, progress: 1, phase: "publishing", result: result)],
                                                 leaseDuration: configuration.leaseDuration, at: now())
                return !lost.contains(job.id)
            } catch {
                guard now().addingTimeInterval(delay) < deadline else {
                    events(.notice("job \(job.id): cannot confirm the lease before publishing (\(error))"))
                    return false
                }
                events(.notice("job \(job.id): cannot confirm the lease before publishing (\(error)); trying again"))
                await Self.waitWhileStopping(delay)
                delay = min(delay * 2, 2)
            }
        }
    }
}

extension Coordinator {
    /// Says which jobs failed with `ended` (they waited for it, directly or not, and needed its success):
    /// the queue failed them in the same transaction, and nothing else would show them in this output.
    func reportFailedDependents(_ ended: Job) async {
        var query = JobQuery(states: [.failed], limit: 21)
        query.blockedBy = ended.id
        do {
            let failed = try await store.jobs(matching: query)
            for dependent in failed.prefix(20) {
                events(.notice("job \(dependent.id) (\(dependent.name)) failed: it needed job \(ended.id) (\(ended.name)) to succeed, which ended \(ended.state.rawValue)"))
            }
            if failed.count > 20 { events(.notice("job \(ended.id): more jobs that needed it failed too (`mediafarm status --state failed`)")) }
        } catch {
            events(.notice("job \(ended.id): cannot list the jobs that needed it: \(error)"))
        }
    }
}

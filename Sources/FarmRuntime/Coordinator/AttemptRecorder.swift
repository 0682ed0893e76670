import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import QualityModel

/// How a coordinator records the end of an attempt in the queue (retried while the lease would hold),
/// gives back jobs claimed ahead, aborts the object uploads of a job that ended without success, and says
/// which jobs failed with it.
struct AttemptRecorder: CoordinatorPart {
    let context: CoordinatorContext

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
                jobs.recordEnd(job.id, after.state)
                if [.failed, .dead, .cancelled].contains(after.state) { await abortUnfinishedUploads(after) }
                metrics.attemptEnded(reason ?? outcome.metricName, seconds: seconds)
                switch outcome {
                case .succeeded(let result), .failed(_, let result):
                    if let said = CheckVerdict.Said(result: result) { metrics.checked(said.verdict) }
                case .crashed, .released: break
                }
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

    /// Gives back every job claimed ahead (draining, stopping): queued again without using up an attempt.
    func releaseAhead() async {
        for entry in jobs.takeAhead() { await finish(entry.job, token: entry.token, outcome: .released, seconds: 0) }
    }
}

extension AttemptOutcome {
    /// The outcome label of `mediafarm_attempts_total`.
    var metricName: String {
        switch self {
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .crashed: "crashed"
        case .released: "released"
        }
    }

    /// A job claimed ahead given back, or an attempt stopped by a drain.
    var isRelease: Bool {
        if case .released = self { return true }
        return false
    }
}

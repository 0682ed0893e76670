import FarmModel
import FarmStore
import FarmSubmit
import Foundation

/// How a coordinator publishes an attempt's staged outputs under its lease (files renamed, object uploads
/// completed), and completes the publications of coordinators that died while publishing.
struct Publisher: CoordinatorPart {
    let context: CoordinatorContext
    let recorder: AttemptRecorder

    /// Publishes the staged outputs while the lease is held, then records success. The lease is renewed
    /// first (a stale attempt is refused there) in phase `publishing` with the worker's result, so that
    /// if this coordinator dies while renaming or before recording success, whichever rescuer finds the
    /// expired lease completes this publication (`completeInterruptedPublications`) instead of running
    /// the job again: each output is published once. `recordPublished` runs between the publication and
    /// the success (the result kept for reuse, the library's representations), so that whoever sees the
    /// job succeed finds its outputs recorded; it is given the publication (the objects' entity tags).
    /// - Returns: whether the outputs were published.
    @discardableResult
    func publish(_ job: Job, token: String, manifest: JobManifest, resultJSON: String?, uploads: [ObjectUpload],
                 numbered: NumberedOutputs?, seconds: Double, reason: String? = nil, copiesFrom: [String] = [],
                 recordPublished: (StagedOutput.Publication) async -> Void = { _ in }) async -> Bool {
        if let missing = StagedOutput.missing(manifest, token: token, uploads: uploads, numbered: numbered) {
            await recorder.finish(job, token: token, outcome: .failed(message: "\(missing): the worker reported success but left no finished file to publish",
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
        let publication: StagedOutput.Publication
        do {
            // A retried attempt may replace what an earlier attempt of this job published.
            // Renewed while it runs: replacing a package (or completing uploads) may outlast a lease, and a rescuer
            // that found it expired would publish the same outputs beside it.
            publication = try await holdingLease(job, token: token, result: resultJSON) {
                try await StagedOutput.publish(manifest, token: token, allowExisting: manifest.overwrite || job.attempt > 1,
                                               uploads: uploads, numbered: numbered, copiesFrom: copiesFrom,
                                               log: { self.events(.notice("job \(job.id): \($0)")) })
            }
            metrics.published(publication.paths)
            if !uploads.isEmpty { await recorder.forgetUploads(of: job, completed: uploads) }
            if job.attempt > 1 { StagedOutput.discardEarlierAttempts(manifest, keeping: token) }
        } catch {
            let message = "\(error)"
            let retryable = (error as? JobError)?.retryable == true
            await recorder.finish(job, token: token, outcome: retryable ? .crashed(message: message) : .failed(message: message, result: resultJSON), seconds: seconds)
            return false
        }
        await holdingLease(job, token: token, result: resultJSON) { await recordPublished(publication) }
        await recorder.finish(job, token: token, outcome: .succeeded(result: resultJSON), seconds: seconds, reason: reason)
        return true
    }

    /// Runs `body` (which may read a large output through) with the publishing lease renewed every third
    /// of its duration, so that no rescuer takes the job meanwhile. The last renewal has ended when it returns.
    private func holdingLease<T>(_ job: Job, token: String, result: String?, while body: () async throws -> T) async rethrows -> T {
        let renewer = Task {
            let every = configuration.leaseDuration / 3
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(every))  // cancelled: the body is done
                guard !Task.isCancelled else { return }
                let renewal = LeaseRenewal(id: job.id, token: token, progress: 1, phase: "publishing", result: result)
                _ = try? await store.renew([renewal], leaseDuration: configuration.leaseDuration, at: now())  // a failed renewal leaves it to the next
            }
        }
        defer { renewer.cancel() }
        let value = try await body()
        renewer.cancel()
        await renewer.value
        return value
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

    /// Attempts whose coordinator died while publishing: their worker succeeded and every output was
    /// staged, so the publication is completed here and the job finished under the expired lease's token
    /// (fenced: when several rescuers race, one records it; renaming is idempotent). One that cannot be
    /// completed is rescued as usual once the grace of one lease has passed.
    func completeInterruptedPublications() async {
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
            // A join's copies are of its chunks (the manifest recorded is the one submitted, without its join).
            var copiesFrom = job.chunkPlan?.chunks.map { $0.output + "/" } ?? []
            if let text = job.result {
                do {
                    let result = try JSONDecoder().decode(JobResult.self, from: Data(text.utf8))
                    (uploads, numbered) = (result.uploads ?? [], result.numbered)
                    // A package answered from an earlier one is copied from it (a worker's result names none: `JobSupervisor`).
                    if let earlier = result.reused?.output { copiesFrom.append(earlier + "/") }
                } catch {
                    events(.notice("job \(job.id) (\(job.name)): \(lease.owner) stopped while publishing attempt \(job.attempt), but its worker's "
                                   + "recorded result cannot be read (\(error)); the publication is not completed here, and the attempt is "
                                   + "rescued when its lease's grace has passed"))
                    continue
                }
            }
            do {
                metrics.published(try await StagedOutput.publish(manifest, token: lease.token, allowExisting: manifest.overwrite || job.attempt > 1,
                                                                 resuming: true, uploads: uploads, numbered: numbered, copiesFrom: copiesFrom,
                                                                 log: { self.events(.notice("job \(job.id): \($0)")) }).paths)
                if !uploads.isEmpty { await recorder.forgetUploads(of: job, completed: uploads) }
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
}

import Dispatch

/// Where a coordinator supervises its jobs: Dispatch's threads, not the queue's writer thread (where the
/// loops run, so that their store calls pay no hop) and not the cooperative pool (which the HTTP face
/// shares). A job's file work blocks: validation's checks, publication's renames and fsyncs, reuse's hashes
/// and copies. On the writer thread it held up every queue write behind it, submissions through the API
/// included; here a blocked thread is one of Dispatch's, which starts another when the queue backs up.
/// Its store calls hop to the writer (about 30 us each, a few a job).
final class JobWorkExecutor: TaskExecutor {
    static let shared = JobWorkExecutor()
    private let queue = DispatchQueue(label: "mediafarm.job-work", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

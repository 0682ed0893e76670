import FarmModel
import FarmStore
import Foundation

/// What a submitter says about its jobs beyond their manifests: where they may write, how they are queued,
/// in whose namespace their keys are. `job(_:text:)` makes a manifest's `NewJob`, the one place one is made:
/// the manifest's own `"after"`, `"afterPolicy"` and `"requires"` and the files it writes come from it.
public struct JobOptions: Sendable {
    public var outputRoots: [String]
    public var priority: Int
    public var maxAttempts: Int
    public var runAt: Date?
    public var uniqueKey: UniqueKey?
    public var timeout: Double?
    /// Jobs to wait for besides the manifest's `"after"`.
    public var after: [JobReference]
    /// Instead of the manifest's `"afterPolicy"`.
    public var afterPolicy: AfterPolicy?
    /// Instead of the manifest's `"requires"`: a split job's parts need what it needed, and a batch's embedded
    /// coordinator runs every job.
    public var requires: [String]?
    /// How the manifest's `"after"` keys are spelled in the queue (the API's are its own).
    public var keys: KeyNamespace
    /// The job's name; nil: the manifest's.
    public var name: String?
    /// The folder its relative paths resolve against; nil: the manifest's.
    public var baseDirectory: String?

    public init(outputRoots: [String] = [], priority: Int = 0, maxAttempts: Int = RetryPolicy.default.maxAttempts, runAt: Date? = nil,
                uniqueKey: UniqueKey? = nil, timeout: Double? = nil, after: [JobReference] = [], afterPolicy: AfterPolicy? = nil,
                requires: [String]? = nil, keys: KeyNamespace = .given, name: String? = nil, baseDirectory: String? = nil) {
        (self.outputRoots, self.priority, self.maxAttempts, self.runAt, self.uniqueKey) = (outputRoots, priority, maxAttempts, runAt, uniqueKey)
        (self.timeout, self.after, self.afterPolicy, self.requires) = (timeout, after, afterPolicy, requires)
        (self.keys, self.name, self.baseDirectory) = (keys, name, baseDirectory)
    }

    /// The job of `manifest`, whose text (as submitted: what the queue keeps and shows) is `text`.
    public func job(_ manifest: JobManifest, text: String) -> NewJob {
        let own = manifest.after.map(keys.reference)
        return NewJob(name: name ?? manifest.name, manifest: text, baseDirectory: baseDirectory ?? manifest.baseDirectory, outputRoots: outputRoots,
                      priority: priority, maxAttempts: maxAttempts, runAt: runAt, uniqueKey: uniqueKey?.stored, timeout: timeout,
                      after: own + after.filter { !own.contains($0) }, afterPolicy: afterPolicy ?? manifest.afterPolicy,
                      requires: requires ?? manifest.requires, outputs: manifest.writes)
    }
}

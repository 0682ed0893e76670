import FarmModel

/// Who submits: each way into the queue is one case, and the case settles the rules its manifests are
/// checked by and how each refusal says the way past it, in that way's words (an option, a query
/// parameter, a config key). The command line, the HTTP API, the console's resubmission, a poster request,
/// a watch folder and a capture.
public enum Submitter: Sendable {
    /// `mediafarm submit`: outputs that exist are refused; a missing input is refused unless
    /// `allowMissingInputs`; `oneUniqueKey`: every job of the submission carries the one key given.
    case commandLine(outputRoots: [String]?, allowMissingInputs: Bool = false, oneUniqueKey: Bool = false)
    /// `mediafarm batch`: as the command line, with inputs that may be made by the batch's own jobs.
    case batch(outputRoots: [String]?)
    /// `POST /api/jobs`: outputs under the coordinator's roots; `"overwrite": true` only where the
    /// coordinator allows it, and never for a token scoped to albums.
    case api(outputRoots: [String], allowMissingInputs: Bool, allowOverwrite: Bool, scoped: Bool)
    /// A job's manifest submitted again from the console, under the roots it was queued with.
    case resubmit(outputRoots: [String], allowOverwrite: Bool)
    /// A poster the console or the API asks for, written under the coordinator's first root.
    case posterRequest(outputRoots: [String])
    /// A watch folder's job (`mediafarm ingest`): an output that exists is found when the job runs.
    case ingest(outputRoots: [String])
    /// A capture's job (`mediafarm capture`): as ingest's.
    case capture(outputRoots: [String])

    /// The way past an output-root refusal through the API.
    static let apiRootsWayOut = "to write there, the coordinator must be started with --output-root naming a folder above it"

    /// Why `"overwrite": true` is refused through the API, unless the coordinator allows it.
    static let apiOverwriteRefusal = ManifestIssue(path: "$.overwrite", message: "not allowed through the API: the coordinator replaces no "
                                                   + "existing file for a request unless started with --api-allow-overwrite")

    public var rules: SubmissionRules {
        switch self {
        case let .commandLine(outputRoots, allowMissingInputs, oneUniqueKey):
            var rules = SubmissionRules(outputRoots: outputRoots,
                                        missingInputWayOut: allowMissingInputs ? nil : "if it will be there when the job runs, give --allow-missing-inputs")
            rules.oneUniqueKey = oneUniqueKey
            return rules
        case .batch(let outputRoots):
            return SubmissionRules(outputRoots: outputRoots)
        case let .api(outputRoots, allowMissingInputs, allowOverwrite, scoped):
            let overwrite = scoped ? ManifestIssue(path: "$.overwrite", message: "a scoped library token cannot replace existing files")
                : allowOverwrite ? nil : Self.apiOverwriteRefusal
            return SubmissionRules(outputRoots: outputRoots, outputRootsWayOut: Self.apiRootsWayOut,
                                   missingInputWayOut: allowMissingInputs ? nil : "if it will be there when the job runs, add ?allowMissingInputs=true",
                                   overwriteRefusal: overwrite)
        case let .resubmit(outputRoots, allowOverwrite):
            return SubmissionRules(outputRoots: outputRoots, outputRootsWayOut: Self.apiRootsWayOut,
                                   overwriteRefusal: allowOverwrite ? nil : Self.apiOverwriteRefusal)
        case .posterRequest(let outputRoots):
            return SubmissionRules(outputRoots: outputRoots, outputRootsWayOut: "the coordinator's first --output-root is where posters are written")
        case .ingest(let outputRoots):
            return SubmissionRules(outputRoots: outputRoots, outputRootsWayOut: "to write there, add the folder to outputRoots in the config",
                                   refuseExistingOutputs: false)
        case .capture(let outputRoots):
            return SubmissionRules(outputRoots: outputRoots,
                                   outputRootsWayOut: "to write there, give --output-root FOLDER (or \"outputRoots\" in the --config file)",
                                   refuseExistingOutputs: false)
        }
    }
}

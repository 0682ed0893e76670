import FarmModel
import Foundation
import SafeFiles

/// Reads manifest files from disk and validates them against the real file system (symbolic links
/// resolved for the output-root check).
public enum ManifestLoader {
    /// Largest manifest file accepted.
    public static let maxBytes = JSONParser.maxDocumentBytes

    /// Loads and validates `path`; relative paths in it resolve against its folder. Output roots are
    /// `outputRoots` (absolute, or relative to the current folder), else the manifest's folder.
    public static func load(_ path: String, outputRoots: [String]? = nil) -> Result<JobManifest, ManifestValidationError> {
        loadWithText(path, outputRoots: outputRoots).map(\.manifest)
    }

    /// As `load`, with the manifest's text as read (what a queue stores), so the file is read once.
    /// `missingInputWayOut`: see `ManifestContext` (submission refuses inputs that do not exist).
    public static func loadWithText(_ path: String, outputRoots: [String]? = nil, missingInputWayOut: String? = nil)
        -> Result<(manifest: JobManifest, text: String), ManifestValidationError> {
        // Read as every submission reads a manifest file (`ManifestOffer.reading`).
        let offer: ManifestOffer
        switch ManifestOffer.reading(path) {
        case .success(let read): offer = read
        case .failure(let error): return .failure(error)
        }
        let roots = outputRoots.map { $0.map { PathRules.resolve($0, against: FileManager.default.currentDirectoryPath) } }
        return validate(bytes: offer.bytes, file: path, name: offer.name, baseDirectory: offer.baseDirectory, outputRoots: roots,
                        refuseExistingOutputs: true, missingInputWayOut: missingInputWayOut)
            .map { ($0, offer.text) }
    }

    /// `path` with every symbolic link in its existing part resolved; the part that does not exist yet
    /// is appended as written.
    @Sendable public static func realPath(_ path: String) -> String {
        var existing = path
        var rest: [String] = []
        while !FileManager.default.fileExists(atPath: existing), existing != "/" {
            rest.insert((existing as NSString).lastPathComponent, at: 0)
            existing = (existing as NSString).deletingLastPathComponent
        }
        let resolved = URL(fileURLWithPath: existing).resolvingSymlinksInPath().path
        return PathRules.normalize(([resolved] + rest).joined(separator: "/"))
    }
}

extension ManifestLoader {
    /// Validates a queued job's manifest text as it was submitted: relative paths against `baseDirectory`,
    /// outputs under `outputRoots` (symbolic links resolved now, again).
    public static func validate(text: String, name: String, baseDirectory: String, outputRoots: [String],
                                outputRootsWayOut: String = ManifestContext.commandLineOutputRootsWayOut) -> Result<JobManifest, ManifestValidationError> {
        validate(bytes: Array(text.utf8), file: name, name: name, baseDirectory: baseDirectory,
                 outputRoots: outputRoots.isEmpty ? nil : outputRoots, outputRootsWayOut: outputRootsWayOut)
    }

    /// The same for a manifest already parsed (a coordinator's, once per claim).
    public static func validate(document: JSONValue, name: String, baseDirectory: String, outputRoots: [String]) -> Result<JobManifest, ManifestValidationError> {
        ManifestValidator.validate(document, file: name, context: context(baseDirectory: baseDirectory, outputRoots: outputRoots.isEmpty ? nil : outputRoots,
                                                                          name: name))
    }

    /// A manifest its coordinator checked against this host's files (what a worker runs), read again
    /// without touching them: its shape, and its paths resolved as the check resolved them.
    public static func checked(document: JSONValue, name: String, baseDirectory: String, outputRoots: [String]) -> Result<JobManifest, ManifestValidationError> {
        ManifestValidator.validate(document, file: name, context: ManifestContext(baseDirectory: baseDirectory, outputRoots: outputRoots.isEmpty ? nil : outputRoots,
                                                                                  defaultName: name))
    }

    private static func context(baseDirectory: String, outputRoots: [String]?, name: String, refuseExistingOutputs: Bool = false,
                                overwriteRefusal: ManifestIssue? = nil, outputRootsWayOut: String = ManifestContext.commandLineOutputRootsWayOut,
                                missingInputWayOut: String? = nil) -> ManifestContext {
        ManifestContext(baseDirectory: baseDirectory, outputRoots: outputRoots, defaultName: name, realPath: realPath,
                        fileIdentity: FileIdentity.of, refuseExistingOutputs: refuseExistingOutputs,
                        protectedFile: { ProtectedFiles.shared.refusal(for: $0) }, overwriteRefusal: overwriteRefusal,
                        outputRootsWayOut: outputRootsWayOut, missingInputWayOut: missingInputWayOut)
    }

    /// Validation against the file system: `outputRoots` nil means the manifest's folder. Inputs and
    /// outputs are compared by file identity; `refuseExistingOutputs` at submission (see `ManifestContext`).
    /// The HTTP API submits through this with the body's bytes.
    /// Outputs that are the farm's own files (`ProtectedFiles.shared`) are refused; `overwriteRefusal`
    /// refuses `"overwrite": true` where the submitter may not replace files (see `ManifestContext`).
    public static func validate(bytes: [UInt8], file: String, name: String, baseDirectory: String,
                                outputRoots: [String]?, refuseExistingOutputs: Bool = false,
                                overwriteRefusal: ManifestIssue? = nil,
                                outputRootsWayOut: String = ManifestContext.commandLineOutputRootsWayOut,
                                missingInputWayOut: String? = nil) -> Result<JobManifest, ManifestValidationError> {
        ManifestValidator.validate(json: bytes, file: file, context: context(
            baseDirectory: baseDirectory, outputRoots: outputRoots, name: name, refuseExistingOutputs: refuseExistingOutputs,
            overwriteRefusal: overwriteRefusal, outputRootsWayOut: outputRootsWayOut, missingInputWayOut: missingInputWayOut))
    }
}

/// One thing wrong with a manifest, at a JSON path ("$.scale[1].rate").
public struct ManifestIssue: Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// A manifest that failed validation, with every issue found.
public struct ManifestValidationError: Error, Sendable, CustomStringConvertible {
    /// The manifest file, when it came from one.
    public var file: String?
    public var issues: [ManifestIssue]
    /// The file itself could not be read (missing, a folder, too big): said as such, not as its content.
    public var unreadable = false
    /// The assets its inputs name (`asset:ID`), at their JSON paths, read whatever else is wrong with it:
    /// an unknown one is reported beside the other issues.
    public var assets: [(path: String, id: AssetID)] = []

    public init(file: String?, issues: [ManifestIssue]) {
        self.file = file
        self.issues = issues
    }

    public var description: String {
        if unreadable, let issue = issues.first { return "\(file ?? "manifest"): \(issue.message)" }
        let head = "\(file ?? "manifest"): invalid manifest (\(issues.count) \(issues.count == 1 ? "error" : "errors"))"
        return ([head] + issues.map { "  \($0)" }).joined(separator: "\n")
    }
}

/// Where relative paths resolve and where outputs may go. `realPath` resolves symbolic links of the
/// part of a path that exists (the default leaves paths as they are; the CLI passes the file system's).
///
/// `fileIdentity` names the file a path reaches (device and inode, symbolic links followed), so that
/// two spellings of one file are recognised; the default knows none. With `refuseExistingOutputs`, an
/// output that already exists is an error unless the manifest says `"overwrite": true`
/// (AVAssetExportSession's rule); queued manifests re-validated by a worker leave that check to the
/// coordinator's publication, where a retried attempt may replace what its job published before.
public struct ManifestContext: Sendable {
    public var baseDirectory: String
    public var outputRoots: [String]
    public var defaultName: String
    public var realPath: @Sendable (String) -> String
    public var fileIdentity: @Sendable (String) -> FileIdentity?
    public var refuseExistingOutputs: Bool
    /// What farm file (the queue's database, an ingest state, a token file...) an output path reaches, in
    /// words; nil when none. Such an output is refused, whatever `"overwrite"` says.
    public var protectedFile: @Sendable (String) -> String?
    /// Why `"overwrite": true` may not be given here (the HTTP API refuses it unless its coordinator
    /// allows it); nil: it may.
    public var overwriteRefusal: ManifestIssue?
    /// How the submitter may write outside the output roots, in the words of the way it submits (an
    /// option, a config key); appended to the refusal.
    public var outputRootsWayOut: String
    /// When set, an input file that does not exist (by `fileIdentity`) is an error, and this says how to
    /// submit it anyway; nil: inputs are checked when the job runs.
    public var missingInputWayOut: String?

    /// The way past an output-root refusal for a user of the command line.
    public static let commandLineOutputRootsWayOut =
        "to write there, add a root: --output-root FOLDER (or s3://BUCKET/PREFIX), or MEDIAFARM_OUTPUT_ROOTS=FOLDER:... (outputRoots in an ingest or capture config)"

    public init(baseDirectory: String, outputRoots: [String]? = nil, defaultName: String = "job",
                realPath: @escaping @Sendable (String) -> String = { $0 },
                fileIdentity: @escaping @Sendable (String) -> FileIdentity? = { _ in nil },
                refuseExistingOutputs: Bool = false,
                protectedFile: @escaping @Sendable (String) -> String? = { _ in nil },
                overwriteRefusal: ManifestIssue? = nil,
                outputRootsWayOut: String = ManifestContext.commandLineOutputRootsWayOut,
                missingInputWayOut: String? = nil) {
        self.baseDirectory = PathRules.normalize(baseDirectory)
        self.outputRoots = (outputRoots ?? [baseDirectory]).map { PathRules.isObject($0) ? $0 : PathRules.normalize(PathRules.resolve($0, against: baseDirectory)) }
        self.defaultName = defaultName
        self.realPath = realPath
        self.fileIdentity = fileIdentity
        self.refuseExistingOutputs = refuseExistingOutputs
        self.protectedFile = protectedFile
        self.overwriteRefusal = overwriteRefusal
        self.outputRootsWayOut = outputRootsWayOut
        self.missingInputWayOut = missingInputWayOut
    }
}

/// Which file a path reaches, whatever its spelling: an existing file by device and inode (symbolic
/// links followed, hard links equal), a file yet to be made by its folder's device and inode and its
/// name there.
public enum FileIdentity: Sendable, Hashable {
    case existing(device: UInt64, inode: UInt64)
    case new(folderDevice: UInt64, folderInode: UInt64, name: String)

    public var exists: Bool { if case .existing = self { true } else { false } }
}

/// Lexical path handling, no file system access.
public enum PathRules {
    /// `path` made absolute against `base` (when relative) and normalized. An object's address
    /// (`s3://BUCKET/KEY`) is kept as written: a key is a name, not a path ("a/../b" is a key of its own).
    public static func resolve(_ path: String, against base: String) -> String {
        if isObject(path) { return path }
        return normalize(path.hasPrefix("/") ? path : base + "/" + path)
    }

    /// A colon-separated list of folders and object prefixes (`MEDIAFARM_OUTPUT_ROOTS`): the colon of
    /// `s3://` does not separate.
    public static func splitList(_ text: String) -> [String] {
        var items: [String] = []
        for part in text.split(separator: ":", omittingEmptySubsequences: false).map(String.init) {
            if part.hasPrefix("//"), items.last == "s3" { items[items.count - 1] += ":" + part } else { items.append(part) }
        }
        return items.filter { !$0.isEmpty }
    }

    /// Whether `path` addresses an object in S3-compatible storage rather than a file.
    public static func isObject(_ path: String) -> Bool { path.hasPrefix("s3://") }

    /// The key of the object address `path` (`s3://BUCKET/KEY`): what follows the bucket's "/".
    public static func objectKey(_ path: String) -> Substring {
        let rest = path.dropFirst(5)
        return rest.dropFirst(rest.prefix { $0 != "/" }.count + 1)
    }

    /// What is wrong with an object's address, or nil: `s3://BUCKET/KEY`, the bucket 3 to 63 lower-case
    /// letters, digits, dots and hyphens, beginning and ending with a letter or a digit, and a key of
    /// at most 1,024 bytes.
    public static func objectAddressProblem(_ path: String) -> String? {
        let bucket = path.dropFirst(5).prefix { $0 != "/" }
        let key = objectKey(path)
        let letterOrDigit: (Unicode.Scalar) -> Bool = { ("a"..."z").contains($0) || ("0"..."9").contains($0) }
        guard (3...63).contains(bucket.count),
              bucket.unicodeScalars.allSatisfy({ letterOrDigit($0) || $0 == "." || $0 == "-" }),
              letterOrDigit(bucket.unicodeScalars.first!), letterOrDigit(bucket.unicodeScalars.last!) else {
            return "\"\(bucket)\" is not a bucket name (3 to 63 lower-case letters, digits, dots and hyphens): s3://BUCKET/KEY"
        }
        if key.isEmpty { return "names a bucket, not an object: s3://BUCKET/KEY" }
        if key.utf8.count > 1024 { return "the key is longer than S3's 1,024 bytes" }
        if key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) { return "the key contains a control character" }
        return nil
    }

    /// Removes ".", "..", and repeated slashes. ".." above the root stays at the root.
    public static func normalize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// True when `path` is `root` or inside it.
    public static func isInside(_ path: String, root: String) -> Bool {
        root == "/" || path == root || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }
}

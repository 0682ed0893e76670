/// What a job claims it writes, for the rule that two live jobs may not write one file: a file's path, or
/// a folder's path with a trailing "/" (a streaming package, written whole). A folder's claim clashes with
/// every claim inside it and with a file at its own path; a file's with the folders it is inside. Written
/// once here for the queues (SQLite and PostgreSQL) and a submission's own jobs.
public enum OutputClaim {
    /// The claim of a folder written whole.
    public static func folder(_ path: String) -> String { path.hasSuffix("/") ? path : path + "/" }

    public static func isFolder(_ claim: String) -> Bool { claim.hasSuffix("/") }

    /// The path a claim names, without a folder's trailing "/".
    public static func bare(_ claim: String) -> String { isFolder(claim) ? String(claim.dropLast()) : claim }

    /// The folders `claim` is inside, nearest first, as folders' claims ("/a/b/", "/a/", "/").
    public static func folders(of claim: String) -> [String] {
        let bare = bare(claim)
        var folders: [String] = []
        var at = bare.endIndex
        while let slash = bare[..<at].lastIndex(of: "/") {
            folders.append(String(bare[...slash]))
            at = slash
        }
        return folders
    }

    /// The claims that clash with `claim` by name: the same path as a file and as a folder, and each folder
    /// it is inside, as a folder and as a bare path (a package recorded before folders were claimed with
    /// "/"; a file there could not hold what is inside it anyway). A folder's claim also clashes with every
    /// claim beginning with it (`inside`), which a lookup finds as a range.
    public static func keys(_ claim: String) -> [String] {
        let bare = bare(claim), folders = folders(of: claim)
        return [bare, bare + "/"] + folders + folders.map { String($0.dropLast()) }.filter { !$0.isEmpty }
    }

    /// The range of claims inside a folder's claim, for a lookup in byte order (SQLite's BINARY collation,
    /// where only "/" sorts between "x/" and "x0"): from it (inclusive) to the first string after every
    /// string that begins with it (exclusive); nil for a file's claim. Not for a collation that orders
    /// by language.
    public static func inside(_ claim: String) -> (from: String, to: String)? {
        guard isFolder(claim) else { return nil }
        return (claim, String(claim.dropLast()) + "0")
    }

    /// The locks a submission of `claims` takes, in the order to take them (one order for every
    /// submission, so two never wait for each other in a circle): each claim's own path (as a folder),
    /// exclusive, and each folder it is inside, shared. Two claims that clash always meet at one key, one
    /// of them exclusive; siblings share only their folders' keys and do not wait.
    public static func locks(_ claims: [String]) -> [(key: String, exclusive: Bool)] {
        var modes: [String: Bool] = [:]
        for claim in claims {
            modes[bare(claim) + "/"] = true
            for folder in folders(of: claim) where modes[folder] == nil { modes[folder] = false }
        }
        return modes.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Whether `a` and `b` clash.
    public static func clash(_ a: String, _ b: String) -> Bool {
        keys(a).contains(b) || keys(b).contains(a)
    }
}

/// Claims held in memory, each with what holds it, found by the claims that clash with a new one in time
/// proportional to the new claim's depth, however many are held (a submission of 100,000 jobs).
public struct OutputClaimIndex<Holder> {
    private var exact: [String: [Holder]] = [:]
    /// Under each folder's claim, the holders of claims inside it.
    private var within: [String: [(claim: String, holder: Holder)]] = [:]

    public init() {}

    public mutating func add(_ claim: String, _ holder: Holder) {
        exact[claim, default: []].append(holder)
        for folder in OutputClaim.folders(of: claim) { within[folder, default: []].append((claim, holder)) }
    }

    /// The claims held that clash with `claim`, each with its holders, nearest first (the same path, then
    /// the folders it is in, then what is inside it).
    public func clashing(_ claim: String) -> [(claim: String, holder: Holder)] {
        var found: [(claim: String, holder: Holder)] = []
        for key in OutputClaim.keys(claim) { found += (exact[key] ?? []).map { (key, $0) } }
        if OutputClaim.isFolder(claim) { found += within[claim] ?? [] }
        return found
    }
}

extension OutputClaimIndex: Sendable where Holder: Sendable {}

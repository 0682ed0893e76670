/// What a job claims it writes, for the rule that two live jobs may not write one file: a file's path, or
/// a folder's path with a trailing "/" (a streaming package, written whole). A folder's claim clashes with
/// every claim inside it and with a file at its own path; a file's with the folders it is inside. Written
/// once here for the queues (SQLite and PostgreSQL) and a submission's own jobs.
public enum OutputClaim {
    /// The claim of a folder written whole.
    public static func folder(_ path: String) -> String { path.hasSuffix("/") ? path : path + "/" }

    public static func isFolder(_ claim: String) -> Bool { claim.hasSuffix("/") }

    /// The claims that clash with `claim` by name: itself, the same path as file and as folder, and the
    /// claim of each folder it is inside. A folder's claim also clashes with every claim beginning with it
    /// (`inside`), which a lookup finds as a range.
    public static func keys(_ claim: String) -> [String] {
        let bare = isFolder(claim) ? String(claim.dropLast()) : claim
        var keys = [bare, bare + "/"]
        var at = bare.endIndex
        while let slash = bare[..<at].lastIndex(of: "/") {
            keys.append(String(bare[...slash]))
            at = slash
        }
        return keys
    }

    /// The range of claims inside a folder's claim: from it (inclusive) to the first string after every
    /// string that begins with it (exclusive); nil for a file's claim.
    public static func inside(_ claim: String) -> (from: String, to: String)? {
        guard isFolder(claim) else { return nil }
        // "/" is followed by "0" in every collation byte order the queues use ("C" and UTF-8 binary).
        return (claim, String(claim.dropLast()) + "0")
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
        for folder in OutputClaim.keys(claim).dropFirst(2) { within[folder, default: []].append((claim, holder)) }
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

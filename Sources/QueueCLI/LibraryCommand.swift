import ArgumentParser
import FarmLibrary
import FarmModel
import FarmStore
import Foundation
import QualityModel

/// `mediafarm library`: the asset library (PhotoKit for a farm) in the queue's database. In the queue's
/// program, without `add` and `verify`, which inspect media (the media program has them).
public struct LibraryCommand: AsyncParsableCommand {
    public static let configuration = commandConfiguration(subcommands: reading)

    /// The commands that read no media file.
    public static let reading: [any ParsableCommand.Type] = [LibraryList.self, LibraryShow.self, LibraryResolve.self, LibraryAlbum.self,
                                                             LibraryChanges.self, LibraryForget.self, LibraryRemove.self, LibraryToken.self]

    public static func commandConfiguration(subcommands: [any ParsableCommand.Type]) -> CommandConfiguration {
        CommandConfiguration(
            commandName: "library",
            abstract: "The asset library: content ids that are the same on every host, albums, fetches, lineage and changes.",
            discussion: """
            An asset's id comes from its content (SHA-256), so a file added on two hosts at different paths has \
            one id; each host records its own path, and `resolve` gives this host's. Manifests may name \
            "asset:ID" as input or edit source: the host that runs the job resolves it. The library lives in the \
            queue's database (--queue, MEDIAFARM_QUEUE). Exit status: 0, 1 when something named was not found \
            or a file was refused, 2 for bad usage (a malformed id, cursor or token; a smart album's name).
            """,
            subcommands: subcommands)
    }

    public init() {}
}

/// The queue and library options every library command takes.
public struct LibraryContext: ParsableArguments {
    @OptionGroup public var queue: QueueOptions
    @OptionGroup public var library: LibraryOptions

    public init() {}

    /// The library, with `inspector` for content new to it (`.none`: this program reads no media).
    public func open(create: Bool = false, inspector: AssetInspector = .none) async throws -> AssetLibrary {
        let store = try await queue.open(create: create)
        return try await library.open(store, inspector: inspector)
    }
}

public func printJSON(_ value: some Encodable) throws {
    print(String(decoding: try JSONEncoder.sortedPretty().encode(value), as: UTF8.self))
}

struct LibraryList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Fetch assets by predicates, sorted, a page at a time.",
        discussion: """
        Dates are the creation date in the file's metadata, else when it was added. With --limit, the last \
        line (or "nextCursor" in JSON) gives the cursor for --after, which continues the listing.
        """)

    @OptionGroup var context: LibraryContext

    @Option(help: "A user album, or a smart album: Videos, Audio, Slo-mo, Recently Added, With Codes, Failed Jobs' Inputs.")
    var album: String?

    @Option(help: "video, audio or image.")
    var type: String?

    @Option(help: "On or after this date (YYYY-MM-DD or ISO 8601).")
    var since: String?

    @Option(help: "Before this date (YYYY-MM-DD or ISO 8601).")
    var until: String?

    @Option(name: .customLong("min-duration"), parsing: .unconditional, help: "At least this many seconds \(UserNumbers.duration.inHelp).", transform: UserNumbers.duration.option)
    var minDuration: Double?

    @Option(name: .customLong("max-duration"), parsing: .unconditional, help: "At most this many seconds \(UserNumbers.duration.inHelp).", transform: UserNumbers.duration.option)
    var maxDuration: Double?

    @Option(help: "The (first video, else audio) codec, as inspect names it: h264, hevc, aac…")
    var codec: String?

    @Flag(name: .customLong("has-codes"), help: "Only assets in which a scan found codes.")
    var hasCodes = false

    @Flag(name: .customLong("slow-motion"), help: "Only slow-motion (100 fps or more) videos.")
    var slowMotion = false

    @Option(help: "Only assets whose last quality checks gave this verdict: passed, warnings or failed.")
    var verdict: CheckVerdict?

    @Option(help: "date (default), duration or added.")
    var sort: String = "date"

    @Flag(help: "Newest (or longest) first.")
    var reverse = false

    @Option(parsing: .unconditional, help: "At most N assets (a page) \(UserNumbers.limit.inHelp).", transform: UserNumbers.limit.option)
    var limit: Int?

    @Option(help: "Continue after this cursor (from the page before).")
    var after: String?

    @Flag(help: "Print the page as JSON.")
    var json = false

    func options() throws -> FetchOptions {
        var options = FetchOptions()
        options.album = album
        if let type {
            guard let t = LibraryMediaType(rawValue: type) else {
                throw ValidationError("--type \(type)\(Suggestion.hint(type, in: ["video", "audio", "image"])): give video, audio or image")
            }
            options.mediaType = t
        }
        options.since = try since.map { try Self.date($0, "--since") }
        options.until = try until.map { try Self.date($0, "--until") }
        options.minDuration = minDuration
        options.maxDuration = maxDuration
        options.codec = codec
        options.hasCodes = hasCodes ? true : nil
        options.slowMotion = slowMotion ? true : nil
        options.verdict = verdict
        guard let s = FetchOptions.Sort(rawValue: sort) else {
            throw ValidationError("--sort \(sort)\(Suggestion.hint(sort, in: ["date", "duration", "added"])): give date, duration or added")
        }
        options.sort = s
        options.descending = reverse
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        options.limit = limit
        options.after = after
        return options
    }

    static func date(_ text: String, _ option: String) throws -> Date {
        let formatter = ISO8601DateFormatter()
        if let d = formatter.date(from: text) { return d }
        formatter.formatOptions = [.withFullDate]
        if let d = formatter.date(from: text) { return d }
        throw ValidationError("\(option) \(text): give a date as YYYY-MM-DD or ISO 8601 (2026-11-24T10:00:00Z)")
    }

    func validate() throws { _ = try options() }

    func run() async throws {
        let options = try options()
        let library = try await context.open()
        let page = try await LibraryOptions.run { try await library.fetch(options) }
        if json { return try printJSON(page) }
        for asset in page.assets { print(Self.line(asset)) }
        if let next = page.nextCursor { print("more: --after \(next)") }
    }

    static func line(_ a: LibraryAsset) -> String {
        let date = a.date.formatted(.iso8601)
        let duration = String(format: "%9.3f s", a.facts.duration.seconds)
        return "\(a.id)  \(a.facts.mediaType.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0))  \(duration)  \(date)  "
            + "\((a.facts.codec ?? "-").padding(toLength: 6, withPad: " ", startingAt: 0))  \(a.path ?? "(not on this host)")"
            + (a.verdict.map { "  checks \($0.rawValue)" } ?? "")
    }
}

struct LibraryShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "An asset's facts, local identifiers, albums, representations and lineage.")

    @OptionGroup var context: LibraryContext

    @Flag(help: "Print it as JSON.")
    var json = false

    @Argument(help: "An asset id, or a file registered on this host.")
    var asset: String

    func run() async throws {
        let library = try await context.open()
        let detail = try await LibraryOptions.run {
            try await library.detail(try await Self.id(asset, library))
        }
        if json { return try printJSON(detail) }
        let a = detail.asset
        let f = a.facts
        var lines = ["asset \(a.id)", "  sha256     \(a.sha256)",
                     "  type       \(f.mediaType.rawValue)\(a.subtypes.isEmpty ? "" : " (\(a.subtypes.joined(separator: ", ")))")",
                     "  duration   \(String(format: "%.3f", f.duration.seconds)) s", "  size       \(f.size) bytes"]
        if let codec = f.codec { lines.append("  codec      \(codec)\(f.audioCodec.map { $0 == codec ? "" : " + \($0)" } ?? "")") }
        if let w = f.width, let h = f.height { lines.append("  picture    \(w)x\(h)\(f.frameRate.map { String(format: " at %.3f fps", $0) } ?? "")") }
        if let l = f.loudness {
            lines.append("  loudness   \(String(format: "%.1f LUFS", l))\(f.truePeak.map { String(format: ", true peak %.1f dBTP", $0) } ?? "")"
                         + (f.loudnessRange.map { String(format: ", range %.1f LU", $0) } ?? ""))
        }
        if let date = f.creationDate { lines.append("  created    \(date.formatted(.iso8601))") }
        if let location = f.location { lines.append("  location   \(location)") }
        if f.make != nil || f.model != nil { lines.append("  camera     \([f.make, f.model].compactMap { $0 }.joined(separator: " "))") }
        if let verdict = a.verdict { lines.append("  checks     \(verdict.rawValue) (the last quality checks of it)") }
        lines.append("  added      \(a.addedAt.formatted(.iso8601))")
        for code in a.codes { lines.append("  code       \(code.symbology): \(code.payload ?? code.payloadBase64 ?? "")") }
        for l in detail.locations { lines.append("  local      \(l.host):\(l.path)\(l.state == "present" ? "" : " (\(l.state))")") }
        if !detail.albums.isEmpty { lines.append("  albums     \(detail.albums.joined(separator: ", "))") }
        for r in detail.representations { lines.append("  made       \(r.output) by job \(r.jobID) (\(r.jobName)) at \(r.host):\(r.path)") }
        for r in detail.derivedFrom { lines.append("  made from  \(r.source) by job \(r.jobID) (\(r.jobName))") }
        if !detail.jobs.isEmpty { lines.append("  jobs       \(detail.jobs.map(String.init).joined(separator: ", "))") }
        print(lines.joined(separator: "\n"))
    }

    /// An id, or the asset registered at an existing path on this host.
    static func id(_ text: String, _ library: AssetLibrary) async throws -> AssetID {
        if FileManager.default.fileExists(atPath: text) {
            guard let id = try await library.assetID(at: text) else { throw LibraryError.unknownPath(text) }
            return id
        }
        return try parseAssetIDs([text])[0]
    }
}

struct LibraryResolve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "This host's path for each asset id, or why there is none (exit 1 when any has no single path).",
        discussion: "Statuses: found, several (every path listed), missing (was here: gone or changed), notOnThisHost, unknown.")

    @OptionGroup var context: LibraryContext

    @Flag(help: "Print the resolutions as JSON.")
    var json = false

    @Argument(help: "Asset ids (or asset:ID).")
    var ids: [String]

    func run() async throws {
        let ids = try parseAssetIDs(ids)
        let library = try await context.open()
        let resolutions = try await LibraryOptions.run { try await library.resolve(ids) }
        if json {
            try printJSON(resolutions)
        } else {
            for r in resolutions {
                switch r.status {
                case .found: print("\(r.id)  found          \(r.paths[0])")
                case .several: print("\(r.id)  several        \(r.paths.joined(separator: "  "))")
                default: print("\(r.id)  \(r.status.rawValue.padding(toLength: 13, withPad: " ", startingAt: 0))  \(r.reason ?? "")")
                }
            }
        }
        if resolutions.contains(where: { $0.status != .found }) { throw ExitCode(ExitStatus.failure) }
    }
}

struct LibraryAlbum: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "album",
        abstract: "User albums: create, add, remove, list, delete (smart albums are listed, not changed).",
        subcommands: [Create.self, Add.self, Remove.self, List.self, Delete.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Make an empty album.")
        @OptionGroup var context: LibraryContext
        @Argument(help: "The album's name.") var name: String

        func run() async throws {
            let library = try await context.open(create: true)
            try await LibraryOptions.run { try await library.createAlbum(name) }
            print("album \"\(name)\" created")
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Put assets (ids, or files registered on this host) in an album.")
        @OptionGroup var context: LibraryContext
        @Flag(help: "Make the album when it does not exist.") var create = false
        @Argument(help: "The album's name.") var name: String
        @Argument(help: "Asset ids or registered files.") var assets: [String]

        func run() async throws {
            let library = try await context.open()
            let added = try await LibraryOptions.run {
                var ids: [AssetID] = []
                for asset in assets { ids.append(try await LibraryShow.id(asset, library)) }
                return try await library.addToAlbum(name, ids, creating: create)
            }
            print("\(added) added to \"\(name)\"\(added < assets.count ? " (\(assets.count - added) were in it already)" : "")")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Take assets out of an album (they stay in the library).")
        @OptionGroup var context: LibraryContext
        @Argument(help: "The album's name.") var name: String
        @Argument(help: "Asset ids or registered files.") var assets: [String]

        func run() async throws {
            let library = try await context.open()
            let removed = try await LibraryOptions.run {
                var ids: [AssetID] = []
                for asset in assets { ids.append(try await LibraryShow.id(asset, library)) }
                return try await library.removeFromAlbum(name, ids)
            }
            print("\(removed) removed from \"\(name)\"")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Albums with their sizes, then the smart albums.")
        @OptionGroup var context: LibraryContext
        @Flag(help: "Print them as JSON.") var json = false

        func run() async throws {
            let library = try await context.open()
            let albums = try await LibraryOptions.run { try await library.albums() }
            if json { return try printJSON(albums) }
            for album in albums { print("\(String(album.count).padding(toLength: 7, withPad: " ", startingAt: 0))  \(album.name)\(album.smart ? "  (smart)" : "")") }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete an album (its assets stay in the library).")
        @OptionGroup var context: LibraryContext
        @Argument(help: "The album's name.") var name: String

        func run() async throws {
            let library = try await context.open()
            try await LibraryOptions.run { try await library.deleteAlbum(name) }
            print("album \"\(name)\" deleted")
        }
    }
}

struct LibraryChanges: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "What changed since a change token; prints the token to give next time.",
        discussion: "Without --since, every change from the library's start. The last line (\"token\" in JSON) is the new token.")

    @OptionGroup var context: LibraryContext

    @Option(help: "A token an earlier `changes` printed.")
    var since: String?

    @Option(parsing: .unconditional, help: "At most N changes; \"more\" says when others follow \(UserNumbers.limit.inHelp).", transform: UserNumbers.limit.option)
    var limit: Int = 10_000

    @Flag(help: "Print the changes and the new token as JSON.")
    var json = false

    func run() async throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
        let library = try await context.open()
        let list = try await LibraryOptions.run { try await library.changes(since: since, limit: limit) }
        if json { return try printJSON(list) }
        let formatter = ISO8601DateFormatter()
        for c in list.changes {
            let what = [c.assetID?.rawValue, c.album.map { "album \"\($0)\"" }, c.path.map { "\(c.host ?? ""):\($0)" }, c.detail].compactMap { $0 }
            print("\(c.token)  \(formatter.string(from: c.at))  \(c.kind.rawValue.padding(toLength: 19, withPad: " ", startingAt: 0))  \(what.joined(separator: "  "))")
        }
        print("token: \(list.token)\(list.more ? " (more changes follow: ask again with it)" : "")")
    }
}

struct LibraryForget: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Forget where this host keeps a file (the asset and its other locations stay).")

    @OptionGroup var context: LibraryContext

    @Argument(help: "Registered files on this host.")
    var paths: [String]

    func run() async throws {
        let library = try await context.open()
        for path in paths {
            let id = try await LibraryOptions.run { try await library.forget(path: path) }
            print("\(id)  forgotten  \(path)")
        }
    }
}

struct LibraryRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove assets from the library on every host (the files are not touched).")

    @OptionGroup var context: LibraryContext

    @Argument(help: "Asset ids.")
    var ids: [String]

    func run() async throws {
        let ids = try parseAssetIDs(ids)
        let library = try await context.open()
        for id in ids {
            try await LibraryOptions.run { try await library.remove(id) }
            print("\(id)  removed")
        }
    }
}

struct LibraryToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Scoped tokens (limited access): create, list, revoke.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Make a token that sees and submits only the assets of some albums; prints it once.",
            discussion: "Give it to a command with --token-file or MEDIAFARM_LIBRARY_TOKEN. The library keeps only its SHA-256.")
        @OptionGroup var context: LibraryContext
        @Option(help: "An album the token may see (repeatable).") var album: [String] = []
        @Argument(help: "The token's name.") var name: String

        func run() async throws {
            let library = try await context.open()
            let secret = try await LibraryOptions.run { try await library.createToken(name: name, albums: album) }
            print(secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Tokens by name with their albums (never the secrets).")
        @OptionGroup var context: LibraryContext
        @Flag(help: "Print them as JSON.") var json = false

        func run() async throws {
            let library = try await context.open()
            let tokens = try await LibraryOptions.run { try await library.tokens() }
            if json { return try printJSON(tokens) }
            for t in tokens { print("\(t.name)  \(t.albums.map { "\"\($0)\"" }.joined(separator: ", "))") }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Revoke a token by name.")
        @OptionGroup var context: LibraryContext
        @Argument(help: "The token's name.") var name: String

        func run() async throws {
            let library = try await context.open()
            try await LibraryOptions.run { try await library.revokeToken(name: name) }
            print("token \"\(name)\" revoked")
        }
    }
}

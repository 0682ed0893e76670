import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmStore
import FarmTestSupport
import Foundation
import SafeFiles
import Testing

/// The asset library against both queue backends, with real media files.
@Suite struct AssetLibraryTests {
    let t0 = Date(timeIntervalSince1970: 1_767_225_600) // 2026-01-01

    func library(_ store: any JobStore, host: String, clock: TestClock? = nil) throws -> AssetLibrary {
        let clock = clock ?? TestClock(t0)
        return AssetLibrary(database: try store.database, host: host, inspector: .media, now: { clock.now })
    }

    /// Adds the whole set; returns each file's id by name.
    func addAll(_ library: AssetLibrary, _ folder: URL, album: String? = nil) async throws -> [String: AssetID] {
        let outcomes = try await library.add([folder.path], album: album)
        var ids: [String: AssetID] = [:]
        for o in outcomes {
            let name = (o.path as NSString).lastPathComponent
            ids[name] = try #require(o.id, "\(o.path): \(o.status) \(o.reason ?? "")")
        }
        #expect(ids.count == MediaSet.items.count)
        return ids
    }

    @Test(arguments: Backend.allCases)
    func theSameFileHasOneIDOnEveryHostAndEachHostResolvesItsOwnPath(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let source = try MediaSet.folder.get().appendingPathComponent("v1.mp4").path
        let here = try TestPaths.makeTemporaryFolder("host-a").appendingPathComponent("take.mp4").path
        let there = try TestPaths.makeTemporaryFolder("host-b").appendingPathComponent("renamed.mp4").path
        try FileManager.default.copyItem(atPath: source, toPath: here)
        try FileManager.default.copyItem(atPath: source, toPath: there)
        let a = try library(store, host: "a"), b = try library(store, host: "b"), c = try library(store, host: "c")

        let added = try await a.add([here])
        let located = try await b.add([there])
        #expect(added.map(\.status) == [.added] && located.map(\.status) == [.located])
        let id = try #require(added[0].id)
        #expect(located[0].id == id && id.rawValue.count == 26)
        #expect(id == (try ContentHash.of(file: source)).id, "the id is the content's")
        // A SHA-256 known already (a copy hashed as it was made) gives the same identity as reading the file.
        let read = try ContentHash.of(file: source)
        #expect(ContentHash(sha256: read.sha256.uppercased()) == read && ContentHash(sha256: "12") == nil)

        #expect(try await a.resolve([id]) == [Resolution(id: id, status: .found, paths: [here], hosts: ["a"], reason: nil)])
        #expect(try await b.resolve([id]).map(\.paths) == [[there]])
        let elsewhere = try await c.resolve([id])
        #expect(elsewhere[0].status == .notOnThisHost && elsewhere[0].hosts == ["a", "b"])

        // A second copy on host a: both listed, never a guess.
        let second = (here as NSString).deletingLastPathComponent + "/again.mp4"
        try FileManager.default.copyItem(atPath: source, toPath: second)
        _ = try await a.add([second])
        let several = try await a.resolve([id])
        #expect(several[0].status == .several && several[0].paths.sorted() == [second, here].sorted())

        // An id nobody added.
        let stranger = AssetID(digest: [UInt8](repeating: 7, count: 32))
        #expect(try await a.resolve([stranger]).map(\.status) == [.unknown])
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func anUnchangedFileIsNotHashedAgainAndAChangedOneBecomesANewAsset(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let folder = try MediaSet.copy("change")
        let path = folder.appendingPathComponent("v1.mp4").path
        let lib = try library(store, host: "h")
        let first = try #require(try await lib.add([path]).first?.id)

        // Other bytes of the same size, with the modification time put back: the stamp is unchanged, so
        // `add` trusts it and does not read the file (the id stays the old one).
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let stamp = try #require(FileStamp(path: path))
        var scrambled = original
        scrambled[scrambled.count - 10] ^= 0xff
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: scrambled)
        try handle.close()
        var times = [timespec(tv_sec: Int(stamp.mtime), tv_nsec: Int((stamp.mtime - stamp.mtime.rounded(.down)) * 1e9)),
                     timespec(tv_sec: Int(stamp.mtime), tv_nsec: Int((stamp.mtime - stamp.mtime.rounded(.down)) * 1e9))]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(FileStamp(path: path) == stamp)
        let again = try await lib.add([path])
        #expect(again.map(\.status) == [.unchanged] && again[0].id == first)

        // A real change (new modification time): hashed again, a new asset there, the old one missing here.
        try scrambled.write(to: URL(fileURLWithPath: path))
        let changed = try await lib.add([path])
        let second = try #require(changed.first?.id)
        #expect(changed[0].status == .changed && second != first && changed[0].previous == first)
        let old = try await lib.resolve([first])
        #expect(old[0].status == .missing && old[0].paths == [path])
        #expect(try await lib.resolve([second]).map(\.status) == [.found])

        // verify: a file gone is reported missing; one rewritten with the same bytes is restamped, not changed.
        let v2 = folder.appendingPathComponent("v2.mp4").path, a1 = folder.appendingPathComponent("a1.m4a").path
        _ = try await lib.add([v2, a1])
        try FileManager.default.removeItem(atPath: v2)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: a1))
        try FileManager.default.removeItem(atPath: a1)
        try bytes.write(to: URL(fileURLWithPath: a1))
        let report = try await lib.verify()
        #expect(report.checked == 3 && report.missing.map(\.path) == [v2] && report.changed.isEmpty && report.restamped == 1)
        #expect(try await lib.verify().checked == 2, "a missing file is not checked again")
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func fetchPredicatesAndSortsMatchTheFactsOfTheFiles(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let clock = TestClock(t0)
        let lib = try library(store, host: "h", clock: clock)
        let ids = try await addAll(lib, try MediaSet.folder.get())
        let names = Dictionary(uniqueKeysWithValues: ids.map { ($0.value, $0.key) })

        // The expectations, from the table of what each file was made with.
        struct Expected { var name: String; var item: MediaSet.Item; var date: Date }
        let table = MediaSet.items.map { Expected(name: $0.name, item: $0, date: $0.created ?? t0) }
        func expect(_ options: FetchOptions, _ filter: (Expected) -> Bool, by key: (Expected) -> Double,
                    sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let got = try await lib.fetch(options).assets.map { names[$0.id] ?? "?" }
            var wanted = table.filter(filter).sorted { a, b in
                key(a) != key(b) ? key(a) < key(b) : ids[a.name]!.rawValue < ids[b.name]!.rawValue
            }.map(\.name)
            if options.descending { wanted.reverse() }
            #expect(got == wanted, sourceLocation: sourceLocation)
        }
        let date = { (e: Expected) in e.date.timeIntervalSince1970 }
        let duration = { (e: Expected) in e.item.duration }

        var o = FetchOptions()
        try await expect(o, { _ in true }, by: date)
        o.mediaType = .video; o.sort = .duration
        try await expect(o, { $0.item.type == .video }, by: duration)
        o.descending = true
        try await expect(o, { $0.item.type == .video }, by: duration)
        o = FetchOptions(); o.minDuration = 2; o.maxDuration = 4; o.sort = .duration
        try await expect(o, { (2...4).contains($0.item.duration) }, by: duration)
        o = FetchOptions(); o.since = MediaSet.day("2024-01-01"); o.until = MediaSet.day("2025-12-31")
        try await expect(o, { $0.date >= MediaSet.day("2024-01-01") && $0.date < MediaSet.day("2025-12-31") }, by: date)
        o = FetchOptions(); o.codec = "h264"
        try await expect(o, { $0.item.codec == "h264" }, by: date)
        o = FetchOptions(); o.slowMotion = true
        try await expect(o, { ($0.item.frameRate ?? 0) >= 100 }, by: date)
        o = FetchOptions(); o.mediaType = .image
        try await expect(o, { $0.item.type == .image }, by: date)

        // Facts as inspection measured them.
        let all = try await lib.fetch(FetchOptions()).assets
        for asset in all {
            let item = try #require(MediaSet.items.first { $0.name == names[asset.id] })
            #expect(asset.facts.mediaType == item.type && asset.facts.codec == item.codec, "\(item.name)")
            #expect(abs(asset.facts.duration.seconds - item.duration) < 0.05, "\(item.name): \(asset.facts.duration.seconds)")
            #expect(asset.facts.creationDate == item.created, "\(item.name)")
            if let rate = item.frameRate { #expect(abs((asset.facts.frameRate ?? 0) - rate) < 0.01, "\(item.name)") }
        }
        #expect(all.first { names[$0.id] == "slow.mp4" }?.subtypes.contains("slowMotion") == true)
        #expect(all.first { names[$0.id] == "v1.mp4" }?.subtypes == ["hasAudio"])

        // Pages by cursor, in every sort, put together, are the whole listing.
        for sort in FetchOptions.Sort.allCases {
            var whole = FetchOptions(); whole.sort = sort
            let expected = try await lib.fetch(whole).assets.map(\.id)
            var paged: [AssetID] = []
            var page = whole; page.limit = 2
            while true {
                let result = try await lib.fetch(page)
                paged += result.assets.map(\.id)
                guard let next = result.nextCursor else { break }
                page.after = next
            }
            #expect(paged == expected, "\(sort)")
        }
        var wrong = FetchOptions(); wrong.sort = .duration; wrong.limit = 1
        let cursor = try #require(try await lib.fetch(wrong).nextCursor)
        var mismatched = FetchOptions(); mismatched.after = cursor
        await #expect { try await lib.fetch(mismatched) } throws: { "\($0)".contains("sorted by duration") }
        var garbage = FetchOptions(); garbage.after = "not-a-cursor"
        await #expect { try await lib.fetch(garbage) } throws: { ($0 as? LibraryError)?.isUsage == true }
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func albumsAndSmartAlbums(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let clock = TestClock(t0)
        let lib = try library(store, host: "h", clock: clock)
        let ids = try await addAll(lib, try MediaSet.folder.get())
        try await lib.createAlbum("Takes")
        #expect(try await lib.addToAlbum("Takes", [ids["v1.mp4"]!, ids["slow.mp4"]!]) == 2)
        #expect(try await lib.addToAlbum("Takes", [ids["v1.mp4"]!]) == 0, "already in it")
        await #expect { try await lib.createAlbum("Takes") } throws: { "\($0)".contains("exists already") }
        await #expect { try await lib.createAlbum("Videos") } throws: { ($0 as? LibraryError)?.isUsage == true }
        await #expect { try await lib.addToAlbum("Nope", [ids["v1.mp4"]!]) } throws: { "\($0)".contains("no album \"Nope\"") }
        await #expect { try await lib.addToAlbum("Takes", [AssetID(digest: [UInt8](repeating: 1, count: 16))]) } throws: {
            "\($0)".contains("no asset")
        }

        func names(_ album: String) async throws -> Set<String> {
            var o = FetchOptions(); o.album = album
            let found = try await lib.fetch(o).assets.map(\.id)
            return Set(ids.filter { found.contains($0.value) }.map(\.key))
        }
        #expect(try await names("Takes") == ["v1.mp4", "slow.mp4"])
        #expect(try await names("Videos") == ["v1.mp4", "v2.mp4", "slow.mp4", "v3.mkv"])
        #expect(try await names("Audio") == ["a1.m4a"])
        #expect(try await names("Slo-mo") == ["slow.mp4"])
        #expect(try await names("Recently Added").count == 6)
        #expect(try await names("With Codes").isEmpty)
        try await lib.recordCodes(ids["v2.mp4"]!, [LibraryCode(symbology: "qr", payload: "TAKE-7")])
        #expect(try await names("With Codes") == ["v2.mp4"])
        var withCodes = FetchOptions(); withCodes.hasCodes = true
        #expect(try await lib.fetch(withCodes).assets.map(\.codes) == [[LibraryCode(symbology: "qr", payload: "TAKE-7")]])

        // Recently Added is the last 30 days.
        clock.advance(31 * 86400)
        #expect(try await names("Recently Added").isEmpty)

        // Failed Jobs' Inputs: the inputs of jobs that failed or died.
        let jobs = try await store.enqueue([NewJob(name: "j", manifest: "{}", baseDirectory: "/")], at: t0)
        try await lib.recordJobInputs(jobs[0].id, [ids["v3.mkv"]!])
        #expect(try await names("Failed Jobs' Inputs").isEmpty)
        let claimed = try await store.claim(limit: 1, owner: "o", leaseDuration: 30, at: t0)
        _ = try await store.finish(id: jobs[0].id, token: claimed[0].lease!.token, outcome: .failed(message: "bad", result: nil), at: t0)
        #expect(try await names("Failed Jobs' Inputs") == ["v3.mkv"])

        let listed = try await lib.albums()
        #expect(listed.map(\.name) == ["Takes"] + SmartAlbum.allCases.map(\.rawValue))
        #expect(listed.map(\.count) == [2, 4, 1, 1, 0, 1, 1])
        #expect(try await lib.removeFromAlbum("Takes", [ids["v1.mp4"]!]) == 1)
        try await lib.deleteAlbum("Takes")
        await #expect { try await lib.deleteAlbum("Takes") } throws: { "\($0)".contains("no album") }
        #expect(try await lib.fetch(FetchOptions()).assets.count == 6, "deleting an album keeps its assets")
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func aScopedTokenSeesAndChangesOnlyItsAlbums(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let lib = try library(store, host: "h")
        let ids = try await addAll(lib, try MediaSet.folder.get())
        try await lib.createAlbum("Client A")
        try await lib.createAlbum("Client B")
        try await lib.addToAlbum("Client A", [ids["v1.mp4"]!, ids["a1.m4a"]!])
        try await lib.addToAlbum("Client B", [ids["v2.mp4"]!])
        let secret = try await lib.createToken(name: "client-a", albums: ["Client A"])
        await #expect { try await lib.createToken(name: "x", albums: ["Nope"]) } throws: { "\($0)".contains("no album") }

        let scoped = try await AssetLibrary.open(store, host: "h", token: secret, inspector: .media)
        #expect(scoped.access == .limited(name: "client-a", albums: ["Client A"]))
        #expect(Set(try await scoped.fetch(FetchOptions()).assets.map(\.id)) == [ids["v1.mp4"]!, ids["a1.m4a"]!])
        var videos = FetchOptions(); videos.album = "Videos"
        #expect(try await scoped.fetch(videos).assets.map(\.id) == [ids["v1.mp4"]!], "smart albums are limited too")
        var other = FetchOptions(); other.album = "Client B"
        await #expect { try await scoped.fetch(other) } throws: { "\($0)".contains("no access to the album \"Client B\"") }
        #expect(try await scoped.resolve([ids["v2.mp4"]!, ids["v1.mp4"]!]).map(\.status) == [.unknown, .found])
        await #expect { try await scoped.detail(ids["v2.mp4"]!) } throws: { "\($0)".contains("no asset") }
        #expect(try await scoped.detail(ids["v1.mp4"]!).albums.contains("Client B") == false)
        #expect(try await scoped.albums().filter { !$0.smart }.map(\.name) == ["Client A"])
        await #expect { try await scoped.createAlbum("Mine") } throws: { "\($0)".contains("may not create albums") }
        await #expect { try await scoped.addToAlbum("Client A", [ids["v2.mp4"]!]) } throws: { "\($0)".contains("no asset") }
        await #expect { try await scoped.add([try MediaSet.folder.get().appendingPathComponent("img.png").path]) } throws: {
            "\($0)".contains("give --album")
        }
        await #expect { try await scoped.tokens() } throws: { "\($0)".contains("may not list tokens") }
        await #expect { try await scoped.remove(ids["v1.mp4"]!) } throws: { "\($0)".contains("may not remove") }
        // Adding into its own album is allowed, and the asset is then visible to it.
        let copy = try MediaSet.copy("scoped")
        let added = try await scoped.add([copy.appendingPathComponent("img.png").path], album: "Client A")
        #expect(added.map(\.status) == [.located])
        #expect(try await scoped.fetch(FetchOptions()).assets.count == 3)
        // Its changes: only those of its albums and their assets.
        let changes = try await scoped.changes(since: nil).changes
        #expect(!changes.isEmpty && changes.allSatisfy { $0.album == "Client A" || [ids["v1.mp4"], ids["a1.m4a"], ids["img.png"]].contains($0.assetID) })

        await #expect { try await AssetLibrary.open(store, host: "h", token: "mfl_bogus", inspector: .media) } throws: { "\($0)".contains("not valid") }
        try await lib.revokeToken(name: "client-a")
        await #expect { try await AssetLibrary.open(store, host: "h", token: secret, inspector: .media) } throws: { "\($0)".contains("not valid") }
        await store.close()
    }

    /// An asset in a scoped token's album whose lineage crosses into another album: the token sees the
    /// lineage inside its albums only, no job's manifest, and only the jobs that read nothing else.
    @Test(arguments: Backend.allCases)
    func aScopedTokensLineageStaysInsideItsAlbums(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let lib = try library(store, host: "h")
        let folder = try MediaSet.copy("scoped-lineage")
        let ids = try await addAll(lib, folder)
        let v1 = ids["v1.mp4"]!, v2 = ids["v2.mp4"]!, a1 = ids["a1.m4a"]!
        try await lib.createAlbum("Client A")
        try await lib.createAlbum("Client B")
        try await lib.addToAlbum("Client A", [v1, a1])
        try await lib.addToAlbum("Client B", [v2])
        _ = try await lib.registerOutput(folder.appendingPathComponent("v2.mp4").path, sources: [v1], jobID: 7, jobName: "for-client-b",
                                         parameters: #"{"input":"/clients/b/secret-plan.mp4"}"#)
        _ = try await lib.registerOutput(folder.appendingPathComponent("a1.m4a").path, sources: [v1], jobID: 8, jobName: "for-client-a",
                                         parameters: #"{"input":"/clients/a/own.mp4"}"#)
        try await lib.recordJobInputs(9, [v1, v2])
        try await lib.recordJobInputs(10, [v1])

        let full = try await lib.detail(v1)
        #expect(Set(full.representations.map(\.output)) == [v2, a1] && Set(full.jobs) == [9, 10])
        #expect(try await lib.detail(v2).derivedFrom.map(\.parameters) == [#"{"input":"/clients/b/secret-plan.mp4"}"#])

        let scoped = try await AssetLibrary.open(store, host: "h", token: try await lib.createToken(name: "a", albums: ["Client A"]), inspector: .media)
        let seen = try await scoped.detail(v1)
        #expect(seen.representations.map(\.output) == [a1], "\(seen.representations)")
        #expect(seen.jobs == [10], "a job that also read Client B's asset is not shown: \(seen.jobs)")
        let made = try await scoped.detail(a1)
        #expect(made.derivedFrom.map(\.source) == [v1] && made.derivedFrom.allSatisfy { $0.parameters == "{}" })
        let text = String(decoding: try JSONEncoder().encode([seen, made]), as: UTF8.self)
        #expect(!text.contains("secret-plan") && !text.contains("for-client-b") && !text.contains("/clients/"), "\(text)")
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func changesSinceATokenAreExactlyTheChangesMadeAfterIt(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let lib = try library(store, host: "h")
        let folder = try MediaSet.copy("changes")
        let v1 = folder.appendingPathComponent("v1.mp4").path, v2 = folder.appendingPathComponent("v2.mp4").path
        let first = try #require(try await lib.add([v1]).first?.id)
        let token = try await lib.currentToken()
        #expect(try await lib.changes(since: token).changes.isEmpty)

        let second = try #require(try await lib.add([v2], album: "Picks").first?.id)
        try await lib.addToAlbum("Picks", [first])
        _ = try await lib.add([v1]) // unchanged: no change
        try await lib.removeFromAlbum("Picks", [second])
        let output = try await lib.registerOutput(folder.appendingPathComponent("slow.mp4").path, sources: [first], jobID: 42, jobName: "slowmo",
                                                  parameters: #"{"scale":[{"rate":0.25}]}"#)
        try await lib.remove(second)

        let list = try await lib.changes(since: token)
        #expect(list.changes.map(\.kind) == [.assetAdded, .albumCreated, .albumAssetAdded, .albumAssetAdded, .albumAssetRemoved,
                                             .assetAdded, .representationAdded, .assetRemoved])
        #expect(list.changes.map(\.assetID) == [second, nil, second, first, second, output, first, second])
        #expect(list.changes[0].path == v2 && list.changes[0].host == "h" && list.changes[1].album == "Picks")
        #expect(list.token == list.changes.last?.token && list.more == false)
        #expect(try await lib.changes(since: list.token).changes.isEmpty)
        // Paged: the same changes, a few at a time.
        var paged: [LibraryChange] = []
        var next = token
        while true {
            let page = try await lib.changes(since: next, limit: 3)
            paged += page.changes
            next = page.token
            if !page.more { break }
        }
        #expect(paged == list.changes)

        // Lineage: the representation and where it came from.
        let detail = try await lib.detail(first)
        #expect(detail.representations.map(\.output) == [output] && detail.representations[0].jobID == 42 && detail.representations[0].jobName == "slowmo")
        #expect(detail.representations[0].parameters.contains("0.25"))
        #expect(try await lib.detail(output).derivedFrom.map(\.source) == [first])

        // Tokens that are not this library's.
        await #expect { try await lib.changes(since: "garbage") } throws: { ($0 as? LibraryError)?.isUsage == true }
        await #expect { try await lib.changes(since: "0123456789ab.1") } throws: { "\($0)".contains("another library") }
        let ahead = token.split(separator: ".")[0] + ".999999"
        await #expect { try await lib.changes(since: String(ahead)) } throws: { "\($0)".contains("ahead") }
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func filesThatAreNotMediaAreRefusedWithTheReasonAndTheOthersAdded(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let lib = try library(store, host: "h")
        let folder = try MediaSet.copy("refused")
        try Data("not a movie".utf8).write(to: folder.appendingPathComponent("notes.mp4"))
        try Data().write(to: folder.appendingPathComponent("empty.mov"))
        let truncated = try Data(contentsOf: folder.appendingPathComponent("v1.mp4")).prefix(3000)
        try truncated.write(to: folder.appendingPathComponent("truncated.mp4"))
        let outcomes = try await lib.add([folder.path, folder.appendingPathComponent("missing.mp4").path])
        let refused = Dictionary(uniqueKeysWithValues: outcomes.filter { $0.status == .refused }.map { (($0.path as NSString).lastPathComponent, $0.reason ?? "") })
        #expect(Set(refused.keys) == ["notes.mp4", "empty.mov", "truncated.mp4", "missing.mp4"])
        #expect(refused["empty.mov"]?.contains("empty") == true && refused["missing.mp4"]?.contains("No such file") == true)
        #expect(outcomes.filter { $0.status == .added }.count == MediaSet.items.count)
        await store.close()
    }

    @Test(arguments: Backend.allCases)
    func aManifestsAssetsResolveToThisHostsPaths(backend: Backend) async throws {
        let store = try await backend.makeStore()
        let lib = try library(store, host: "h")
        let path = try MediaSet.folder.get().appendingPathComponent("v1.mp4").path
        let id = try #require(try await lib.add([path]).first?.id)
        let text = """
            {"version": 1, "edits": [{"source": "asset:\(id.rawValue.uppercased())", "start": 0.1, "duration": "1"},
             {"source": "b.mp4"}], "export": {"output": "out.mp4"}}
            """
        let (resolved, ids) = try await lib.resolveManifest(text)
        #expect(ids == [id])
        #expect(try JSONParser.parse(resolved) == JSONParser.parse(text.replacingOccurrences(of: "asset:\(id.rawValue.uppercased())", with: path)),
                "only the reference changes (numbers as written)")
        // Only the media sources change: a name, a title or any other string equal to a reference stays.
        let named = """
            {"version": 1, "name": "asset:\(id)", "input": "asset:\(id)", "report": "asset:\(id).json",
             "metadata": {"title": "ASSET:\(id.rawValue.uppercased())"}}
            """
        let (renamed, _) = try await lib.resolveManifest(named)
        #expect(try JSONParser.parse(renamed) == JSONParser.parse(named.replacingOccurrences(of: #""input": "asset:\#(id)""#, with: #""input": "\#(path)""#)),
                "\(renamed)")
        let unknown = AssetID(digest: [UInt8](repeating: 9, count: 16))
        await #expect { try await lib.resolveManifest(#"{"input": "asset:\#(unknown)"}"#) } throws: { "\($0)".contains("no asset \(unknown)") }
        let elsewhere = try library(store, host: "other")
        await #expect { try await elsewhere.resolveManifest(#"{"input": "asset:\#(id)"}"#) } throws: { "\($0)".contains("is not on other (it is on h)") }
        await store.close()
    }
}

@Suite struct AssetIDTests {
    @Test func idsAreFixedLengthBase32OfTheContentHash() throws {
        let zero = AssetID(digest: [UInt8](repeating: 0, count: 32))
        #expect(zero.rawValue == String(repeating: "0", count: 26))
        let ones = AssetID(digest: [UInt8](repeating: 0xff, count: 32))
        #expect(ones.rawValue == String(repeating: "z", count: 25) + "w", "the last character holds 3 bits, padded with zeros")
        #expect(AssetID(ones.rawValue.uppercased()) == ones)
        #expect(AssetID(zero.rawValue + "0") == nil && AssetID(String(zero.rawValue.dropLast())) == nil)
        #expect(AssetID(String(repeating: "0", count: 25) + "1") == nil, "non-zero padding bits: not an id")
        #expect(AssetID("iiiiiiiiiiiiiiiiiiiiiiiiii") == nil && AssetID("../../etc/passwd") == nil)
        #expect(AssetID.reference("media/a.mp4") == nil)
        #expect(AssetID.reference("asset:nope").map { (try? $0.get()) == nil } == true)
        let decoded = try JSONDecoder().decode([AssetID].self, from: Data(#"["\#(ones.rawValue)"]"#.utf8))
        #expect(decoded == [ones])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([AssetID].self, from: Data(#"["abc"]"#.utf8)) }
    }

    @Test func manifestsAcceptAssetReferencesAsInputsButNotAsOutputs() {
        let context = ManifestContext(baseDirectory: "/data")
        let id = AssetID(digest: [UInt8](repeating: 3, count: 16))
        let good = ManifestValidator.validate(json: Array(#"{"version":1,"input":"asset:\#(id)","export":{"mode":"passthrough","output":"o.mp4"}}"#.utf8), context: context)
        #expect((try? good.get())?.edits.map(\.source) == [id.reference])
        let bad = ManifestValidator.validate(json: Array(#"{"version":1,"edits":[{"source":"asset:xyz"}],"export":{"mode":"passthrough","output":"asset:\#(id)"}}"#.utf8),
                                             context: context)
        guard case .failure(let error) = bad else { Issue.record("accepted"); return }
        #expect(error.issues.map(\.path) == ["$.edits[0].source", "$.export.output"])
        #expect(error.issues[0].message.contains("not an asset id"))
    }
}

extension AssetLibraryTests {
    /// The library knows every asset's loudness: measured when it is added (BS.1770's calibration tone reads
    /// -23.0 LUFS), kept in its facts, nil for an asset without audio.
    /// Of two audio tracks, the facts give the one a player chooses: the one flagged default, not the first.
    @Test func anAssetsAudioIsItsDefaultTrack() async throws {
        let folder = try TestPaths.makeTemporaryFolder("library-default-audio")
        let path = folder.appendingPathComponent("two-tracks.mkv").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=10:d=1", "-f", "lavfi", "-i", "sine=d=1",
                                               "-f", "lavfi", "-i", "sine=d=1", "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264",
                                               "-c:a:0", "mp3", "-c:a:1", "aac", "-disposition:a:0", "0", "-disposition:a:1", "default", path])
        let store = try await Backend.sqlite.makeStore()
        let library = try library(store, host: "a")
        let added = try await library.add([path])
        let facts = try await library.detail(try #require(added[0].id)).asset.facts
        #expect(facts.audioCodec == "aac" && facts.hasAudio, "\(facts)")
        await store.close()
    }

    @Test func anAssetsLoudnessIsInItsFacts() async throws {
        let folder = try TestPaths.makeTemporaryFolder("library-loudness")
        let tone = folder.appendingPathComponent("tone.wav").path, silent = folder.appendingPathComponent("picture.mp4").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=f=1000:sample_rate=48000:d=5", "-af", "volume=0.8",
                                               "-c:a", "pcm_s16le", tone])
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=10:d=1", "-c:v", "libx264", silent])
        let store = try await Backend.sqlite.makeStore()
        let library = try library(store, host: "a")
        let added = try await library.add([tone, silent])
        let toneFacts = try await library.detail(try #require(added[0].id)).asset.facts
        #expect(abs((toneFacts.loudness ?? 0) + 23.0) <= 0.05 && abs((toneFacts.truePeak ?? 0) + 20.0) <= 0.1 && toneFacts.loudnessRange == 0,
                "\(toneFacts)")
        let pictureFacts = try await library.detail(try #require(added[1].id)).asset.facts
        #expect(pictureFacts.loudness == nil && pictureFacts.truePeak == nil && !pictureFacts.hasAudio)
        await store.close()
    }
}

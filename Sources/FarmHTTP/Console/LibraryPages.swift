import FarmLibrary
import FarmModel
import FarmStore
import Foundation
import Hummingbird

/// The console's library, as PhotoKit shows it: albums as a grid of their key assets' posters, assets as a
/// grid of posters with duration badges (filtered by album, type, codec and date, pages of 60), and an
/// asset's page (its poster, its storyboard to scrub, its facts, where each host has it, what was made of it
/// and what it was made from, its jobs). A scoped sign-in sees only its albums' assets.
struct LibraryPages: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.get("/library", .library) { request, context in try await libraryPage(request, library(for: context.caller)) }
        routes.get("/library/assets/:id", .library) { request, context in
            try await assetPage(request, context.caller, id: Self.assetID(context.parameters.get("id") ?? ""))
        }
    }

    static let libraryPageSize = 60

    /// An asset's poster as a thumbnail, or its type and name when it has none.
    static func thumbnail(_ asset: LibraryAsset, poster: Bool) -> HTML {
        let name = Self.name(of: asset)
        let duration = asset.facts.duration.seconds
        let badge: HTML = duration > 0 ? "<span class=\"badge\">\(StatusPage.clock(duration))</span>" : ""
        let picture: HTML = poster
            ? "<img src=\"/api/assets/\(asset.id.rawValue)/poster\" alt=\"\(name)\" loading=\"lazy\">"
            : "<span class=\"no-picture\">\(asset.facts.mediaType.rawValue)</span>"
        return "<a class=\"tile\" href=\"/library/assets/\(asset.id.rawValue)\" data-asset=\"\(asset.id.rawValue)\">\(picture)\(badge)<span class=\"caption\">\(name)</span></a>"
    }

    func libraryPage(_ request: Request, _ library: AssetLibrary) async throws -> Response {
        let query = FormFields.parse(request.uri.query ?? "")
        func field(_ name: String) -> String? { query[name]?.first.flatMap { $0.isEmpty ? nil : $0 } }
        var options = FetchOptions()
        options.album = field("album")
        if let type = field("type") {
            guard let t = LibraryMediaType(rawValue: type) else { throw APIError(status: .badRequest, message: "type \(type): video, audio or image") }
            options.mediaType = t
        }
        options.codec = field("codec")
        let parameters = request.uri.queryParameters
        options.since = try Self.date(parameters, "since")
        options.until = try Self.date(parameters, "until")
        options.descending = true
        options.limit = Self.libraryPageSize
        options.after = field("after")
        let (albums, page, posters, keyAssets) = try await Self.answer { try await Self.libraryContents(library, options) }
        var body: HTML = "<h1>Library\(options.album.map { ": " + $0 } ?? "")</h1>\n"
        if options.album == nil && !albums.isEmpty {
            body += "<h2>Albums</h2><div class=\"grid albums\">"
            for album in albums {
                let link = "/library?album=" + (album.name.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&+=#"))) ?? "")
                let picture: HTML = keyAssets[album.name].map { "<img src=\"/api/assets/\($0.id.rawValue)/poster\" alt=\"\" loading=\"lazy\">" as HTML }
                    ?? "<span class=\"no-picture\">\(album.smart ? "smart album" : "album")</span>"
                body += "<a class=\"tile album\" href=\"\(link)\" data-album=\"\(album.name)\">\(picture)<span class=\"caption\">\(album.name) "
                body += "<span class=\"muted\">\(album.count)</span></span></a>"
            }
            body += "</div>\n"
        }
        body += """
        <form class="filters" method="get" action="/library" role="search">
        <label>Album <select name="album"><option value="">all</option>\(albums.map { "<option\($0.name == options.album ? " selected" : "")>\($0.name)</option>" as HTML }.joined())</select></label>
        <label>Type <select name="type"><option value="">any</option>\(["video", "audio", "image"].map { "<option\($0 == options.mediaType?.rawValue ? " selected" : "")>\($0)</option>" as HTML }.joined())</select></label>
        <label>Codec <input type="text" name="codec" size="8" value="\(options.codec ?? "")"></label>
        <label>From <input type="date" name="since" value="\(field("since") ?? "")"></label>
        <label>to <input type="date" name="until" value="\(field("until") ?? "")"></label>
        <button>Show</button></form>

        """
        if page.assets.isEmpty {
            body += "<p id=\"no-assets\">No assets\(options.album == nil ? "" : " in this album") match.</p>"
        } else {
            body += "<div class=\"grid assets\">" + page.assets.map { Self.thumbnail($0, poster: posters.contains($0.id)) }.joined() + "</div>\n"
        }
        if let next = page.nextCursor {
            var items = query.filter { $0.key != "after" }.flatMap { key, values in values.map { URLQueryItem(name: key, value: $0) } }
            items.append(URLQueryItem(name: "after", value: next))
            var c = URLComponents()
            c.queryItems = items.sorted { $0.name < $1.name }
            body += "<nav class=\"pager\"><a rel=\"next\" href=\"/library?\(c.percentEncodedQuery ?? "")\">More</a></nav>"
        }
        return html(Console.page(title: "Library · MediaFarm", section: .library, body: body), cookie: nil)
    }

    func assetPage(_ request: Request, _ caller: Caller, id: AssetID) async throws -> Response {
        let library = try library(for: caller)
        let (detail, pictures) = try await Self.answer { try await Self.assetContents(library, id) }
        let usedBy = detail.representations
        let asset = detail.asset
        let facts = asset.facts
        let name = Self.name(of: asset)
        var body: HTML = "<p class=\"muted\"><a href=\"/library\">Library</a> › \(name)</p><h1>\(name)</h1>\n"
        let (csrf, cookie) = ConsoleCSRF.token(of: request, sessions: face.sessions)
        if let job = request.uri.queryParameters.get("poster").flatMap(Int64.init) {
            body += "<p class=\"notice\" id=\"poster-requested\">A poster is being made: <a href=\"/jobs/\(job)\">job \(job)</a>.</p>\n"
        }
        body += "<div class=\"asset-pictures\">"
        if pictures[.poster] != nil {
            body += "<img class=\"poster\" src=\"/api/assets/\(id.rawValue)/poster\" alt=\"The poster of \(name)\">"
        } else if facts.mediaType == .video && caller.canAct {
            // A poster on request (`PosterRequests`).
            body += "<form class=\"inline\" method=\"post\" action=\"/library/assets/\(id.rawValue)/poster\">\(Console.csrfField(csrf))"
            body += "<button id=\"make-poster\">Make a poster</button></form>"
        }
        if pictures[.storyboard] != nil { body += Self.scrubber(id) }
        if pictures[.waveform] != nil {
            body += "<img class=\"waveform\" src=\"/api/assets/\(id.rawValue)/waveform\" alt=\"The waveform of \(name)\">"
        }
        body += "</div>\n"
        body += ChecksStrip.section(detail.checks, still: Self.stillSource(asset) != nil ? id : nil, title: "Its last quality checks")
        // A streaming package: played from its folder on this host or its prefix in object storage.
        if let package = facts.package, (try? await Self.packagePlace(asset)) != nil {  // not here: the locations say where
            body += "<div id=\"files\">" + PackageFiles.player(base: "/api/assets/\(id.rawValue)/package/", entryPoints: package.entryPoints,
                                                                 renditions: package.renditions) + "</div>\n"
        }
        body += "<div class=\"scroll\"><table class=\"facts\">"
        func fact(_ label: String, _ value: HTML?) { if let value { body += "<tr><th>\(label)</th><td>\(value)</td></tr>" } }
        fact("id", "<code>asset:\(id.rawValue)</code>")
        fact("type", HTML(text: facts.mediaType.rawValue + (asset.subtypes.isEmpty ? "" : " (" + asset.subtypes.joined(separator: ", ") + ")")))
        fact("duration", facts.duration.seconds > 0 ? HTML(text: StatusPage.clock(facts.duration.seconds)) : nil)
        fact("size", facts.width.flatMap { w in facts.height.map { HTML(text: "\(w) × \($0)") } })
        fact("video", facts.codec.map(HTML.init(text:)))
        fact("audio", facts.audioCodec.map(HTML.init(text:)) ?? (facts.hasAudio ? "yes" : nil))
        fact("frame rate", facts.frameRate.map { HTML(text: String(format: "%.3g fps", $0)) })
        fact("loudness", facts.loudness.map { l in
            HTML(text: String(format: "%.1f LUFS", l) + (facts.truePeak.map { String(format: ", true peak %.1f dBTP", $0) } ?? "")
                + (facts.loudnessRange.map { String(format: ", range %.1f LU", $0) } ?? ""))
        })
        fact("container", facts.container.map(HTML.init(text:)))
        fact("bytes", HTML(text: String(facts.size)))
        fact("made", facts.creationDate.map(Console.time))
        fact("camera", [facts.make, facts.model].compactMap { $0 }.joined(separator: " ").nilIfEmpty.map(HTML.init(text:)))
        fact("checks", asset.verdict.map { Console.badge($0.rawValue) })
        fact("added", Console.time(asset.addedAt))
        fact("albums", detail.albums.isEmpty ? nil : detail.albums.map { "<a href=\"/library?album=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")\">\($0)</a>" as HTML }.joined(separator: ", "))
        fact("codes", asset.codes.isEmpty ? nil : asset.codes.map { "\($0.symbology) <code>\($0.payload ?? "(binary)")</code>" as HTML }.joined(separator: "<br>"))
        fact("SHA-256", "<code>\(asset.sha256)</code>")
        body += "</table></div>\n"
        body += "<h2>Where it is</h2><div class=\"scroll\"><table id=\"locations\"><tr><th>host</th><th>path</th><th>state</th><th>seen</th></tr>"
        for l in detail.locations {
            body += "<tr><td>\(l.host)</td><td><code>\(l.path)</code></td><td>\(l.state)</td><td>\(Console.time(l.seenAt))</td></tr>"
        }
        body += "</table></div>\n"
        func lineage(_ title: String, _ rows: [Representation], other: (Representation) -> AssetID, id tableID: String) {
            guard !rows.isEmpty else { return }
            body += "<h2>\(title)</h2><div class=\"scroll\"><table id=\"\(tableID)\"><tr><th>asset</th><th>kind</th><th>by job</th><th>where</th><th>when</th></tr>"
            for r in rows {
                let o = other(r)
                body += "<tr><td><a href=\"/library/assets/\(o.rawValue)\">\(o.rawValue.prefix(10))…</a></td><td>\(r.kind.rawValue)</td>"
                body += "<td><a href=\"/jobs/\(r.jobID)\">\(r.jobID)</a> \(r.jobName)</td><td><code>\(r.host):\(r.path)</code></td><td>\(Console.time(r.createdAt))</td></tr>"
            }
            body += "</table></div>\n"
        }
        lineage("Made from it", usedBy, other: \.output, id: "used-by")
        lineage("Made from", detail.derivedFrom, other: \.source, id: "derived-from")
        if !detail.jobs.isEmpty {
            body += "<h2>Jobs</h2><p id=\"asset-jobs\">" + detail.jobs.map { "<a href=\"/jobs/\($0)\">job \($0)</a>" as HTML }.joined(separator: ", ") + "</p>\n"
        }
        return html(Console.page(title: "\(name) · Library · MediaFarm", section: .library, body: body), cookie: cookie)
    }
}

extension LibraryPages {
    /// The file a still picture of the asset is taken from: its video file on this host (not an object).
    static func stillSource(_ asset: LibraryAsset) -> String? {
        guard asset.facts.mediaType == .video, let path = asset.path, !PathRules.isObject(path) else { return nil }
        return path
    }

    /// An asset's storyboard, scrubbed with the pointer or the arrow keys (the page's script reads its JSON index).
    static func scrubber(_ id: AssetID) -> HTML {
        "<div class=\"scrub\" tabindex=\"0\" role=\"slider\" aria-label=\"Storyboard: move to scrub\" data-index=\"/api/assets/\(id.rawValue)/storyboard.json\" "
            + "data-base=\"/api/assets/\(id.rawValue)/\"><div class=\"frame\"></div><span class=\"at muted\"></span></div>"
    }

    /// Where a package asset's files are: on this host, its entry point's folder, in a package the farm made; in
    /// object storage, its entry point's prefix; in both, the entry point still the asset's content (a package made
    /// there since, which the library may not know, is not served as this one). Otherwise why not.
    static func packagePlace(_ asset: LibraryAsset) async throws -> PackageFiles.Place {
        guard let package = asset.facts.package else { throw APIError(status: .notFound, message: "\(asset.id.reference) is not a streaming package") }
        guard let path = asset.path else { throw APIError(status: .notFound, message: "\(asset.id.reference) has no location the console can read") }
        let entryPoint = String(path.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        guard package.entryPoints.contains(entryPoint) else {
            throw APIError(status: .notFound, message: "\(asset.id.reference): \(path) is not one of its package's entry points")
        }
        let place: PackageFiles.Place
        if PathRules.isObject(path) {
            place = try PackageFiles.Place.objects(at: String(path.dropLast(entryPoint.count)))
        } else {
            let folder = (path as NSString).deletingLastPathComponent
            guard PackageFiles.isPackage(folder) else { throw APIError(status: .notFound, message: "\(asset.id.reference): \(folder) holds no package the farm made") }
            place = .folder(folder)
        }
        guard try await PackageFiles.identity(of: entryPoint, in: place, what: asset.id.reference).id == asset.id else {
            throw APIError(status: .notFound, message: "\(asset.id.reference): \(path) no longer holds the package the library registered (it has changed or is gone)")
        }
        return place
    }

    /// What an asset is called on its page and tile: its file's name, a package's folder's.
    static func name(of asset: LibraryAsset) -> String {
        guard let path = asset.path else { return asset.id.rawValue }
        let name = asset.facts.package != nil ? ((path as NSString).deletingLastPathComponent as NSString).lastPathComponent
                                               : (path as NSString).lastPathComponent
        return name.isEmpty ? asset.id.rawValue : name
    }

    /// The albums, the page of assets, which of them (and of the albums' key assets) have a poster, and each
    /// album's key asset: its newest with a poster among its newest few.
    static func libraryContents(_ library: AssetLibrary, _ options: FetchOptions) async throws
        -> ([AlbumInfo], FetchResult, Set<AssetID>, [String: LibraryAsset]) {
        let albums = try await library.albums()
        let page = try await library.fetch(options)
        // Each album's newest few, then which of those and of the page have a poster: one query for all.
        var newest: [(album: String, assets: [LibraryAsset])] = []
        if options.album == nil {
            for album in albums.prefix(48) {
                var query = FetchOptions()
                (query.album, query.descending, query.limit) = (album.name, true, 6)
                newest.append((album.name, try await library.fetch(query).assets))
            }
        }
        let posters = try await library.pictured(page.assets.map(\.id) + newest.flatMap { $0.assets.map(\.id) }, kind: .poster)
        var keyAssets: [String: LibraryAsset] = [:]
        for (album, assets) in newest {
            keyAssets[album] = assets.first { posters.contains($0.id) }
        }
        return (albums, page, posters, keyAssets)
    }

    /// An asset's detail and its pictures by kind.
    static func assetContents(_ library: AssetLibrary, _ id: AssetID) async throws -> (AssetDetail, [RepresentationKind: PictureFile]) {
        let detail = try await library.detail(id)
        var pictures: [RepresentationKind: PictureFile] = [:]
        for kind in RepresentationKind.pictures {
            pictures[kind] = try await library.picture(of: id, kind: kind)
        }
        return (detail, pictures)
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}

extension StatusPage {
    /// A duration as a clock: 0:07, 1:02:03.
    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "–" }
        let s = Int(seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s % 3600 / 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}

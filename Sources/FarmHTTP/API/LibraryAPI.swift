import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmStore
import Foundation
import QualityModel
import Hummingbird

/// The asset library over HTTP: fetches, an asset's detail, resolution to this host's paths, albums and
/// changes. A request whose bearer token is a scoped library token (not the API's) sees only its albums'
/// assets, here and when it submits jobs.
struct LibraryAPI: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.get("/api/assets", .library) { request, context in try await fetchAssets(request, library(for: context.caller)) }
        routes.get("/api/assets/:id", .library) { _, context in
            let library = try library(for: context.caller)
            let id = try Self.assetID(context.parameters.get("id") ?? "")
            return Response.json(try await Self.answer { try await library.detail(id) })
        }
        routes.get("/api/library/resolve", .library) { request, context in
            let library = try library(for: context.caller)
            let texts = (request.uri.queryParameters.get("ids") ?? "").split(separator: ",").map(String.init)
            guard !texts.isEmpty, texts.count <= 1000 else { throw APIError(status: .badRequest, message: "ids: give 1 to 1000 asset ids, comma-separated") }
            let ids = try texts.map(Self.assetID)
            return Response.json(try await Self.answer { try await library.resolve(ids) })
        }
        routes.get("/api/albums", .library) { _, context in
            let library = try library(for: context.caller)
            return Response.json(try await Self.answer { try await library.albums() })
        }
        routes.get("/api/library/changes", .library) { request, context in
            let library = try library(for: context.caller)
            let query = request.uri.queryParameters
            let limit = try Self.number(query, "limit", NumberRule<Int>.integer(1, 10_000)) ?? 1000
            let since = query.get("since").flatMap { $0.isEmpty ? nil : $0 }
            return Response.json(try await Self.answer { try await library.changes(since: since, limit: limit) })
        }
    }

    /// `GET /api/assets`: the query's predicates as `library list` takes them.
    func fetchAssets(_ request: Request, _ library: AssetLibrary) async throws -> Response {
        let query = request.uri.queryParameters
        var options = FetchOptions()
        options.album = query.get("album").flatMap { $0.isEmpty ? nil : $0 }
        if let type = query.get("type") {
            guard let t = LibraryMediaType(rawValue: type) else { throw APIError(status: .badRequest, message: "type \(type): video, audio or image") }
            options.mediaType = t
        }
        options.since = try Self.date(query, "since")
        options.until = try Self.date(query, "until")
        options.minDuration = try Self.number(query, "minDuration", UserNumbers.duration)
        options.maxDuration = try Self.number(query, "maxDuration", UserNumbers.duration)
        options.codec = query.get("codec").flatMap { $0.isEmpty ? nil : $0 }
        options.hasCodes = try Self.flag(query, "hasCodes")
        options.slowMotion = try Self.flag(query, "slowMotion")
        options.verdict = try CheckVerdict(queried: query.get("verdict"))
        if let sort = query.get("sort") {
            guard let s = FetchOptions.Sort(rawValue: sort) else { throw APIError(status: .badRequest, message: "sort \(sort): date, duration or added") }
            options.sort = s
        }
        options.descending = try Self.flag(query, "reverse") ?? false
        options.limit = try Self.number(query, "limit", Self.pageSize) ?? 100
        options.after = query.get("after").flatMap { $0.isEmpty ? nil : $0 }
        return Response.json(try await Self.answer { try await library.fetch(options) })
    }
}

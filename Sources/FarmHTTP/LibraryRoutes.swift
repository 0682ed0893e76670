import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmStore
import Foundation
import Hummingbird

/// The asset library over HTTP: fetches, an asset's detail, resolution to this host's paths, albums and
/// changes. A request whose bearer token is a scoped library token (not the API's) sees only its albums'
/// assets, here and when it submits jobs.
extension HTTPFace {
    func addLibraryRoutes(to router: Router<BasicRequestContext>) {
        router.get("/api/assets") { request, _ in try await self.fetchAssets(request) }
        router.get("/api/assets/:id") { request, context in
            let library = try await self.library(for: request)
            let id = try Self.assetID(context.parameters.get("id") ?? "")
            return Response.json(try await Self.answer { try await library.detail(id) })
        }
        router.get("/api/library/resolve") { request, _ in
            let library = try await self.library(for: request)
            let texts = (request.uri.queryParameters.get("ids") ?? "").split(separator: ",").map(String.init)
            guard !texts.isEmpty, texts.count <= 1000 else { throw APIError(status: .badRequest, message: "ids: give 1 to 1000 asset ids, comma-separated") }
            let ids = try texts.map(Self.assetID)
            return Response.json(try await Self.answer { try await library.resolve(ids) })
        }
        router.get("/api/albums") { request, _ in
            let library = try await self.library(for: request)
            return Response.json(try await Self.answer { try await library.albums() })
        }
        router.get("/api/library/changes") { request, _ in
            let library = try await self.library(for: request)
            let query = request.uri.queryParameters
            let limit = try Self.number(query, "limit", NumberRule<Int>.integer(1, 10_000)) ?? 1000
            let since = query.get("since").flatMap { $0.isEmpty ? nil : $0 }
            return Response.json(try await Self.answer { try await library.changes(since: since, limit: limit) })
        }
    }

    /// The library as the request may see it: full with the API's token (or none where none is needed),
    /// limited with a scoped library token; any other token is refused.
    func library(for request: Request) async throws -> AssetLibrary {
        let base: AssetLibrary
        do {
            base = try AssetLibrary(store: store, host: configuration.libraryHost, inspector: .media)
        } catch {
            throw APIError(status: .serviceUnavailable, message: "the asset library: \(error)")
        }
        // The coordinator's and the read-only token see the whole library (the middleware let the latter only look).
        guard case .scoped(let presented)? = access(of: request) else { return base }
        do {
            return try await AssetLibrary.open(store, host: configuration.libraryHost, token: presented, inspector: .media)
        } catch {
            if case .notPermitted = error {
                throw APIError(status: .unauthorized, message: configuration.token == nil ? error.description : "missing or wrong bearer token")
            }
            throw Self.apiError(error)
        }
    }

    /// `GET /api/assets`: the query's predicates as `library list` takes them.
    func fetchAssets(_ request: Request) async throws -> Response {
        let library = try await library(for: request)
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
        if let sort = query.get("sort") {
            guard let s = FetchOptions.Sort(rawValue: sort) else { throw APIError(status: .badRequest, message: "sort \(sort): date, duration or added") }
            options.sort = s
        }
        options.descending = try Self.flag(query, "reverse") ?? false
        options.limit = try Self.number(query, "limit", Self.pageSize) ?? 100
        options.after = query.get("after").flatMap { $0.isEmpty ? nil : $0 }
        return Response.json(try await Self.answer { try await library.fetch(options) })
    }

    static func assetID(_ text: String) throws -> AssetID {
        let bare = text.hasPrefix(AssetID.scheme) ? String(text.dropFirst(AssetID.scheme.count)) : text
        guard let id = AssetID(bare) else { throw APIError(status: .badRequest, message: AssetIDError(text: text).description) }
        return id
    }

    /// A library call, its errors as HTTP answers.
    static func answer<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as LibraryError {
            throw apiError(error)
        }
    }

    static func apiError(_ error: LibraryError) -> APIError {
        let status: HTTPResponse.Status = switch error {
        case .unknownAsset, .unknownAlbum, .unknownPath: .notFound
        case .notPermitted: .forbidden
        case .store: .serviceUnavailable
        case .albumExists: .conflict
        default: .badRequest
        }
        return APIError(status: status, message: error.description)
    }

    static func flag(_ query: Parameters, _ name: String) throws -> Bool? {
        guard let text = query.get(name) else { return nil }
        switch text {
        case "true", "1", "": return true
        case "false", "0": return false
        default: throw APIError(status: .badRequest, message: "\(name): true or false, not \(text)")
        }
    }

    static func date(_ query: Parameters, _ name: String) throws -> Date? {
        guard let text = query.get(name), !text.isEmpty else { return nil }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: text) { return date }
        throw APIError(status: .badRequest, message: "\(name): a date as YYYY-MM-DD or ISO 8601, not \(text)")
    }
}

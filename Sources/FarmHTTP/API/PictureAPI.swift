import FarmLibrary
import FarmModel
import Foundation
import Hummingbird
import MediaCore
import MediaImage
import MediaTime
import NIOCore
import NIOPosix
import Synchronization

/// Pictures of the library's assets over HTTP: an asset's poster, its storyboard's WebVTT file, index and
/// sheets, as the jobs that made them registered them (representations of kind `poster`, and `storyboard`
/// by its first sheet, the other files beside it); and a streaming package's files, when the asset is one
/// (answered `no-cache`, without an ETag: a package's files are served as a job's are).
/// The same access as the rest of the library: a scoped token sees only its albums' assets. Each answer's
/// ETag is the picture's content id, and a request that names it (`?v=ID`, as the storyboard's cues do)
/// is cached as immutable; without it the answer is revalidated (`If-None-Match` costs no file read).
struct PictureAPI: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.get("/api/assets/:id/poster", .library) { request, context in
            let (picture, _) = try await picture(context, .poster)
            return try Self.file(picture.path, id: picture.id, etag: picture.id.rawValue, request: request)
        }
        routes.get("/api/assets/:id/waveform", .library) { request, context in
            let (picture, _) = try await picture(context, .waveform)
            return try Self.file(picture.path, id: picture.id, etag: picture.id.rawValue, request: request)
        }
        routes.get("/api/assets/:id/storyboard.vtt", .library) { request, context in
            let (board, id) = try await picture(context, .storyboard)
            let vtt = PictureFile(id: board.id, path: Self.storyboardFile(board.path, ext: "vtt"))
            if let v = request.uri.queryParameters.get("v"), v != vtt.id.rawValue {
                throw APIError(status: .notFound, message: "\(v) is not the current storyboard (\(vtt.id.rawValue)); ask without ?v= for it")
            }
            if let answer = Self.notModified(request, etag: vtt.id.rawValue) { return answer }
            let text = try Self.read(vtt.path)
            // The cues name the sheets beside the file: here, under storyboard/ with the file's content id.
            let stem = Self.stem(vtt.path)
            let rewritten = String(decoding: text, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map { line in
                guard line.hasPrefix(stem + "-"), let hash = line.firstIndex(of: "#") else { return String(line) }
                return "storyboard/" + line[..<hash] + "?v=" + vtt.id.rawValue + line[hash...]
            }.joined(separator: "\n")
            return Self.answer(Array(rewritten.utf8), type: "text/vtt; charset=utf-8", etag: vtt.id.rawValue, request: request, of: id)
        }
        routes.get("/api/assets/:id/storyboard.json", .library) { request, context in
            let (board, _) = try await picture(context, .storyboard)
            return try Self.file(Self.storyboardFile(board.path, ext: "json"), id: board.id, etag: board.id.rawValue + "-index", request: request)
        }
        routes.get("/api/assets/:id/storyboard/:sheet", .library) { request, context in
            let (board, _) = try await picture(context, .storyboard)
            let vtt = PictureFile(id: board.id, path: Self.storyboardFile(board.path, ext: "vtt"))
            let sheet = context.parameters.get("sheet") ?? ""
            guard Self.isSheet(sheet, of: vtt.path) else {
                throw APIError(status: .notFound, message: "\(sheet): not a sheet of the asset's storyboard (\(Self.stem(vtt.path))-N.jpg, .webp or .png)")
            }
            let path = URL(fileURLWithPath: vtt.path).deletingLastPathComponent().appendingPathComponent(sheet).path
            return try Self.file(path, id: vtt.id, etag: vtt.id.rawValue + "-" + sheet, request: request)
        }
        // The picture on screen at `at` seconds, decoded from the asset's file on this host (a quality check's run
        // links to it): a JPEG at most 640 pixels wide. At most two are made at once (429 beyond), each within
        // 10 s (a file without an index is decoded from its keyframe before `at`); the asset's id is its content,
        // so the answer never changes and is cached as immutable.
        routes.get("/api/assets/:id/still", .library) { request, context in
            let library = try library(for: context.caller)
            let id = try Self.assetID(context.parameters.get("id") ?? "")
            var options = FetchOptions()
            (options.ids, options.limit, options.pictures) = ([id], 1, true)
            guard let asset = try await Self.answer({ try await library.fetch(options).assets.first }) else {
                throw APIError(status: .notFound, message: "no asset \(id.reference)")
            }
            guard let path = LibraryPages.stillSource(asset) else {
                throw APIError(status: .notFound, message: "\(id.reference) has no video file on this host to take a still picture from")
            }
            guard let at = try Self.number(request.uri.queryParameters, "at", UserNumbers.stillTime) else {
                throw APIError(status: .badRequest, message: "at: give the time of the picture, seconds from the start (from 0 to 172800)")
            }
            let etag = "\(id.rawValue)-still-\(at)"
            if let answer = Self.notModified(request, etag: etag) { return answer }
            guard Self.stillsMaking.withLock({ n in n < 2 ? { n += 1; return true }() : false }) else {
                throw APIError(status: .tooManyRequests, message: "two still pictures are being made: ask again in a second")
            }
            defer { Self.stillsMaking.withLock { $0 -= 1 } }
            let interrupter = Interrupter()
            let deadline = Task { try? await Task.sleep(for: .seconds(10)); interrupter.cancel() }  // cancelled: the still came first
            defer { deadline.cancel() }
            let image = try await NIOThreadPool.singleton.runIfActive { () throws -> AssetImageGenerator.Image in
                var settings = AssetImageGenerator.Settings()
                (settings.toleranceBefore, settings.toleranceAfter, settings.maximumWidth) = (.zero, .zero, 640)
                do {
                    return try AssetImageGenerator(path: path, settings: settings, limits: .default, interrupter: interrupter)
                        .image(at: MediaTime(value: Int64((at * 1e6).rounded()), timescale: 1_000_000))
                } catch {
                    let why = interrupter.reason != nil ? "it took more than 10 s to decode" : "\(error)"
                    throw APIError(status: .unprocessableContent, message: "\(path): no still picture at \(at) s: \(why)")
                }
            }
            var answer = Self.answer(image.data, type: image.format.mimeType, etag: etag, request: request, of: id)
            answer.headers[.cacheControl] = "private, max-age=31536000, immutable"
            return answer
        }
        // A streaming package's files, from its folder on this host or its prefix in object storage (the asset is its entry point).
        routes.get("/api/assets/:id/package/**", .library) { request, context in
            let library = try library(for: context.caller)
            let id = try Self.assetID(context.parameters.get("id") ?? "")
            var options = FetchOptions()
            (options.ids, options.limit) = ([id], 1)
            guard let asset = try await Self.answer({ try await library.fetch(options).assets.first }) else {
                throw APIError(status: .notFound, message: "no asset \(id.reference)")
            }
            return try await PackageFiles.answer(request, place: try await LibraryPages.packagePlace(asset), path: context.parameters.getCatchAll().joined(separator: "/"),
                                           what: "\(id.reference)'s package")
        }
    }

    /// Stills being made now (`/api/assets/{id}/still`).
    static let stillsMaking = Mutex(0)

    /// The asset's newest picture of `kind` on this host, or the answer saying why there is none.
    func picture(_ context: FarmRequestContext, _ kind: RepresentationKind) async throws -> (PictureFile, AssetID) {
        let library = try library(for: context.caller)
        let id = try Self.assetID(context.parameters.get("id") ?? "")
        guard let picture = try await Self.answer({ try await library.picture(of: id, kind: kind) }) else {
            throw APIError(status: .notFound, message: "\(id.reference) has no \(kind.rawValue) on this host: a job with a \"\(kind.rawValue)\" section makes one")
        }
        if picture.isObject {
            throw APIError(status: .notFound, message: "\(id.reference)'s \(kind.rawValue) is the object \(picture.path): read it from its bucket")
        }
        return (picture, id)
    }

    static func stem(_ vtt: String) -> String { URL(fileURLWithPath: vtt).deletingPathExtension().lastPathComponent }

    /// A file of the storyboard whose first sheet (`NAME-1.jpg`, as the library has it) is `sheet`: `NAME.ext` beside it.
    static func storyboardFile(_ sheet: String, ext: String) -> String {
        let url = URL(fileURLWithPath: sheet)
        let name = url.deletingPathExtension().lastPathComponent
        let stem = name.hasSuffix("-1") ? String(name.dropLast(2)) : name
        return url.deletingLastPathComponent().appendingPathComponent(stem + "." + ext).path
    }

    /// Whether `name` is `STEM-N.EXT` of the storyboard whose WebVTT file is `vtt`: nothing else in its
    /// folder is served.
    static func isSheet(_ name: String, of vtt: String) -> Bool {
        let ext = (name as NSString).pathExtension
        guard ["jpg", "webp", "png"].contains(ext), !name.contains("/") else { return false }
        return NumberedOutputs.matches(name, pattern: stem(vtt) + "-{index}." + ext)
    }

    static func read(_ path: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APIError(status: .notFound, message: "\(path): registered, but not readable on this host now")
        }
        return data
    }

    static func notModified(_ request: Request, etag: String) -> Response? {
        guard let presented = request.headers[.ifNoneMatch], presented.split(separator: ",").contains(where: {
            $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "W/")) == "\"\(etag)\""
        }) else { return nil }
        return Response(status: .notModified, headers: [.eTag: "\"\(etag)\"", .cacheControl: cacheControl(request, etag: etag)])
    }

    static func cacheControl(_ request: Request, etag: String) -> String {
        request.uri.queryParameters.get("v").map { etag.hasPrefix($0) && !$0.isEmpty } == true
            ? "private, max-age=31536000, immutable" : "private, no-cache"
    }

    static func file(_ path: String, id: AssetID, etag: String, request: Request) throws -> Response {
        if let v = request.uri.queryParameters.get("v"), v != id.rawValue {
            throw APIError(status: .notFound, message: "\(v) is not the current picture (\(id.rawValue)); ask without ?v= for it")
        }
        if let answer = notModified(request, etag: etag) { return answer }
        return answer(Array(try read(path)), type: mimeType(path), etag: etag, request: request, of: id)
    }

    static func answer(_ bytes: [UInt8], type: String, etag: String, request: Request, of id: AssetID) -> Response {
        Response(status: .ok, headers: [.contentType: type, .eTag: "\"\(etag)\"", .cacheControl: cacheControl(request, etag: etag),
                                        .init("X-Content-Type-Options")!: "nosniff"],
                 body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A served file's type by its extension (pictures, and a job's outputs on its page).
    static func mimeType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "mp4", "m4v": "video/mp4"
        case "mov": "video/quicktime"
        case "mkv": "video/x-matroska"
        case "webm": "video/webm"
        case "m4a": "audio/mp4"
        case "wav": "audio/wav"
        case "vtt": "text/vtt; charset=utf-8"
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "webp": "image/webp"
        case "json": "application/json; charset=utf-8"
        default: "application/octet-stream"
        }
    }
}

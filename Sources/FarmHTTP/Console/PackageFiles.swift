import FarmLibrary
import FarmModel
import Foundation
import HTTPTypes
import Hummingbird
import S3Client

/// A streaming package's files over HTTP, wherever the page found the package (a job's output, a library
/// asset's folder or prefix): each file of its own served from its descriptor (`OpenedFile`) or read from its
/// object, the master playlist cut to one rung for the player's switcher, and the player itself.
enum PackageFiles {
    /// Where a package's files are read from.
    enum Place {
        /// A folder on this host: a real path, a package the farm made (its marker in it).
        case folder(String)
        /// The objects under a prefix of object storage ("" or ending in "/"), where a job published it.
        case objects(S3Location)

        /// The objects under the prefix `address` (`s3://BUCKET/PREFIX`, with or without its last "/"; never a
        /// whole bucket).
        static func objects(at address: String) throws -> Place {
            var prefix = try S3Location(parsing: address, prefix: true)
            guard !prefix.key.isEmpty, prefix.key != "/" else { throw APIError(status: .notFound, message: "\(address): a whole bucket is no package") }
            if !prefix.key.hasSuffix("/") { prefix.key += "/" }
            return .objects(prefix)
        }
    }

    /// The file at `path` of the package at `place`, or the master playlist with one rung when `?rung=video-N`
    /// asks for it. `what` names the package in a refusal.
    static func answer(_ request: Request, place: Place, path: String, what: String) async throws -> Response {
        let rung = path == "master.m3u8" ? request.uri.queryParameters.get("rung").map { String($0) } : nil
        switch place {
        case .folder(let folder):
            let file = try member(folder, path, of: what)
            guard let rung else { return ConsoleJobs.serve(file, name: String(path.split(separator: "/").last ?? ""), type: type(path), request) }
            return try cut(file.text() ?? "", to: rung, of: what)  // unreadable: no rung found in it, said there
        case .objects(let prefix):
            try checkName(path, of: what)
            let object = S3Location(bucket: prefix.bucket, key: prefix.key + path)
            let facts = try await head(object, what: what)
            guard let rung else {
                return ConsoleJobs.serve(size: Int(facts.size), name: String(path.split(separator: "/").last ?? ""), type: type(path), request) { range in
                    body(object, range, etag: facts.etag)
                }
            }
            guard facts.size <= 4 << 20 else { throw APIError(status: .notFound, message: "\(object): \(facts.size) bytes is no master playlist of \(what)") }
            let chunk = try await read(object, range: nil, etag: facts.etag, what: what)
            return try cut(String(buffer: chunk.bytes), to: rung, of: what)
        }
    }

    /// The master playlist `text` cut to `rung`, answered, or the refusal naming the rungs there are.
    private static func cut(_ text: String, to rung: String, of what: String) throws -> Response {
        guard let one = master(text, keeping: rung) else {
            throw APIError(status: .notFound, message: "\(what) has no rung \(rung) (video-1, video-2, …)")
        }
        return Response(status: .ok, headers: [.contentType: type("master.m3u8"), .xContentTypeOptions: "nosniff", .cacheControl: "private, no-cache"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: one)))
    }

    /// Bytes `range` of `object` as a response body, read a part at a time (the coordinator holds one part, not the
    /// object), each from the object whose size was read for it (its entity tag held: one replaced meanwhile ends
    /// the answer short, not mixed).
    private static func body(_ object: S3Location, _ range: ClosedRange<Int>, etag: String) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            var offset = range.lowerBound
            while offset <= range.upperBound {
                let end = min(offset + (8 << 20), range.upperBound + 1)
                let chunk: S3Chunk
                do throws(S3Error) { chunk = try await S3.shared().get(object, range: Int64(offset)..<Int64(end), ifMatch: etag) } catch {
                    throw HTTPError(.internalServerError, message: "\(object): \(error)")
                }
                guard chunk.bytes.readableBytes == end - offset else { throw HTTPError(.internalServerError, message: "\(object): shorter than its size") }
                try await writer.write(chunk.bytes)
                offset = end
            }
            try await writer.finish(nil)
        }
    }

    /// The size and entity tag of `object`, or the refusal saying what object storage answered.
    private static func head(_ object: S3Location, what: String) async throws -> S3Object {
        do throws(S3Error) { return try await S3.shared().head(object) } catch { throw refusal(error, object, what) }
    }

    /// The content identity of the package's entry point `name` (a playlist or MPD, read whole: 4 MiB at most), to
    /// hold it to the asset the library registered.
    static func identity(of name: String, in place: Place, what: String) async throws -> ContentHash {
        switch place {
        case .folder(let folder):
            do { return try ContentHash.of(file: folder + "/" + name) } catch { throw APIError(status: .notFound, message: "\(what): \(error)") }
        case .objects(let prefix):
            let object = S3Location(bucket: prefix.bucket, key: prefix.key + name)
            let facts = try await head(object, what: what)
            guard facts.size <= 4 << 20 else { throw APIError(status: .notFound, message: "\(object): \(facts.size) bytes is no entry point of \(what)") }
            return ContentHash.of(bytes: Array(try await read(object, range: nil, etag: facts.etag, what: what).bytes.readableBytesView))
        }
    }

    /// Bytes of `object` (all of it when `range` is nil), or the refusal saying what object storage answered.
    private static func read(_ object: S3Location, range: Range<Int64>?, etag: String? = nil, what: String) async throws -> S3Chunk {
        do throws(S3Error) { return try await S3.shared().get(object, range: range, ifMatch: etag) } catch { throw refusal(error, object, what) }
    }

    /// An answer of object storage as the page's: a missing object is a file the package lacks; storage that
    /// cannot be reached or refuses the coordinator is no fault of the request's.
    private static func refusal(_ error: S3Error, _ object: S3Location, _ what: String) -> APIError {
        switch error.kind {
        case .noSuchKey, .noSuchBucket: APIError(status: .notFound, message: "\(object): no such file in \(what)")
        case .configuration: APIError(status: .serviceUnavailable, message: "\(what) is in object storage, which this coordinator is not configured to reach: \(error)")
        default: APIError(status: .badGateway, message: "\(what): object storage answered: \(error)")
        }
    }

    /// Whether the real path `folder` is a folder the farm made as a package: its marker in it, neither a link.
    static func isPackage(_ folder: String) -> Bool {
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return false }
        return lstat(folder + "/" + JobManifest.packageMarker, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The media type of a package's file, by its name.
    static func type(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "m3u8": "application/vnd.apple.mpegurl"
        case "mpd": "application/dash+xml"
        case "m4s": "video/iso.segment"
        case "ts": "video/mp2t"
        default: PictureAPI.mimeType(path)
        }
    }

    /// The master playlist `text` with one rung's variant (and its I-frame variant) and every audio and
    /// subtitle rendition; nil when it has no such rung.
    static func master(_ text: String, keeping rung: String) -> String? {
        guard rung.range(of: "^video-[0-9]{1,3}\\z", options: .regularExpression) != nil else { return nil }
        var kept: [String] = [], found = false
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var i = 0
        while i < lines.count {
            let line = lines[i]
            if line.hasPrefix("#EXT-X-STREAM-INF:"), i + 1 < lines.count {
                if lines[i + 1].hasPrefix(rung + "/") { kept += [line, lines[i + 1]]; found = true }
                i += 2
                continue
            }
            if !line.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") || line.contains("URI=\"\(rung)/") { kept.append(line) }
            i += 1
        }
        return found ? kept.joined(separator: "\n") : nil
    }

    /// The file at `relative` in the package `folder`, opened: a name or folder/name of the package's own (letters,
    /// digits, dot, dash, underscore; not hidden), every step a real folder or file, never a link (`OpenedFile`).
    static func member(_ folder: String, _ relative: String, of what: String) throws -> OpenedFile {
        let parts = try checkName(relative, of: what)
        guard let file = OpenedFile(in: folder, parts) else { throw APIError(status: .notFound, message: "\(relative): no such file in \(what)") }
        return file
    }

    /// The steps of `relative` when it names a file a package may hold: a name or folder/name (letters, digits,
    /// dot, dash, underscore; not hidden), in a folder or under a prefix alike.
    @discardableResult
    static func checkName(_ relative: String, of what: String) throws -> [Substring] {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count),
              parts.allSatisfy({ $0.range(of: "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\\z", options: .regularExpression) != nil }) else {
            throw APIError(status: .notFound, message: "\(relative): not a file of \(what) (master.m3u8, manifest.mpd, video-1/index.m3u8, …)")
        }
        return parts
    }

    /// A package's player, its files under `base`: its HLS in the page's `<video>` (Chromium and Safari play HLS
    /// themselves), a switcher of its rungs (each rung's master alone), and its entry points. What it offers is
    /// what the job that made the package measured (`PackageSummary`); a package made before jobs said so has its
    /// entry points and no rungs to choose.
    static func player(base: String, entryPoints: [String], renditions: [PackageSummary.Rendition]) -> HTML {
        var html: HTML = ""
        let master = JobManifest.streamEntryPoints[.hls] ?? ""
        if entryPoints.contains(master) {
            html += "<video class=\"output\" id=\"package-player\" controls preload=\"metadata\" src=\"\(base)\(master)\"></video>"
            var options: HTML = "<option value=\"\(base)\(master)\">every rung (the player chooses)</option>"
            for rung in renditions where rung.kind == .video {
                let size = rung.width.flatMap { w in rung.height.map { "\(w)x\($0)" } } ?? "?"
                options += "<option value=\"\(base)\(master)?rung=\(rung.folder)\">\(rung.folder): \(size) \(rung.peakBitRate / 1000) kbit/s</option>"
            }
            html += "<p><label>Rendition <select class=\"rendition\" data-video=\"package-player\">\(options)</select></label></p>"
        }
        html += "<p class=\"file\">package: "
        for name in entryPoints { html += "<a href=\"\(base)\(name)\">\(name)</a> " }
        return html + "</p>"
    }
}

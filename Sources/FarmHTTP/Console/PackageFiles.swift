import FarmModel
import Foundation
import HTTPTypes
import Hummingbird

/// A streaming package's files over HTTP, wherever the page found the package (a job's output, a library
/// asset's folder): each file of its own served from its descriptor (`OpenedFile`), the master playlist cut to
/// one rung for the player's switcher, and the player itself.
enum PackageFiles {
    /// The file at `path` of the package `folder` (a real path, a package the farm made), or the master playlist
    /// with one rung when `?rung=video-N` asks for it. `what` names the package in a refusal.
    static func answer(_ request: Request, folder: String, path: String, what: String) throws -> Response {
        let file = try member(folder, path, of: what)
        guard let rung = request.uri.queryParameters.get("rung"), path == "master.m3u8" else {
            return ConsoleJobs.serve(file, name: String(path.split(separator: "/").last ?? ""), type: type(path), request)
        }
        let text = file.text() ?? ""  // unreadable: no rung found in it, said below
        guard let one = master(text, keeping: String(rung)) else {
            throw APIError(status: .notFound, message: "\(what) has no rung \(rung) (video-1, video-2, …)")
        }
        return Response(status: .ok, headers: [.contentType: type(path), .xContentTypeOptions: "nosniff", .cacheControl: "private, no-cache"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: one)))
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
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count),
              parts.allSatisfy({ $0.range(of: "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\\z", options: .regularExpression) != nil }) else {
            throw APIError(status: .notFound, message: "\(relative): not a file of \(what) (master.m3u8, manifest.mpd, video-1/index.m3u8, …)")
        }
        guard let file = OpenedFile(in: folder, parts) else { throw APIError(status: .notFound, message: "\(relative): no such file in \(what)") }
        return file
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

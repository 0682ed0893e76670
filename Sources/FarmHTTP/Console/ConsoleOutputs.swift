import FarmLibrary
import FarmModel
import Foundation
import HTTPTypes
import Hummingbird

/// A job's files on its page: its output shown (a movie plays, with its own scrubbing; a picture shows) and
/// both output and report to download (`GET /jobs/{id}/files/output|report`, ranges allowed, so a player can
/// seek), and the library's assets it read and made, with their posters. A file is served only when the job
/// ended well, it is a regular local file, and its real path (links followed) lies under one of the job's
/// output roots: the page never reads elsewhere on the host.
extension ConsoleJobs {
    /// The job's file `name` ("output" or "report"), streamed, or the answer saying why not.
    func jobFile(_ request: Request, _ context: FarmRequestContext, id: Int64, name: String) async throws -> Response {
        guard let job = try await storeJob(id) else { throw APIError(status: .notFound, message: "no job \(id)") }
        let path = try Self.servedFile(job, name)
        guard let file = OpenedFile(path: path) else { throw APIError(status: .notFound, message: "job \(id)'s \(name) is not a regular file on this host now") }
        return Self.serve(file, name: (path as NSString).lastPathComponent, type: PictureAPI.mimeType(path), request)
    }

    /// A file of a job's streaming package (`GET /jobs/{id}/package/master.m3u8`, `video-1/3.m4s`, …), served as
    /// the job's files are; `master.m3u8?rung=video-N` is the master with that rung alone (the page's switcher).
    func packageFile(_ request: Request, _ context: FarmRequestContext, id: Int64, path: String) async throws -> Response {
        guard let job = try await storeJob(id) else { throw APIError(status: .notFound, message: "no job \(id)") }
        let file = try Self.packageMember(try Self.servedPackage(job), path)
        guard let rung = request.uri.queryParameters.get("rung"), path == "master.m3u8" else {
            return Self.serve(file, name: String(path.split(separator: "/").last ?? ""), type: Self.packageType(path), request)
        }
        let text = file.text() ?? ""  // unreadable: no rung found in it, said below
        guard let one = Self.master(text, keeping: String(rung)) else {
            throw APIError(status: .notFound, message: "job \(id)'s package has no rung \(rung) (video-1, video-2, …)")
        }
        return Response(status: .ok, headers: [.contentType: Self.packageType(path), .xContentTypeOptions: "nosniff", .cacheControl: "private, no-cache"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: one)))
    }

    /// The media type of a package's file, by its name.
    static func packageType(_ path: String) -> String {
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
    static func packageMember(_ folder: String, _ relative: String) throws -> OpenedFile {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count),
              parts.allSatisfy({ $0.range(of: "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\\z", options: .regularExpression) != nil }) else {
            throw APIError(status: .notFound, message: "\(relative): not a file of the package (master.m3u8, manifest.mpd, video-1/index.m3u8, …)")
        }
        guard let file = OpenedFile(in: folder, parts) else { throw APIError(status: .notFound, message: "\(relative): no such file in the package") }
        return file
    }

    /// A file streamed to `request` from its descriptor, ranges allowed (a player seeks), inline unless `?download`.
    static func serve(_ file: OpenedFile, name: String, type: String, _ request: Request) -> Response {
        let size = file.size
        var headers: HTTPFields = [
            .contentType: type, .acceptRanges: "bytes", .xContentTypeOptions: "nosniff", .cacheControl: "private, no-cache",
            .contentDisposition: "\(request.uri.queryParameters.get("download") == nil ? "inline" : "attachment"); filename=\"\(Self.headerSafe(name))\"",
        ]
        if let range = request.headers[.range], let wanted = Self.byteRange(range, size: size) {
            headers[.contentRange] = "bytes \(wanted.lowerBound)-\(wanted.upperBound)/\(size)"
            headers[.contentLength] = String(wanted.count)
            return Response(status: .partialContent, headers: headers, body: file.body(wanted))
        } else if request.headers[.range] != nil {
            return Response(status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(size)"])
        }
        headers[.contentLength] = String(size)
        return Response(status: .ok, headers: headers, body: size > 0 ? file.body(0...(size - 1)) : ResponseBody())
    }

    /// The real path of a job's `output`, `report` or `code-N` (the picture of the frame where its scan first
    /// saw code N, `scan.images` in its report) when the page may serve it; otherwise why not.
    static func servedFile(_ job: Job, _ name: String) throws -> String {
        let real = try servedPath(job, name)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: real, isDirectory: &isFolder), !isFolder.boolValue else {
            throw APIError(status: .notFound, message: "job \(job.id)'s \(name) is a folder (a streaming package): its files are at /jobs/\(job.id)/package/")
        }
        return real
    }

    /// The real path of a job's package: its output, a folder the farm made as a package (its marker in it).
    static func servedPackage(_ job: Job) throws -> String {
        let real = try servedPath(job, "output")
        var info = stat()
        guard lstat(real, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, lstat(real + "/.mediafarm-package.json", &info) == 0,
              info.st_mode & S_IFMT == S_IFREG else {
            throw APIError(status: .notFound, message: "job \(job.id)'s output is not a streaming package")
        }
        return real
    }

    /// The real path of a job's `output`, `report` or `code-N` when it is under the job's output roots and on
    /// this host (a file or a folder); otherwise why not.
    static func servedPath(_ job: Job, _ name: String) throws -> String {
        let code = name.hasPrefix("code-") ? Int(name.dropFirst(5)).flatMap { $0 >= 1 && $0 <= NumberedOutputs.limit ? $0 : nil } : nil
        guard name == "output" || name == "report" || code != nil else {
            throw APIError(status: .notFound, message: "no file \(name): a job's files are its output, its report and its codes' pictures (code-N)")
        }
        // A result that does not decode has no files to serve: said below as "wrote none".
        guard job.state == .succeeded, let text = job.result, let result = try? JSONDecoder().decode(JobResult.self, from: Data(text.utf8)),
              var given = name == "output" ? result.output : result.report else {
            throw APIError(status: .notFound, message: "job \(job.id) has no \(name) (it has not succeeded, or wrote none)")
        }
        if let code {
            // The report names the picture; the report itself must be servable first.
            let report = try servedFile(job, "report")
            guard let path = ConsoleReport.codePictures(report)?.dropFirst(code - 1).first ?? nil else {
                throw APIError(status: .notFound, message: "job \(job.id)'s report has no picture of code \(code)")
            }
            given = path
        }
        guard !given.hasPrefix("s3://") else {
            throw APIError(status: .notFound, message: "job \(job.id)'s \(name) is the object \(given): read it from its bucket")
        }
        let full = given.hasPrefix("/") ? given : job.baseDirectory + "/" + given
        let real = URL(fileURLWithPath: full).resolvingSymlinksInPath().path
        let roots = job.writableRoots.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
        guard roots.contains(where: { real.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }) else {
            throw APIError(status: .forbidden, message: "job \(job.id)'s \(name) \(full) is not under its output roots: the console serves nothing else")
        }
        guard FileManager.default.fileExists(atPath: real) else {
            throw APIError(status: .notFound, message: "job \(job.id)'s \(name) \(full) is not on this host now")
        }
        return real
    }

    /// One `bytes=A-B`, `bytes=A-` or `bytes=-N` range within a file of `size` bytes; nil when it is none of
    /// them or lies outside the file.
    static func byteRange(_ header: String, size: Int) -> ClosedRange<Int>? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let spec = header.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let (first, last) = (spec[..<dash], spec[spec.index(after: dash)...])
        if first.isEmpty {
            guard let n = Int(last), n > 0 else { return nil }
            return max(0, size - n)...(size - 1)
        }
        guard let start = Int(first), start >= 0, start < size else { return nil }
        guard !last.isEmpty else { return start...(size - 1) }
        guard let end = Int(last), end >= start else { return nil }
        return start...min(end, size - 1)
    }

    /// A file name for a header: printable ASCII without quotes or backslashes.
    static func headerSafe(_ name: String) -> String {
        String(name.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
    }

    /// The page's "Files" section: the output shown and both files to download, then the library's assets
    /// the job read and made.
    func filesSection(_ job: Job, _ caller: Caller) async -> HTML {
        var body: HTML = ""
        var files: HTML = ""
        for name in ["output", "report"] {
            guard let path = try? Self.servedFile(job, name) else { continue }  // not servable: the result above names it
            let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64) ?? 0  // gone since: shown as 0 bytes
            let link = "/jobs/\(job.id)/files/\(name)"
            if name == "output" {
                let type = PictureAPI.mimeType(path)
                if type.hasPrefix("video/") {
                    files += "<video class=\"output\" controls preload=\"metadata\" src=\"\(link)\"></video>"
                } else if type.hasPrefix("image/") {
                    files += "<img class=\"output\" src=\"\(link)\" alt=\"The job's output\">"
                } else if type.hasPrefix("audio/") {
                    files += "<audio controls preload=\"metadata\" src=\"\(link)\"></audio>"
                }
            }
            files += "<p class=\"file\">\(name): <a href=\"\(link)?download=1\" download>\((path as NSString).lastPathComponent)</a> "
            files += "<span class=\"muted\">\(ByteCountFormatter.string(fromByteCount: size, countStyle: .file))</span></p>"
        }
        if let folder = try? Self.servedPackage(job) {  // not a package: nothing more to show
            files += Self.player(job.id, folder: folder)
        }
        if !files.isEmpty { body += "<h2>Files</h2><div id=\"files\">\(files)</div>\n" }
        // The library's assets it read and made (when the library knows them), as tiles with their posters.
        let assets: (read: [LibraryAsset], made: [LibraryAsset], posters: Set<AssetID>)
        do {
            let library = try library(for: caller)
            assets = try await Self.jobAssets(library, job.id)
        } catch {
            return body + "<p class=\"muted\">The library cannot say now which assets the job read and made: \(String(describing: error))</p>\n"
        }
        for (title, list, id) in [("Assets it read", assets.read, "inputs"), ("Assets it made", assets.made, "outputs")] where !list.isEmpty {
            body += "<h2>\(title)</h2><div class=\"grid assets\" id=\"\(id)\">" + list.map { LibraryPages.thumbnail($0, poster: assets.posters.contains($0.id)) }.joined() + "</div>\n"
        }
        return body
    }

    /// A package's player: its HLS in the page's `<video>` (Chromium and Safari play HLS themselves), a
    /// switcher of its rungs (each rung's master alone), and its two entry points.
    static func player(_ id: Int64, folder: String) -> HTML {
        let base = "/jobs/\(id)/package/"
        let master = OpenedFile(in: folder, ["master.m3u8"])?.text() ?? ""  // a DASH-only package: no player
        var html: HTML = ""
        if !master.isEmpty {
            html += "<video class=\"output\" id=\"package-player\" controls preload=\"metadata\" src=\"\(base)master.m3u8\"></video>"
            var options: HTML = "<option value=\"\(base)master.m3u8\">every rung (the player chooses)</option>"
            let lines = master.split(separator: "\n").map(String.init)
            for (line, uri) in zip(lines, lines.dropFirst()) where line.hasPrefix("#EXT-X-STREAM-INF:") {
                let rung = String(uri.prefix { $0 != "/" })
                let resolution = line.firstMatch(of: /RESOLUTION=([0-9]+x[0-9]+)/).map { String($0.1) } ?? "?"
                let peak = line.firstMatch(of: /BANDWIDTH=([0-9]+)/).flatMap { Int($0.1) }.map { " \($0 / 1000) kbit/s" } ?? ""
                options += "<option value=\"\(base)master.m3u8?rung=\(rung)\">\(rung): \(resolution)\(peak)</option>"
            }
            html += "<p><label>Rendition <select class=\"rendition\" data-video=\"package-player\">\(options)</select></label></p>"
        }
        html += "<p class=\"file\">package: "
        for name in ["master.m3u8", "manifest.mpd"] where OpenedFile(in: folder, [Substring(name)]) != nil {
            html += "<a href=\"\(base)\(name)\">\(name)</a> "
        }
        return html + "</p>"
    }

    /// The assets job `id` read and made, each with which have a poster.
    static func jobAssets(_ library: AssetLibrary, _ id: Int64) async throws -> (read: [LibraryAsset], made: [LibraryAsset], posters: Set<AssetID>) {
        func assets(_ ids: [AssetID]) async throws -> [LibraryAsset] {
            guard !ids.isEmpty else { return [] }
            var options = FetchOptions()
            (options.ids, options.limit, options.pictures) = (Array(ids.prefix(60)), 60, true)
            return try await library.fetch(options).assets
        }
        let read = try await assets(try await library.jobInputs(id))
        let made = try await assets(try await library.jobOutputs(id))
        return (read, made, try await library.pictured((read + made).map(\.id), kind: .poster))
    }
}

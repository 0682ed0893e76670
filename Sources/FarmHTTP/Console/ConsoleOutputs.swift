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
        return try await PackageFiles.answer(request, place: try Self.servedPackage(job), path: path, what: "job \(id)'s package")
    }

    /// A file streamed to `request` from its descriptor, ranges allowed (a player seeks), inline unless `?download`.
    static func serve(_ file: OpenedFile, name: String, type: String, _ request: Request) -> Response {
        serve(size: file.size, name: name, type: type, request, body: file.body)
    }

    /// `size` bytes named `name` answered to `request`, whatever holds them: the range asked for (or all of them),
    /// read by `body`; inline unless `?download`.
    static func serve(size: Int, name: String, type: String, _ request: Request, body: (ClosedRange<Int>) -> ResponseBody) -> Response {
        var headers: HTTPFields = [
            .contentType: type, .acceptRanges: "bytes", .xContentTypeOptions: "nosniff", .cacheControl: "private, no-cache",
            .contentDisposition: "\(request.uri.queryParameters.get("download") == nil ? "inline" : "attachment"); filename=\"\(Self.headerSafe(name))\"",
        ]
        if let range = request.headers[.range], let wanted = Self.byteRange(range, size: size) {
            headers[.contentRange] = "bytes \(wanted.lowerBound)-\(wanted.upperBound)/\(size)"
            headers[.contentLength] = String(wanted.count)
            return Response(status: .partialContent, headers: headers, body: body(wanted))
        } else if request.headers[.range] != nil {
            return Response(status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(size)"])
        }
        headers[.contentLength] = String(size)
        return Response(status: .ok, headers: headers, body: size > 0 ? body(0...(size - 1)) : ResponseBody())
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

    /// Where a job's package is: its output, a folder the farm made as a package (its marker in it), or the prefix
    /// of object storage the job published a package to (its result says so).
    static func servedPackage(_ job: Job) throws -> PackageFiles.Place {
        if job.state == .succeeded, let result = result(of: job), result.package != nil, let output = result.output, PathRules.isObject(output) {
            // Under one of the job's object roots, as its files are under its folders: the page reads nothing else.
            let prefix = output.hasSuffix("/") ? output : output + "/"
            guard job.writableRoots.contains(where: { PathRules.isObject($0) && prefix.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") && prefix.count > $0.count + 1 }) else {
                throw APIError(status: .forbidden, message: "job \(job.id)'s package \(output) is not under its output roots: the console serves nothing else")
            }
            return try PackageFiles.Place.objects(at: output)
        }
        let real = try servedPath(job, "output")
        guard PackageFiles.isPackage(real) else { throw APIError(status: .notFound, message: "job \(job.id)'s output is not a streaming package") }
        return .folder(real)
    }

    /// The real path of a job's `output`, `report` or `code-N` when it is under the job's output roots and on
    /// this host (a file or a folder); otherwise why not.
    static func servedPath(_ job: Job, _ name: String) throws -> String {
        let code = name.hasPrefix("code-") ? Int(name.dropFirst(5)).flatMap { $0 >= 1 && $0 <= NumberedOutputs.limit ? $0 : nil } : nil
        guard name == "output" || name == "report" || code != nil else {
            throw APIError(status: .notFound, message: "no file \(name): a job's files are its output, its report and its codes' pictures (code-N)")
        }
        // A result that does not decode has no files to serve: said below as "wrote none".
        guard job.state == .succeeded, let result = Self.result(of: job),
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
        guard !PathRules.isObject(given) else {
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
        // The library's assets it read and made (when the library knows them), as tiles with their posters.
        var assets: (read: [LibraryAsset], made: [LibraryAsset], posters: Set<AssetID>, storyboards: Set<AssetID>)?
        var unknown: HTML = ""
        do {
            let library = try library(for: caller)
            assets = try await Self.jobAssets(library, job.id)
        } catch {
            unknown = "<p class=\"muted\">The library cannot say now which assets the job read and made: \(String(describing: error))</p>\n"
        }
        // A package: played, with its storyboard when the library has one of it.
        if let place = try? Self.servedPackage(job) {  // not a package here: nothing more to show
            // A result from before jobs summarised their packages: the entry points the folder has.
            let package = Self.result(of: job)?.package
            let entryPoints = package?.entryPoints ?? StreamFormat.allCases.compactMap { JobManifest.streamEntryPoints[$0] }.filter { name in
                if case .folder(let folder) = place { OpenedFile(in: folder, [Substring(name)]) != nil } else { false }
            }
            files += PackageFiles.player(base: "/jobs/\(job.id)/package/", entryPoints: entryPoints, renditions: package?.renditions ?? [])
            if let asset = assets?.made.first(where: { $0.facts.package != nil }), assets?.storyboards.contains(asset.id) == true {
                files += LibraryPages.scrubber(asset.id)
            }
        }
        if !files.isEmpty { body += "<h2>Files</h2><div id=\"files\">\(files)</div>\n" }
        guard let assets else { return body + unknown }
        for (title, list, id) in [("Assets it read", assets.read, "inputs"), ("Assets it made", assets.made, "outputs")] where !list.isEmpty {
            body += "<h2>\(title)</h2><div class=\"grid assets\" id=\"\(id)\">" + list.map { LibraryPages.thumbnail($0, poster: assets.posters.contains($0.id)) }.joined() + "</div>\n"
        }
        return body
    }

    /// The job's result, when it has one that decodes.
    static func result(of job: Job) -> JobResult? {
        job.result.flatMap { try? JSONDecoder().decode(JobResult.self, from: Data($0.utf8)) }  // no result that decodes: none to show
    }

    /// The assets job `id` read and made, with which of them have a poster and which a storyboard.
    static func jobAssets(_ library: AssetLibrary, _ id: Int64) async throws
        -> (read: [LibraryAsset], made: [LibraryAsset], posters: Set<AssetID>, storyboards: Set<AssetID>) {
        func assets(_ ids: [AssetID]) async throws -> [LibraryAsset] {
            guard !ids.isEmpty else { return [] }
            var options = FetchOptions()
            (options.ids, options.limit, options.pictures) = (Array(ids.prefix(60)), 60, true)
            return try await library.fetch(options).assets
        }
        let read = try await assets(try await library.jobInputs(id))
        let made = try await assets(try await library.jobOutputs(id))
        let ids = (read + made).map(\.id)
        return (read, made, try await library.pictured(ids, kind: .poster), try await library.pictured(ids, kind: .storyboard))
    }
}

import FarmLibrary
import FarmModel
import FarmStore
import FarmSubmit
import Foundation
import Hummingbird

/// A poster made on request for an asset that has none (an export whose job made no poster, a file added
/// to the library by hand): `POST /api/assets/{id}/poster` and the asset page's button queue a job with a
/// `"poster"` section, through the one submission path, writing `posters/ID.jpg` under the coordinator's
/// first output root. Its unique key is the asset's: asking again while the job is live answers that job.
struct PosterRequests: FaceController {
    let face: FaceServices

    func register(on routes: Routes) {
        routes.post("/api/assets/:id/poster", .submit) { _, context in
            let submitted = try await requestPoster(context.caller, id: Self.assetID(context.parameters.get("id") ?? ""))
            var response = Response.json(submitted, status: submitted.queued ? .created : .ok)
            response.headers[.location] = "/api/jobs/\(submitted.id)"
            return response
        }
        routes.post("/library/assets/:id/poster", .form) { _, context in
            let id = try Self.assetID(context.parameters.get("id") ?? "")
            let caller = try context.caller
            let submitted = try await requestPoster(caller, id: id)
            audit("console: a poster of \(id.reference) requested by \(caller.who): job \(submitted.id)")
            return .redirect(to: "/library/assets/\(id.rawValue)?poster=\(submitted.id)", type: .normal)
        }
    }

    /// The poster's job for asset `id`, queued (or the live one already making it).
    func requestPoster(_ caller: Caller, id: AssetID) async throws -> SubmittedJob {
        let library = try library(for: caller)
        let detail = try await Self.answer { try await library.detail(id) }
        if let poster = try await Self.answer({ try await library.picture(of: id, kind: .poster) }) {
            throw APIError(status: .conflict, message: "\(id.reference) has a poster (\(poster.path)): GET /api/assets/\(id.rawValue)/poster")
        }
        guard detail.asset.facts.mediaType == .video else {
            throw APIError(status: .unprocessableContent, message: "\(id.reference) is \(detail.asset.facts.mediaType.rawValue), not a video: a poster is a frame of a video")
        }
        let roots = configuration.outputRoots.flatMap { $0.isEmpty ? nil : $0 } ?? [configuration.baseDirectory]
        let first = roots.first ?? configuration.baseDirectory
        let root = first.hasSuffix("/") ? String(first.dropLast()) : first
        let name = "poster of " + ((detail.asset.path as NSString?)?.lastPathComponent ?? id.rawValue)
        let document: JSONValue = .object([
            ("version", .number("1")), ("name", .string(String(name.prefix(200)))), ("input", .string(id.reference)),
            ("poster", .object([("output", .string("\(root)/posters/\(id.rawValue).jpg"))])),
        ])
        let offer = ManifestOffer(bytes: Array(document.text.utf8), file: "the poster request of \(id.reference)", name: name,
                                  baseDirectory: configuration.baseDirectory)
        return try await enqueue(offer, as: .posterRequest(outputRoots: roots), library: library, keyed: true,
                                 options: JobOptions(outputRoots: roots, uniqueKey: .posterRequest(id), baseDirectory: configuration.baseDirectory))
    }
}

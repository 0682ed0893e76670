import FarmLibrary
import Foundation
import S3Client

/// Watches that are object prefixes (`s3://BUCKET/PREFIX/`): listed at each pass, an object settles while
/// its size and entity tag stay the same, is hashed from a stream of ranged reads and inspected through
/// them (nothing is downloaded), and its job reads it where it is.
extension IngestPass {
    /// The objects under `prefix` that ingest may take: not "folder" markers (keys ending in "/"), nor under a
    /// hidden "folder" (a key component beginning with "."), as a folder's walk leaves hidden folders out.
    /// Or why the prefix could not be listed.
    static func list(_ prefix: String) async -> Result<[S3Object], IngestError> {
        do throws(S3Error) {
            let location = try S3Location(parsing: prefix, prefix: true)
            let s3 = try S3.shared()
            let objects = try await s3.list(location).filter { object in
                let inside = object.location.key.dropFirst(location.key.count)
                guard !inside.isEmpty, !inside.hasSuffix("/") else { return false }
                return !inside.split(separator: "/").dropLast().contains { $0.hasPrefix(".") }
            }
            return .success(objects)
        } catch {
            return .failure(IngestError(error.kind == .configuration ? error.description : "cannot be listed: \(error.problem)"))
        }
    }

    /// When `object` was last written, as its listing says (`{date}`); `fallback` when the server gave none.
    static func modified(_ object: S3Object, or fallback: Date) -> Date {
        guard let text = object.lastModified else { return fallback }
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = iso.date(from: text) { return date }
        iso.formatOptions = [.withInternetDateTime]
        if let date = iso.date(from: text) { return date }
        let http = DateFormatter()
        http.locale = Locale(identifier: "en_US_POSIX")
        http.timeZone = TimeZone(identifier: "GMT")
        http.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return http.date(from: text) ?? fallback
    }

    /// Whether anything is at `path`: a file (a link to nothing counts), or an object (a `HEAD`; an object
    /// that cannot be asked about counts as there, so that content is never taken again on a guess).
    static func present(_ path: String) async -> Bool {
        S3Location.isObject(path) ? !(await AssetLibrary.objectIsGone(path)) : exists(path)
    }
}

import CodeScan
import FarmModel
import Foundation
import MediaEdit
import MediaInspect
import MediaTime

/// A chunked export's last run: its chunks, encoded by their own jobs, joined into the one output.
extension JobRunner {
    /// The result of a first run that only cut the work into `ranges` (a chunked export's chunks, a
    /// storyboard's parts): the coordinator makes a job of each.
    func split(into ranges: [Range<Int>], of what: String, every: MediaTime, started: Date,
               events: @Sendable (JobEvent) -> Void) -> JobResult {
        events(.log(level: "notice", message: "split into \(ranges.count) \(what) of about \(Self.seconds(every)) s"))
        events(.progress(JobProgress(fraction: 0.01, phase: "split")))
        var result = JobResult(name: manifest.name, succeeded: true, seconds: Date().timeIntervalSince(started))
        result.split = ranges
        return result
    }

    func join(_ export: JobManifest.ExportSettings, session: ExportSession, composition: Composition, inspections: [AssetReport],
              inspectSeconds: Double, pictures inputPictures: JobPictures.PicturesMade?, events: @escaping @Sendable (JobEvent) -> Void,
              started: Date) async throws -> JobResult {
        var pictures = inputPictures
        var scan: ScanSummary?
        var scanSeconds = 0.0
        if let settings = manifest.scan {
            // The chunks were encoded without scanning: a pass of its own over the composition.
            events(.progress(JobProgress(fraction: 0.02, phase: "scanning")))
            let scanStarted = Date()
            scan = try await scanCodes(settings, composition: composition)
            let codes = scan?.codes ?? []
            scan?.images = try await pictureMaker.codePictures(settings.images, codes: codes, composition: composition)
            scanSeconds = Date().timeIntervalSince(scanStarted)
        }
        let joinStarted = Date()
        var joined = try await session.join(export.join.map { ExportChunk(path: $0.output, frames: $0.frames) }, progress: { p in
            events(.progress(JobProgress(fraction: 0.5 + 0.49 * p.fraction, phase: "joining", framesPerSecond: p.framesPerSecond, eta: p.eta)))
        })
        joined.output = export.output
        let joinSeconds = Date().timeIntervalSince(joinStarted)
        if let settings = export.poster {
            events(.progress(JobProgress(fraction: 0.99, phase: "poster")))
            pictures = pictures ?? JobPictures.PicturesMade()
            pictures?.exportPoster = try await pictureMaker.poster(of: writePath(export.output), settings, at: "$.export.poster")
        }
        let reportPath = try writeReport(
            inspections: inspections, composition: composition, export: joined, scan: scan, pictures: pictures, chunks: export.join,
            timings: ["inspect": inspectSeconds, "scan": scanSeconds, "join": joinSeconds, "total": Date().timeIntervalSince(started)])
        events(.progress(JobProgress(fraction: 1, phase: "done")))
        var result = JobResult(name: manifest.name, succeeded: true, output: export.output, report: reportPath,
                               duration: joined.duration.seconds, seconds: Date().timeIntervalSince(started))
        result.numbered = JobPictures.numbered(pictures, scan)
        return result
    }
}

/// The files of a chunked export's chunks: a folder beside its output (or an object prefix), made by the
/// coordinator that splits the export and removed with everything in it when the export ends.
public enum ChunkFiles {
    static func folder(of output: String) -> String? {
        guard !PathRules.isObject(output), let slash = output.lastIndex(of: "/") else { return nil }
        return String(output[..<slash])
    }

    /// Makes the folder `output` is in, and the folders above it, when missing. Objects need none.
    static func makeFolder(of output: String) throws {
        guard let folder = folder(of: output) else { return }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw JobError("\(folder): cannot make the folder of the chunks: \((error as NSError).localizedDescription)")
        }
    }

    /// Under a coordinator, a chunk is written only into the folder its split made: one that is gone was
    /// removed because the export ended (or was planned again), and making it again would leave it behind.
    static func checkFolder(of output: String) throws {
        guard let folder = folder(of: output) else { return }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw JobError("\(folder): the folder of this export's chunks is gone (the export ended or was planned again) or not seen from this host "
                           + "(a chunked export needs a folder every host shares, or an s3:// output)")
        }
    }
}

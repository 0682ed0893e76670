import FarmModel
import FarmSubmit
import Foundation
import MediaCapture
import MediaTime

/// One movie of a whole recording (`capture --assemble TEMPLATE`): a job from the template whose edits
/// are the recording's segments end to end, each from its first picture for exactly its recorded
/// duration, so that the movie
/// lasts the segments' sum and every join falls on the keyframe a segment was cut at (a passthrough
/// export copies them, exact at the joins). It waits for all the segments' jobs. Where the source dropped
/// and came back, the movie goes straight on; each such gap is reported with where it falls in the movie.
/// Journaled whole (manifest included), so that a later capture into the folder can enqueue it without
/// the template.
public struct CaptureAssembly: Codable, Sendable, Hashable {
    public struct Piece: Codable, Sendable, Hashable {
        public var index: Int
        public var path: String
        public var duration: Double
    }

    /// Where the source was gone: `duration` seconds of capture time missing at `at` seconds of the movie,
    /// before segment `beforeSegment`.
    public struct Gap: Codable, Sendable, Hashable {
        public var beforeSegment: Int
        public var at: Double
        public var duration: Double
    }

    public var captureID: String
    public var segments: [Piece]
    public var gaps: [Gap]
    /// The manifest with its edits, as it is queued.
    public var manifest: String
    public var name: String
    public var baseDirectory: String
    public var outputRoots: [String]

    public var first: Int { segments.first?.index ?? 0 }
    public var last: Int { segments.last?.index ?? 0 }
    public var duration: Double { segments.reduce(0) { $0 + $1.duration } }
    /// One assembly per recording: a recording's first segment names it.
    public var uniqueKey: UniqueKey { .captureAssembly(captureID, first: first) }

    /// The placeholders an assembly template may use.
    public static let placeholders = ["captureID", "date", "first", "last", "segments"]

    /// The template's manifest filled in for `segments` (in order, at least one), with an edit per segment;
    /// the template must give neither `input` nor `edits` (see `templateProblem`).
    public static func make(template: IngestTemplate, captureID: String, segments: [SegmentReport], outputRoots: [String]) -> CaptureAssembly {
        let values = ["captureID": captureID, "date": IngestTemplate.day(segments.first?.wallClock ?? Date()),
                      "first": String(segments.first?.index ?? 0), "last": String(segments.last?.index ?? 0),
                      "segments": String(segments.count)]
        // The segments' paths are added after the placeholders are filled: a path is never read as a template.
        var document = IngestTemplate.filled(template.document, values: values, file: "")
        func text(_ time: MediaTime) -> String { "\(time.value)/\(time.timescale)" }
        let edits = segments.map { segment -> JSONValue in
            var edit: [(key: String, value: JSONValue)] = [("source", .string(segment.path))]
            // From its first picture (later than zero when its encoder reorders frames), for exactly its duration.
            if let first = SegmentFile.firstPicture(segment.path), first > .zero { edit.append(("start", .string(text(first)))) }
            edit.append(("duration", .string(segment.exactDuration.map(text) ?? String(segment.duration))))
            return .object(edit)
        }
        if case .object(let members) = document { document = .object(members + [("edits", .array(edits))]) }
        var gaps: [Gap] = []
        var at = 0.0
        for segment in segments {
            if let gap = segment.gapBefore, gap > 0 { gaps.append(Gap(beforeSegment: segment.index, at: at, duration: gap)) }
            at += segment.duration
        }
        return CaptureAssembly(captureID: captureID, segments: segments.map { Piece(index: $0.index, path: $0.path, duration: $0.duration) },
                               gaps: gaps, manifest: document.text, name: "\(captureID)-assembly", baseDirectory: template.folder,
                               outputRoots: outputRoots)
    }

    /// Why `template` cannot make an assembly, or nil: the capture supplies the edits.
    public static func templateProblem(_ template: IngestTemplate) -> String? {
        for key in ["input", "edits"] where template.document[key] != nil {
            return "\(template.path): gives \"\(key)\"; an assembly's edits are the recording's segments, which the capture supplies"
        }
        guard template.document["export"] != nil else {
            return "\(template.path): no \"export\"; an assembly is a movie: give \"export\": {\"mode\": \"passthrough\", \"output\": ...}"
        }
        return nil
    }
}

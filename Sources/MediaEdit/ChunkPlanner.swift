import Foundation
import MediaCore
import MediaTime

/// Where a chunked constant-frame-rate export is cut: about every `every` of output, each cut moved to
/// the first output frame that shows a source keyframe near it (within a quarter of `every`), so that the
/// chunk that begins there decodes from that keyframe and nothing before it. Sources with no index
/// (or no keyframe near a cut) are cut where the nominal time falls.
struct ChunkPlanner {
    let composition: Composition
    let frameDuration: MediaTime
    let every: MediaTime
    let limits: SafetyLimits
    let interrupter: Interrupter

    func run() throws -> [Range<Int>] {
        let fd = frameDuration.reduced
        let frameTB = Rational(Int32(clamping: fd.value), fd.timescale)
        let mapping = composition.timeMapping
        let frameCount = Int(mapping.duration.count(in: frameTB, rounding: .up) ?? 0)
        guard frameCount > 0 else { throw ExportError("the composition is empty: nothing to export") }
        let perChunk = max(1, Int(every.count(in: frameTB) ?? 1))
        let chunks = max(1, Int((Double(frameCount) / Double(perChunk)).rounded()))
        guard chunks > 1 else { return [0..<frameCount] }
        let keyframeFrames = try keyframes(frameTB: frameTB)
        let reach = perChunk / 4
        var cuts: [Int] = []
        for i in 1..<chunks {
            let nominal = i * frameCount / chunks
            let near = nearest(nominal, in: keyframeFrames).flatMap { abs($0 - nominal) <= reach ? $0 : nil }
            let cut = near ?? nominal
            if cut > (cuts.last ?? 0), cut < frameCount { cuts.append(cut) }
        }
        let bounds = [0] + cuts + [frameCount]
        return zip(bounds, bounds.dropFirst()).map { $0..<$1 }
    }

    /// The output frames (sorted) that first show a source keyframe: frame k shows what is on screen at
    /// k frame durations, so a keyframe at composition time t is first shown by frame ceil(t / fd).
    private func keyframes(frameTB: Rational) throws -> [Int] {
        let mapping = composition.timeMapping
        var frames = Set<Int>()
        var indexes: [String: (StreamInfo, [Int64])?] = [:]
        for (i, segment) in composition.segments.enumerated() {
            if indexes[segment.source] == nil {
                let input = try InputFile(path: segment.source, limits: limits, interrupter: interrupter)
                let video = input.streams.first { $0.mediaType == .video }
                indexes[segment.source] = video.flatMap { v in input.index(of: v.index).map { (v, $0.keyframes) } }
            }
            guard let (video, ticks) = indexes[segment.source] ?? nil else { continue }
            for tick in ticks {
                let s = MediaTime(count: tick, timeBase: video.timeBase) - video.startTime
                guard segment.sourceRange.contains(s), let t = mapping.targetTime(segment: i, source: s) else { continue }
                if let k = t.count(in: frameTB, rounding: .up) { frames.insert(Int(k)) }
            }
        }
        return frames.sorted()
    }

    private func nearest(_ frame: Int, in sorted: [Int]) -> Int? {
        var lo = 0, hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < frame { lo = mid + 1 } else { hi = mid }
        }
        let candidates = [lo - 1, lo].filter { sorted.indices.contains($0) }.map { sorted[$0] }
        return candidates.min { abs($0 - frame) < abs($1 - frame) }
    }
}

extension ExportSession {
    /// The output frame ranges of a chunked constant-frame-rate export of about `every` each, cut near
    /// source keyframes (`ChunkPlanner`); one range when the export is not much longer than `every`. The
    /// audio and subtitle tracks asked for are chosen first: a language a source lacks, or a subtitle track of
    /// pictures, refuses the export before any chunk.
    public func chunkRanges(every: MediaTime) async throws -> [Range<Int>] {
        let composition = self.composition, settings = self.settings
        guard settings.mode == .constantFrameRate else { throw ExportError("only constant-frame-rate exports are encoded in chunks") }
        return try await pool.run(stallLimit: settings.limits.stallTimeout) { interrupter in
            // What the join would refuse is refused before any chunk is encoded: a language a source lacks.
            let audio = settings.audioPolicy != .drop && settings.audioTracks != .defaultTrack
            if audio || !settings.subtitleLanguages.isEmpty {
                let sources = try ExportSource.open(composition.segments.map(\.source), limits: settings.limits, interrupter: interrupter)
                if audio { _ = try settings.audioTracks.choose(sources) }
                for language in settings.subtitleLanguages {
                    _ = try SubtitleRendition(language: language, sources: sources, mapping: composition.timeMapping, limits: settings.limits,
                                              interrupter: interrupter)
                }
            }
            return try ChunkPlanner(composition: composition, frameDuration: settings.frameDuration, every: every,
                                    limits: settings.limits, interrupter: interrupter).run()
        }
    }
}

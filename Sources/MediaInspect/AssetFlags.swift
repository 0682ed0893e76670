import MediaCore
import MediaTime

/// How the asset's yes/no properties are derived. The README documents the same rules.
enum AssetFlags {
    static func isReadable(_ p: ProbeResult) -> Bool {
        let media = p.timedStreams.filter { [.audio, .video, .subtitle].contains($0.mediaType) }
        return !media.isEmpty && media.allSatisfy(\.hasDecoder)
    }

    static func isExportable(_ p: ProbeResult) -> Bool {
        let av = p.audiovisualStreams
        guard !av.isEmpty else { return false }
        return isReadable(p) || av.allSatisfy { !$0.passthroughContainers.isEmpty }
    }

    static func isPlayable(_ p: ProbeResult, _ d: DecodeResult) -> Bool {
        let av = p.audiovisualStreams
        return isReadable(p) && !av.isEmpty && av.allSatisfy { d.tracks[$0.index]?.isDecodable == true }
    }

    static func isComposable(_ p: ProbeResult, _ t: TimingResult) -> Bool {
        let duration = t.duration
        return isExportable(p) && duration.isNumeric && duration > .zero
    }
}

enum TrackFacts {
    static func nominalFrameRate(_ s: StreamInfo, _ t: TimingResult.Track?) -> Double {
        guard s.mediaType == .video, !s.isAttachedPicture else { return 0 }
        // A stream whose average and base rates agree declares a constant rate: take it as declared
        // (an AVI with dropped-frame chunks has fewer packets than frames).
        if let avg = s.averageFrameRate, let real = s.realFrameRate, avg.reduced == real.reduced {
            return avg.doubleValue
        }
        if let t, t.packetCount > 1, t.timeRange.isValid, t.timeRange.duration > .zero {
            return Double(t.packetCount) / t.timeRange.duration.seconds
        }
        return (s.averageFrameRate ?? s.realFrameRate)?.doubleValue ?? 0
    }

    static func estimatedDataRate(_ s: StreamInfo, _ t: TimingResult.Track?) -> Int {
        if let t, t.byteCount > 0, t.timeRange.isValid, t.timeRange.duration > .zero {
            return Int((Double(t.byteCount) * 8 / t.timeRange.duration.seconds).rounded())
        }
        return s.bitRate
    }
}

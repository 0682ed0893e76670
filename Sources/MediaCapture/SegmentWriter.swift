import Foundation
import MediaCore
import MediaTime
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// One segment being recorded: a fragmented MP4 (a readable prefix survives a crash) under a hidden
/// partial name beside its final name, its packets copied from the source (or from its live encoder)
/// and timed from the segment's start. `finish` writes the trailer, fsyncs, and renames it to its final
/// name, so a final name always holds a complete movie.
final class SegmentWriter {
    let index: Int
    let finalPath: String
    let partialPath: String
    /// Where the segment starts, in source seconds (exact: the cutting keyframe's time).
    let start: MediaTime
    let startWallClock: Date
    private let file: OutputFile
    private struct Track {
        var output: Int
        var inputBase: Rational
        var outputBase: Rational
        /// The segment's start in input ticks.
        var startTicks: Int64
    }

    /// By input stream.
    private var tracks: [Int: Track] = [:]
    private(set) var bytes: Int64 = 0
    private(set) var packets = 0
    /// The latest end (pts + duration) of a video packet, else of any packet, in source seconds.
    private(set) var end: MediaTime
    /// Where the next segment starts, once this one was cut: its exact end.
    var cutAt: MediaTime?
    /// The write that failed (a full disk): the segment is not complete and is never given its final name.
    private(set) var failure: MediaFileError?

    /// A fragment per keyframe. Not `empty_moov`: the index is written with the first fragment, once
    /// FFmpeg's automatic aac_adtstoasc has found the AAC configuration a live MPEG-TS stream carries in
    /// its packets (an empty index written up front would lack it).
    static let fragmentedMP4 = ["movflags": "+frag_keyframe+default_base_moof"]

    init(index: Int, folder: String, captureID: String, start: MediaTime, tracks recorded: [RecordedTrack]) throws(MediaFileError) {
        self.index = index
        self.start = start
        self.end = start
        startWallClock = Date()
        let name = "\(captureID)-\(String(format: "%05d", index)).mp4"
        finalPath = folder + "/" + name
        partialPath = folder + "/." + name + ".partial"
        file = try OutputFile(path: partialPath, format: "mp4")
        do {
            try addTracks(recorded)
        } catch {
            // Nothing of the segment was written (e.g. no space for its header): no file is left behind
            // (the muxer is freed, not finished: a trailer after a failed header is not FFmpeg's to write).
            unlink(partialPath)
            throw error
        }
    }

    private func addTracks(_ recorded: [RecordedTrack]) throws(MediaFileError) {
        for track in recorded {
            let output: Int
            switch track.origin {
            case .copied(let input): output = try file.addStream(copying: track.index, of: input, timeBase: track.timeBase)
            case .encoded(let live):
                guard let encoder = live.encoder else { continue }   // nothing encoded yet: no packets to hold
                output = try file.addStream(for: encoder)
            }
            tracks[track.index] = Track(output: output, inputBase: track.timeBase, outputBase: track.timeBase,
                                        startTicks: start.count(in: track.timeBase, rounding: .down) ?? 0)
        }
        try file.writeHeader(options: Self.fragmentedMP4)
        for (key, track) in tracks { tracks[key]?.outputBase = file.timeBase(of: track.output) }
    }

    /// Writes a packet of input stream `packet.streamIndex` (consumed).
    func write(_ packet: inout Packet, isVideo: Bool) throws(MediaFileError) {
        guard let track = tracks[packet.streamIndex] else { return }
        let size = packet.size
        let rescale = { (v: Int64?) in v.map { Self.rescale($0 - track.startTicks, from: track.inputBase, to: track.outputBase) } }
        let duration = Self.rescale(packet.duration, from: track.inputBase, to: track.outputBase)
        if let pts = packet.pts, isVideo || tracks.count == 1 {
            end = max(end, MediaTime(count: pts + packet.duration, timeBase: track.inputBase))
        }
        packet.retime(pts: rescale(packet.pts), dts: rescale(packet.dts), duration: duration, streamIndex: track.output)
        if let failure { throw failure }
        do {
            try file.write(&packet)
        } catch {
            failure = error
            throw error
        }
        bytes += Int64(size)
        packets += 1
    }

    /// Completes the movie and renames it to its final name (both synced to disk). A segment whose writing
    /// failed is closed under its partial name, which the next capture into the folder salvages (up to its
    /// last complete fragment) or quarantines, and the failure is thrown.
    func finish() throws(MediaFileError) {
        if let failure {
            // No trailer after a failed write: the file is closed as it is when this writer goes.
            throw MediaFileError(path: partialPath, reason: .ffmpeg(Self.code(of: failure),
                while: "completing segment \(index) (left under its partial name: the next capture into this folder salvages it)"))
        }
        try file.finish(sync: true)
        do {
            try SafeFiles.move(partialPath, to: finalPath)   // never over a segment already there
        } catch {
            throw MediaFileError(path: finalPath, reason: .ffmpeg(FFmpegError(code: -error.code), while: "renaming the finished segment"))
        }
        SafeFiles.syncFolder(of: finalPath)
        bytes = (try? FileManager.default.attributesOfItem(atPath: finalPath)[.size] as? Int64) ?? bytes  // the size counted while writing, otherwise
    }

    /// Removes an empty segment (nothing was recorded into it).
    func discard() throws(MediaFileError) {
        try file.finish(sync: false)
        unlink(partialPath)
    }

    /// The FFmpeg error inside `error` (EIO when there is none).
    static func code(of error: MediaFileError) -> FFmpegError {
        if case .ffmpeg(let code, _) = error.reason { return code }
        return FFmpegError(code: -EIO)
    }

    /// `value` ticks of `a` as ticks of `b`, to the nearest.
    static func rescale(_ value: Int64, from a: Rational, to b: Rational) -> Int64 {
        MediaTime(count: value, timeBase: a).count(in: b) ?? value
    }
}

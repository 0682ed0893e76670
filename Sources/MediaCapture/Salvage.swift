import Foundation
import MediaCore
import MediaTime
import SafeFiles
#if canImport(Glibc)
import Glibc
#endif

/// What a recording that died (kill -9, power loss) left in its output folder: each unfinished segment
/// (`.<capture-id>-<index>.mp4.partial`, a fragmented MP4) has its readable prefix copied into a complete
/// movie under its final name, or is moved to `quarantine/` with a `.reason.json` when nothing of it can
/// be read. Never silently lost, never left behind.
public enum Salvage {
    public struct Result: Sendable, Codable {
        public var captureID: String
        public var index: Int
        /// The complete segment made from the readable prefix; nil when quarantined.
        public var path: String?
        public var quarantined: String?
        public var reason: String?
        public var duration: Double
        public var packets: Int
        public var wallClock: Date
    }

    /// Salvages every unfinished segment in `folder`, in name order.
    public static func run(folder: String) -> [Result] {
        // The capture's own folder: when it cannot be listed, there is nothing of it to salvage.
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix(".") && $0.hasSuffix(".mp4.partial") }
        return names.sorted().compactMap { salvage(folder: folder, partialName: $0) }
    }

    static func salvage(folder: String, partialName: String) -> Result? {
        let finalName = String(partialName.dropFirst().dropLast(".partial".count))
        let stem = String(finalName.dropLast(".mp4".count))
        guard let dash = stem.lastIndex(of: "-"), let index = Int(stem[stem.index(after: dash)...]) else { return nil }
        let captureID = String(stem[..<dash])
        let partial = folder + "/" + partialName, final = folder + "/" + finalName
        let modified = (try? FileManager.default.attributesOfItem(atPath: partial)[.modificationDate] as? Date) ?? Date()  // unknown: named by now
        var result = Result(captureID: captureID, index: index, path: nil, quarantined: nil, reason: nil, duration: 0, packets: 0, wallClock: modified)
        do {
            (result.duration, result.packets) = try copyPrefix(of: partial, to: final)
            unlink(partial)
            result.path = final
        } catch {
            result.reason = "\(error)"
            result.quarantined = quarantine(partial, name: partialName, folder: folder, reason: result.reason ?? "")
        }
        return result
    }

    /// Copies every packet FFmpeg can read from the start of `partial` into a complete MP4 at `final`
    /// (through a temporary, synced and renamed). Throws when no video (or, for audio alone, no audio)
    /// can be read.
    static func copyPrefix(of partial: String, to final: String) throws -> (Double, Int) {
        let input = try InputFile(path: partial, limits: .default, interrupter: Interrupter(stallLimit: .seconds(30)))
        let streams = input.streams.filter { $0.mediaType == .video || $0.mediaType == .audio }
        guard !streams.isEmpty else { throw SalvageError("no audio or video stream in what was written") }
        let temporary = final + ".salvage"
        let output = try OutputFile(path: temporary, format: "mp4")
        var outputs: [Int: (index: Int, from: Rational, to: Rational)] = [:]
        for stream in streams {
            outputs[stream.index] = (try output.addStream(copying: stream.index, of: input, timeBase: stream.timeBase), stream.timeBase, stream.timeBase)
        }
        try output.writeHeader()
        for (key, value) in outputs { outputs[key]?.to = output.timeBase(of: value.index) }
        let video = streams.first { $0.mediaType == .video }?.index
        var packet = Packet()
        var count = 0, main = 0
        var end = MediaTime(value: 0, timescale: 1)
        while true {
            let read: InputFile.ReadResult
            do { read = try input.read(into: &packet) } catch { break }   // the torn tail
            guard read == .packet, let track = outputs[packet.streamIndex] else { if read == .endOfFile { break } else { continue } }
            if packet.streamIndex == video || video == nil, let pts = packet.pts {
                main += 1
                end = max(end, MediaTime(count: pts + packet.duration, timeBase: track.from))
            }
            let scale = { (v: Int64?) in v.map { SegmentWriter.rescale($0, from: track.from, to: track.to) } }
            packet.retime(pts: scale(packet.pts), dts: scale(packet.dts), duration: SegmentWriter.rescale(packet.duration, from: track.from, to: track.to),
                          streamIndex: track.index)
            try output.write(&packet)
            count += 1
        }
        guard main > 0 else {
            unlink(temporary)
            throw SalvageError("nothing readable: the recording stopped before its first fragment was written")
        }
        try output.finish(sync: true)
        do {
            try SafeFiles.move(temporary, to: final)
        } catch {
            unlink(temporary)
            throw SalvageError("cannot rename the salvaged segment: \(error)")
        }
        SafeFiles.syncFolder(of: final)
        return (end.seconds, count)
    }

    /// `quarantine/<capture-id>-<index>.mp4.partial` (numbered when taken), with its reason file; nil when
    /// it could not be moved (the partial file then stays, and is tried again at the next start).
    static func quarantine(_ partial: String, name: String, folder: String, reason: String) -> String? {
        try? QuarantineFolder(folder + "/quarantine").place(partial, name: String(name.dropFirst()), reason: reason)  // nil: see above
    }
}

struct SalvageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

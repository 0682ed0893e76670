import Foundation
import MediaCore
import MediaTime

/// What scanning one file found.
public struct FileScanReport: Sendable {
    public var path: String
    public var codes: [ScannedCode]
    public var framesDecoded: Int
    public var framesScanned: Int
    public var decodeErrors: Int
    public var seconds: Double
}

/// Scans every frame (or one every `interval`) of a movie's first video track, or a still image (PNG,
/// JPEG: FFmpeg reads them as one-frame video), and merges what it finds. Runs on the blocking pool.
public enum FileScanner {
    /// `range` (source time, from the file's start) limits the frames scanned; `mapTime` turns each
    /// frame's source time into the time reported (a composition's), or nil to skip the frame.
    public static func scan(path: String, configuration: CodeScanner.Configuration, range: TimeRange? = nil,
                            mapTime: (@Sendable (MediaTime) -> MediaTime?)? = nil,
                            limits: SafetyLimits = .default, pool: BlockingWorkPool = .shared) async throws -> FileScanReport {
        try await pool.run(stallLimit: limits.stallTimeout) { interrupter in
            try scanBlocking(path: path, configuration: configuration, range: range, mapTime: mapTime,
                             limits: limits, interrupter: interrupter)
        }
    }

    static func scanBlocking(path: String, configuration: CodeScanner.Configuration, range: TimeRange? = nil,
                             mapTime: (@Sendable (MediaTime) -> MediaTime?)? = nil, limits: SafetyLimits,
                             interrupter: Interrupter) throws -> FileScanReport {
        let started = Date()
        let file = try InputFile(path: path, limits: limits, interrupter: interrupter)
        guard let stream = file.streams.first(where: { $0.mediaType == .video }) else {
            throw MediaFileError(path: path, reason: .noStreams)
        }
        file.discardAll(except: [stream.index])
        let decoder = try Decoder(file: file, streamIndex: stream.index)
        let origin = file.container.startTime.isNumeric ? file.container.startTime : .zero
        if let range, range.start > MediaTime(value: 2, timescale: 1),
           let ticks = (range.start - MediaTime(value: 2, timescale: 1) + origin).count(in: stream.timeBase, rounding: .down) {
            try file.seek(stream: stream.index, toKeyframeBefore: ticks)
        }
        // Decoding here, scanning on workers: one per core, at least two.
        let session = FrameScanSession(configuration: configuration, workers: max(2, ProcessInfo.processInfo.activeProcessorCount))
        var packet = Packet()
        var frame = Frame()
        var decoded = 0, errors = 0
        var lastError: FFmpegError?

        func drain() throws {
            while true {
                do {
                    guard try decoder.receive(into: &frame) == .frame else { return }
                } catch {
                    errors += 1
                    lastError = error
                    return
                }
                decoded += 1
                file.progressed()
                let sourceTime = frame.pts.map { MediaTime(count: $0, timeBase: stream.timeBase) - origin } ?? .zero
                if let range, !range.contains(sourceTime) { continue }
                guard let time = mapTime.map({ $0(sourceTime) }) ?? sourceTime else { continue }
                try session.submit(time: time, frame: frame)
            }
        }
        while try file.read(into: &packet) == .packet {
            if decoded & 15 == 0 { try file.checkInterrupt() }
            // A packet decoded at or after the range's end can only hold frames shown after it
            // (a frame is decoded no later than it is shown): stop reading, flush the decoder.
            if let range, let dts = packet.dts ?? packet.pts,
               !(MediaTime(count: dts, timeBase: stream.timeBase) - origin < range.end) { break }
            do {
                if try decoder.send(packet) == .full { try drain(); _ = try decoder.send(packet) }
            } catch let error as FFmpegError {
                errors += 1
                lastError = error
            }
            try drain()
        }
        try? decoder.sendEndOfStream()  // draining at the end: nothing more to decode
        try drain()
        let codes: [ScannedCode]
        do {
            codes = try session.finish()
        } catch let error as FFmpegError {
            throw MediaFileError(path: path, reason: .ffmpeg(error, while: "converting a frame for scanning"))
        }
        if decoded == 0 {
            throw MediaFileError(path: path, reason: .undecodable(track: stream.index, codec: stream.codecName,
                                                                  lastError ?? FFmpegError.invalidData))
        }
        return FileScanReport(path: path, codes: codes, framesDecoded: decoded, framesScanned: session.framesScanned,
                              decodeErrors: errors, seconds: Date().timeIntervalSince(started))
    }
}

import MediaCore
import MediaTime

/// Whether each audio and video track yields a frame: the `.decoding` stage.
struct DecodeResult: Sendable {
    struct Track: Sendable {
        var isDecodable: Bool
        /// Why a track with a decoder produced no frame.
        var error: MediaFileError?
        /// Its packets are encrypted (protected content): not decodable, and not an error.
        var isEncrypted = false
    }

    /// AVAsset.hasProtectedContent: some track is encrypted.
    var hasProtectedContent: Bool { tracks.values.contains { $0.isEncrypted } }

    var tracks: [Int: Track]

    /// Decodes packets until every audio and video track has produced its first frame, failed, or the
    /// packet budget is spent. Decoders run single-threaded: the first frame comes soonest that way.
    static func check(_ file: InputFile, probe: ProbeResult, packetLimit: Int) throws(MediaFileError) -> DecodeResult {
        final class Pending {
            let decoder: Decoder
            var packetsSent = 0
            var lastError: FFmpegError?
            init(_ decoder: Decoder) { self.decoder = decoder }
        }
        var tracks: [Int: Track] = [:]
        var pending: [Int: Pending] = [:]
        for s in probe.streams where !s.isAttachedPicture {
            switch s.mediaType {
            case .audio, .video:
                do {
                    pending[s.index] = Pending(try Decoder(file: file, streamIndex: s.index, threads: 1))
                } catch {
                    tracks[s.index] = Track(isDecodable: false, error: error)
                }
            case .subtitle:
                // Subtitles decode on demand; a decoder that opens is taken as enough.
                do {
                    _ = try Decoder(file: file, streamIndex: s.index, threads: 1)
                    tracks[s.index] = Track(isDecodable: true)
                } catch {
                    tracks[s.index] = Track(isDecodable: false, error: error)
                }
            default:
                continue
            }
        }

        func undecodable(_ index: Int, _ error: FFmpegError) -> MediaFileError {
            MediaFileError(path: file.path, reason: .undecodable(track: index, codec: probe.streams[index].codecName, error))
        }
        /// Pulls frames; true once the track produced one.
        func drain(_ p: Pending) -> Bool {
            var frame = Frame()
            while true {
                do {
                    switch try p.decoder.receive(into: &frame) {
                    case .frame: return true
                    case .needsInput, .endOfStream: return false
                    }
                } catch {
                    p.lastError = error
                    return false
                }
            }
        }
        func settle(_ index: Int, decoded: Bool) {
            guard let p = pending.removeValue(forKey: index) else { return }
            if decoded {
                tracks[index] = Track(isDecodable: true)
            } else {
                let why = p.lastError ?? (p.packetsSent == 0
                    ? FFmpegError(code: FFmpegError.endOfFile.code, operation: nil, detail: "the track has no packets")
                    : FFmpegError(code: FFmpegError.invalidData.code, operation: nil,
                                  detail: "no frame after \(p.packetsSent) packets"))
                tracks[index] = Track(isDecodable: false, error: undecodable(index, why))
            }
        }

        var packet = Packet()
        var read = 0
        let perTrackLimit = 64
        while !pending.isEmpty, read < packetLimit {
            if read & 63 == 0 { try file.checkInterrupt() }
            guard try file.read(into: &packet) == .packet else { break }
            read += 1
            guard let p = pending[packet.streamIndex] else { continue }
            if packet.isEncrypted {
                pending.removeValue(forKey: packet.streamIndex)
                tracks[packet.streamIndex] = Track(isDecodable: false, error: nil, isEncrypted: true)
                continue
            }
            p.packetsSent += 1
            var gotFrame = false
            do {
                // .full means the decoder holds frames to take first; one try to take them, then move on.
                if try p.decoder.send(packet) == .full {
                    gotFrame = drain(p)
                    if !gotFrame { _ = try p.decoder.send(packet) }
                }
            } catch {
                p.lastError = error
            }
            if gotFrame || drain(p) {
                settle(packet.streamIndex, decoded: true)
            } else if p.packetsSent >= perTrackLimit {
                settle(packet.streamIndex, decoded: false)
            }
        }
        // End of file (or budget): flush what is left and give each remaining track its verdict.
        for (index, p) in pending {
            try? p.decoder.sendEndOfStream()  // draining after the packets: an error here leaves nothing more to decode
            settle(index, decoded: drain(p))
        }
        return DecodeResult(tracks: tracks)
    }
}

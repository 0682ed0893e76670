import Foundation
import MediaCore
import MediaTime
#if canImport(Glibc)
import Glibc
#endif

/// A package made in chunks, joined: each chunk holds every rung's segments of its frames, numbered and
/// timed as the package made whole has them (`SegmentedTrack.place`), so joining them is linking their
/// files into the package's folder, after checking that they tile the timeline and were encoded alike. The
/// audio was made by the first chunk over the whole composition, and cut at the video's boundaries as a
/// package made whole cuts it (there is no seam in it): it is linked too. The subtitles are made here.
extension PackageWriter {
    func join(_ chunks: [StreamChunk], files store: any ChunkFileStore) throws -> StreamReport {
        let started = Date()
        guard !settings.singleFile else { throw ExportError("a single-file package is made whole, not joined from chunks") }
        let plan = try prepare(readingSubtitles: true)
        let gop = plan.settings.framesPerSegment
        var next = 0
        for chunk in chunks {
            guard chunk.frames.lowerBound == next, !chunk.frames.isEmpty, next % gop == 0 else {
                throw ExportError("\(chunk.folder): holds frames \(chunk.frames.lowerBound)..<\(chunk.frames.upperBound), but frame \(next) comes next "
                                  + "(chunks are whole segments of \(gop) frames, in order)")
            }
            next = chunk.frames.upperBound
        }
        guard let first = chunks.first else { throw ExportError("no chunks to join") }
        guard next == plan.frameCount else { throw ExportError("the chunks end at frame \(next); the package has \(plan.frameCount) frames") }
        let rungs = first.report.tracks.filter { $0.kind == .video }
        guard rungs.count == plan.settings.rungs.count else {
            throw ExportError("\(first.folder): holds \(rungs.count) rungs of video; the package has \(plan.settings.rungs.count)")
        }
        var tracks: [StreamTrack] = []
        for (i, rung) in rungs.enumerated() {
            tracks.append(try link(rung, of: chunks, plan: plan, store: store))
            progress(ExportProgress(fraction: 0.05 * Double(i + 1) / Double(rungs.count), phase: "joining", framesPerSecond: nil, eta: nil))
        }
        let fd = plan.frameDuration
        let duration = fd.multiplied(by: Int32(clamping: plan.frameCount))
        let audio: [StreamTrack]
        let made = first.report.tracks.filter { $0.kind == .audio }
        if made.isEmpty {
            // Chunks made before the first chunk made the audio: it is made here, over the whole composition.
            audio = try encodeAudio(plan: plan, duration: duration, video: tracks[0])
        } else {
            let names = try audioChoices(plan.sources).map(\.name)
            guard made.map(\.folder) == names else {
                throw ExportError("\(first.folder): holds the audio tracks \(made.map(\.folder)), where the package has \(names): retry the job to make them again")
            }
            audio = try made.map { try linkAudio($0, of: first, plan: plan, segments: tracks[0].segments.count, store: store) }
        }
        var report = StreamReport(duration: duration, segmentDuration: fd.multiplied(by: Int32(clamping: gop)), tracks: tracks + audio,
                                  framesDecoded: chunks.reduce(0) { $0 + $1.report.framesDecoded }, seconds: 0,
                                  sourcePicture: first.report.sourcePicture, skippedRungs: first.report.skippedRungs)
        try addSubtitles(plan.subtitles, to: &report)
        progress(ExportProgress(fraction: 1, phase: "finishing", framesPerSecond: nil, eta: 0))
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// The package's audio made over the whole composition and cut where the video's segments begin (`video`).
    private func encodeAudio(plan: PackagePlan, duration: MediaTime, video: StreamTrack) throws -> [StreamTrack] {
        let audio = try audioWriters(sources: plan.sources, duration: duration, settings: plan.settings)
        let boundaries = video.segments.dropFirst()
        let scale = Rational(1, Int32(clamping: video.timescale))
        for (i, segment) in boundaries.enumerated() {
            let boundary = MediaTime(count: segment.start - video.presentationOffset, timeBase: scale)
            for track in audio { try track.cut(before: boundary) }
            progress(ExportProgress(fraction: 0.05 + 0.9 * Double(i + 1) / Double(boundaries.count + 1), phase: "audio", framesPerSecond: nil, eta: nil))
            interrupter.progressed()
            if let reason = interrupter.reason { throw MediaFileError.interrupted(path: settings.folder, reason) }
        }
        for track in audio { try track.finish() }
        return audio.map { $0.report() }
    }

    /// An audio track the first chunk made for the whole package, linked into the package's folder: its
    /// initialization and one segment for each of the video's `segments`, as that chunk's report names them.
    private func linkAudio(_ track: StreamTrack, of chunk: StreamChunk, plan: PackagePlan, segments count: Int, store: any ChunkFileStore) throws -> StreamTrack {
        // Its folder is one of the package's audio names (checked by the caller).
        let container = track.container ?? .cmaf
        guard isStoredAsPlanned(track, plan: plan) else {
            throw ExportError("\(chunk.folder): its report names an audio track \"\(track.folder)/\(track.initialization)\", not one the packager makes")
        }
        let files = chunk.folder + "/" + track.folder, folder = settings.folder + "/" + track.folder
        guard track.segments.count == count else {
            throw ExportError("\(files): holds \(track.segments.count) audio segments where the package has \(count): retry the job to make them again")
        }
        guard mkdir(folder, 0o755) == 0 else { throw ExportError("\(folder): cannot make the track's folder: \(String(cString: strerror(errno)))") }
        if container == .cmaf { try store.link(files + "/" + track.initialization, to: folder + "/" + track.initialization) }
        for (i, segment) in track.segments.enumerated() {
            guard segment.file == "\(i + 1).\(container.fileExtension)", store.size(of: files + "/" + segment.file) == segment.bytes else {
                throw ExportError("\(files)/\(segment.file): not segment \(i + 1) as its chunk wrote it (its name or size differ): retry the job to make it again")
            }
            try store.link(files + "/" + segment.file, to: folder + "/" + segment.file)
            progress(ExportProgress(fraction: 0.05 + 0.9 * Double(i + 1) / Double(count), phase: "joining", framesPerSecond: nil, eta: nil))
        }
        return track
    }

    /// Whether a chunk's track is stored as the package's are: its container, its key, its initialization's name.
    private func isStoredAsPlanned(_ track: StreamTrack, plan: PackagePlan) -> Bool {
        let container = track.container ?? .cmaf
        return container == plan.settings.container && track.keyURI == plan.settings.encryption?.keyURI
            && track.initialization == (container == .cmaf ? "init.mp4" : "")
    }

    /// One rung's files linked from every chunk into the package's folder: the first chunk's initialization
    /// (every chunk's must be the same bytes) and each chunk's segments, which must follow one another
    /// without a gap or an overlap from the chunk's first frame.
    private func link(_ rung: StreamTrack, of chunks: [StreamChunk], plan: PackagePlan, store: any ChunkFileStore) throws -> StreamTrack {
        // Every name comes from the chunks' reports: each is one name of the package's own making, never a path.
        // MPEG-TS has no initialization: its segments stand alone.
        let container = rung.container ?? .cmaf
        guard rung.folder.range(of: "^video-[0-9]{1,3}\\z", options: .regularExpression) != nil, isStoredAsPlanned(rung, plan: plan) else {
            throw ExportError("\(chunks[0].folder): its report names a rung \"\(rung.folder)/\(rung.initialization)\", not one the packager makes")
        }
        let folder = settings.folder + "/" + rung.folder
        guard mkdir(folder, 0o755) == 0 else { throw ExportError("\(folder): cannot make the rung's folder: \(String(cString: strerror(errno)))") }
        var initialization: Data?
        if container == .cmaf {
            initialization = try store.contents(of: chunks[0].folder + "/" + rung.folder + "/" + rung.initialization)
            try store.link(chunks[0].folder + "/" + rung.folder + "/" + rung.initialization, to: folder + "/" + rung.initialization)
        }
        let scale = Rational(1, Int32(clamping: rung.timescale))
        var joined = rung
        joined.segments = []
        var counters: [Int: UInt8] = [:]
        for chunk in chunks {
            let files = chunk.folder + "/" + rung.folder
            guard let part = chunk.report.tracks.first(where: { $0.kind == .video && $0.folder == rung.folder }), part.codecs == rung.codecs,
                  part.timescale == rung.timescale, part.presentationOffset == rung.presentationOffset, part.width == rung.width,
                  part.height == rung.height, part.initialization == rung.initialization, part.container == rung.container, part.keyURI == rung.keyURI else {
                throw ExportError("\(files): encoded otherwise than the first chunk's \(rung.folder) (its codec, size, timescale or edit differ): "
                                  + "the chunks cannot be joined; retry the job to encode them again")
            }
            guard try initialization.map({ try store.contents(of: files + "/" + part.initialization) == $0 }) ?? true else {
                throw ExportError("\(files)/\(part.initialization): differs from the first chunk's: the chunks were encoded otherwise and cannot be joined; "
                                  + "retry the job to encode them again")
            }
            guard var expected = plan.frameDuration.multiplied(by: Int32(clamping: chunk.frames.lowerBound)).count(in: scale) else {
                throw ExportError("\(files): frame \(chunk.frames.lowerBound) has no time in the track's timescale 1/\(rung.timescale)")
            }
            expected += rung.presentationOffset
            guard !part.segments.isEmpty else { throw ExportError("\(files): the chunk holds no segment of frames \(chunk.frames.lowerBound)..<\(chunk.frames.upperBound)") }
            for segment in part.segments {
                // Its name is its place in the package (players number segments by place: the IV is that number).
                guard segment.file == "\(joined.segments.count + 1).\(container.fileExtension)" else {
                    throw ExportError("\(files): its report names a segment \"\(segment.file)\" where segment \(joined.segments.count + 1) of the package comes")
                }
                guard segment.start == expected else {
                    throw ExportError("\(files)/\(segment.file): starts at tick \(segment.start), not \(expected) where the segment before it ends: "
                                      + "the chunks do not tile the package's timeline")
                }
                let size = store.size(of: files + "/" + segment.file)
                guard size == segment.bytes else {
                    throw ExportError("\(files)/\(segment.file): holds \(size.map(String.init) ?? "no") bytes, not the \(segment.bytes) its chunk wrote; "
                                      + "retry the job to encode it again")
                }
                if container == .transportStream {
                    try Self.place(files + "/" + segment.file, to: folder + "/" + segment.file, sequence: joined.segments.count, counters: &counters,
                                   encryption: settings.encryption, store: store)
                } else {
                    try store.link(files + "/" + segment.file, to: folder + "/" + segment.file)
                }
                joined.segments.append(segment)
                expected = segment.start + segment.duration
            }
            // The chunk's last segment ends where its frames do: a chunk that stopped short leaves no hole.
            let end = plan.frameDuration.multiplied(by: Int32(clamping: chunk.frames.upperBound)).count(in: scale).map { $0 + rung.presentationOffset }
            guard expected == end else {
                throw ExportError("\(files): its segments end at tick \(expected), not at frame \(chunk.frames.upperBound) (tick \(end ?? -1)): the chunk is not whole; "
                                  + "retry the job to encode it again")
            }
        }
        return joined
    }

    /// An MPEG-TS segment of a chunk placed in the package: its continuity counters numbered on from the
    /// segment before it (each chunk's muxer began its own at 0; Apple's HLS authoring specification 7.2 asks
    /// for them sequential), decrypted and encrypted again with the same IV when the package is encrypted.
    /// Linked as it is when nothing changes (the first chunk's), written anew otherwise.
    static func place(_ source: String, to target: String, sequence: Int, counters: inout [Int: UInt8], encryption: SegmentEncryption?,
                      store: any ChunkFileStore = LocalChunkFiles()) throws {
        let stored = [UInt8](try store.contents(of: source))
        var bytes = try encryption.map { try $0.decrypt(stored, sequence: sequence) } ?? stored
        guard bytes.count % TransportPackets.size == 0, bytes.first == 0x47 else {
            throw ExportError("\(source): not MPEG-TS packets\(encryption == nil ? "" : " once decrypted"): retry the job to encode the chunk again")
        }
        guard TransportPackets.continueCounters(&bytes, from: &counters) else { return try store.link(source, to: target) }
        try SegmentedTrack.store(try encryption.map { try $0.encrypt(bytes, sequence: sequence) } ?? bytes, at: target)
    }
}

/// Where a package's chunks are read from, and how their files become the package's: a chunk's file is
/// named by its chunk's folder (`StreamChunk.folder`) and its name in it.
public protocol ChunkFileStore: Sendable {
    /// The size of a chunk's file; nil when it is missing or not a regular file.
    func size(of path: String) -> Int?
    /// A chunk's file's bytes.
    func contents(of path: String) throws -> Data
    /// Makes `target` (a path in the package's folder) the chunk's file `source`, as it is. Never replaces a file.
    func link(_ source: String, to target: String) throws
}

/// Chunks in folders: their files linked into the package's folder.
public struct LocalChunkFiles: ChunkFileStore {
    public init() {}

    public func contents(of path: String) throws -> Data {
        guard size(of: path) != nil else { throw ExportError("\(path): a chunk's file is missing or not a regular file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw ExportError("\(path): cannot read it (a chunk's file is missing)") }
        return data
    }

    public func size(of path: String) -> Int? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// `target` made as a new name of `source`'s file (no byte copied, and the chunk keeps its own, so a join
    /// that fails can run again); copied where the file system has no links. Never replaces a file.
    public func link(_ source: String, to target: String) throws {
        // A chunk's file is a regular file of its own (a link to another is never followed, and a file the
        // kernel will not link, EPERM, is not copied around it either).
        guard size(of: source) != nil else { throw ExportError("\(source): a chunk's file is missing or not a regular file") }
        if Glibc.link(source, target) == 0 { return }
        let failure = errno
        guard [EXDEV, ENOTSUP, EMLINK, ENOSYS].contains(failure) else {
            throw ExportError("\(target): cannot link it to \(source): \(String(cString: strerror(failure)))")
        }
        try SegmentedTrack.store([UInt8](try contents(of: source)), at: target)
    }
}

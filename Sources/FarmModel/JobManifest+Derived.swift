import MediaTime

/// The top-level keys of a manifest, as `jobs/schema.json` names them (a test holds the two equal).
public enum ManifestSection: String, CaseIterable, Sendable {
    case version, name, input, edits, scale, audio, scan, export, stream, images, poster, storyboard, waveform, checks, report, overwrite, after,
         afterPolicy, requires, notify, reuse
}

/// A manifest the farm makes from another.
public enum ManifestDerivation: String, CaseIterable, Sendable {
    /// One chunk of a chunked export: a range of its frames, video only, into the plan's folder.
    case exportChunk
    /// One part of a storyboard made in parts: a range of its tiles, into the plan's folder.
    case storyboardPart
    /// A chunked export's last run: the chunks joined into the output.
    case exportJoin
    /// One chunk of a package made in chunks: a range of its frames (whole segments), every rung's video (and
    /// the first chunk, the package's whole audio), into a folder of the plan's.
    case streamChunk
    /// A package's last run: its chunks' segments joined (the audio the first chunk made with them), its
    /// subtitles made, its presentations written.
    case streamJoin
    /// A storyboard's last run: the parts joined into it.
    case storyboardJoin
    /// A coordinator's chunking (`--chunk-seconds`) given to an export or a package that chose none.
    case defaultChunking
    /// Media sources put in on the host that runs the job: assets resolved, other jobs' results, inputs
    /// that were renamed.
    case sourcesPut
}

/// What a derivation does with a section of the manifest it is made from.
public enum SectionRule: Sendable, Hashable {
    /// Kept as it is.
    case keep
    /// Left out.
    case drop
    /// Written by the derivation (a chunk's name, its export's frames).
    case set
}

extension ManifestSection {
    /// The one table of what each derivation keeps, drops and sets. A section added to the manifest does
    /// not compile until it has a row; a test reads the schema's keys and checks each derivation against it.
    public func rule(in derivation: ManifestDerivation) -> SectionRule {
        let d = derivation
        let part = d == .exportChunk || d == .storyboardPart || d == .streamChunk
        switch self {
        case .version, .audio, .requires, .reuse, .scale:
            return .keep
        case .name, .overwrite:
            // A part is named for its job and writes into a folder of the plan's, again on a retry.
            return part ? .set : .keep
        case .input, .edits:
            return d == .sourcesPut ? .set : .keep
        case .scan, .images, .poster, .waveform, .checks, .report, .after, .afterPolicy, .notify:
            // The whole job's: its last run scans, makes the pictures, checks the whole, writes the report and is
            // what others wait for and are told of. A part only encodes.
            return part ? .drop : .keep
        case .export:
            switch d {
            case .exportChunk, .exportJoin, .defaultChunking: return .set
            case .storyboardPart, .streamChunk: return .drop
            case .storyboardJoin, .streamJoin, .sourcesPut: return .keep
            }
        case .stream:
            switch d {
            case .streamChunk, .streamJoin, .defaultChunking: return .set
            case .exportChunk, .storyboardPart: return .drop
            case .exportJoin, .storyboardJoin, .sourcesPut: return .keep
            }
        case .storyboard:
            switch d {
            case .storyboardPart, .storyboardJoin: return .set
            case .exportChunk, .streamChunk: return .drop
            case .exportJoin, .streamJoin, .defaultChunking, .sourcesPut: return .keep
            }
        }
    }
}

extension JobManifest {
    /// This manifest with each section that `derivation` drops left out (`ManifestSection.rule`); the ones
    /// it sets are kept, for it to set.
    func sections(for derivation: ManifestDerivation) -> JobManifest {
        func kept<T>(_ section: ManifestSection, _ value: T, else dropped: T) -> T { section.rule(in: derivation) == .drop ? dropped : value }
        return JobManifest(
            version: version, name: name, edits: edits, scale: kept(.scale, scale, else: []), audio: kept(.audio, audio, else: AudioSettings()),
            scan: kept(.scan, scan, else: nil), export: kept(.export, export, else: nil), stream: kept(.stream, stream, else: nil), images: kept(.images, images, else: nil),
            poster: kept(.poster, poster, else: nil), storyboard: kept(.storyboard, storyboard, else: nil),
            waveform: kept(.waveform, waveform, else: nil), checks: kept(.checks, checks, else: nil), report: kept(.report, report, else: nil),
            overwrite: kept(.overwrite, overwrite, else: false), baseDirectory: baseDirectory, after: kept(.after, after, else: []),
            afterPolicy: kept(.afterPolicy, afterPolicy, else: .success), requires: kept(.requires, requires, else: []),
            notify: kept(.notify, notify, else: []), reuse: kept(.reuse, reuse, else: nil))
    }

    /// Chunk `index` of `count` of this chunked export: `frames` of its output, video only, written to
    /// `output` (in the plan's folder) under the name `jobName [chunk i/n]`.
    public func exportChunk(_ index: Int, of count: Int, jobName: String, output: String, frames: Range<Int>) -> JobManifest {
        var chunk = sections(for: .exportChunk)
        chunk.name = "\(jobName) [chunk \(index + 1)/\(count)]"
        chunk.overwrite = true
        if var export {
            (export.output, export.frames, export.chunkDuration, export.chunkAbove, export.join) = (output, frames, nil, nil, [])
            // A chunk is video only: the join writes the audio and the subtitles.
            (export.poster, export.subtitleLanguages) = (nil, [])
            chunk.export = export
        }
        return chunk
    }

    /// Chunk `index` of `count` of this package made in chunks: `frames` of it (whole segments), every rung's
    /// video (the first chunk, the package's whole audio too), written to `output` (a folder in the plan's) under the name `jobName [chunk i/n]`.
    public func streamChunk(_ index: Int, of count: Int, jobName: String, output: String, frames: Range<Int>) -> JobManifest {
        var chunk = sections(for: .streamChunk)
        chunk.name = "\(jobName) [chunk \(index + 1)/\(count)]"
        chunk.overwrite = true
        if var stream {
            (stream.output, stream.chunking) = (output, JobManifest.Chunking())
            stream.chunking.frames = frames
            chunk.stream = stream
        }
        return chunk
    }

    /// Part `index` of `count` of this storyboard made in parts: `tiles` of it, written to `output` (a
    /// WebVTT file in the plan's folder, its sheets and index beside it).
    public func storyboardPart(_ index: Int, of count: Int, jobName: String, output: String, tiles: Range<Int>) -> JobManifest {
        var part = sections(for: .storyboardPart)
        part.name = "\(jobName) [part \(index + 1)/\(count)]"
        part.overwrite = true
        if var board = storyboard {
            (board.output, board.part, board.chunkSeconds, board.join) = (output, tiles, nil, [])
            part.storyboard = board
        }
        return part
    }

    /// The last run of a job made in parts: its export or package (or, with neither, its storyboard) joins `chunks`.
    public func joining(_ chunks: [JoinedChunk]) -> JobManifest {
        if var export {
            var joined = sections(for: .exportJoin)
            export.join = chunks
            joined.export = export
            return joined
        }
        if var stream {
            var joined = sections(for: .streamJoin)
            stream.chunking.join = chunks
            joined.stream = stream
            return joined
        }
        var joined = sections(for: .storyboardJoin)
        joined.storyboard?.join = chunks
        return joined
    }

    /// This manifest with a coordinator's chunking, when it is a constant-frame-rate export or a package that
    /// chose none and is no chunk itself (nor made into one file); nil when
    /// nothing is to change. An export whose fidelity is checked stays whole: it is measured as it encodes.
    public func chunked(every seconds: MediaTime, above: MediaTime?) -> JobManifest? {
        var chunked = sections(for: .defaultChunking)
        var changed = false
        if var stream, stream.chunking.duration == nil, stream.chunking.isWhole, !stream.singleFile,
           !PathRules.isObject(stream.output) || PathRules.objectKey(stream.output).utf8.count <= Walker.longestPackagePrefix - Walker.chunkPrefixGrowth {
            (stream.chunking.duration, stream.chunking.above) = (seconds, above)
            (chunked.stream, changed) = (stream, true)
        }
        if var export, export.mode == .constantFrameRate, export.chunkDuration == nil, export.chunking.isWhole, checks?.plan.fidelity == nil {
            (export.chunkDuration, export.chunkAbove) = (seconds, above)
            (chunked.export, changed) = (export, true)
        }
        return changed ? chunked : nil
    }

    /// This manifest with each media source (`input`, `edits[].source`) found in `replacements` replaced by
    /// its value: an asset's path on this host, another job's output, where a renamed input went.
    public func puttingSources(_ replacements: [String: String]) -> JobManifest {
        var put = sections(for: .sourcesPut)
        put.edits = edits.map { edit in
            var edit = edit
            if let new = replacements[edit.source] { edit.source = new }
            return edit
        }
        return put
    }
}

import CodeScan
import FarmModel
import Foundation
import MediaCore
import MediaEdit
import MediaImage
import MediaTime
import Synchronization

/// A job's pictures of its input (`"images"`, `"poster"`, `"storyboard"`): made on the blocking pool, each
/// file written whole under its staged name (or, without a coordinator, checked and renamed into place),
/// reported with the frames they are of. Any picture that cannot be made fails the job, naming its time:
/// nothing is published then.
public struct JobPictures: Sendable {
    /// The job the pictures are of: its manifest, limits, pool and staging.
    let runner: JobRunner

    var manifest: JobManifest { runner.manifest }
    var limits: SafetyLimits { runner.limits }
    var pool: BlockingWorkPool { runner.pool }

    /// What the pictures were, for the report; how many numbered files were written, for publication.
    struct PicturesMade: Encodable {
        var images: [ImageRecord]?
        var poster: PosterRecord?
        var storyboard: StoryboardRecord?
        /// `export.poster`: of the exported movie.
        var exportPoster: PosterRecord?
        var waveform: WaveformRecord?
        var numbered: NumberedOutputs { NumberedOutputs(images: images?.count, sheets: storyboard?.sheets.count) }
    }

    public struct PosterRecord: Encodable, Sendable {
        public var picture: ImageRecord
        /// "auto": chosen from `candidates`; "time": at the time asked.
        public var chosen: String
        public var candidates: [RepresentativeFrame.Candidate]?

        public init(picture: ImageRecord, chosen: String, candidates: [RepresentativeFrame.Candidate]?) {
            (self.picture, self.chosen, self.candidates) = (picture, chosen, candidates)
        }
    }

    public struct WaveformRecord: Encodable, Sendable {
        public var output: String
        public var peaks: String?
        public var width: Int
        public var height: Int
        public var samplesPerColumn: Int
        public var sampleRate: Int
        public var duration: Double
        public var peakDBFS: Double?

        public init(_ waveform: Waveform, output: String, peaks: String?) {
            (self.output, self.peaks, width, height) = (output, peaks, waveform.minimums.count, waveform.settings.height)
            (samplesPerColumn, sampleRate, duration, peakDBFS) = (waveform.samplesPerColumn, waveform.sampleRate, waveform.duration.seconds, waveform.peakDBFS)
        }
    }

    struct StoryboardRecord: Encodable {
        var output: String
        var index: String
        var sheets: [String]
        var tiles: Int
        var tileWidth: Int
        var tileHeight: Int
    }

    /// Makes every picture the manifest asks for, reporting progress from `from` to `to`.
    func makePictures(of source: String, from: Double, to: Double,
                      events: @escaping @Sendable (JobEvent) -> Void) async throws -> PicturesMade {
        let parts = [manifest.images != nil, manifest.poster != nil, manifest.storyboard != nil, manifest.waveform != nil].filter { $0 }.count
        let step = (to - from) / Double(max(parts, 1))
        var made = PicturesMade()
        var at = from
        /// One part's progress, from where the parts before it ended; `at` moves on past it.
        func part(_ phase: String) -> @Sendable (Double) -> Void {
            let start = at
            at += step
            events(.progress(JobProgress(fraction: start, phase: phase)))
            return { done in events(.progress(JobProgress(fraction: start + step * done, phase: phase))) }
        }
        if let settings = manifest.poster {
            _ = part("poster")
            made.poster = try await poster(of: source, settings)
        }
        if let settings = manifest.images { made.images = try await images(of: source, settings, progress: part("pictures")) }
        if let settings = manifest.storyboard { made.storyboard = try await storyboard(of: source, settings, progress: part("storyboard")) }
        if let settings = manifest.waveform { made.waveform = try await waveform(of: source, settings, progress: part("waveform")) }
        return made
    }

    /// The output a picture job's result names (`job:KEY#output`): its poster, else its storyboard's
    /// WebVTT file, else its first picture.
    static func mainPicture(_ made: PicturesMade) -> String? {
        made.poster?.picture.path ?? made.storyboard?.output ?? made.images?.first?.path ?? made.waveform?.output
    }

    static func generatorSettings(_ tolerance: JobManifest.PictureTolerance, _ style: JobManifest.PictureStyle) -> AssetImageGenerator.Settings {
        var settings = AssetImageGenerator.Settings()
        settings.toleranceBefore = tolerance.before ?? .positiveInfinity
        settings.toleranceAfter = tolerance.after ?? .positiveInfinity
        (settings.maximumWidth, settings.maximumHeight) = (style.maxWidth, style.maxHeight)
        settings.format = StillImageFormat(style.format)
        settings.quality = style.quality
        return settings
    }

    func poster(of source: String, _ settings: JobManifest.PosterSettings, at jsonPath: String = "$.poster") async throws -> PosterRecord {
        let limits = self.limits
        let generatorSettings = Self.generatorSettings(settings.tolerance, settings.style)
        let (image, candidates) = try await pool.run(stallLimit: limits.stallTimeout) { interrupter in
            do throws(ImageGenerationError) {
                return try Self.posterImage(of: source, at: settings.at, settings: generatorSettings, limits: limits, interrupter: interrupter)
            } catch {
                throw JobError.at(jsonPath, error)
            }
        }
        try write(image.data, to: settings.output)
        return PosterRecord(picture: ImageRecord(image, path: settings.output), chosen: settings.at == nil ? "auto" : "time", candidates: candidates)
    }

    /// The poster of `source`: at `time`, or (nil) at its representative frame, with the frames looked at.
    /// Blocking: on the pool (a job) or the command's own thread (`mediafarm poster`).
    public static func posterImage(of source: String, at time: MediaTime?, settings: AssetImageGenerator.Settings, limits: SafetyLimits,
                                   interrupter: Interrupter = Interrupter()) throws(ImageGenerationError) -> (AssetImageGenerator.Image, [RepresentativeFrame.Candidate]?) {
        var time = time
        var candidates: [RepresentativeFrame.Candidate]?
        if time == nil {
            let choice = try RepresentativeFrame.find(path: source, limits: limits, interrupter: interrupter)
            (time, candidates) = (choice.time, choice.candidates)
        }
        let generator = try AssetImageGenerator(path: source, settings: settings, limits: limits, interrupter: interrupter)
        return (try generator.image(at: time!), candidates)
    }

    func images(of source: String, _ settings: JobManifest.ImagesSettings, progress: @escaping @Sendable (Double) -> Void) async throws -> [ImageRecord] {
        let limits = self.limits
        let generatorSettings = Self.generatorSettings(settings.tolerance, settings.style)
        // Made and written as they come, on every core (a reader each over a stretch of the times): a thousand
        // pictures are never all in memory.
        let writer = self
        return try await pool.run(stallLimit: limits.stallTimeout) { interrupter in
            let generator: AssetImageGenerator
            do { generator = try AssetImageGenerator(path: source, settings: generatorSettings, limits: limits, interrupter: interrupter) } catch {
                throw JobError.at("$.images", error)
            }
            let times = try Self.times(settings.times, duration: generator.duration, source: source)
            let made = Made(count: times.count)
            // A helper reader that could not open the file throws its own error: named and judged as the others.
            do {
                try generator.images(at: times, workers: Self.pictureWorkers, limits: limits, interrupter: interrupter) { i, result in
                    let image: AssetImageGenerator.Image
                    do { image = try result.get() } catch {
                        throw JobError.at("$.images: the picture at \(MediaTime.formatSeconds(times[i].seconds)) s (\(i + 1) of \(times.count))", error)
                    }
                    let path = NumberedOutputs.path(settings.output, index: i + 1)
                    try writer.write(image.data, to: path)
                    let done = made.made(i, ImageRecord(image, path: path))
                    interrupter.progressed()
                    progress(Double(done) / Double(times.count))
                }
            } catch let error as ImageGenerationError {
                throw JobError.at("$.images", error)
            }
            return made.records
        }
    }

    /// Readers a job's pictures are made with at once: one per core, at most four.
    static var pictureWorkers: Int { max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4)) }

    /// Pictures made on several threads (changed one at a time).
    final class Made: Sendable {
        private let state: Mutex<(records: [ImageRecord?], done: Int)>
        init(count: Int) { state = Mutex((Array(repeating: nil, count: count), 0)) }
        /// Records picture `i`; how many are made now.
        func made(_ i: Int, _ record: ImageRecord) -> Int {
            state.withLock { state in
                state.records[i] = record
                state.done += 1
                return state.done
            }
        }
        var records: [ImageRecord] { state.withLock { $0.records.compactMap { $0 } } }
    }

    /// The times of `"images"`: as given, every N seconds from 0 while inside the movie, or N spread over it.
    static func times(_ times: JobManifest.ImageTimes, duration: MediaTime?, source: String) throws -> [MediaTime] {
        if case .times(let list) = times { return list }
        guard let duration, duration > .zero else {
            throw JobError("$.images: \(source): the movie does not say how long it is; give the pictures' times (\"times\")")
        }
        switch times {
        case .every(let every):
            let n = (duration.seconds / every.seconds).rounded(.up)
            guard n <= Double(NumberedOutputs.limit) else {
                throw JobError("$.images.every: \(MediaTime.formatSeconds(every.seconds)) s over \(MediaTime.formatSeconds(duration.seconds)) s makes \(Int(n)) pictures; at most \(NumberedOutputs.limit)")
            }
            return (0..<max(Int(n), 1)).map { MediaTime(value: every.value * Int64($0), timescale: every.timescale) }
                .filter { $0 < duration || $0 == .zero }
        case .count(let n):
            // In the middle of each part, to the microsecond.
            return (0..<n).map { MediaTime(value: Int64((duration.seconds * Double(2 * $0 + 1) / Double(2 * n) * 1e6).rounded(.down)), timescale: 1_000_000) }
        case .times(let list):
            return list
        }
    }

    /// The parts of a storyboard made in parts: ranges of whole sheets of about `every` of the movie each.
    func storyboardParts(of source: String, _ settings: JobManifest.StoryboardSettings, every: MediaTime) async throws -> [Range<Int>] {
        let limits = self.limits
        let boardSettings = Self.storyboardSettings(settings)
        let (tiles, perSheet, seconds) = try await pool.run(stallLimit: limits.stallTimeout) { interrupter in
            do throws(ImageGenerationError) {
                let plan = try Storyboard.plan(path: source, settings: boardSettings, limits: limits, interrupter: interrupter)
                return (plan.tiles, plan.perSheet, plan.duration?.seconds ?? 0)
            } catch {
                throw JobError.at("$.storyboard", error)
            }
        }
        guard tiles > 0, seconds > 0 else { return [0..<max(tiles, 1)] }
        // Whole sheets, as many as about `every` seconds of the movie hold.
        let sheetSeconds = seconds * Double(perSheet) / Double(tiles)
        let sheetsPerPart = max(1, Int((every.seconds / sheetSeconds).rounded()))
        let step = sheetsPerPart * perSheet
        return stride(from: 0, to: tiles, by: step).map { $0..<min(tiles, $0 + step) }
    }

    func storyboard(of source: String, _ settings: JobManifest.StoryboardSettings, progress: @escaping @Sendable (Double) -> Void) async throws -> StoryboardRecord {
        if !settings.join.isEmpty { return try joinStoryboard(settings) }
        let limits = self.limits
        let boardSettings = Self.storyboardSettings(settings)
        let part = settings.part
        let board: Storyboard = try await pool.run(stallLimit: limits.stallTimeout) { interrupter in
            do throws(ImageGenerationError) {
                return try Storyboard.make(path: source, settings: boardSettings, part: part, limits: limits, interrupter: interrupter) { done in
                    interrupter.progressed()
                    progress(done)
                }
            } catch {
                throw JobError.at("$.storyboard", error)
            }
        }
        let sheetPaths = board.sheets.indices.map { NumberedOutputs.path(settings.sheetPattern, index: $0 + 1) }
        let sheetName = { (i: Int) in sheetPaths[i].split(separator: "/").last.map(String.init) ?? sheetPaths[i] }
        for (i, sheet) in board.sheets.enumerated() { try write(sheet, to: sheetPaths[i]) }
        try write(Array(board.webVTT(sheetName: sheetName).utf8), to: settings.output)
        let index = try JSONEncoder.farm(pretty: true).encode(board.index(sheetName: sheetName))
        try write(Array(index) + [0x0A], to: settings.indexPath)
        return StoryboardRecord(output: settings.output, index: settings.indexPath, sheets: sheetPaths, tiles: board.tiles.count,
                                tileWidth: board.tileWidth, tileHeight: board.tileHeight)
    }

    /// The last run of a storyboard made in parts: each part's sheets copied to this storyboard's names, in
    /// order, and its WebVTT file and index made from the parts' indexes (nothing decoded).
    func joinStoryboard(_ settings: JobManifest.StoryboardSettings) throws -> StoryboardRecord {
        var parts: [Storyboard.Index] = []
        var sheets: [String] = []
        for part in settings.join {
            let folder = URL(fileURLWithPath: part.output).deletingLastPathComponent().path
            let indexPath = JobManifest.StoryboardSettings(output: part.output).indexPath
            guard let data = FileManager.default.contents(atPath: indexPath) else {
                throw JobError("\(indexPath): the index of part \(parts.count + 1) of the storyboard cannot be read (not seen from this host?)")
            }
            let index: Storyboard.Index
            do { index = try JSONDecoder().decode(Storyboard.Index.self, from: data) } catch {
                throw JobError("\(indexPath): the index of part \(parts.count + 1) of the storyboard cannot be read: \(error)")
            }
            guard index.tiles.count == part.frames.count else {
                throw JobError("\(indexPath): part \(parts.count + 1) holds \(index.tiles.count) tiles, not \(part.frames.count)")
            }
            parts.append(index)
            sheets += index.sheets.map { folder + "/" + $0 }
        }
        let sheetPaths = sheets.indices.map { NumberedOutputs.path(settings.sheetPattern, index: $0 + 1) }
        let sheetName = { (i: Int) in sheetPaths[i].split(separator: "/").last.map(String.init) ?? sheetPaths[i] }
        let index: Storyboard.Index
        do { index = try Storyboard.joined(parts, sheetName: sheetName) } catch { throw JobError.at("$.storyboard", error) }
        for (from, to) in zip(sheets, sheetPaths) {
            guard let bytes = FileManager.default.contents(atPath: from) else {
                throw JobError("\(from): a sheet of the storyboard's parts cannot be read")
            }
            try write(Array(bytes), to: to)
        }
        try write(Array(Storyboard.webVTT(index).utf8), to: settings.output)
        try write(Array(try JSONEncoder.farm(pretty: true).encode(index)) + [0x0A], to: settings.indexPath)
        return StoryboardRecord(output: settings.output, index: settings.indexPath, sheets: sheetPaths, tiles: index.tiles.count,
                                tileWidth: index.tileWidth, tileHeight: index.tileHeight)
    }

    static func storyboardSettings(_ settings: JobManifest.StoryboardSettings) -> MediaImage.StoryboardSettings {
        var board = MediaImage.StoryboardSettings()
        (board.every, board.tiles) = (settings.every?.seconds, settings.tiles)
        (board.tileWidth, board.columns, board.rows) = (settings.tileWidth, settings.columns, settings.rows)
        (board.format, board.quality) = (StillImageFormat(settings.format), settings.quality)
        return board
    }

    func waveform(of source: String, _ settings: JobManifest.WaveformSettings, progress: @escaping @Sendable (Double) -> Void) async throws -> WaveformRecord {
        let limits = self.limits
        let (picture, wave) = try await pool.run(stallLimit: limits.stallTimeout) { interrupter in
            do throws(ImageGenerationError) {
                return try Self.waveformPicture(of: source, settings, limits: limits, interrupter: interrupter, progress: progress)
            } catch {
                throw JobError.at("$.waveform", error)
            }
        }
        try write(picture, to: settings.output)
        if let peaks = settings.peaks { try write(Array(wave.peaksJSON.utf8), to: peaks) }
        return WaveformRecord(wave, output: settings.output, peaks: settings.peaks)
    }

    /// The waveform of `source` and its picture's bytes (PNG or SVG as `settings.output` says). Blocking.
    public static func waveformPicture(of source: String, _ settings: JobManifest.WaveformSettings, limits: SafetyLimits,
                                       interrupter: Interrupter = Interrupter(), progress: (Double) -> Void = { _ in }) throws(ImageGenerationError) -> ([UInt8], Waveform) {
        var waveSettings = Waveform.Settings()
        (waveSettings.width, waveSettings.height) = (settings.width, settings.height)
        let wave = try Waveform.make(path: source, settings: waveSettings, limits: limits, interrupter: interrupter, progress: progress)
        return (settings.isSVG ? Array(wave.svg().utf8) : try wave.png(), wave)
    }

    /// The counts of the job's numbered files: its pictures, its storyboard's sheets, its codes' pictures.
    static func numbered(_ pictures: PicturesMade?, _ scan: ScanSummary?) -> NumberedOutputs? {
        guard pictures != nil || scan?.images != nil else { return nil }
        var numbered = pictures?.numbered ?? NumberedOutputs()
        numbered.codes = scan?.images?.count
        return numbered
    }

    /// `scan.images`: the frame where each code was first seen (composition time, mapped back to its
    /// source), exact, one generator per source, in time order; `codes[i]`'s is `output` with `{index}` i + 1.
    func codePictures(_ settings: JobManifest.ScanImages?, codes: [ScannedCode], composition: Composition) async throws -> [ImageRecord]? {
        guard let settings else { return nil }
        guard codes.count <= NumberedOutputs.limit else {
            throw JobError("$.scan.images: \(codes.count) codes were found; pictures are made of at most \(NumberedOutputs.limit)")
        }
        let mapping = composition.timeMapping
        var wanted: [(index: Int, source: String, time: MediaTime)] = []
        for (i, code) in codes.enumerated() {
            guard let (segment, time) = mapping.sourceTime(at: code.firstTime) else {
                throw JobError("$.scan.images: code \(i + 1) was seen at \(JobRunner.seconds(code.firstTime)) s, which no piece of the composition holds")
            }
            wanted.append((i, composition.segments[segment].source, time))
        }
        let generatorSettings = Self.generatorSettings(JobManifest.PictureTolerance(before: .zero, after: .zero), settings.style)
        let limits = self.limits
        let writer = self
        let bySource = Dictionary(grouping: wanted, by: \.source)
        let made: [(Int, ImageRecord)] = try await pool.run(stallLimit: limits.stallTimeout) { interrupter in
            var made: [(Int, ImageRecord)] = []
            for (source, items) in bySource.sorted(by: { $0.key < $1.key }) {
                let generator: AssetImageGenerator
                do { generator = try AssetImageGenerator(path: source, settings: generatorSettings, limits: limits, interrupter: interrupter) } catch {
                    throw JobError.at("$.scan.images", error)
                }
                for item in items.sorted(by: { $0.time < $1.time }) {
                    let image: AssetImageGenerator.Image
                    do { image = try generator.image(at: item.time) } catch {
                        throw JobError.at("$.scan.images: the frame of code \(item.index + 1) (\(MediaTime.formatSeconds(item.time.seconds)) s of \(source))", error)
                    }
                    let path = NumberedOutputs.path(settings.output, index: item.index + 1)
                    try writer.write(image.data, to: path)
                    made.append((item.index, ImageRecord(image, path: path)))
                    interrupter.progressed()
                }
            }
            return made
        }
        return made.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// One finished file, written whole under its staged name (or checked and renamed into place).
    func write(_ bytes: [UInt8], to final: String) throws {
        let output = try AtomicOutput(finalPath: runner.writePath(final))
        if let check = runner.publicationCheck {
            output.beforeCommit = { @Sendable _ in try check(final) }
        }
        try output.write(contents: Data(bytes))
        try output.commit()
    }
}

extension StillImageFormat {
    /// The manifest's picture format as the encoder's (the two vocabularies joined here).
    public init(_ format: PictureFormat) {
        switch format {
        case .jpeg: self = .jpeg
        case .png: self = .png
        case .webp: self = .webp
        }
    }
}

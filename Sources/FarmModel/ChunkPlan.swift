/// How a chunked constant-frame-rate export (or a package, or a storyboard) was split: its chunks, each a
/// job of its own that encodes a range of output frames into a file (a package's: a folder) of the plan's
/// folder; the job that was split waits for them and joins them. Recorded with that job (its `chunkPlan`).
public struct ChunkPlan: Sendable, Hashable, Codable {
    /// Where the chunks' files are: a folder beside the output, or an object prefix beside it. Removed
    /// with everything in it when the job ends, however it ends.
    public var folder: String
    /// The export's frames: the chunks tile 0..<frameCount.
    public var frameCount: Int
    public var chunks: [Chunk]

    public struct Chunk: Sendable, Hashable, Codable {
        /// The chunk's job (0 until the queue has made it).
        public var job: Int64
        public var frames: Range<Int>
        public var output: String

        public init(job: Int64 = 0, frames: Range<Int>, output: String) {
            self.job = job
            self.frames = frames
            self.output = output
        }
    }

    public init(folder: String, frameCount: Int, chunks: [Chunk]) {
        self.folder = folder
        self.frameCount = frameCount
        self.chunks = chunks
    }

    public var jobs: [Int64] { chunks.map(\.job) }

    /// Where chunk `index` (from 0) of a plan in `folder` is written.
    public static func output(folder: String, index: Int, fileType: ContainerType) -> String {
        output(folder: folder, index: index, extension: fileType.rawValue)
    }

    /// Where chunk `index` (from 0) of a plan in `folder` is written, with this file extension (none: a
    /// folder, a package's chunk).
    public static func output(folder: String, index: Int, extension ext: String) -> String {
        let number = String(index + 1)
        return folder + "/chunk-" + String(repeating: "0", count: max(0, 4 - number.count)) + number + (ext.isEmpty ? "" : "." + ext)
    }

    /// The folder for the chunks of the job that writes `output`: a hidden sibling named after it, made
    /// unique by `tag` (a fresh random string per plan).
    public static func folder(beside output: String, tag: String) -> String {
        let slash = output.lastIndex(of: "/").map { output.index(after: $0) } ?? output.startIndex
        return String(output[..<slash]) + "." + String(output[slash...]) + ".chunks-" + tag
    }

    /// The job's progress while its chunks run: each chunk's share of the frames, as far as it got (a
    /// chunk that succeeded counts whole). The join is the last 5%.
    public func progress(_ chunkProgress: [Int64: Double]) -> Double {
        guard frameCount > 0 else { return 0 }
        let done = chunks.reduce(0.0) { $0 + Double($1.frames.count) * min(max(chunkProgress[$1.job] ?? 0, 0), 1) }
        return 0.95 * done / Double(frameCount)
    }
}

import MediaTime

/// The members of a chunked constant-frame-rate export or package (`JobManifest.Chunking`): `chunkSeconds`
/// (split it), `chunkAbove` (only when it is longer than that), `frames` (one chunk's range) and `join` (the
/// chunks to join, which the coordinator sets).
extension Walker {
    /// Chunks shorter than this cost more in seeking and joining than they give back.
    static let chunkSecondsRange = 2.0...3600.0
    static let chunkingKeys = ["chunkSeconds", "chunkAbove", "frames", "join"]

    /// The chunking of the section at `p` (`$.export`, `$.stream`).
    mutating func chunking(_ o: [String: JSONValue], at p: String, mode: ExportMode? = nil) -> JobManifest.Chunking {
        for key in Self.chunkingKeys where o[key] != nil && mode == .passthrough {
            fail("\(p).\(key)", "applies to constantFrameRate exports only; a passthrough export copies packets and is not split")
        }
        var chunk: MediaTime?
        if let value = o["chunkSeconds"], let t = time(value, "\(p).chunkSeconds", positive: true) {
            if Self.chunkSecondsRange.contains(t.seconds) {
                chunk = t
            } else {
                fail("\(p).chunkSeconds", "must be between 2 and 3600 seconds")
            }
        }
        var above: MediaTime?
        if let value = o["chunkAbove"] {
            above = time(value, "\(p).chunkAbove")
            if o["chunkSeconds"] == nil { fail("\(p).chunkAbove", "needs \"chunkSeconds\": the length of the chunks when it is longer than this") }
        }
        let frames = o["frames"].flatMap { frameRange($0, "\(p).frames") }
        var join: [JobManifest.JoinedChunk] = []
        if let value = o["join"] {
            if case .array(let items) = value, !items.isEmpty {
                for (i, item) in items.enumerated() {
                    let q = "\(p).join[\(i)]"
                    guard let c = object(item, q, allowed: ["output", "frames", "job", "attempts"]) else { continue }
                    let output = path(c["output"], "\(q).output", required: true)
                    let range = c["frames"].flatMap { frameRange($0, "\(q).frames") }
                    if c["frames"] == nil { fail("\(q).frames", "is required") }
                    let job = integer(c["job"], "\(q).job", in: 1...Int.max)
                    let attempts = integer(c["attempts"], "\(q).attempts", in: 0...1000)
                    if let output, let range {
                        if let last = join.last, last.frames.upperBound != range.lowerBound {
                            fail("\(q).frames", "begins at frame \(range.lowerBound), but the chunk before ends at \(last.frames.upperBound)")
                        }
                        join.append(JobManifest.JoinedChunk(output: output, frames: range, job: job.map(Int64.init), attempts: attempts))
                    }
                }
                if join.first.map({ $0.frames.lowerBound != 0 }) == true { fail("\(p).join[0].frames", "must begin at frame 0") }
            } else {
                fail("\(p).join", "expected a non-empty array of chunks ({\"output\", \"frames\"})")
            }
        }
        if frames != nil && !join.isEmpty { fail("\(p).frames", "a join writes every frame; give \"frames\" or \"join\", not both") }
        if chunk != nil && frames != nil { fail("\(p).chunkSeconds", "a range of frames is one chunk already; give \"chunkSeconds\" or \"frames\", not both") }
        var chunking = JobManifest.Chunking()
        (chunking.duration, chunking.above, chunking.frames, chunking.join) = (chunk, above, frames, join)
        return chunking
    }

    /// `[first, end]`: whole numbers, 0 <= first < end (end excluded).
    mutating func frameRange(_ value: JSONValue, _ path: String) -> Range<Int>? {
        guard case .array(let pair) = value, pair.count == 2 else {
            fail(path, "expected [first, end]: two whole numbers, the end excluded")
            return nil
        }
        guard let first = integer(pair[0], "\(path)[0]", in: 0...Int(Int32.max)),
              let end = integer(pair[1], "\(path)[1]", in: 1...Int(Int32.max)) else { return nil }
        guard first < end else {
            fail(path, "\(first)..<\(end) holds no frame: the end (excluded) must be after the first")
            return nil
        }
        return first..<end
    }
}

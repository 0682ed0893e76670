import Foundation
import MediaCore
import MediaTime

/// A movie's representative frame, as a poster frame is chosen: from the middle third (away from the
/// titles at the start and the credits at the end), not black, not a fade, not a blank card.
///
/// Nine times spread over the middle third are looked at, each as the keyframe nearest it inside the third
/// (one frame decoded each), at 96 pixels wide. Each is scored by how much it shows: the entropy of its
/// brightness (32 levels; a blank card or a black frame has almost none), its contrast and the range its
/// middle 90% spans (a fade squeezes both). A frame darker than 6% or brighter than 97% on average, or with less than 1.5 bits of entropy, is
/// refused when any other is not; of the rest, the best score wins, the one nearer the middle on a tie.
public enum RepresentativeFrame {
    /// One frame looked at, with what was measured.
    public struct Candidate: Codable, Sendable, Hashable {
        /// Seconds.
        public var time: Double
        /// Mean brightness, 0 to 1.
        public var brightness: Double
        /// Standard deviation of the brightness, 0 to 0.5.
        public var contrast: Double
        /// Bits, 0 to 5.
        public var entropy: Double
        /// The share of the brightness range the middle 90% of the pixels span, 0 to 1.
        public var spread: Double
        public var score: Double
        /// Why it is not a poster: "black", "white", "blank"; nil when it may be one.
        public var refused: String?
    }

    public struct Choice: Sendable {
        public var time: MediaTime
        public var candidates: [Candidate]
    }

    static let samples = 9

    /// The time of the representative frame of the movie at `path`, with the candidates looked at.
    public static func find(path: String, limits: SafetyLimits = .default,
                            interrupter: Interrupter = Interrupter()) throws(ImageGenerationError) -> Choice {
        var settings = AssetImageGenerator.Settings()
        settings.maximumWidth = 96
        settings.format = .png
        let generator = try AssetImageGenerator(path: path, settings: settings, limits: limits, interrupter: interrupter)
        guard let duration = generator.duration, duration > .zero else {
            throw .unreadable("\(path): the movie does not say how long it is, so its middle cannot be found; give the poster's time (\"at\")")
        }
        let third = MediaTime(value: duration.value, timescale: duration.timescale * 3)
        let low = third, high = third + third
        var candidates: [(time: MediaTime, candidate: Candidate)] = []
        var rgb = Frame()
        for i in 0..<samples {
            let t = low + MediaTime(value: third.value * Int64(2 * i + 1), timescale: third.timescale * Int32(2 * samples))
            let actual: MediaTime
            do {
                actual = try generator.pixels(at: t, within: (t - low, high - t), into: &rgb)
            } catch .unreadable(let message) {
                throw .unreadable(message)
            } catch .file(let error) {
                throw .file(error)
            } catch .highDynamicRange(let transfer) {
                throw .highDynamicRange(transfer: transfer)
            } catch {
                continue  // no frame near this time (a gap): the other times are looked at
            }
            if candidates.contains(where: { $0.time == actual }) { continue }
            candidates.append((actual, measure(rgb, time: actual.seconds)))
        }
        guard !candidates.isEmpty else {
            throw .unreadable("\(path): no frame could be decoded in the middle third of the movie")
        }
        let middle = duration.seconds / 2
        let allowed = candidates.filter { $0.candidate.refused == nil }
        let pool = allowed.isEmpty ? candidates : allowed
        let best = pool.max { a, b in
            let (x, y) = (a.candidate.score, b.candidate.score)
            if abs(x - y) > 0.02 * max(x, y) { return x < y }
            return abs(a.time.seconds - middle) > abs(b.time.seconds - middle)
        }!
        return Choice(time: best.time, candidates: candidates.map(\.candidate))
    }

    /// Brightness statistics of an RGB picture.
    static func measure(_ rgb: borrowing Frame, time: Double) -> Candidate {
        let w = rgb.width, h = rgb.height
        var histogram = [Int](repeating: 0, count: 32)
        var sum = 0.0, squares = 0.0
        _ = rgb.withPlane(0) { pixels, stride in
            for y in 0..<h {
                let row = pixels + y * stride
                for x in 0..<w {
                    let p = row + 3 * x
                    let luma = (0.2126 * Double(p[0]) + 0.7152 * Double(p[1]) + 0.0722 * Double(p[2])) / 255
                    sum += luma
                    squares += luma * luma
                    histogram[min(31, Int(luma * 32))] += 1
                }
            }
        }
        let n = Double(max(1, w * h))
        let mean = sum / n
        let contrast = max(0, squares / n - mean * mean).squareRoot()
        var entropy = 0.0
        for count in histogram where count > 0 {
            let p = Double(count) / n
            entropy -= p * log2(p)
        }
        // The range the middle 90% of the pixels span: a fade squeezes it.
        var below = 0, low = 0, high = 31
        for (level, count) in histogram.enumerated() {
            below += count
            if Double(below) <= 0.05 * n { low = level + 1 }
            if Double(below) >= 0.95 * n { high = level; break }
        }
        let spread = Double(max(0, high - low)) / 31
        var refused: String?
        if mean < 0.06 { refused = "black" } else if mean > 0.97 { refused = "white" } else if entropy < 1.5 { refused = "blank" }
        return Candidate(time: time, brightness: mean, contrast: contrast, entropy: entropy, spread: spread, score: entropy + 4 * contrast + 2 * spread, refused: refused)
    }
}

import FarmTestSupport
import Foundation

/// A browser's playback of a cut, as `Tests/Readers/firefox-play.py` and `chromium-play.py` report it, and
/// the checks of what the cut decides rather than what the browser's clock does. On a busy machine a
/// browser presents a late frame twice or skips it, so which frames it calls back for, and how many, vary
/// from run to run; the frames it decodes, the composition frame each presented one is, the first and the
/// last, and the duration do not. Nor is the order of the callbacks held: busy, Firefox once called back
/// for frame 72 between frames 63 and 65 of a smart cut that it presents in order on an idle machine
/// (FFmpeg's and GStreamer's decodes of every cut are held to the exact frames in order).
struct BrowserPlayback {
    /// The duration from the movie's header, in seconds.
    var duration: Double
    /// Frames decoded (presented or dropped late), and those dropped late.
    var decoded: Int?
    var dropped: Int?
    /// The media time of each frame presented (requestVideoFrameCallback), in order.
    var times: [Double]
    /// Every path fetched, in order, when a streaming package was played over HTTP.
    var fetched: [String] = []

    /// Plays `movie` with `reader` (a script of Tests/Readers) at `rate` of real time.
    init(_ reader: String, _ movie: String, rate: String) throws {
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/Readers/\(reader)").path
        let r = try ProcessRunner.check("/usr/bin/python3", [script, movie, "--rate", rate])
        guard let json = try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any] else {
            throw FixtureError("\(reader) printed no JSON: \(r.stdout)")
        }
        if let error = json["error"] { throw FixtureError("\(reader) \(movie): \(error)") }
        guard let duration = json["duration"] as? Double else { throw FixtureError("\(reader) gave no duration: \(r.stdout)") }
        self.duration = duration
        decoded = json["decoded"] as? Int
        dropped = json["dropped"] as? Int
        times = (json["times"] as? [Double]) ?? []
        fetched = (json["fetched"] as? [String]) ?? []
    }

    /// Where the playback departs from a composition of `frames` frames at `rate` frames a second whose
    /// first frame the browser places at `start` seconds; empty when it shows exactly that composition.
    /// - every frame is decoded (a frame dropped late was decoded: lateness is not a cut's); with a
    ///   `preroll`, up to that many more may be (an edit list's cut between keyframes has the decoder
    ///   decode frames from the keyframe before it, and drop them: Chromium counts them as decoded and
    ///   dropped, and its count can then only be held between the composition's and that many more);
    /// - each presented time is one of the composition's frame times (to a millisecond): never a frame
    ///   from outside the composition, or one placed at its source time;
    /// - the first frame and the last are presented (the last unless the browser dropped frames late).
    func departures(frames: Int, rate: Double = 30, start: Double = 0, preroll: Int = 0) -> [String] {
        var found: [String] = []
        if !(frames...(frames + preroll)).contains(decoded ?? -1) {
            found.append("\(decoded.map(String.init) ?? "no count of") frames decoded (\(dropped ?? 0) of them dropped), \(frames) in the composition"
                         + (preroll > 0 ? " and at most \(preroll) decoded before its cuts" : ""))
        }
        let places = times.map { (($0 - start) * rate).rounded() }
        for (time, place) in zip(times, places) where abs(time - start - place / rate) >= 1e-3 || place < 0 || place >= Double(frames) {
            found.append("a frame presented at \(time) s, which is none of the composition's \(frames) frames")
        }
        if places.first != 0 { found.append("the first frame presented is at \(times.first.map { "\($0) s" } ?? "none"), not the composition's first") }
        // A browser that dropped frames late (busy) may have dropped the last: it was decoded (the count above
        // holds it) and playback ended (the reader reports only then), so only one that dropped none must show it.
        if !places.contains(Double(frames - 1)), (dropped ?? 0) == 0 {
            found.append("the composition's last frame (\(frames - 1)) was never presented (\(decoded.map(String.init) ?? "no count of") decoded, none dropped)")
        }
        return found
    }
}

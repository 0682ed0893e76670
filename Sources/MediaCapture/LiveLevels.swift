import Foundation
import MediaCore
import MediaTime

/// The sound's levels over one interval of capture time (AVCaptureAudioChannel's `averagePowerLevel` and
/// `peakHoldLevel`): the RMS and the peak sample of each channel, in dB below full scale (a full-scale sine
/// averages -3 dB), at least -120 (silence).
public struct LevelsReport: Sendable, Encodable {
    public struct Channel: Sendable, Encodable {
        public var averageDB: Double
        public var peakDB: Double
    }
    /// Capture time of the interval's start, and its length, in seconds.
    public var time: Double
    public var duration: Double
    /// The loudest channel's.
    public var averageDB: Double
    public var peakDB: Double
    public var channels: [Channel]
}

/// Measures a live recording's sound as it is decoded (a thread of its own for copied audio; the encoder's
/// decoded sound otherwise): one `levels` event per interval of capture time. Never delays the recording:
/// it runs where the sound is decoded for it, and keeps only sums.
final class LiveLevels: LivePictureSink, @unchecked Sendable {  // unchecked: its sums behind `lock`
    private let interval: MediaTime
    private let events: @Sendable (CaptureEvent) -> Void
    private let lock = NSLock()
    // Guarded by `lock` (frames come from one decoding thread, `finish` from the recording's):
    private var resampler: AudioResampler?
    private var samples = AudioSamples(channelCount: 0)
    private var start: Double?
    private var squares: [Double] = []
    private var peaks: [Float] = []
    private var count = 0

    init(every seconds: Double, events: @escaping @Sendable (CaptureEvent) -> Void) {
        interval = MediaTime(value: Int64((seconds * 1000).rounded()), timescale: 1000)
        self.events = events
    }

    static func decibels(_ amplitude: Double) -> Double { amplitude > 0 ? max(-120, 20 * log10(amplitude)) : -120 }

    func submit(_ frame: borrowing Frame, time: MediaTime, arrival: Date) {
        lock.lock()
        defer { lock.unlock() }
        let channels = max(1, frame.channelCount), rate = frame.sampleRate
        guard rate > 0 else { return }
        if resampler == nil || resampler?.outputChannels != channels || resampler?.outputRate != rate {
            resampler = try? AudioResampler(inputRate: rate, inputChannels: channels, outputRate: rate, outputChannels: channels)  // none: the sound is not measured
        }
        guard let resampler else { return }
        samples = AudioSamples(channelCount: channels)
        guard (try? resampler.convert(frame, appendingTo: &samples)) != nil else { return }  // a block that cannot be converted is not measured
        // Seconds are enough for levels: the interval's end is found in samples, not per sample in exact time.
        let blockStart = time.seconds, length = interval.seconds
        if start == nil { start = blockStart }
        if squares.count != channels { (squares, peaks, count) = ([Double](repeating: 0, count: channels), [Float](repeating: 0, count: channels), 0) }
        var i = 0
        while i < samples.count {
            let at = blockStart + Double(i) / Double(rate)
            if at >= start! + 2 * length {
                // A gap in the sound: what was measured is reported, and the next interval starts here.
                report(until: nil, from: start!)
                start = at
            }
            let boundary = start! + length
            let untilBoundary = at >= boundary ? 0 : Int(((boundary - at) * Double(rate)).rounded(.up))
            if untilBoundary == 0 {
                report(until: boundary, from: start!)
                start = boundary
                continue
            }
            let end = min(samples.count, i + untilBoundary)
            for c in 0..<channels {
                var sum = 0.0, peak = peaks[c]
                samples.channels[c].withUnsafeBufferPointer { values in
                    for k in i..<end {
                        let v = values[k]
                        sum += Double(v * v)
                        peak = max(peak, abs(v))
                    }
                }
                squares[c] += sum
                peaks[c] = peak
            }
            count += end - i
            i = end
        }
    }

    func countNotScanned(_ n: Int) {}

    /// Reports the interval in progress (the recording ended).
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if let start, count > 0 { report(until: nil, from: start) }
    }

    private func report(until end: Double?, from begun: Double) {
        guard count > 0 else { return }
        let channels = zip(squares, peaks).map { LevelsReport.Channel(averageDB: Self.decibels(($0 / Double(count)).squareRoot()),
                                                                      peakDB: Self.decibels(Double($1))) }
        let duration = end.map { $0 - begun } ?? Double(count) / Double(max(1, resampler?.outputRate ?? 1))
        events(.levels(LevelsReport(time: (begun * 1000).rounded() / 1000, duration: (duration * 1000).rounded() / 1000, averageDB: channels.map(\.averageDB).max() ?? -120,
                                    peakDB: channels.map(\.peakDB).max() ?? -120, channels: channels)))
        for c in squares.indices { (squares[c], peaks[c]) = (0, 0) }
        count = 0
    }
}

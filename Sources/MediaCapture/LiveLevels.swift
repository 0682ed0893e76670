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
final class LiveLevels: LivePictureSink, Sendable {
    private let interval: MediaTime
    private let events: @Sendable (CaptureEvent) -> Void
    /// Frames come from one decoding thread, `finish` from the recording's.
    private let meter: Guarded<Meter>

    /// The sums of the interval in progress.
    fileprivate struct Meter {
        var resampler: AudioResampler?
        var samples = AudioSamples(channelCount: 0)
        var start: Double?
        var squares: [Double] = []
        var peaks: [Float] = []
        var count = 0
    }

    init(every seconds: Double, events: @escaping @Sendable (CaptureEvent) -> Void) {
        interval = MediaTime(value: Int64((seconds * 1000).rounded()), timescale: 1000)
        self.events = events
        meter = Guarded(Meter())
    }

    static func decibels(_ amplitude: Double) -> Double { amplitude > 0 ? max(-120, 20 * log10(amplitude)) : -120 }

    func submit(_ frame: borrowing Frame, time: MediaTime, arrival: Date) {
        let interval = self.interval
        let reports = meter.withLock { m in m.add(frame, time: time, interval: interval) }
        for report in reports { events(.levels(report)) }
    }

    func countNotScanned(_ n: Int) {}

    /// Reports the interval in progress (the recording ended).
    func finish() {
        let report = meter.withLock { m -> LevelsReport? in
            guard let start = m.start, m.count > 0 else { return nil }
            return m.report(until: nil, from: start)
        }
        if let report { events(.levels(report)) }
    }
}

extension LiveLevels.Meter {
    /// Adds a block of sound; the intervals it completes.
    mutating func add(_ frame: borrowing Frame, time: MediaTime, interval: MediaTime) -> [LevelsReport] {
        let channels = max(1, frame.channelCount), rate = frame.sampleRate
        guard rate > 0 else { return [] }
        if resampler == nil || resampler?.outputChannels != channels || resampler?.outputRate != rate {
            resampler = try? AudioResampler(inputRate: rate, inputChannels: channels, outputRate: rate, outputChannels: channels)  // none: the sound is not measured
        }
        guard let resampler else { return [] }
        samples = AudioSamples(channelCount: channels)
        guard (try? resampler.convert(frame, appendingTo: &samples)) != nil else { return [] }  // a block that cannot be converted is not measured
        // Seconds are enough for levels: the interval's end is found in samples, not per sample in exact time.
        let blockStart = time.seconds, length = interval.seconds
        if start == nil { start = blockStart }
        if squares.count != channels { (squares, peaks, count) = ([Double](repeating: 0, count: channels), [Float](repeating: 0, count: channels), 0) }
        var reports: [LevelsReport] = []
        var i = 0
        while i < samples.count {
            let at = blockStart + Double(i) / Double(rate)
            if at >= start! + 2 * length {
                // A gap in the sound: what was measured is reported, and the next interval starts here.
                reports += [report(until: nil, from: start!)].compactMap { $0 }
                start = at
            }
            let boundary = start! + length
            let untilBoundary = at >= boundary ? 0 : Int(((boundary - at) * Double(rate)).rounded(.up))
            if untilBoundary == 0 {
                reports += [report(until: boundary, from: start!)].compactMap { $0 }
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
        return reports
    }

    /// The interval from `begun` (to `end`, or as long as its samples), and the sums cleared; nil when it
    /// has no sample.
    mutating func report(until end: Double?, from begun: Double) -> LevelsReport? {
        guard count > 0 else { return nil }
        let channels = zip(squares, peaks).map { LevelsReport.Channel(averageDB: LiveLevels.decibels(($0 / Double(count)).squareRoot()),
                                                                      peakDB: LiveLevels.decibels(Double($1))) }
        let duration = end.map { $0 - begun } ?? Double(count) / Double(max(1, resampler?.outputRate ?? 1))
        for c in squares.indices { (squares[c], peaks[c]) = (0, 0) }
        count = 0
        return LevelsReport(time: (begun * 1000).rounded() / 1000, duration: (duration * 1000).rounded() / 1000,
                            averageDB: channels.map(\.averageDB).max() ?? -120, peakDB: channels.map(\.peakDB).max() ?? -120, channels: channels)
    }
}

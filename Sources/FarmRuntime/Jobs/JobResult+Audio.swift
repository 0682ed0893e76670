import FarmModel
import MediaEdit

extension JobResult {
    /// What a user should see of an exported audio track in the result: a bit rate below the source's, and what
    /// loudness normalisation did (a limiter that cut deep, as a warning). With more than one track kept, each
    /// warning names its track's language, and the result's loudness is the first track's.
    mutating func tell(_ audio: ExportReport.Audio, naming: Bool = false) {
        let track = naming ? audio.language.map { " (the \($0) track)" } ?? "" : ""
        // A lower bit rate than the source's is said where the user looks (a higher one is in the report).
        // (A source above the highest bit rate a manifest may give, as PCM is, is in the report only.)
        if let note = audio.note, let bitRate = audio.bitRate, let source = audio.sourceBitRate, bitRate < source,
           source <= 512_000 {
            warnings = (warnings ?? []) + ["$.export.audio.bitrate\(track): " + note]
        }
        if let delivery = audio.loudness, delivery.mode != .measured {
            let outcome = LoudnessOutcome(before: delivery.before.integrated, after: delivery.after?.integrated, target: delivery.target,
                                          gain: delivery.gain, gains: delivery.gains?.map(\.gain) ?? [], limiterReduction: delivery.limiter?.maxReduction)
            loudness = loudness ?? outcome
            if let cut = outcome.limiterReduction, -cut > LoudnessOutcome.deepCut {
                warnings = (warnings ?? []) + ["$.export.audio.loudness" + track + String(format: ": the limiter took off up to %.1f dB to hold the true peak to %.1f dBTP: "
                                          + "it shapes the sound, not only its peaks (a lower target or a higher truePeak would spare it)",
                                          -cut, delivery.truePeakLimit ?? 0)]
            }
        }
    }
}

/// `export.audio.loudness` in a manifest (`JobManifest.LoudnessSettings`).
extension Walker {
    /// `export.audio.loudness`: `{"standard": "ebu-r128"}`, `{"target": -23, "truePeak": -1}` (numbers
    /// override a standard's), or `{"measure": true}`.
    mutating func loudness(_ value: JSONValue, at p: String, policy: AudioPolicy) -> JobManifest.LoudnessSettings? {
        guard let o = object(value, p, allowed: ["measure", "standard", "target", "truePeak"]) else { return nil }
        var settings = JobManifest.LoudnessSettings()
        settings.measure = boolean(o["measure"], "\(p).measure") ?? false
        settings.standard = enumeration(o["standard"], "\(p).standard", LoudnessStandard.self)
        /// A number in dB: one that is no Double at all (1e400) is as far outside its range as one that is.
        func decibels(_ key: String) -> Double? {
            guard case .number(let text) = o[key] else { return fraction(o[key], "\(p).\(key)") }
            return Double(text).map { $0.isFinite ? $0 : $0.sign == .minus ? -.greatestFiniteMagnitude : .greatestFiniteMagnitude }
        }
        if let target = decibels("target") {
            if (-70...0).contains(target) { settings.target = target }
            else { fail("\(p).target", "\(o["target"]!.numberText) LUFS is outside -70...0 (EBU R128 is -23, ATSC A/85 -24, streaming -14 to -16)") }
        }
        if let peak = decibels("truePeak") {
            if (-20...0).contains(peak) { settings.truePeak = peak }
            else if peak > 0 { fail("\(p).truePeak", "\(o["truePeak"]!.numberText) dBTP is above 0: a true peak over full scale clips; use -20...0 (-1 for EBU R128)") }
            else { fail("\(p).truePeak", "\(o["truePeak"]!.numberText) dBTP is outside -20...0 (-1 for EBU R128, -2 for ATSC A/85)") }
        }
        if !settings.measure {
            if settings.standard == nil && o["target"] == nil {
                fail(p, "needs a \"standard\" (\(LoudnessStandard.allCases.map(\.rawValue).joined(separator: ", "))), a \"target\" in LUFS, or \"measure\": true")
            }
            switch policy {
            case .copy:
                fail(p, "copied audio (\"policy\": \"copy\") cannot be brought to a loudness target: its samples are not touched. "
                     + "Let the audio be encoded (\"policy\": \"auto\" or \"reencode\"), or measure only (\"measure\": true)")
            case .drop:
                fail(p, "the audio is dropped (\"policy\": \"drop\"): there is nothing to bring to a loudness")
            case .auto, .reencode:
                break
            }
        } else if policy == .drop {
            fail(p, "the audio is dropped (\"policy\": \"drop\"): there is nothing to measure")
        }
        return settings
    }
}

/// How the farm says quantities to people, the same on every face (the console, `mediafarm status`).
public enum Spoken {
    /// "42 s", "3 min 5 s", "1 h 2 min"; "–" when not known.
    public static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0, seconds < 1e15 else { return "–" }
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        return "\(s / 3600) h \(s % 3600 / 60) min"
    }

    /// "1 worker", "3 workers": a count with its noun, singular for one.
    public static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(n) \(n == 1 ? singular : plural ?? singular + "s")"
    }
}

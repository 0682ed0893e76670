/// Text that came from a user (a job's name, a path, a key, a URL, an error quoting them), made safe to
/// write on one line of a log or a terminal. Control characters (C0, DEL, C1) and the Unicode line and
/// paragraph separators are written as escapes (`\n`, `\r`, `\t`, `\u{1B}`), so that no value can move
/// the cursor, clear a line, set a window's title or start a log line of its own: an audit line cannot be
/// forged by what it quotes. The one place this is decided; JSON faces escape by their encoding, HTML by
/// its own.
public enum UserText {
    public static func printable(_ text: some StringProtocol) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return String(text) }
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else { out.unicodeScalars.append(scalar); continue }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out
    }

    /// A scalar that would act on a terminal or a log rather than show.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

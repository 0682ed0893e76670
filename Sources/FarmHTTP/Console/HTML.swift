/// Markup whose interpolations escape: whatever is put into it that is not `HTML` itself (a job's name,
/// an error, a path, a number, a literal inside an interpolation) goes in as text, so nothing a manifest,
/// a file name or a caller says can become markup. Markup goes in as `HTML`: literals, or values built
/// from them. No page calls an escape function.
struct HTML: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The markup, as the page sends it.
    private(set) var text: String

    init(stringLiteral text: String) {
        self.text = text
    }

    init(stringInterpolation: Interpolation) {
        text = stringInterpolation.text
    }

    /// Text as markup: escaped.
    init(text: String) {
        self.text = Self.escaped(text)
    }

    /// The program's own markup read from elsewhere (its style sheet, its script), trusted as it is.
    init(trusted text: String) {
        self.text = text
    }

    var description: String { text }

    var isEmpty: Bool { text.isEmpty }

    struct Interpolation: StringInterpolationProtocol {
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        mutating func appendLiteral(_ literal: String) { text += literal }

        /// Markup, as it is.
        mutating func appendInterpolation(_ html: HTML) { text += html.text }

        /// Markup, or nothing.
        mutating func appendInterpolation(_ html: HTML?) { text += html?.text ?? "" }

        /// Text, escaped.
        mutating func appendInterpolation(_ value: String) { text += HTML.escaped(value) }

        mutating func appendInterpolation(_ value: Substring) { text += HTML.escaped(String(value)) }

        mutating func appendInterpolation<Number: BinaryInteger>(_ value: Number) { text += String(value) }

        /// A number, as Swift writes it (`44.0`).
        mutating func appendInterpolation(_ value: Double) { text += String(value) }
    }

    static func + (left: HTML, right: HTML) -> HTML { HTML(trusted: left.text + right.text) }

    static func += (left: inout HTML, right: HTML) { left.text += right.text }

    /// `text` with the five characters that can end text in HTML written as references.
    static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}

extension Sequence where Element == HTML {
    func joined(separator: HTML = "") -> HTML {
        var out: HTML = ""
        var first = true
        for part in self {
            if !first { out += separator }
            out += part
            first = false
        }
        return out
    }
}

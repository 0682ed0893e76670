/// The little of XML that S3's answers need: the text of elements by name, in order, and the elements
/// inside a repeated one (`<Upload>`, `<Contents>`, `<Part>`). S3's answers are flat and carry no
/// attributes that matter; entities are the five predefined ones and numeric references.
enum S3XML {
    /// The text of every `<tag>...</tag>` in `xml`, in order, unescaped.
    static func values(_ tag: String, in xml: Substring) -> [String] {
        elements(tag, in: xml).map { unescape($0) }
    }

    static func value(_ tag: String, in xml: Substring) -> String? { values(tag, in: xml).first }

    /// The raw contents of every `<tag>...</tag>` (or `<tag attrs>...</tag>`) in `xml`.
    static func elements(_ tag: String, in xml: Substring) -> [Substring] {
        var found: [Substring] = []
        var rest = xml[...]
        let close = "</\(tag)>"
        while let open = rest.range(of: "<\(tag)") {
            guard let end = rest[open.upperBound...].firstIndex(of: ">") else { break }
            let next = rest[open.upperBound]
            guard next == ">" || next == " " || next == "/" else { rest = rest[open.upperBound...]; continue }
            if rest[rest.index(before: end)] == "/" { found.append(""); rest = rest[rest.index(after: end)...]; continue }
            let body = rest[rest.index(after: end)...]
            guard let stop = body.range(of: close) else { break }
            found.append(body[..<stop.lowerBound])
            rest = body[stop.upperBound...]
        }
        return found
    }

    static func unescape(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";") else { out += rest[amp...]; return out }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let number = entity.hasPrefix("#x") ? UInt32(entity.dropFirst(2), radix: 16)
                    : entity.hasPrefix("#") ? UInt32(entity.dropFirst(), radix: 10) : nil
                if let number, let scalar = Unicode.Scalar(number) { out.unicodeScalars.append(scalar) } else { out += rest[amp...semi] }
            }
            rest = rest[rest.index(after: semi)...]
        }
        return out + rest
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}

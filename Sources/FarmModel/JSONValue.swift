/// A parsed JSON document that keeps what manifests need and Foundation loses: the order of keys,
/// duplicate keys, and numbers as written ("0.1" stays the text "0.1", so times parse exactly).
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's literal text, as written.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order.
    case object([(key: String, value: JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.number(x), .number(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .number(let n): hasher.combine(n)
        case .string(let s): hasher.combine(s)
        case .array(let a): hasher.combine(a)
        case .object(let o): for m in o { hasher.combine(m.key); hasher.combine(m.value) }
        }
    }

    /// What a user would call this kind of value in an error message.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }
}

/// Where a JSON document stopped making sense, by line and column.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public let line: Int
    public let column: Int
    public let reason: String
    public var description: String { "invalid JSON at line \(line), column \(column): \(reason)" }
}

/// A strict JSON parser (RFC 8259) with a nesting limit and a size limit, for untrusted manifests.
public struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    public static let maxDepth = 64
    /// The largest document accepted (a 10,000-edit manifest is about 600 KB).
    public static let maxDocumentBytes = 4 << 20

    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        guard bytes.count <= maxDocumentBytes else {
            throw JSONSyntaxError(line: 1, column: 1, reason: "the document is larger than \(maxDocumentBytes >> 20) MiB")
        }
        var parser = JSONParser(bytes: bytes)
        if parser.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }   // UTF-8 byte order mark
        parser.skipSpace()
        let value = try parser.parseValue()
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw parser.error("unexpected text after the document") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ reason: String) -> JSONSyntaxError {
        var line = 1, column = 1
        for b in bytes[..<min(index, bytes.count)] {
            if b == UInt8(ascii: "\n") { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return JSONSyntaxError(line: line, column: column, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while let c = current, c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { index += 1 }
    }

    private mutating func expect(_ literal: String, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let l = Array(literal.utf8)
        guard bytes.count - index >= l.count, Array(bytes[index..<index + l.count]) == l else {
            throw error("unexpected character")
        }
        index += l.count
        return value
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        guard let c = current else { throw error("unexpected end of the document") }
        switch c {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character '\(String(decoding: [c], as: UTF8.self))'")
        }
    }

    private mutating func nest() throws(JSONSyntaxError) {
        depth += 1
        if depth > JSONParser.maxDepth { throw error("nested deeper than \(JSONParser.maxDepth) levels") }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONValue {
        try nest()
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        skipSpace()
        if current == UInt8(ascii: "}") { index += 1; depth -= 1; return .object(members) }
        while true {
            skipSpace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a quoted key") }
            let key = try parseString()
            skipSpace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':' after the key \"\(key)\"") }
            index += 1
            skipSpace()
            members.append((key, try parseValue()))
            skipSpace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; depth -= 1; return .object(members)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONValue {
        try nest()
        index += 1
        var items: [JSONValue] = []
        skipSpace()
        if current == UInt8(ascii: "]") { index += 1; depth -= 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try parseValue())
            skipSpace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; depth -= 1; return .array(items)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = index
        func digits() -> Int {
            let s = index
            while let c = current, c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") { index += 1 }
            return index - s
        }
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            throw error("a number needs digits")
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("a number needs digits after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw error("an exponent needs digits") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1
        var out: [UInt8] = []
        while true {
            guard let c = current else { throw error("unterminated string") }
            index += 1
            switch c {
            case UInt8(ascii: "\""):
                guard let s = String(validating: out, as: UTF8.self) else { throw error("the string is not valid UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                guard let e = current else { throw error("unterminated string") }
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate in \\u escape")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar), scalar != 0 else { throw error("invalid \\u escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw error("invalid escape '\\\(String(decoding: [e], as: UTF8.self))'")
                }
            case 0x00..<0x20: throw error("control character in a string (escape it)")
            default: out.append(c)
            }
        }
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("a \\u escape needs four hex digits") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            index += 1
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = v << 4 | UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = v << 4 | UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = v << 4 | UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("a \\u escape needs four hex digits")
            }
        }
        return v
    }
}

extension JSONValue {
    /// The value as compact JSON text: keys in their order, numbers as written, `/` not escaped.
    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n
        case .string(let s): Self.quote(s, to: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                Self.quote(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }

    /// The document indented by two spaces a level, keys in their order, numbers as written (for people
    /// to read: the console's manifests and results).
    public var indented: String {
        var out = ""
        writeIndented(to: &out, depth: 0)
        return out
    }

    private func writeIndented(to out: inout String, depth: Int) {
        let pad = String(repeating: "  ", count: depth + 1), close = String(repeating: "  ", count: depth)
        switch self {
        case .array(let items) where !items.isEmpty:
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += pad
                item.writeIndented(to: &out, depth: depth + 1)
                out += i < items.count - 1 ? ",\n" : "\n"
            }
            out += close + "]"
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            for (i, member) in members.enumerated() {
                out += pad
                Self.quote(member.key, to: &out)
                out += ": "
                member.value.writeIndented(to: &out, depth: depth + 1)
                out += i < members.count - 1 ? ",\n" : "\n"
            }
            out += close + "}"
        default:
            write(to: &out)
        }
    }

    /// `s` as a JSON string literal.
    public static func quoted(_ s: String) -> String {
        var out = ""
        quote(s, to: &out)
        return out
    }

    private static func quote(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// The value with `transform` applied to every string value (keys are left as they are).
    public func mappingStrings(_ transform: (String) throws -> String) rethrows -> JSONValue {
        switch self {
        case .string(let s): return .string(try transform(s))
        case .array(let items): return .array(try items.map { try $0.mappingStrings(transform) })
        case .object(let members): return .object(try members.map { ($0.key, try $0.value.mappingStrings(transform)) })
        default: return self
        }
    }

    /// This object with the value of its member `key` (every occurrence) replaced by `value`.
    public func replacing(_ key: String, with value: JSONValue) -> JSONValue {
        guard case .object(let members) = self else { return self }
        return .object(members.map { $0.key == key ? ($0.key, value) : $0 })
    }

    /// This object with member `key` set to `value`: replaced where it is, else added at the end.
    public func setting(_ key: String, to value: JSONValue) -> JSONValue {
        guard case .object(let members) = self else { return self }
        if members.contains(where: { $0.key == key }) { return replacing(key, with: value) }
        return .object(members + [(key: key, value: value)])
    }

    /// This object without members named `keys`.
    public func removing(_ keys: String...) -> JSONValue {
        guard case .object(let members) = self else { return self }
        return .object(members.filter { !keys.contains($0.key) })
    }
}

extension JSONValue {
    /// A manifest's media sources: its `input` and each edit's `source`, the only strings that name media to
    /// read (and so the only ones a coordinator rewrites: assets, other jobs' results, renamed files).
    public var manifestSources: [String] {
        var sources: [String] = []
        if case .string(let input)? = self["input"] { sources.append(input) }
        if case .array(let edits)? = self["edits"] {
            for edit in edits { if case .string(let source)? = edit["source"] { sources.append(source) } }
        }
        return sources
    }

    /// This manifest with each media source (`input`, `edits[].source`) found in `replacements` replaced by
    /// its value; every other string is left alone, even one equal to a source (a `name`, a title).
    public func replacingManifestSources(_ replacements: [String: String]) -> JSONValue {
        guard !replacements.isEmpty else { return self }
        var result = self
        if case .string(let input)? = self["input"], let new = replacements[input] { result = result.replacing("input", with: .string(new)) }
        if case .array(let edits)? = self["edits"] {
            result = result.replacing("edits", with: .array(edits.map { edit in
                guard case .string(let source)? = edit["source"], let new = replacements[source] else { return edit }
                return edit.replacing("source", with: .string(new))
            }))
        }
        return result
    }
}

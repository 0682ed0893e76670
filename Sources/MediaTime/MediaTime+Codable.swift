/// JSON form: `{ "value": 1024, "timescale": 1000, "seconds": 1.024 }`; invalid is `null`, infinities
/// are the strings "+inf" and "-inf". Decoding also accepts what a manifest author writes: a number
/// (2.5), or a string in any form `MediaTime(parsing:)` takes ("5/2", "00:00:02.500").
extension MediaTime: Codable {
    private enum Keys: String, CodingKey { case value, timescale, seconds }

    public func encode(to encoder: any Swift.Encoder) throws {
        switch kind {
        case .invalid:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .positiveInfinity, .negativeInfinity:
            var c = encoder.singleValueContainer()
            try c.encode(kind == .positiveInfinity ? "+inf" : "-inf")
        case .numeric:
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(value, forKey: .value)
            try c.encode(timescale, forKey: .timescale)
            try c.encode(seconds, forKey: .seconds)
        }
    }

    public init(from decoder: any Swift.Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: Keys.self), keyed.contains(.value) {  // each form tried in turn
            let value = try keyed.decode(Int64.self, forKey: .value)
            let timescale = try keyed.decode(Int32.self, forKey: .timescale)
            guard timescale > 0 else {
                throw DecodingError.dataCorruptedError(forKey: .timescale, in: keyed, debugDescription: "timescale must be positive")
            }
            self.init(value: value, timescale: timescale)
            return
        }
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .invalid; return }
        let text: String
        if let s = try? c.decode(String.self) {  // each form tried in turn
            if s == "+inf" { self = .positiveInfinity; return }
            if s == "-inf" { self = .negativeInfinity; return }
            text = s
        } else if let i = try? c.decode(Int64.self) {  // each form tried in turn
            text = String(i)
        } else if let d = try? c.decode(Double.self) {  // each form tried in turn
            guard d.isFinite else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "a time must be finite")
            }
            text = "\(d)"   // shortest round-trip decimal: 2.5 -> "2.5", exact from what was written
        } else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected a time: seconds, \"5/2\" or \"00:00:02.5\"")
        }
        do {
            self = try MediaTime(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: error.description)
        }
    }
}

extension TimeRange: Codable {
    private enum Keys: String, CodingKey { case start, duration }

    public func encode(to encoder: any Swift.Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(start, forKey: .start)
        try c.encode(duration, forKey: .duration)
    }

    public init(from decoder: any Swift.Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        self.init(start: try c.decode(MediaTime.self, forKey: .start),
                  duration: try c.decode(MediaTime.self, forKey: .duration))
    }
}

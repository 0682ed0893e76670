import ArgumentParser
import FarmModel

/// Every numeric option is read through a `NumberRule` (FarmModel's `UserNumbers`): `transform:` refuses
/// a value out of range while the arguments are parsed (exit 2, naming the option and the range), so no
/// command ever sees `nan`, `inf` or an overflowing number.
extension NumberRule {
    /// For `@Option(transform:)`.
    public var option: @Sendable (String) throws -> Value {
        { text in try parse(text).get() }
    }

    /// The range in a help text: "(0 to 86400 seconds)".
    public var inHelp: String { "(\(rangeDescription))" }

    /// For a number that arrived another way (a config file's): the value, or a usage error naming `name`.
    public func checked(_ value: Value, _ name: String) throws -> Value {
        switch check(value) {
        case .success(let value): return value
        case .failure(let error): throw ValidationError("\(name) \(error.text): \(error)")
        }
    }

    /// For a number still in text (a config file's size): the value, or a usage error naming `name`.
    public func parsed(_ text: String, _ name: String) throws -> Value {
        switch parse(text) {
        case .success(let value): return value
        case .failure(let error): throw ValidationError("\(name) \(text): \(error)")
        }
    }
}

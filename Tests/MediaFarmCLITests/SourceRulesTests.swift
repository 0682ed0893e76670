import FarmTestSupport
import Foundation
import Testing

/// Rules of the sources that no compiler checks.
@Suite struct SourceRulesTests {
    /// Every `try?` says why losing its error is fine: a comment on its line or the line above.
    @Test func everyTryQuestionMarkSaysWhyItsErrorMayBeLost() throws {
        let sources = TestPaths.packageRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        #expect(files.count > 100)
        var silent: [String] = []
        var seen = 0
        for file in files {
            let lines = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8).components(separatedBy: "\n")
            for (i, line) in lines.enumerated() where line.contains("try?") {
                seen += 1
                if !line.contains("//") && !(i > 0 && lines[i - 1].trimmingCharacters(in: .whitespaces).hasPrefix("//")) {
                    silent.append("Sources/\(file):\(i + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(seen > 0)
        #expect(silent.isEmpty, "a try? without a word on why its error may be lost:\n\(silent.joined(separator: "\n"))")
    }

    /// Each source file, by its path under Sources/, with its lines.
    static func sources() throws -> [(file: String, lines: [String])] {
        let root = TestPaths.packageRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: root.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        return try files.sorted().map { ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8).components(separatedBy: "\n")) }
    }

    /// Every `@unchecked Sendable` says on its line what keeps it safe (`// unchecked: …`).
    @Test func everyUncheckedSendableSaysWhatKeepsItSafe() throws {
        var unexplained: [String] = []
        var seen = 0
        for (file, lines) in try Self.sources() {
            for (i, line) in lines.enumerated() where line.contains("@unchecked Sendable") {
                seen += 1
                if !line.contains("// unchecked: ") { unexplained.append("Sources/\(file):\(i + 1)") }
            }
        }
        #expect(seen > 0)
        #expect(unexplained.isEmpty, "an @unchecked Sendable without `// unchecked: WHY` on its line: \(unexplained)")
    }

    /// Every `nonisolated(unsafe)` says, on its line or the line above, what keeps it safe.
    @Test func everyUnsafeIsolationSaysWhatKeepsItSafe() throws {
        var unexplained: [String] = []
        for (file, lines) in try Self.sources() {
            for (i, line) in lines.enumerated() where line.contains("nonisolated(unsafe)") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                let above = i > 0 ? lines[i - 1].trimmingCharacters(in: .whitespaces) : ""
                if !line.contains("//") && !above.hasPrefix("//") { unexplained.append("Sources/\(file):\(i + 1)") }
            }
        }
        #expect(unexplained.isEmpty, "a nonisolated(unsafe) without a comment saying why it is safe: \(unexplained)")
    }

    /// The console's pages escape through `HTML`'s interpolation, never by calling an escape function.
    @Test func noPageCallsAnEscapeFunction() throws {
        let calls = try Self.sources().filter { $0.file.hasPrefix("FarmHTTP/") && !$0.file.hasSuffix("/HTML.swift") }.flatMap { file, lines in
            lines.enumerated().filter { $0.element.range(of: #"\bescape[a-zA-Z]*\("#, options: .regularExpression) != nil }.map { "Sources/\(file):\($0.offset + 1)" }
        }
        #expect(calls.isEmpty, "\(calls)")
    }

    /// A job is made in one place (`JobOptions.job`): every way in spells its defaults the same.
    @Test func aJobIsMadeInOnePlace() throws {
        let sites = try Self.sources().flatMap { file, lines in
            lines.enumerated().filter { $0.element.contains("NewJob(") }.map { "Sources/\(file):\($0.offset + 1)" }
        }
        #expect(sites.count == 1 && sites.first?.hasPrefix("Sources/FarmSubmit/JobOptions.swift") == true, "\(sites)")
    }
}

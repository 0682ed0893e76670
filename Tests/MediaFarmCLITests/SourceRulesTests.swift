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
}

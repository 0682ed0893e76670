import FarmTestSupport
import Foundation
import Testing

/// A clone stands on its own: nothing tracked names a path outside the repository, and what the tests
/// and scripts read is inside it.
@Suite struct RepositoryTests {
    /// Every tracked text file, by its path relative to the package root.
    static func trackedTextFiles() throws -> [(path: String, text: String)] {
        let root = TestPaths.packageRoot.path
        let listing = try ProcessRunner.run("/usr/bin/git", ["-C", root, "ls-files", "-z"])
        guard listing.status == 0 else { throw FixtureError("git ls-files failed in \(root): \(listing.stderr)") }
        return listing.stdout.split(separator: "\0").compactMap { name in
            let path = String(name)
            guard let data = FileManager.default.contents(atPath: root + "/" + path),
                  !data.prefix(8192).contains(0), let text = String(data: data, encoding: .utf8) else { return nil }
            return (path, text)
        }
    }

    /// The path-like words of `line` that climb with `../` (the word around each `../`, cut at quotes,
    /// spaces, brackets and the like).
    static func climbingWords(in line: Substring) -> [Substring] {
        let stops = Set(" \t\"'`()[]{}<>,;=|&$:*")
        var words: [Substring] = []
        var search = line.startIndex
        while let found = line[search...].range(of: "../") {
            var start = found.lowerBound
            while start > line.startIndex, !stops.contains(line[line.index(before: start)]) { start = line.index(before: start) }
            var end = found.upperBound
            while end < line.endIndex, !stops.contains(line[end]) { end = line.index(after: end) }
            words.append(line[start..<end])
            search = end
        }
        return words
    }

    /// Whether `word`, read from the folder `base` (relative to the root, "" for the root), leaves the root.
    static func escapes(_ word: Substring, from base: String) -> Bool {
        var depth = base.split(separator: "/").count
        for part in (base + "/" + word).split(separator: "/").dropFirst(depth) {
            if part == ".." { depth -= 1; if depth < 0 { return true } } else if part != "." { depth += 1 }
        }
        return false
    }

    /// A file that runs from the package root (a script that starts with `cd "$(dirname "$0")/.."`).
    static func runsFromTheRoot(_ path: String, _ text: String) -> Bool {
        (path.hasPrefix("script/") || path.hasPrefix("bench/") || path.hasPrefix(".ci/")) && text.contains("cd \"$(dirname \"$0\")/..\"")
    }

    @Test func noTrackedFileNamesAPathOutsideTheRepository() throws {
        let files = try Self.trackedTextFiles()
        #expect(files.count > 100, "only \(files.count) tracked text files: is this a git clone of the project?")
        // The folders beside the project that it once read (spelled in pieces, so that this file does not name them).
        let besides = ["corpus", "tools", "ARCHITECTURE"].map { "shared" + "/" + $0 }
        var outside: [String] = []
        for (path, text) in files {
            let folder = (path as NSString).deletingLastPathComponent
            let fromRoot = Self.runsFromTheRoot(path, text)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if besides.contains(where: line.contains) {
                    outside.append("\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    continue
                }
                for word in Self.climbingWords(in: line) {
                    // A manifest's paths (a JSON string value written by a script) are relative to the
                    // manifest's own folder, which the script chooses; anything else a script names is
                    // read from the root it runs in.
                    let manifestValue = line[..<word.startIndex].hasSuffix("\": \"")
                    if Self.escapes(word, from: folder) || (fromRoot && !manifestValue && Self.escapes(word, from: "")) {
                        outside.append("\(path):\(number + 1): \(word)")
                    }
                }
            }
        }
        #expect(outside.isEmpty, "tracked files name paths outside the repository:\n\(outside.joined(separator: "\n"))")
    }

    @Test func theCheckFindsWhatItLooksFor() {
        #expect(Self.escapes("../beside/corpus", from: ""))
        #expect(Self.escapes("../../x", from: "docs"))
        #expect(!Self.escapes("../README.md", from: "docs"))
        #expect(!Self.escapes("sub/../farm.sqlite", from: ""))
        #expect(Self.climbingWords(in: #"if [ -d ../beside/corpus ]; then cp "../a/b" x"#) == ["../beside/corpus", "../a/b"])
        #expect(Self.runsFromTheRoot("script/fuzz", "set -e\ncd \"$(dirname \"$0\")/..\"\n"))
    }

    @Test func theCorpusIsInTheRepositoryWithItsNotice() throws {
        let corpus = try #require(TestPaths.corpus, "Tests/Fixtures/corpus is missing")
        #expect(corpus.path.hasPrefix(TestPaths.packageRoot.path + "/"))
        let notice = try String(contentsOf: corpus.appendingPathComponent("NOTICE"), encoding: .utf8)
        #expect(notice.contains("ExoPlayer") && notice.contains("Apache License, Version 2.0"))
        #expect(FileManager.default.fileExists(atPath: corpus.appendingPathComponent("LICENSE-Apache-2.0").path))
        let tracked = Set(try Self.trackedTextFiles().map(\.path))
        #expect(tracked.contains("Tests/Fixtures/corpus/NOTICE"))
        let media = TestPaths.corpusFiles.map(\.lastPathComponent)
        let listing = try ProcessRunner.run("/usr/bin/git", ["-C", TestPaths.packageRoot.path, "ls-files", "Tests/Fixtures/corpus"])
        for name in media { #expect(listing.stdout.contains("Tests/Fixtures/corpus/\(name)"), "\(name) is not tracked") }
    }
}

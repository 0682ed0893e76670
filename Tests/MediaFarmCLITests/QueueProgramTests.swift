import FarmTestSupport
import Foundation
import QueueCLI
import Testing

/// `mediafarm` is two programs: the front, which runs the queue's commands without loading a media
/// library, and `mediafarm-engine` beside it, to which the front hands every other command by exec.
@Suite struct QueueProgramTests {
    static let front = TestPaths.mediafarmExecutable
    static let engine = (front as NSString).deletingLastPathComponent + "/mediafarm-engine"
    static let mediaLibraries = ["libavformat", "libavcodec", "libavutil", "libswresample", "libswscale", "librubberband", "libzbar",
                                 "libZXing", "libebur128"]

    /// The shared libraries `binary` loads, as `ldd` lists them: each one's name and file.
    static func loaded(_ binary: String) throws -> [(name: String, path: String)] {
        let r = try ProcessRunner.run("ldd", [binary])
        return r.stdout.split(separator: "\n").map { line in
            let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
            return (words.first ?? "", words.count > 2 && words[1] == "=>" ? words[2] : "")
        }
    }

    /// The front links none of the media libraries; the media program does (so this test can fail).
    @Test func theFrontLoadsNoMediaLibrary() throws {
        let front = try Self.loaded(Self.front).map(\.name)
        let engine = try Self.loaded(Self.engine).map(\.name)
        for library in Self.mediaLibraries {
            #expect(!front.contains { $0.hasPrefix(library) }, "the front loads \(library): \(front)")
        }
        #expect(engine.contains { $0.hasPrefix("libavformat") }, "\(engine)")
    }

    /// On a machine where FFmpeg's and the other media libraries cannot be loaded (each hidden behind an
    /// empty file in a mount namespace), the queue's commands still work: submit, status, cancel, retry,
    /// queue, webhooks and library list; a media command says what is missing and fails.
    @Test func theQueueCommandsWorkWithoutTheMediaLibraries() throws {
        let dir = try TestPaths.makeTemporaryFolder("no-media-libraries")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("clip.mp4").path)
        try #"{"version": 1, "name": "look", "input": "clip.mp4", "report": "look.json"}"#
            .write(to: dir.appendingPathComponent("look.json.manifest"), atomically: true, encoding: .utf8)
        let hidden = try Self.loaded(Self.engine).filter { library in Self.mediaLibraries.contains { library.name.hasPrefix($0) } }.map(\.path)
        #expect(hidden.count >= 9, "\(hidden)")
        let queue = dir.appendingPathComponent("queue.sqlite").path
        let script = """
            set -e
            for library in \(hidden.joined(separator: " ")); do mount --bind /dev/null "$library"; done
            export MEDIAFARM_QUEUE=\(queue)
            cd \(dir.path)
            \(Self.front) submit --json look.json.manifest > submitted.json
            \(Self.front) status --json > status.json
            \(Self.front) cancel 1 > cancel.txt
            \(Self.front) retry 1 > retry.txt
            \(Self.front) queue stats --json > stats.json
            \(Self.front) webhooks list > webhooks.txt
            \(Self.front) library list --json > library.json
            status=0; \(Self.front) inspect clip.mp4 > inspect.txt 2> inspect.err || status=$?
            echo $status > inspect.status
            """
        let r = try ProcessRunner.run("unshare", ["-m", "sh", "-c", script])
        #expect(r.status == 0, "\(r.stderr)")
        let submitted = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("submitted.json"))) as? [[String: Any]]
        #expect(submitted?.first?["id"] as? Int == 1)
        let status = try String(contentsOf: dir.appendingPathComponent("status.json"), encoding: .utf8)
        #expect(status.contains("\"name\" : \"look\""), "\(status)")
        #expect(try String(contentsOf: dir.appendingPathComponent("retry.txt"), encoding: .utf8).contains("1"))
        #expect(try String(contentsOf: dir.appendingPathComponent("stats.json"), encoding: .utf8).contains("\"total\" : 1"))
        // The media program cannot start there: the loader names the library, and the command fails.
        let inspectStatus = try String(contentsOf: dir.appendingPathComponent("inspect.status"), encoding: .utf8)
        #expect(inspectStatus.trimmingCharacters(in: .whitespacesAndNewlines) != "0")
        let inspectError = try String(contentsOf: dir.appendingPathComponent("inspect.err"), encoding: .utf8)
        #expect(inspectError.contains("error while loading shared libraries"), "\(inspectError)")
        // Outside the namespace nothing was hidden: the same inspection runs.
        let inspect = try ProcessRunner.run(Self.front, ["inspect", "--json", dir.appendingPathComponent("clip.mp4").path])
        #expect(inspect.status == 0, "\(inspect.stderr)")
    }

    /// Alone (no media program beside it, none in ../libexec/mediafarm), the front still runs the queue's
    /// commands, and refuses the others naming what is missing and how to get it.
    @Test func theFrontAloneRunsTheQueueCommandsAndNamesTheMissingProgram() throws {
        let dir = try TestPaths.makeTemporaryFolder("front-alone")
        defer { try? FileManager.default.removeItem(at: dir) }
        let alone = dir.appendingPathComponent("bin/mediafarm").path
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("bin"), withIntermediateDirectories: true)
        // Copied by cp, not in this process: a child another test forks meanwhile would inherit the copy's
        // descriptor open for writing, and running the copy would fail with "Text file busy".
        let copied = try ProcessRunner.run("cp", [Self.front, alone])
        #expect(copied.status == 0, "\(copied.stderr)")
        try #"{"version": 1, "name": "later", "input": "clip.mp4"}"#.write(to: dir.appendingPathComponent("later.json"), atomically: true, encoding: .utf8)
        let environment = ProcessInfo.processInfo.environment.merging(["MEDIAFARM_QUEUE": dir.appendingPathComponent("q.sqlite").path]) { $1 }
        let submit = try ProcessRunner.run(alone, ["submit", "--allow-missing-inputs", "later.json"], currentDirectory: dir.path, environment: environment)
        #expect(submit.status == 0 && submit.stdout.contains("queued job 1"), "\(submit.stderr)")
        let status = try ProcessRunner.run(alone, ["status"], currentDirectory: dir.path, environment: environment)
        #expect(status.status == 0 && status.stdout.contains("later"), "\(status.stderr)")
        for arguments in [["inspect", "clip.mp4"], ["--help"], ["library", "add", "clip.mp4"], ["queue"]] {
            let r = try ProcessRunner.run(alone, arguments, currentDirectory: dir.path, environment: environment)
            #expect(r.status == 1, "\(arguments): \(r.status)")
            #expect(r.stderr.contains("mediafarm-engine is not installed beside \(alone)") && r.stderr.contains("script/install"), "\(r.stderr)")
        }
        // Installed as script/install lays it out, the media program is found in ../libexec/mediafarm.
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("libexec/mediafarm"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("libexec/mediafarm/mediafarm-engine").path, withDestinationPath: Self.engine)
        let version = try ProcessRunner.run(alone, ["--version"])
        #expect(version.status == 0 && !version.stdout.isEmpty, "\(version.stderr)")
    }

    /// Each program parses a queue command with the same types: the same command line is refused the
    /// same way by both (here a number out of range and an unknown option).
    @Test func bothProgramsRefuseAQueueCommandAlike() throws {
        for arguments in [["submit", "--priority", "1e30", "x.json"], ["status", "--nosuch"], ["library", "list", "--limit", "-1"]] {
            let front = try ProcessRunner.run(Self.front, arguments)
            let engine = try ProcessRunner.run(Self.engine, arguments)
            #expect(front.status == 2 && engine.status == 2, "\(arguments): \(front.status) \(engine.status)")
            #expect(front.stderr == engine.stderr, "\(arguments)")
        }
    }

    /// Which command lines the front runs itself: the queue's commands, each by the name the media program
    /// gives it; everything else is handed over.
    @Test func theFrontRunsExactlyTheQueueCommands() throws {
        let own: [[String]] = [["submit", "x.json"], ["status"], ["cancel", "1"], ["retry", "1"], ["queue", "migrate"], ["queue", "stats", "--json"],
                               ["queue", "pause"], ["queue", "prune"], ["webhooks", "list"], ["webhooks", "deliveries"], ["library", "list"],
                               ["library", "show", "x"], ["library", "album", "create", "a"], ["library", "token", "list"], ["library", "changes"]]
        let handed: [[String]] = [[], ["--help"], ["--version"], ["help", "submit"], ["inspect", "a.mp4"], ["coordinator"], ["queue"], ["library"],
                                  ["library", "add", "a.mp4"], ["library", "verify"], ["library", "album"], ["nosuch"], ["library", "nosuch"]]
        for arguments in own { #expect(CommandRunner.leaf(QueueMain.self, arguments) != nil, "\(arguments)") }
        for arguments in handed { #expect(CommandRunner.leaf(QueueMain.self, arguments) == nil, "\(arguments)") }
        // The same help, word for word, from either program.
        for arguments in own.map({ Array($0.prefix { !$0.contains(".") && !$0.hasPrefix("-") && Int($0) == nil && $0 != "x" && $0 != "a" }) }) {
            let front = try ProcessRunner.run(Self.front, arguments + ["--help"])
            let engine = try ProcessRunner.run(Self.engine, arguments + ["--help"])
            #expect(front.status == 0 && front.stdout == engine.stdout, "\(arguments)")
        }
    }
}

import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Work longer than the stall limit, and stopping work with signals, as a user meets them.
@Suite struct LongWorkTests {
    func mediafarm(_ args: [String], environment: [String: String]? = nil) throws -> ProcessResult {
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment ?? [:] { env[k] = v }
        return try ProcessRunner.run(TestPaths.mediafarmExecutable, args, environment: env)
    }

    /// A folder holding `manifest` (as manifest.json) and a copy of the 10 s tone movie as input.mp4.
    func job(_ manifest: String) throws -> URL {
        let dir = try TestPaths.makeTemporaryFolder("long")
        try FileManager.default.copyItem(atPath: MediaFixture.tone60MP4.path, toPath: dir.appendingPathComponent("input.mp4").path)
        try manifest.write(to: dir.appendingPathComponent("manifest.json"), atomically: true, encoding: .utf8)
        return dir
    }

    /// The stall limit bounds a lack of progress, never the total: a retime taking many times the limit
    /// succeeds, with the limit set by the option and by the environment. (160 s of 60 fps output: about
    /// 12 s on a quiet machine, several times the 2 s limit; a limit much under a second could be met by a
    /// thread that a busy machine does not run for that long, which is no stall.)
    @Test(arguments: [["--stall-timeout", "2"], []])
    func workLongerThanTheStallLimitSucceeds(option: [String]) throws {
        let dir = try job("""
        { "version": 1, "name": "long", "input": "input.mp4",
          "scale": [ { "start": "0", "duration": "10", "rate": "1/16" } ], "audio": { "timePitch": "spectral" },
          "export": { "mode": "constantFrameRate", "frameRate": 60, "output": "out/long.mp4",
                      "video": { "preset": "medium" } } }
        """)
        let started = Date()
        let r = try mediafarm(["run"] + option + [dir.appendingPathComponent("manifest.json").path],
                              environment: option.isEmpty ? ["MEDIAFARM_STALL_TIMEOUT": "2"] : nil)
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 0, "\(r.stderr)")
        // Meaningful only when the work outlasts the limit several times over.
        #expect(seconds > 6, "the job took \(seconds) s: too short to prove anything about a 2 s limit")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/long.mp4").path))
    }

    @Test func aStallTimeoutThatIsNotPositiveIsBadUsage() throws {
        for value in ["0", "-5", "abc"] {
            let r = try mediafarm(["inspect", "--stall-timeout", value, MediaFixture.cfr30MP4.path])
            #expect(r.status == 2, "--stall-timeout \(value): \(r.status)")
            #expect(r.stderr.contains("stall-timeout"))
        }
    }

    /// Ctrl-C or SIGTERM during an export: the work stops, its temporary is removed, the result event
    /// says why, and the exit status is 128 + the signal.
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalDuringRunStopsCleanly(signal: Int32) throws {
        let dir = try job("""
        { "version": 1, "input": "input.mp4", "scale": [ { "start": 0, "duration": 10, "rate": 0.125 } ],
          "export": { "mode": "constantFrameRate", "output": "out/slow.mp4", "frameRate": 60, "video": { "preset": "medium" } },
          "report": "out/slow.json" }
        """)
        let out = dir.appendingPathComponent("out")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.mediafarmExecutable)
        process.arguments = ["run", "--json", dir.appendingPathComponent("manifest.json").path]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Under way: part of the movie written.
        #expect(!TestPaths.waitForTemporary(in: out, timeout: 60, holding: 64 << 10).isEmpty, "the export wrote nothing")
        #expect(process.isRunning, "the export ended before the signal: nothing was tested")
        kill(process.processIdentifier, signal)
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 128 + signal)
        let last = String(decoding: output, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        let name = signal == SIGINT ? "SIGINT" : "SIGTERM"
        #expect(last.contains("\"event\":\"result\"") && last.contains("stopped by \(name)"), "\(last)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
    }

    @Test func aSignalDuringScanExits143() throws {
        let dir = try job("{}")
        // 200 s of 60 fps video: minutes of scanning.
        let long = dir.appendingPathComponent("long.mp4").path
        _ = try ProcessRunner.check("ffmpeg", ["-v", "error", "-stream_loop", "19", "-i", dir.appendingPathComponent("input.mp4").path,
                                               "-c", "copy", long])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.mediafarmExecutable)
        process.arguments = ["scan", "--symbologies", "qr,ean13,code128", long]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        #expect(TestPaths.waitUntilOpen(long, by: process.processIdentifier), "the scan never opened \(long)")
        #expect(process.isRunning, "the scan ended before the signal: nothing was tested")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 143)
    }

    /// A SIGTERM sent as soon as the program runs code of its own (a second thread), long before the scan
    /// has opened its file, stops it with 143 all the same: the signal is caught from before `main` and the
    /// work, once started, is cancelled at once. (The signal handlers used to be installed only after the
    /// work's task had been started: a signal in between ended the process by the kernel's default action.)
    @Test func aSIGTERMBeforeTheScanStartsExits143() throws {
        let dir = try job("{}")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.mediafarmExecutable)
        process.arguments = ["scan", "--symbologies", "qr", dir.appendingPathComponent("input.mp4").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, !EarlySignalTests.runsItsOwnCode(process.processIdentifier), Date() < deadline { usleep(200) }
        #expect(process.isRunning, "the scan ended before the signal: nothing was tested")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 143,
                "\(process.terminationReason == .exit ? "exit" : "signal") \(process.terminationStatus)")
    }
}

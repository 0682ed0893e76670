import FarmTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Writers in different PID namespaces (containers, hosts) sharing one output folder: a live temporary
/// is recognised by the lock its writer holds, never by a process id.
@Suite struct SharedOutputTests {
    @Test(.enabled(if: getuid() == 0, "unshare --pid needs root"))
    func writersInTwoPIDNamespacesKeepEachOthersTemporaries() throws {
        let dir = try TestPaths.makeTemporaryFolder("namespaces")
        try FileManager.default.copyItem(atPath: MediaFixture.tone60MP4.path, toPath: dir.appendingPathComponent("input.mp4").path)
        let slow = dir.appendingPathComponent("slow.json")
        try #"""
        { "version": 1, "input": "input.mp4", "scale": [ { "start": 0, "duration": 10, "rate": 0.25 } ],
          "export": { "mode": "constantFrameRate", "output": "out/slow.mp4", "frameRate": 60, "video": { "preset": "medium" } } }
        """#.write(to: slow, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("out")

        // Writer A, in a PID namespace of its own, as pid 2 there (a shell is pid 1); writer B below is
        // pid 1 of its namespace, where no pid 2 exists: a check by process id would call A dead.
        let a = Process()
        a.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        a.arguments = ["--pid", "--fork", "--kill-child", "/bin/sh", "-c", "\"$0\" run \"$1\"; exit $?",
                       TestPaths.mediafarmExecutable, slow.path]
        a.standardOutput = FileHandle.nullDevice
        a.standardError = FileHandle.nullDevice
        try a.run()
        func temporaries() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).filter { $0.hasSuffix(".tmp") }
        }
        let deadline = Date().addingTimeInterval(60)
        while temporaries().isEmpty && a.isRunning && Date() < deadline { usleep(20_000) }
        let live = temporaries()
        #expect(live.count == 1, "writer A never made its temporary")

        // Writer B, in another PID namespace, writes into the same folder (and cleans it first) three times.
        for n in 0..<3 {
            let quick = dir.appendingPathComponent("quick\(n).json")
            try #"{ "version": 1, "input": "input.mp4", "export": { "mode": "passthrough", "output": "out/quick\#(n).mp4" } }"#
                .write(to: quick, atomically: true, encoding: .utf8)
            let b = try ProcessRunner.run("/usr/bin/unshare", ["--pid", "--fork", "--kill-child", TestPaths.mediafarmExecutable, "run", quick.path])
            #expect(b.status == 0, "\(b.stderr)")
            #expect(a.isRunning == false || temporaries() == live, "writer B removed writer A's live temporary")
        }
        #expect(a.isRunning, "writer A finished before writer B ran: the test proves nothing; make A slower")
        a.waitUntilExit()
        #expect(a.terminationStatus == 0, "writer A failed")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("slow.mp4").path))
        #expect(temporaries().isEmpty)
    }
}

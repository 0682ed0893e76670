import FarmSubmit
import FarmTestSupport
import Foundation
import Testing

/// No job's output may replace the farm's own files (the queue's database and its companions, which hold
/// the asset library too, an ingest state), whatever the manifest says, through every door: `submit`,
/// `run`, `batch`, ingest templates, the worker, and the coordinator's publication.
@Suite struct FarmFilesTests {
    /// A folder with clip.mp4 and a queue, farm.sqlite, holding one finished job.
    struct Farm {
        let dir: URL
        var queue: String { dir.appendingPathComponent("farm.sqlite").path }

        init(_ label: String) throws {
            dir = try TestPaths.makeTemporaryFolder("farm-files-\(label)")
            try FileManager.default.copyItem(atPath: MediaFixture.cfr30MP4.path, toPath: dir.appendingPathComponent("clip.mp4").path)
            try write(#"{ "version": 1, "name": "first", "input": "clip.mp4", "report": "first.json" }"#, "first.json.manifest")
            let first = try mediafarm(["submit", "--queue", "sqlite:" + queue, dir.appendingPathComponent("first.json.manifest").path])
            guard first.status == 0 else { throw FixtureError("submit: \(first.stderr)") }
            let run = try mediafarm(["coordinator", "--exit-when-idle", "--queue", "sqlite:" + queue])
            guard run.status == 0 else { throw FixtureError("coordinator: \(run.stderr)") }
        }

        func write(_ text: String, _ name: String) throws {
            try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }

        func mediafarm(_ args: [String]) throws -> ProcessResult {
            try ProcessRunner.run(TestPaths.mediafarmExecutable, args, currentDirectory: dir.path)
        }

        /// The queue is an intact SQLite database that MediaFarm still opens, with `jobs` jobs.
        func expectIntact(jobs: Int, _ comment: Comment) throws {
            let check = try ProcessRunner.run("/usr/bin/sqlite3", [queue, "PRAGMA integrity_check; SELECT count(*) FROM jobs"])
            #expect(check.stdout == "ok\n\(jobs)\n", comment)
            let status = try mediafarm(["status", "--json", "--queue", "sqlite:" + queue])
            #expect(status.status == 0, comment)
        }
    }

    @Test func submitRunAndBatchRefuseTheQueueAndItsCompanions() throws {
        let farm = try Farm("doors")
        for target in ["farm.sqlite", "farm.sqlite-wal", "farm.sqlite-shm", "sub/../farm.sqlite"] {
            try farm.write(#"{ "version": 1, "input": "clip.mp4", "report": "\#(target)", "overwrite": true }"#, "m.json")
            let submitted = try farm.mediafarm(["submit", "--queue", "sqlite:" + farm.queue, "--output-root", farm.dir.path, "m.json"])
            #expect(submitted.status == 2 && submitted.stderr.contains("$.report") && submitted.stderr.contains("the queue's database")
                    && submitted.stderr.contains("never replaces the farm's own files"), "submit \(target): \(submitted.stderr)")
        }
        // Without a queue, `run` knows the database by its first bytes.
        try farm.write(#"{ "version": 1, "input": "clip.mp4", "report": "farm.sqlite", "overwrite": true }"#, "m.json")
        let run = try farm.mediafarm(["run", "m.json"])
        #expect(run.status == 2 && run.stderr.contains("an SQLite database"), "run: \(run.stderr)")
        // A hard link to it under a report's name.
        #expect(link(farm.queue, farm.dir.appendingPathComponent("linked.json").path) == 0)
        try farm.write(#"{ "version": 1, "input": "clip.mp4", "report": "linked.json", "overwrite": true }"#, "m.json")
        #expect(try farm.mediafarm(["run", "m.json"]).status == 2)
        let batchDir = farm.dir.appendingPathComponent("batch")
        try FileManager.default.createDirectory(at: batchDir, withIntermediateDirectories: true)
        try #"{ "version": 1, "input": "../clip.mp4", "report": "../farm.sqlite", "overwrite": true }"#
            .write(to: batchDir.appendingPathComponent("b.json"), atomically: true, encoding: .utf8)
        let batch = try farm.mediafarm(["batch", "--output-root", farm.dir.path, batchDir.path])
        #expect(batch.status == 2 && batch.stderr.contains("an SQLite database"), "batch: \(batch.stderr)")
        try farm.expectIntact(jobs: 1, "after submit, run and batch")
    }

    /// A job whose manifest was changed in the queue after submission (by hand, or by an older version)
    /// is refused before it runs; a report path swapped for a link to the queue's `-shm` while the job
    /// runs is refused at publication, by identity.
    @Test func theCoordinatorAndThePublicationRefuseToo() throws {
        let farm = try Farm("layers")
        try farm.write(#"{ "version": 1, "input": "clip.mp4", "report": "placeholder.json", "overwrite": true }"#, "m.json")
        #expect(try farm.mediafarm(["submit", "--max-attempts", "1", "--queue", "sqlite:" + farm.queue, "m.json"]).status == 0)
        let edit = try ProcessRunner.run("/usr/bin/sqlite3", [farm.queue, "UPDATE jobs SET manifest = replace(manifest, 'placeholder.json', 'farm.sqlite') WHERE state = 'queued'"])
        #expect(edit.status == 0, "\(edit.stderr)")
        let refused = try farm.mediafarm(["coordinator", "--exit-when-idle", "--queue", "sqlite:" + farm.queue])
        #expect(refused.status == 1 && refused.stdout.contains("never replaces the farm's own files"), "\(refused.stdout) \(refused.stderr)")

        // A long export; once it is writing, its report's path becomes a link to the queue's -shm file.
        try FileManager.default.copyItem(atPath: MediaFixture.tone60MP4.path, toPath: farm.dir.appendingPathComponent("tone.mp4").path)
        try farm.write(#"""
            { "version": 1, "input": "tone.mp4", "scale": [ { "start": "0", "duration": "10", "rate": "1/4" } ],
              "export": { "mode": "constantFrameRate", "frameRate": 60, "output": "out/long.mp4", "video": { "preset": "medium" } },
              "report": "out/long.json" }
            """#, "long.json")
        #expect(try farm.mediafarm(["submit", "--max-attempts", "1", "--queue", "sqlite:" + farm.queue, "long.json"]).status == 0)
        let coordinator = try Background([TestPaths.mediafarmExecutable, "coordinator", "--exit-when-idle", "--queue", "sqlite:" + farm.queue],
                                         log: farm.dir.appendingPathComponent("coordinator.log").path)
        let out = farm.dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        #expect(!TestPaths.waitForTemporary(in: out, timeout: 60).isEmpty, "the export did not start: \(coordinator.log)")
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("long.json").path, withDestinationPath: farm.queue + "-shm")
        #expect(coordinator.wait(timeout: 120) == 1, "\(coordinator.log)")
        #expect(coordinator.log.contains("refusing to publish") && coordinator.log.contains("farm.sqlite-shm"), "\(coordinator.log)")
        try farm.expectIntact(jobs: 3, "after the coordinator and the publication refused")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.contains("mediafarm-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// An ingest template that would write over the ingest state: the file is not enqueued, the state intact.
    @Test func anIngestTemplateCannotNameTheIngestState() throws {
        let farm = try Farm("ingest")
        let incoming = farm.dir.appendingPathComponent("incoming")
        try FileManager.default.createDirectory(at: incoming, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: MediaFixture.movH264.path, toPath: incoming.appendingPathComponent("a.mov").path)
        try farm.write(#"{ "version": 1, "input": "{input}", "report": "state/ingest.sqlite", "overwrite": true }"#, "template.json")
        try farm.write(#"""
            { "version": 1, "watch": [ { "path": "incoming", "template": "template.json" } ], "settleSeconds": 0,
              "quarantine": "quarantine", "state": "state/ingest.sqlite", "outputRoots": ["."] }
            """#, "ingest.json")
        let ingest = ["ingest", "--config", "ingest.json", "--json", "--queue", "sqlite:" + farm.queue]
        #expect(try farm.mediafarm(ingest).status == 0)   // the file settles
        let pass = try farm.mediafarm(ingest)
        #expect(pass.status == 0 && pass.stdout.contains("would be invalid") && pass.stdout.contains("the ingest state")
                && pass.stdout.contains("never replaces the farm's own files"), "\(pass.stdout)\(pass.stderr)")
        let state = try ProcessRunner.run("/usr/bin/sqlite3", [farm.dir.appendingPathComponent("state/ingest.sqlite").path, "PRAGMA integrity_check"])
        #expect(state.stdout == "ok\n")
        try farm.expectIntact(jobs: 1, "nothing enqueued")
    }
}

import FarmTestSupport
import Foundation
import MediaCore
import MediaTime
import Synchronization
import Testing
@testable import MediaInspect
@testable import MediaCore

/// The asynchronous, per-key loading contract.
@Suite struct AssetLoadingTests {
    @Test func opensNothingUntilAsked() async throws {
        let asset = Asset(path: MediaFixture.cfr30MP4.path)
        #expect(asset.status(of: .duration).description == "notYetLoaded")
        #expect(asset.runCount(.probe) == 0)

        _ = try await asset.load(.tracks)
        #expect(asset.status(of: .tracks).isLoaded)
        #expect(asset.status(of: .duration).description == "notYetLoaded")   // tracks need no timing scan
        #expect(asset.runCount(.timing) == 0 && asset.runCount(.decoding) == 0)

        _ = try await asset.load(.duration)
        #expect(asset.status(of: .duration).isLoaded)
        #expect(asset.runCount(.probe) == 1)   // the probe is not repeated for a later key
    }

    @Test func tracksOutliveATemporaryAsset() async throws {
        weak var released: Asset?
        let tracks: [AssetTrack] = try await {
            let asset = Asset(path: MediaFixture.cfr30MP4.path)
            released = asset
            return try await asset.load(.tracks)
        }()
        #expect(released != nil)   // kept alive by its tracks
        let range = try await tracks[0].load(.timeRange)
        #expect(range.duration.isNumeric)
    }

    @Test func anAssetIsFreedWhenNothingHoldsIt() async throws {
        weak var released: Asset?
        do {
            let asset = Asset(path: MediaFixture.cfr30MP4.path)
            released = asset
            _ = try await asset.load(.tracks, .duration, .isPlayable)
        }
        #expect(released == nil)   // no cycle between an asset and its tracks or results
    }

    @Test func aLoadedKeyIsNotLoadedAgain() async throws {
        let asset = Asset(path: MediaFixture.cfr30MP4.path)
        let first = try await asset.load(.duration)
        let second = try await asset.load(.duration)
        #expect(first == second)
        #expect(asset.runCount(.timing) == 1)
    }

    @Test func concurrentLoadsShareOneStage() async throws {
        let asset = Asset(path: MediaFixture.longMP4.path)
        let durations = try await withThrowingTaskGroup(of: MediaTime.self) { group in
            for _ in 0..<8 { group.addTask { try await asset.load(.duration) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(durations).count == 1)
        #expect(asset.runCount(.timing) == 1)
        #expect(asset.runCount(.probe) == 1)
    }

    @Test func cancellationLeavesTheKeyLoadableAgain() async throws {
        var options = AssetOptions()
        options.pool = BlockingWorkPool(threads: 1)
        // Hold the only pool thread so that the load below is queued when it is cancelled.
        let release = Atomic<Bool>(false)
        let blocker = Task { try await options.pool.run { _ in while !release.load(ordering: .acquiring) { usleep(1000) } } }
        let asset = Asset(path: MediaFixture.cfr30MP4.path, options: options)
        let load = Task { try await asset.load(.duration) }
        while asset.status(of: .duration).description != "loading" { try await Task.sleep(for: .milliseconds(2)) }
        load.cancel()
        release.store(true, ordering: .releasing)
        await #expect(throws: CancellationError.self) { try await load.value }
        try await blocker.value
        #expect(asset.status(of: .duration).description == "cancelled")
        let duration = try await asset.load(.duration)
        #expect(duration.isNumeric)
        #expect(asset.status(of: .duration).isLoaded)
    }

    @Test func aFailedKeyStaysFailed() async throws {
        let asset = Asset(path: "/nonexistent/clip.mov")
        for _ in 0..<2 {
            do {
                _ = try await asset.load(.tracks)
                Issue.record("loaded a missing file")
            } catch let error as MediaFileError {
                guard case .notFound = error.reason else { Issue.record("wrong reason \(error)"); continue }
            }
        }
        guard case .failed = asset.status(of: .tracks) else { Issue.record("status \(asset.status(of: .tracks))"); return }
        #expect(asset.runCount(.probe) == 0)
    }

    @Test func largeFilesTrustAPlausibleHeader() async throws {
        var options = AssetOptions()
        options.fullScanLimitBytes = 0
        let asset = Asset(path: MediaFixture.clipAVI.path, options: options)
        let duration = try await asset.load(.duration)
        #expect(asset.snapshot.timing?.source == .header)
        #expect(abs(duration.seconds - 3) < 0.05)
    }

    @Test(arguments: [MediaFixture.cfr30MP4, .vfrMP4, .audioM4A, .movH264, .rotatedMP4, .longMP4, .tone60MP4, .vfrWithAudioMP4])
    func theSampleIndexAgreesWithAPacketScan(_ fixture: MediaFixture) throws {
        // MP4/MOV timing comes from the sample index; it must be what reading every packet measures.
        let file = try InputFile(path: fixture.path)
        let probe = ProbeResult(file: file)
        let indexed = try #require(TimingResult.fromIndex(file, probe: probe))
        let scanned = try TimingResult.scan(InputFile(path: fixture.path), probe: probe, packetLimit: nil)
        for s in probe.timedStreams {
            let a = try #require(indexed.tracks[s.index]), b = try #require(scanned.tracks[s.index])
            #expect(a.packetCount == b.packetCount && a.byteCount == b.byteCount, "\(fixture) track \(s.index)")
            #expect(a.minFrameDuration == b.minFrameDuration, "\(fixture) track \(s.index)")
            #expect(a.timeRange.start == b.timeRange.start, "\(fixture) track \(s.index): \(a.timeRange) vs \(b.timeRange)")
            // The index ends where the edit list ends; packets can run on by the padding of a last AAC frame.
            let slack = s.mediaType == .audio ? MediaTime(value: 1024, timescale: Int32(s.sampleRate)) : .zero
            #expect(!(b.timeRange.end < a.timeRange.end) && !(a.timeRange.end + slack < b.timeRange.end),
                    "\(fixture) track \(s.index): \(a.timeRange) vs \(b.timeRange)")
        }
        #expect(indexed.source == .index)
    }

    @Test func truncatedMovieIsReported() async throws {
        let source = try Data(contentsOf: URL(fileURLWithPath: MediaFixture.longMP4.path))
        let path = try TestPaths.makeTemporaryFolder("half").appendingPathComponent("half.mp4").path
        FileManager.default.createFile(atPath: path, contents: source.prefix(source.count / 2))
        let report = await AssetReport.inspect(Asset(path: path), keys: AssetKey.standard)
        let error = try #require(report.error)
        #expect(error.contains("half.mp4") && error.contains("truncated"))
        #expect(report.tracks?.count == 2)   // what could be read is still reported
    }
}

/// The real-world files in Tests/Fixtures/corpus (a failure when the folder is absent: it is part of the
/// repository).
@Suite struct CorpusTests {
    @Test func corpusIsPresent() {
        #expect(TestPaths.corpusFiles.count >= 10, "Tests/Fixtures/corpus is missing or empty: the corpus tests ran on nothing")
    }

    @Test func fragmentedMP4IsMeasuredNotTrusted() async throws {
        let corpus = try #require(TestPaths.corpus, "Tests/Fixtures/corpus is missing")
        var options = AssetOptions()
        options.fullScanLimitBytes = 0   // even when told to trust headers of large files
        let asset = Asset(path: corpus.appendingPathComponent("mp4_sample_fragmented.mp4").path, options: options)
        let duration = try await asset.load(.duration)
        #expect(duration.seconds > 1.0 && duration.seconds < 1.1, "fragmented MP4 measured \(duration)")
        #expect(asset.snapshot.timing?.source == .measured)
    }

    @Test(arguments: TestPaths.corpusFiles)
    func everyCorpusFileInspects(_ url: URL) async throws {
        let name = url.lastPathComponent
        let report = await AssetReport.inspect(Asset(path: url.path), keys: AssetKey.standard)
        if name == "vp9_invalid-bitstream.webm" {
            let error = try #require(report.error)
            #expect(error.contains(name) && error.contains("cannot be decoded"))
            #expect(report.isPlayable == false)
            return
        }
        #expect(report.error == nil, "\(name): \(report.error ?? "")")
        #expect(report.isPlayable == true)
        guard name != "mp4_sample_fragmented.mp4" else { return }
        // Expected length: ffprobe's track spans where it gives them, else its container duration.
        let probe = try FFprobeReport(path: url.path)
        let spans = probe.streams.compactMap { s -> (Double, Double)? in
            guard let start = FFprobeReport.double(s, "start_time"), let d = FFprobeReport.double(s, "duration") else { return nil }
            return (start, start + d)
        }
        let expected = spans.isEmpty ? FFprobeReport.double(probe.format, "duration")!
            : spans.map(\.1).max()! - spans.map(\.0).min()!
        let measured = try #require(report.duration).seconds
        #expect(abs(measured - expected) < 0.1, "\(name): measured \(measured), ffprobe \(expected)")
    }
}

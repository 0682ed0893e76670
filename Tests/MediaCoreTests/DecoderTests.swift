import FarmTestSupport
import Foundation
import Synchronization
import MediaTime
import Testing
@testable import MediaCore

@Suite struct DecoderTests {
    /// Decodes every frame of every stream and counts frames and audio samples.
    private func decodeAll(_ path: String) throws -> (frames: [Int], samples: [Int], errors: [FFmpegError]) {
        let file = try InputFile(path: path)
        let decoders = try file.streams.map { try Decoder(file: file, streamIndex: $0.index) }
        var frames = [Int](repeating: 0, count: decoders.count)
        var samples = [Int](repeating: 0, count: decoders.count)
        var errors: [FFmpegError] = []
        var packet = Packet()
        var frame = Frame()
        func drain(_ i: Int) {
            while true {
                do {
                    guard try decoders[i].receive(into: &frame) == .frame else { return }
                    frames[i] += 1
                    samples[i] += frame.sampleCount
                } catch {
                    errors.append(error)
                    return
                }
            }
        }
        while try file.read(into: &packet) == .packet {
            let i = packet.streamIndex
            do {
                while try decoders[i].send(packet) == .full { drain(i) }
            } catch {
                errors.append(error)
            }
            drain(i)
        }
        for i in decoders.indices {
            do { try decoders[i].sendEndOfStream() } catch { errors.append(error) }
            drain(i)
        }
        return (frames, samples, errors)
    }

    @Test func frameCountsMatchFFprobe() throws {
        for fixture in [MediaFixture.cfr30MP4, .vfrMP4, .movH264] {
            let (frames, _, errors) = try decodeAll(fixture.path)
            #expect(errors.isEmpty)
            let r = try ProcessRunner.check("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames",
                                                         "-of", "csv=p=0", fixture.path])
            let expected = r.stdout.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            #expect(frames == expected, "\(fixture)")
        }
    }

    @Test func audioSampleCountMatchesDuration() throws {
        let (_, samples, _) = try decodeAll(MediaFixture.audioWAV.path)
        #expect(samples == [66150])   // 1.5 s at 44.1 kHz
    }

    @Test func damagedBitstreamFailsCleanly() throws {
        let corpus = try #require(TestPaths.corpus, "Tests/Fixtures/corpus is missing")
        let (frames, _, errors) = try decodeAll(corpus.appendingPathComponent("vp9_invalid-bitstream.webm").path)
        #expect(frames == [0])
        #expect(!errors.isEmpty)
        #expect(errors.allSatisfy { $0 == .invalidData })
        // FFmpeg's own words come along with the code.
        #expect(errors.contains { $0.description.contains("vp9") })
    }
}

@Suite struct FFmpegErrorTests {
    @Test func namedCodesMatchByPattern() {
        let e = FFmpegError(code: FFmpegError.invalidData.code, operation: "x", detail: "[vp9 @ 0x1234] Invalid sync code")
        #expect(e == .invalidData)
        switch e as any Error {
        case FFmpegError.endOfFile: Issue.record("matched the wrong code")
        case FFmpegError.invalidData: break
        default: Issue.record("did not match")
        }
        #expect(e.description == "Invalid data found when processing input (vp9: Invalid sync code)")
        #expect(FFmpegError.notFound.posixErrno == 2)
        #expect(FFmpegError.endOfFile.message == "End of file")
    }
}

@Suite struct BlockingWorkPoolTests {
    @Test func runsOnDedicatedThreads() async throws {
        let pool = BlockingWorkPool(threads: 2)
        #expect(!BlockingWorkPool.isPoolThread)
        #expect(try await pool.run { _ in BlockingWorkPool.isPoolThread })
    }

    @Test func cancellationReachesTheWork() async throws {
        let pool = BlockingWorkPool(threads: 1)
        let started = Atomic<Bool>(false)
        let task = Task {
            try await pool.run { interrupter -> Interrupter.Reason? in
                started.store(true, ordering: .releasing)
                // A safety net only: a loaded test machine can starve the cancelling task for seconds.
                let deadline = Date().addingTimeInterval(300)
                while interrupter.reason == nil && Date() < deadline { usleep(1000) }
                return interrupter.reason
            }
        }
        while !started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        #expect(try await task.value == .cancelled)
    }

    @Test func stallLimitCountsFromTheLastProgress() {
        let now = FakeClock(1_000_000_000)
        let interrupter = Interrupter(stallLimit: .seconds(2), clock: { now.value.load(ordering: .relaxed) })
        now.value.add(1_900_000_000, ordering: .relaxed)
        #expect(interrupter.reason == nil)
        interrupter.progressed()
        // Work of any total length goes on while it progresses.
        for _ in 0..<100 {
            now.value.add(1_500_000_000, ordering: .relaxed)
            interrupter.progressed()
        }
        #expect(interrupter.reason == nil)
        now.value.add(2_000_000_001, ordering: .relaxed)
        #expect(interrupter.reason == .stalled(after: .seconds(2)))
        interrupter.progressed()
        #expect(interrupter.reason == nil)
        interrupter.cancel()
        #expect(interrupter.reason == .cancelled)
    }

    @Test func noStallLimitNeverStalls() {
        let now = FakeClock(0)
        let interrupter = Interrupter(stallLimit: nil, clock: { now.value.load(ordering: .relaxed) })
        now.value.add(1 << 62, ordering: .relaxed)
        #expect(interrupter.reason == nil)
    }
}

/// A monotonic clock the test moves by hand (nanoseconds).
final class FakeClock: Sendable {
    let value: Atomic<UInt64>
    init(_ start: UInt64) { value = Atomic(start) }
}

/// Bounds and refusals in the audio helpers: errors, never out-of-bounds reads or unstretched audio.
@Suite struct AudioHelperTests {
    @Test func audioFrameOutsideTheSamplesIsRefused() {
        let samples = AudioSamples(channelCount: 2, count: 100)
        #expect(throws: FFmpegError.self) { _ = try Frame(audio: samples, offset: 90, count: 20, sampleRate: 48000) }
        #expect(throws: FFmpegError.self) { _ = try Frame(audio: samples, offset: -1, count: 10, sampleRate: 48000) }
        #expect(throws: Never.self) { _ = try Frame(audio: samples, offset: 80, count: 20, sampleRate: 48000) }
    }

    @Test func rubberBandRefusalIsAnError() {
        let samples = AudioSamples(channelCount: 1, count: 4800)
        #expect(throws: TimeStretcher.Refused.self) {
            _ = try TimeStretcher.stretch(samples, sampleRate: 48000, timeRatio: .nan, engine: .finer) { _ in }
        }
        #expect(throws: TimeStretcher.Refused.self) {
            _ = try TimeStretcher.stretch(samples, sampleRate: 0, timeRatio: 2, engine: .faster) { _ in }
        }
    }
}

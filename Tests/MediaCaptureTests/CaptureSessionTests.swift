import FarmTestSupport
import Foundation
import MediaCapture
import Synchronization
import Testing

/// The capture session in-process (AVCaptureSession with AVCaptureMovieFileOutput): a synthetic source
/// recorded into segments, each renamed into place when finished, and exactly one terminal event.
@Suite struct CaptureSessionTests {
    @Test func aSyntheticSourceIsRecordedIntoSegmentsThenEndsAtItsMaximumDuration() throws {
        let folder = try TestPaths.makeTemporaryFolder("capture-session")
        let source = try CaptureSource.parse("lavfi:testsrc2=s=160x120:r=10")
        var configuration = CaptureConfiguration(source: source, outputDirectory: folder.path, captureID: "cam")
        configuration.segmentDuration = 1
        configuration.maxDuration = 3
        let events = Mutex<[CaptureEvent]>([])
        let session = CaptureSession(configuration: configuration) { event in events.withLock { $0.append(event) } }
        let summary = session.run()
        #expect(summary.reason == .maximumDurationReached && summary.successfullyFinished, "\(summary)")
        let segments = events.withLock { $0 }.compactMap { event -> SegmentReport? in if case .segment(let s) = event { s } else { nil } }
        #expect(segments.count == summary.segments && segments.count >= 3, "\(segments.map(\.path))")
        #expect(segments.map(\.index) == Array(1...segments.count))
        for segment in segments {
            #expect(FileManager.default.fileExists(atPath: segment.path), "\(segment.path)")
            #expect(segment.duration > 0 && segment.packets > 0)
        }
        let finished = events.withLock { $0 }.filter { if case .finished = $0 { true } else { false } }
        #expect(finished.count == 1)
        // Nothing left half-written: no partial segment, no temporary beside the segments.
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!names.contains { $0.hasSuffix(".partial") || $0.hasSuffix(".tmp") }, "\(names)")
        #expect(abs(segments.map(\.duration).reduce(0, +) - summary.duration) < 0.2, "\(segments.map(\.duration)) \(summary.duration)")
    }

    /// A box for the session its own event handler stops.
    final class SessionBox: Sendable {
        let session = Mutex<CaptureSession?>(nil)
    }

    @Test func aStoppedSessionFinishesItsSegmentAndSaysSo() throws {
        let folder = try TestPaths.makeTemporaryFolder("capture-session-stop")
        var configuration = CaptureConfiguration(source: try CaptureSource.parse("lavfi:testsrc2=s=160x120:r=10"), outputDirectory: folder.path,
                                                 captureID: "cam")
        configuration.segmentDuration = 60
        let box = SessionBox()
        let session = CaptureSession(configuration: configuration) { event in
            // Stopped (as SIGTERM stops it) once its source has started: the segment under way is finished.
            if case .started = event {
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { box.session.withLock { $0 }?.stop() }
            }
        }
        box.session.withLock { $0 = session }
        let summary = session.run()
        #expect(summary.reason == .sessionWasInterrupted && summary.segments == 1 && summary.successfullyFinished, "\(summary)")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("cam-00001.mp4").path),
                "\((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])")
    }
}

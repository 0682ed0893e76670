import FarmTestSupport
import Foundation
import MediaCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Live sources through `InputFile(live:)`: libavdevice's lavfi device, and a real MPEG-TS stream an
/// `ffmpeg -re` process sends over UDP on loopback.
@Suite struct LiveInputTests {
    @Test func aSyntheticDeviceIsReadPacketByPacket() throws {
        let input = try InputFile(live: "testsrc2=size=320x240:rate=30", format: "lavfi", options: [:], limits: .live(),
                                  interrupter: Interrupter(stallLimit: .seconds(5)))
        #expect(input.streams.count == 1 && input.streams[0].width == 320 && input.streams[0].height == 240)
        var packet = Packet()
        var pts: [Int64] = []
        for _ in 0..<30 where try input.read(into: &packet) == .packet { pts.append(packet.pts ?? -1) }
        #expect(pts.count == 30 && pts == pts.sorted() && Set(pts).count == 30, "\(pts)")
    }

    @Test func aUDPStreamSentByFFmpegIsReceived() throws {
        let port = TestPaths.freeLoopbackPort()
        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        sender.arguments = ["-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=10",
                            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-f", "mpegts", "udp://127.0.0.1:\(port)?pkt_size=1316"]
        try sender.run()
        defer { kill(sender.processIdentifier, SIGKILL); sender.waitUntilExit() }
        let input = try InputFile(live: "udp://127.0.0.1:\(port)", format: nil, options: [:], limits: .live(),
                                  interrupter: Interrupter(stallLimit: .seconds(5)))
        #expect(input.streams.first?.codecName == "h264" && input.streams.first?.width == 320, "\(input.streams)")
        var packet = Packet()
        var keyframes = 0, packets = 0
        while packets < 90, try input.read(into: &packet) == .packet {
            packets += 1
            if packet.isKeyframe { keyframes += 1 }
        }
        #expect(packets == 90 && keyframes >= 2, "\(packets) packets, \(keyframes) keyframes")
    }

    /// Nothing arrives: the open gives up after the stall limit, naming the source; never a hang.
    @Test func aSilentSourceIsGivenUpOnWithinItsTimeout() throws {
        let url = "udp://127.0.0.1:\(TestPaths.freeLoopbackPort())"
        let started = Date()
        #expect {
            _ = try InputFile(live: url, format: "mpegts", options: [:], limits: .live(), interrupter: Interrupter(stallLimit: .seconds(1)))
        } throws: { error in
            "\(error)".contains(url)
        }
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test func anUnknownDeviceIsNamed() throws {
        #expect {
            _ = try InputFile(live: "x", format: "no-such-device", options: [:], limits: .live(), interrupter: Interrupter(stallLimit: .seconds(1)))
        } throws: { error in
            "\(error)".contains("no-such-device")
        }
    }
}

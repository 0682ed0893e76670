import FarmTestSupport
import Foundation
import Testing
@testable import MediaCore

/// A picture turned by quarter turns (a phone's portrait clip made upright): one turn four times is the
/// picture again, two and three turns are one turn done twice and three times, a turn swaps the sides,
/// and the scaler's turned output is its scaled output turned.
@Suite struct PictureTurnTests {
    /// The first frame of `fixture`, 4:2:0 with an odd chroma size (161x121) to reach the planes' edges.
    static func firstFrame(_ fixture: MediaFixture) throws -> Frame {
        let file = try InputFile(path: fixture.path)
        let index = try #require(file.streams.first { $0.mediaType == .video }).index
        let decoder = try Decoder(file: file, streamIndex: index)
        var packet = Packet()
        var frame = Frame()
        while try file.read(into: &packet) == .packet {
            guard packet.streamIndex == index else { continue }
            _ = try decoder.send(packet)
            if try decoder.receive(into: &frame) == .frame { break }
        }
        var picture = Frame()
        try VideoScaler(outputFormat: "yuv420p").convert(frame, into: &picture)
        return picture
    }

    /// Every plane's samples, row by row, without the padding.
    static func planes(_ frame: borrowing Frame) -> [[UInt8]] {
        let f = frame.pointer.pointee
        var planes: [[UInt8]] = []
        withUnsafePointer(to: f.data) { data in
            withUnsafePointer(to: f.linesize) { sizes in
                let pointers = UnsafeRawPointer(data).assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
                let strides = UnsafeRawPointer(sizes).assumingMemoryBound(to: Int32.self)
                for plane in 0..<3 {
                    let (w, h) = plane == 0 ? (Int(f.width), Int(f.height)) : ((Int(f.width) + 1) / 2, (Int(f.height) + 1) / 2)
                    var samples: [UInt8] = []
                    for y in 0..<h { samples += UnsafeBufferPointer(start: pointers[plane]! + y * Int(strides[plane]), count: w) }
                    planes.append(samples)
                }
            }
        }
        return planes
    }

    static func turned(_ frame: borrowing Frame, _ turns: Int) throws -> Frame {
        var out = Frame()
        try VideoScaler.turn(frame, quarterTurns: turns, into: &out)
        return out
    }

    @Test func turnsComposeAndFourMakeTheSamePicture() throws {
        let picture = try Self.firstFrame(.oddSizeWebM)
        #expect((picture.width, picture.height) == (161, 121))
        let once = try Self.turned(picture, 1)
        #expect((once.width, once.height) == (121, 161))
        let twice = try Self.turned(once, 1), thrice = try Self.turned(twice, 1), four = try Self.turned(thrice, 1)
        #expect(Self.planes(four) == Self.planes(picture))
        #expect(Self.planes(try Self.turned(picture, 2)) == Self.planes(twice))
        #expect(Self.planes(try Self.turned(picture, 3)) == Self.planes(thrice))
        #expect(Self.planes(twice) != Self.planes(picture))
        // Clockwise: the top-left sample goes to the top-right.
        let luma = Self.planes(picture)[0], turnedLuma = Self.planes(once)[0]
        #expect(turnedLuma[120] == luma[0] && turnedLuma[0] == luma[120 * 161])
    }

    @Test func theScalerTurnsWhatItScaled() throws {
        let picture = try Self.firstFrame(.oddSizeWebM)
        var scaled = Frame(), turned = Frame()
        try VideoScaler(outputFormat: "yuv420p", width: 80, height: 60).convert(picture, into: &scaled)
        try VideoScaler(outputFormat: "yuv420p", width: 60, height: 80, quarterTurns: 1).convert(picture, into: &turned)
        #expect((turned.width, turned.height) == (60, 80))
        #expect(Self.planes(turned) == Self.planes(try Self.turned(scaled, 1)))
    }
}

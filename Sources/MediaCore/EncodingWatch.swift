import MediaTime

/// Sees what an export hands its encoders as it hands it over: its quality checks, so an export is checked
/// in the pass that makes it rather than in a read of the written file after. Called on the export's thread,
/// `begin` first; a throw fails the export.
public protocol EncodingWatch: AnyObject, Sendable {
    /// The export's pictures last `frameDuration` each; `audio` are the audio streams it encodes.
    func begin(frameDuration: MediaTime, audio: [WatchedAudio]) throws
    /// A picture about to be encoded, the `index`th of the output (it may keep a new reference, not the frame).
    func picture(_ frame: borrowing Frame, index: Int64) throws
    /// An audio packet as its encoder made it (time base 1/sample rate), before the muxer takes it.
    func audioPacket(stream: Int, _ packet: borrowing Packet) throws
    /// The export failed: nothing more comes, and what the watch holds can go.
    func abandon()
}

/// An audio stream an export encodes: its output stream index, its encoder, its format, and how many
/// samples it lasts (the encoder's padding past them is not the sound).
public struct WatchedAudio {
    public let stream: Int
    public let encoder: Encoder
    public let sampleRate: Int
    public let channels: Int
    public let samples: Int64

    public init(stream: Int, encoder: Encoder, sampleRate: Int, channels: Int, samples: Int64) {
        self.stream = stream
        self.encoder = encoder
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
    }
}

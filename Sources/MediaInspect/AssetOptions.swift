import MediaCore

/// How an `Asset` opens and measures its file.
public struct AssetOptions: Sendable {
    /// Bounds for untrusted input.
    public var limits: SafetyLimits = .default
    /// Files up to this size have their timing measured from every packet (exact durations and frame
    /// intervals). Larger files are measured too when their header durations are missing or
    /// implausible; otherwise the header is used and frame intervals come from the first packets.
    public var fullScanLimitBytes: Int64 = 512 << 20
    /// Packets read from the start of a large file to find its frame intervals.
    public var prefixScanPackets: Int = 4000
    /// Packets read at most while looking for each track's first decodable frame.
    public var decodeCheckPacketLimit: Int = 2000
    /// Where blocking FFmpeg work runs.
    public var pool: BlockingWorkPool = .shared

    public init() {}
}

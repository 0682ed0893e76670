import MediaTime

/// Bounds applied when opening untrusted media. The defaults suit a farm that takes files from anyone.
public struct SafetyLimits: Sendable, Hashable {
    /// Protocols FFmpeg may use; "file" only unless a manifest explicitly allows network sources.
    public var allowedProtocols: [String] = ["file"]
    /// Most streams a container may declare.
    public var maxStreams: Int = 16
    /// Largest frame width or height.
    public var maxDimension: Int = 8192
    /// Largest frame area in pixels (decoders refuse bigger frames too).
    public var maxPixels: Int = 40_000_000
    /// Bytes FFmpeg may read to identify the format and streams.
    public var probeSize: Int = 5_000_000
    /// Media time FFmpeg may analyse to find stream parameters.
    public var analyzeDuration: MediaTime = MediaTime(value: 5, timescale: 1)
    /// Longest duration accepted for one asset (measured, not taken from a header).
    public var maxDuration: MediaTime = MediaTime(value: 48 * 3600, timescale: 1)
    /// Wall-clock deadline for any one blocking operation on a file (open, probe, a whole scan).
    public var operationTimeout: Duration = .seconds(120)

    public init() {}

    public static let `default` = SafetyLimits()
}

import MediaCore
import MediaTime

/// Scans frames that something else decodes (a file scan, or a constant-frame-rate export that scans
/// as it goes, so that frames are decoded once): applies the scan interval, scans on worker threads,
/// and merges what it finds. Feed it from one thread, in presentation order, then call `finish`.
public final class FrameScanSession: @unchecked Sendable {  // unchecked: fed from one thread, as its contract says; its workers own the frames they scan
    // @unchecked: `submit` and `finish` are called from one thread at a time (the decoding thread);
    // the workers have their own synchronisation.
    private let configuration: CodeScanner.Configuration
    private let workers: ScanWorkers
    private var nextScan: MediaTime?
    public private(set) var framesScanned = 0

    public init(configuration: CodeScanner.Configuration, workers: Int) {
        self.configuration = configuration
        self.workers = ScanWorkers(configuration: configuration, workers: max(1, workers))
    }

    deinit { workers.shutDown() }

    /// Offers a frame shown at `time`; it is scanned unless the interval says to skip it.
    public func submit(time: MediaTime, frame: borrowing Frame) throws {
        if let next = nextScan, time < next { return }
        if configuration.interval > .zero {
            nextScan = (nextScan ?? time) + configuration.interval
            while let n = nextScan, !(time < n) { nextScan = n + configuration.interval }
        }
        try workers.submit(index: framesScanned, time: time, frame: frame)
        framesScanned += 1
    }

    /// Waits for the scans and returns the codes, merged across frames in presentation order.
    public func finish() throws -> [ScannedCode] {
        var aggregator = CodeAggregator()
        for detections in try workers.finish() { aggregator.add(detections) }
        return aggregator.codes
    }
}

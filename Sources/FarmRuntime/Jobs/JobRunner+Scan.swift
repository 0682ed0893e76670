import CodeScan
import FarmModel
import MediaEdit

/// A job's scan of its composition, when its export does not decode it anyway.
extension JobRunner {
    /// The scanner's configuration of a manifest's `"scan"`.
    static func scanConfiguration(_ settings: JobManifest.ScanSettings) throws -> CodeScanner.Configuration {
        let symbologies = try Symbology.fromManifest(settings.symbologies)
        let roi = settings.regionOfInterest.map(NormalizedRect.init) ?? .full
        return CodeScanner.Configuration(symbologies: symbologies, regionOfInterest: roi,
                                         interval: settings.interval, maxCodesPerFrame: settings.maxCodesPerFrame)
    }

    /// Scans every segment's source range; codes are timed on the composition's timeline.
    func scanCodes(_ settings: JobManifest.ScanSettings, composition: Composition) async throws -> ScanSummary {
        let configuration = try Self.scanConfiguration(settings)
        var aggregator = CodeAggregator()
        var framesScanned = 0
        let mapping = composition.timeMapping
        for (i, segment) in composition.segments.enumerated() {
            let report = try await FileScanner.scan(path: segment.source, configuration: configuration, range: segment.sourceRange,
                                                    mapTime: { mapping.targetTime(segment: i, source: $0) }, limits: limits, pool: pool)
            aggregator.merge(report.codes)
            framesScanned += report.framesScanned
        }
        return ScanSummary(decodedBy: "scan", symbologies: settings.symbologies, framesScanned: framesScanned, codes: aggregator.codes)
    }
}

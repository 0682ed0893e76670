import FarmLibrary
import FarmModel
import QualityModel
import Foundation

/// What a coordinator records in the asset library when a job succeeds: its exported output and pictures
/// as representations of its sources, and the codes its scan found on them.
struct LibraryRecorder: CoordinatorPart {
    let context: CoordinatorContext

    /// Registers the job's exported output as a representation of its sources (the assets it named, or
    /// input files this host registered), and the codes its scan found on them. Errors are notices: the
    /// job itself has succeeded.
    /// The lineage's parameters are the manifest as it was queued (with its asset ids). `outputHash`: the
    /// output's, when the coordinator has just read it (recording the job's result for reuse). `package`: the
    /// streaming package the job made (its result's), registered by its entry point as an asset of its own.
    /// `checks`: the result's quality checks, whose verdict the asset they were of keeps (the input, or the export).
    func registerInLibrary(_ claimed: ClaimedJob, outputHash: ContentHash? = nil, package: PackageSummary? = nil, checks: CheckReport? = nil) async {
        guard let library = configuration.library else { return }
        let (job, manifest, submitted) = (claimed.job, claimed.manifest, claimed.submitted)
        do {
            let sources = try await Self.sources(of: claimed, in: library)
            guard !sources.isEmpty else { return }
            try await library.recordJobInputs(job.id, sources)
            if let checks, !JobChecks.ofExport(manifest) { try await library.recordChecks(sources, checks, jobID: job.id) }
            if let report = manifest.report, manifest.scan != nil {
                let codes = Self.codes(inReport: report)
                for id in sources { try await library.recordCodes(id, codes) }
            }
            if let output = manifest.export?.output {
                let id = try await library.registerOutput(output, sources: sources, jobID: job.id, jobName: job.name, parameters: submitted,
                                                          hash: outputHash)
                events(.notice("job \(job.id): output \(output) registered in the library as \(id)"))
                if let checks, JobChecks.ofExport(manifest) { try await library.recordChecks([id], checks, jobID: job.id) }
                // Its poster (`export.poster`) is the output's.
                if let poster = manifest.export?.poster?.output {
                    let posterID = try await library.registerOutput(poster, sources: [id], jobID: job.id, jobName: job.name, parameters: submitted,
                                                                    kind: .poster)
                    events(.notice("job \(job.id): poster \(poster) of \(id) registered in the library as \(posterID)"))
                }
            }
            // A streaming package: an asset of its own, known by its entry point (the master playlist, else the MPD),
            // with the facts its job measured (inspection reads no playlist). Its pictures are the composition's.
            var pictured = sources
            if let stream = manifest.stream, let package, let entryPoint = package.entryPoints.first {
                let path = stream.output + "/" + entryPoint
                do {
                    let id = try await library.registerOutput(path, sources: sources, jobID: job.id, jobName: job.name, parameters: submitted,
                                                              kind: .package, facts: AssetFacts(package: package, entryPoint: entryPoint))
                    events(.notice("job \(job.id): package \(path) registered in the library as \(id)"))
                    pictured.append(id)
                } catch {
                    // Its pictures are still the sources'.
                    events(.notice("job \(job.id): the library did not record its package \(path): \(error)"))
                }
            }
            // Pictures of the input: its poster and its storyboard, by its first sheet (a picture the library can
            // read; the WebVTT file, the index and the other sheets are beside it).
            let firstSheet = manifest.storyboard.map { NumberedOutputs.path($0.sheetPattern, index: 1) }
            // A waveform drawn as a PNG (an SVG is no picture the library reads).
            let waveform = manifest.waveform.flatMap { $0.isSVG ? nil : $0.output }
            for (kind, path) in [(RepresentationKind.poster, manifest.poster?.output), (.storyboard, firstSheet), (.waveform, waveform)] {
                guard let path else { continue }
                let id = try await library.registerOutput(path, sources: pictured, jobID: job.id, jobName: job.name, parameters: submitted, kind: kind)
                events(.notice("job \(job.id): \(kind.rawValue) \(path) registered in the library as \(id)"))
            }
        } catch {
            events(.notice("job \(job.id): the library did not record its output: \(error)"))
        }
    }

    /// The assets a job read: those its manifest named, the input files this host registered, and those the
    /// queue recorded for it.
    static func sources(of claimed: ClaimedJob, in library: AssetLibrary) async throws -> [AssetID] {
        var sources = claimed.sources
        for id in try await library.assets(in: claimed.manifest.edits.map(\.source)) + library.jobInputs(claimed.job.id) where !sources.contains(id) {
            sources.append(id)
        }
        return sources
    }

    /// A job that failed after its checks of its input ran (failing them or not): the input assets keep them
    /// (a failed export was never published, so it is no asset). Errors are notices.
    func recordFailedChecks(_ claimed: ClaimedJob, checks: CheckReport) async {
        guard let library = configuration.library, !JobChecks.ofExport(claimed.manifest) else { return }
        do {
            try await library.recordChecks(try await Self.sources(of: claimed, in: library), checks, jobID: claimed.job.id)
        } catch {
            events(.notice("job \(claimed.job.id): the library did not record its checks' verdict: \(error)"))
        }
    }

    /// The codes in a job's report (`scan.codes`), as the library keeps them: the payload's text, or its
    /// bytes in base64 when they are no text.
    static func codes(inReport path: String) -> [LibraryCode] {
        struct Report: Decodable {
            struct Scan: Decodable { var codes: [LibraryCode]? }
            var scan: Scan?
        }
        // A report that is not the engine's (replaced since it was published) has no codes to record.
        guard let data = FileManager.default.contents(atPath: path), let report = try? JSONDecoder().decode(Report.self, from: data) else { return [] }
        return (report.scan?.codes ?? []).map { code in
            LibraryCode(symbology: code.symbology, payload: code.payload, payloadBase64: code.payload == nil ? code.payloadBase64 : nil)
        }
    }
}

import FarmLibrary
import FarmModel
import Foundation

/// The asset library as a coordinator uses it: `asset:ID` inputs resolved to this host's paths before the
/// worker starts, and a successful job's output and codes recorded afterwards.
extension Coordinator {
    /// An input (a library asset, another job's result) that could not be put in before the worker starts.
    struct InputFailure: Error {
        var message: String
        /// It may be there on a later attempt (another host, the queue answering again): the attempt is retried.
        var retry: Bool
    }

    /// The manifest with each `asset:ID` replaced by this host's path, and the ids.
    func resolveAssets(_ document: JSONValue) async -> Result<(JSONValue, [AssetID]), InputFailure> {
        guard let library = configuration.library else {
            return .failure(InputFailure(message: "the manifest names assets (asset:ID) but this coordinator has no asset library", retry: false))
        }
        do {
            return .success(try await library.resolveManifest(document))
        } catch {
            if case .unknownAsset = error { return .failure(InputFailure(message: error.description, retry: false)) }
            return .failure(InputFailure(message: error.description, retry: true))
        }
    }

    /// The manifest with each input or edit source that is no longer at its path replaced by where the
    /// library has the same bytes now on this host (a file renamed after its job was queued, which ingest
    /// or `library add` saw at its new name). Each change is a notice.
    func followRenamedInputs(_ job: Job, _ document: JSONValue) async -> JSONValue {
        guard let library = configuration.library else { return document }
        var replacements: [String: String] = [:]
        for source in Set(document.manifestSources) where !source.isEmpty && !source.hasPrefix(AssetID.scheme) {
            let path = PathRules.resolve(source, against: job.baseDirectory)
            let relocation: (AssetID, String)?
            do {
                relocation = try await library.relocation(of: path)
            } catch {
                events(.notice("job \(job.id): cannot ask the library where \(path) went (\(error)); the job reads it where it was"))
                continue
            }
            guard let (id, now) = relocation else { continue }
            events(.notice("job \(job.id): \(path) is gone; the same content (\(id)) is at \(now): the job reads it there"))
            replacements[source] = now
        }
        return document.replacingManifestSources(replacements)
    }

    /// Registers the job's exported output as a representation of its sources (the assets it named, or
    /// input files this host registered), and the codes its scan found on them. Errors are notices: the
    /// job itself has succeeded.
    /// `submitted`: the manifest as it was queued (with its asset ids), the lineage's parameters.
    /// `outputHash`: the output's, when the coordinator has just read it (recording the job's result for reuse).
    func registerInLibrary(_ job: Job, manifest: JobManifest, submitted: String, sources named: [AssetID], outputHash: ContentHash? = nil) async {
        guard let library = configuration.library else { return }
        do {
            var sources = named
            for id in try await library.assets(in: manifest.edits.map(\.source)) + library.jobInputs(job.id) where !sources.contains(id) {
                sources.append(id)
            }
            guard !sources.isEmpty else { return }
            try await library.recordJobInputs(job.id, sources)
            if let report = manifest.report, manifest.scan != nil {
                let codes = Self.codes(inReport: report)
                for id in sources { try await library.recordCodes(id, codes) }
            }
            if let output = manifest.export?.output {
                let id = try await library.registerOutput(output, sources: sources, jobID: job.id, jobName: job.name, parameters: submitted,
                                                          hash: outputHash)
                events(.notice("job \(job.id): output \(output) registered in the library as \(id)"))
                // Its poster (`export.poster`) is the output's.
                if let poster = manifest.export?.poster?.output {
                    let posterID = try await library.registerOutput(poster, sources: [id], jobID: job.id, jobName: job.name, parameters: submitted,
                                                                    kind: .poster)
                    events(.notice("job \(job.id): poster \(poster) of \(id) registered in the library as \(posterID)"))
                }
            }
            // Pictures of the input: its poster and its storyboard, by its first sheet (a picture the library can
            // read; the WebVTT file, the index and the other sheets are beside it).
            let firstSheet = manifest.storyboard.map { NumberedOutputs.path($0.sheetPattern, index: 1) }
            // A waveform drawn as a PNG (an SVG is no picture the library reads).
            let waveform = manifest.waveform.flatMap { $0.isSVG ? nil : $0.output }
            for (kind, path) in [(RepresentationKind.poster, manifest.poster?.output), (.storyboard, firstSheet), (.waveform, waveform)] {
                guard let path else { continue }
                let id = try await library.registerOutput(path, sources: sources, jobID: job.id, jobName: job.name, parameters: submitted, kind: kind)
                events(.notice("job \(job.id): \(kind.rawValue) \(path) registered in the library as \(id)"))
            }
        } catch {
            events(.notice("job \(job.id): the library did not record its output: \(error)"))
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

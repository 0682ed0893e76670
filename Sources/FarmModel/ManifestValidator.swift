import MediaTime

/// Turns manifest JSON into a `JobManifest`, or reports every problem with its JSON path. Pure: paths
/// are resolved lexically, and symbolic links only through `ManifestContext.realPath`.
public enum ManifestValidator {
    public static func validate(json bytes: [UInt8], file: String? = nil,
                                context: ManifestContext) -> Result<JobManifest, ManifestValidationError> {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            return .failure(ManifestValidationError(file: file, issues: [ManifestIssue(path: "$", message: error.description)]))
        }
        return validate(document, file: file, context: context)
    }

    public static func validate(_ document: JSONValue, file: String? = nil,
                                context: ManifestContext) -> Result<JobManifest, ManifestValidationError> {
        var w = Walker(context: context)
        let manifest = w.manifest(document)
        if let manifest, w.issues.isEmpty { return .success(manifest) }
        var error = ManifestValidationError(file: file, issues: w.issues)
        error.assets = w.assets
        return .failure(error)
    }
}

/// Walks the document once, collecting issues; returns nil for parts it could not read.
struct Walker {
    let context: ManifestContext
    var issues: [ManifestIssue] = []
    /// The jobs whose results the inputs name (`job:KEY#output`).
    var jobInputs: [JobReference] = []
    /// The assets the inputs name (`asset:ID`), at their JSON paths, whether or not the rest is valid.
    var assets: [(path: String, id: AssetID)] = []

    init(context: ManifestContext) { self.context = context }

    mutating func fail(_ path: String, _ message: String) {
        issues.append(ManifestIssue(path: path, message: message))
    }

    // MARK: - Shapes

    /// The members of an object, reporting unknown and duplicate keys. `hidden` keys are accepted but not
    /// listed to users (the coordinator sets them on the jobs it makes).
    mutating func object(_ value: JSONValue, _ path: String, allowed: [String], hidden: [String] = []) -> [String: JSONValue]? {
        guard case .object(let members) = value else {
            fail(path, "expected an object, found \(value.kindName)")
            return nil
        }
        var result: [String: JSONValue] = [:]
        for (key, member) in members {
            if result[key] != nil { fail("\(path).\(key)", "the key \"\(key)\" appears twice") }
            if key == "overwrite" && path != "$" {
                fail("\(path).\(key)", "\"overwrite\" belongs at the manifest's top level, beside \"version\"")
            } else if !allowed.contains(key) && !hidden.contains(key) {
                let hint = Suggestion.hint(key, in: allowed)
                fail("\(path).\(key)", "unknown key \"\(key)\"\(hint); allowed here: \(allowed.joined(separator: ", "))")
            }
            result[key] = member
        }
        return result
    }

    mutating func string(_ value: JSONValue?, _ path: String, required: Bool = false) -> String? {
        guard let value else {
            if required { fail(path, "is required") }
            return nil
        }
        guard case .string(let s) = value else { fail(path, "expected a string, found \(value.kindName)"); return nil }
        guard !s.isEmpty else { fail(path, "must not be empty"); return nil }
        guard !s.contains("\0") else { fail(path, "must not contain a NUL character"); return nil }
        return s
    }

    mutating func enumeration<E: RawRepresentable & CaseIterable>(_ value: JSONValue?, _ path: String, _ type: E.Type,
                                                                   required: Bool = false) -> E? where E.RawValue == String {
        guard let s = string(value, path, required: required) else { return nil }
        guard let e = E(rawValue: s) else {
            let names = E.allCases.map(\.rawValue)
            let hint = Suggestion.hint(s, in: names)
            fail(path, "\"\(s)\" is not one of \(names.joined(separator: ", "))\(hint)")
            return nil
        }
        return e
    }

    mutating func integer(_ value: JSONValue?, _ path: String, in range: ClosedRange<Int>) -> Int? {
        guard let value else { return nil }
        guard case .number(let text) = value, let i = Int(text) else {
            fail(path, "expected a whole number, found \(value.kindName == "a number" ? "a fraction" : value.kindName)")
            return nil
        }
        guard range.contains(i) else { fail(path, "\(i) is outside \(range.lowerBound)...\(range.upperBound)"); return nil }
        return i
    }

    mutating func boolean(_ value: JSONValue?, _ path: String) -> Bool? {
        guard let value else { return nil }
        guard case .bool(let b) = value else { fail(path, "expected true or false, found \(value.kindName)"); return nil }
        return b
    }

    mutating func fraction(_ value: JSONValue?, _ path: String) -> Double? {
        guard let value else { return nil }
        guard case .number(let text) = value else {
            fail(path, "expected a number, found \(value.kindName)")
            return nil
        }
        guard let d = Double(text), d.isFinite else {
            fail(path, "\(text) is too large to be read as a number")
            return nil
        }
        return d
    }

    /// A time: seconds (number or string), "5/2", or "00:00:02.500".
    mutating func time(_ value: JSONValue?, _ path: String, required: Bool = false, positive: Bool = false) -> MediaTime? {
        guard let value else {
            if required { fail(path, "is required") }
            return nil
        }
        let text: String
        switch value {
        case .number(let n): text = n
        case .string(let s): text = s
        default:
            fail(path, "expected a time (seconds like 2.5, \"5/2\" or \"00:00:02.500\"), found \(value.kindName)")
            return nil
        }
        let t: MediaTime
        do { t = try MediaTime(parsing: text) } catch { fail(path, error.description); return nil }
        if t < .zero { fail(path, "must not be negative"); return nil }
        if positive && t == .zero { fail(path, "must be greater than zero"); return nil }
        if t > MediaTime(value: 48 * 3600, timescale: 1) { fail(path, "must be at most 48 hours"); return nil }
        return t
    }

    mutating func path(_ value: JSONValue?, _ jsonPath: String, required: Bool = false, output: Bool = false) -> String? {
        guard let raw = string(value, jsonPath, required: required) else { return nil }
        if let reference = JobOutputReference.parse(raw) {
            // Another job's result: that job becomes a dependency; its path is put in when this job is due.
            switch reference {
            case .success(let r) where !output:
                if !jobInputs.contains(r.job) { jobInputs.append(r.job) }
                return raw
            case .success: fail(jsonPath, "an output is a path, not another job's result")
            case .failure(let error): fail(jsonPath, error.description)
            }
            return nil
        }
        if let reference = AssetID.reference(raw) {
            // An asset of the library: its host resolves it to a path when the job runs.
            switch reference {
            case .success(let id) where !output:
                assets.append((jsonPath, id))
                return id.reference
            case .success: fail(jsonPath, "an output is a path, not an asset: the library registers what a job makes")
            case .failure(let error): fail(jsonPath, error.description)
            }
            return nil
        }
        if PathRules.isObject(raw) {
            if let problem = PathRules.objectAddressProblem(raw) { fail(jsonPath, "\(raw): \(problem)"); return nil }
            if raw.hasSuffix("/") { fail(jsonPath, "must name an object, not a prefix"); return nil }
            // An object is inside an output root that is an object prefix (no links to follow).
            if output, !context.outputRoots.contains(where: { PathRules.isObject($0) && PathRules.isInside(raw, root: $0) }) {
                fail(jsonPath, "\"\(raw)\" is outside the output roots (\(context.outputRoots.joined(separator: ", "))); " + context.outputRootsWayOut)
                return nil
            }
            return raw
        }
        let resolved = PathRules.resolve(raw, against: context.baseDirectory)
        guard output else { return resolved }
        if raw.hasSuffix("/") { fail(jsonPath, "must name a file, not a folder"); return nil }
        let fileRoots = context.outputRoots.filter { !PathRules.isObject($0) }
        let lexicallyInside = fileRoots.contains { PathRules.isInside(resolved, root: $0) }
        let real = context.realPath(resolved)
        let reallyInside = fileRoots.contains { PathRules.isInside(real, root: context.realPath($0)) }
        guard lexicallyInside && reallyInside else {
            let via = lexicallyInside ? " through a symbolic link" : ""
            fail(jsonPath, "\"\(raw)\" resolves to \(real)\(via), outside the output roots (\(context.outputRoots.joined(separator: ", "))); "
                 + context.outputRootsWayOut)
            return nil
        }
        return resolved
    }

    /// A rate as a number or a string ("0.25", "1/4"); the result is exact.
    mutating func rate(_ value: JSONValue, _ path: String) -> Rational? {
        let text: String
        switch value {
        case .number(let n): text = n
        case .string(let s): text = s
        default: fail(path, "expected a rate like 0.25 or \"1/4\", found \(value.kindName)"); return nil
        }
        guard let t = try? MediaTime(parsing: text), t > .zero,  // any failure is the one message below
              let r = MediaTime.ratio(t, MediaTime(value: 1, timescale: 1)) else {
            fail(path, "\"\(text)\" is not a positive rate like 0.25 or \"1/4\"")
            return nil
        }
        return r
    }

    // MARK: - The manifest

    mutating func manifest(_ root: JSONValue) -> JobManifest? {
        let keys = ["version", "name", "input", "edits", "scale", "audio", "scan", "export", "stream", "report", "overwrite", "after", "afterPolicy", "requires", "notify", "reuse", "checks"] + Self.pictureKeys
        guard let o = object(root, "$", allowed: keys) else { return nil }

        if let v = o["version"] {
            if case .number("1") = v {} else { fail("$.version", "must be 1 (the only manifest version), found \(v.kindName == "a number" ? v.numberText : v.kindName)") }
        } else {
            fail("$.version", "is required (use 1)")
        }
        let name = string(o["name"], "$.name") ?? context.defaultName
        if name.count > 200 { fail("$.name", "must be at most 200 characters") }

        var edits: [JobManifest.Edit] = []
        switch (o["input"], o["edits"]) {
        case (nil, nil): fail("$", "needs \"input\" (a file) or \"edits\" (pieces of files)")
        case (.some, .some): fail("$.edits", "\"input\" and \"edits\" cannot both be given; use one")
        case (let input?, nil):
            if let source = path(input, "$.input") { edits = [JobManifest.Edit(source: source, path: "$.input")] }
        case (nil, let list?):
            edits = self.edits(list)
        }

        var scale: [JobManifest.ScaleRange] = []
        if let s = o["scale"] { scale = self.scale(s) }
        var audio = JobManifest.AudioSettings()
        if let a = o["audio"], let ao = object(a, "$.audio", allowed: ["timePitch"]) {
            audio.timePitch = enumeration(ao["timePitch"], "$.audio.timePitch", TimePitchAlgorithm.self) ?? .spectral
        }
        var scan: JobManifest.ScanSettings?
        if let s = o["scan"] { scan = self.scan(s) }
        var export: JobManifest.ExportSettings?
        if let e = o["export"] { export = self.export(e) }
        let stream = self.stream(in: o)
        let images = o["images"].flatMap { self.images($0) }
        let poster = o["poster"].flatMap { self.poster($0) }
        let storyboard = o["storyboard"].flatMap { self.storyboard($0) }
        let waveform = o["waveform"].flatMap { self.waveform($0) }
        let checks = o["checks"].flatMap { self.checks($0) }
        if let checks { checkSubject(checks, o, export: export, stream: stream) }
        checkPictureInput(o)
        checkChunkedStoryboard(o, storyboard)
        let report = path(o["report"], "$.report", output: true)

        if !scale.isEmpty && export == nil && stream == nil { fail("$.scale", "retiming needs an \"export\" or \"stream\" section to write the result") }
        if let export, let report, export.output == report { fail("$.report", "is the same file as $.export.output") }

        var overwrite = false
        if let v = o["overwrite"] {
            if case .bool(let b) = v { overwrite = b } else { fail("$.overwrite", "expected true or false, found \(v.kindName)") }
            if overwrite, let issue = context.overwriteRefusal { fail(issue.path, issue.message) }
        }
        // The key file is read like a source: no output may replace it.
        let inputs = edits.map { ($0.path, $0.source) } + (stream?.encryption.map { [("$.stream.encryption.keyFile", $0.keyFile)] } ?? [])
        checkInputsExist(inputs)
        let outputs = Self.fixedOutputs(export: export, stream: stream, report: report, poster: poster, waveform: waveform, storyboard: storyboard, images: images)
        checkOutputs(outputs, inputs: inputs, overwrite: overwrite)
        if let stream { checkPackageFolder(stream.output, inputs: inputs, outputs: outputs, patterns: [("$.images.output", images?.output),
            ("$.storyboard.output", storyboard?.sheetPattern), ("$.scan.images.output", scan?.images?.output)]) }
        checkPatterns(images: images, storyboard: storyboard, scanImages: scan?.images, fixed: outputs)
        var after = o["after"].map { self.after($0) } ?? []
        after += jobInputs.filter { !after.contains($0) }
        let afterPolicy = enumeration(o["afterPolicy"], "$.afterPolicy", AfterPolicy.self) ?? .success
        let requires = o["requires"].map { self.requires($0) } ?? []
        let notify = o["notify"].map { self.notify($0) } ?? []
        var reuse: Bool?
        if let v = o["reuse"] {
            if case .bool(let b) = v { reuse = b } else { fail("$.reuse", "expected true or false, found \(v.kindName)") }
        }
        return JobManifest(version: 1, name: name, edits: edits, scale: scale, audio: audio, scan: scan, export: export, stream: stream,
                           images: images, poster: poster, storyboard: storyboard, waveform: waveform, checks: checks, report: report, overwrite: overwrite,
                           baseDirectory: context.baseDirectory, after: after, afterPolicy: afterPolicy, requires: requires, notify: notify,
                           reuse: reuse)
    }

    /// Each input file named by path must be there, when the context says how to get past it if not.
    mutating func checkInputsExist(_ inputs: [(String, String)]) {
        guard let wayOut = context.missingInputWayOut else { return }
        var checked = Set<String>()
        for (jsonPath, source) in inputs where AssetID.reference(source) == nil && JobOutputReference.parse(source) == nil
            && !PathRules.isObject(source) && checked.insert(source).inserted {
            if context.fileIdentity(source)?.exists != true { fail(jsonPath, "\(source): no such file (\(wayOut))") }
        }
    }

    /// The outputs with fixed names, each with its JSON path (numbered pictures are checked as patterns).
    static func fixedOutputs(export: JobManifest.ExportSettings?, stream: JobManifest.StreamSettings?, report: String?, poster: JobManifest.PosterSettings?,
                             waveform: JobManifest.WaveformSettings?, storyboard: JobManifest.StoryboardSettings?,
                             images: JobManifest.ImagesSettings?) -> [(String, String)] {
        var outputs: [(String, String)] = []
        if let output = export?.output { outputs.append(("$.export.output", output)) }
        if let package = stream?.output { outputs.append(("$.stream.output", package)) }
        if let report { outputs.append(("$.report", report)) }
        if let poster { outputs.append(("$.poster.output", poster.output)) }
        if let exportPoster = export?.poster { outputs.append(("$.export.poster.output", exportPoster.output)) }
        if let waveform {
            outputs.append(("$.waveform.output", waveform.output))
            if let peaks = waveform.peaks { outputs.append(("$.waveform.peaks", peaks)) }
        }
        if let storyboard { outputs += [("$.storyboard.output", storyboard.output), ("$.storyboard.output", storyboard.indexPath)] }
        if let images, images.staticCount == 1 { outputs.append(("$.images.output", NumberedOutputs.path(images.output, index: 1))) }
        return outputs
    }

    /// The package's folder is published whole and replaced whole: nothing else the job writes may be in it,
    /// and it may not hold an output root (it would replace everything under it).
    mutating func checkPackageFolder(_ package: String, inputs: [(String, String)], outputs: [(String, String)], patterns: [(String, String?)]) {
        for (jsonPath, source) in inputs where PathRules.isInside(source, root: package) {
            fail("$.stream.output", "holds the input \(jsonPath) (\(source)): a package's folder is replaced whole, so no input may be inside it")
        }
        for (jsonPath, path) in outputs + patterns.compactMap({ p in p.1.map { (p.0, $0) } })
        where jsonPath != "$.stream.output" && PathRules.isInside(path, root: package) {
            fail(jsonPath, "is inside the package's folder $.stream.output, which is published and replaced whole: write it beside the package")
        }
        for root in context.outputRoots where !PathRules.isObject(root) && PathRules.isInside(PathRules.resolve(root, against: context.baseDirectory), root: package) {
            fail("$.stream.output", "\(package) is the output root \(root) or holds it: a package's folder is replaced whole, so it must be a folder inside a root")
        }
    }

    /// `"notify"`: http(s) URLs that receive the job's terminal events, at most 16.
    mutating func notify(_ value: JSONValue) -> [WebhookURL] {
        guard case .array(let items) = value else {
            fail("$.notify", "expected an array of URLs like [\"https://hooks.example.com/farm\"], found \(value.kindName)")
            return []
        }
        if items.count > 16 { fail("$.notify", "names \(items.count) URLs; at most 16") }
        var urls: [WebhookURL] = []
        for (i, item) in items.enumerated() {
            guard let text = string(item, "$.notify[\(i)]") else { continue }
            switch WebhookURL.parse(text) {
            case .success(let url): if !urls.contains(url) { urls.append(url) }
            case .failure(let problem): fail("$.notify[\(i)]", problem.message)
            }
        }
        return urls
    }

    /// `"requires"`: host capabilities, as `coordinator --provides` names them.
    mutating func requires(_ value: JSONValue) -> [String] {
        guard case .array(let items) = value else {
            fail("$.requires", "expected an array of capabilities like [\"gpu\"], found \(value.kindName)")
            return []
        }
        if items.count > 64 { fail("$.requires", "names \(items.count) capabilities; at most 64") }
        var tags: [String] = []
        for (i, item) in items.enumerated() {
            guard let tag = string(item, "$.requires[\(i)]") else { continue }
            if let problem = HostCapability.problem(tag) { fail("$.requires[\(i)]", problem) } else if !tags.contains(tag) { tags.append(tag) }
        }
        return tags
    }

    /// `"after"`: job ids (numbers) and unique keys (strings), at most 10,000.
    mutating func after(_ value: JSONValue) -> [JobReference] {
        guard case .array(let items) = value else {
            fail("$.after", "expected an array of job ids and unique keys, found \(value.kindName)")
            return []
        }
        if items.count > 10_000 { fail("$.after", "names \(items.count) jobs; at most 10000") }
        var result: [JobReference] = []
        for (i, item) in items.enumerated() {
            let p = "$.after[\(i)]"
            switch item {
            case .number(let text):
                if let id = Int64(text), id > 0 { result.append(.id(id)) } else { fail(p, "\(text) is not a job id (a positive whole number)") }
            case .string(let key):
                if key.isEmpty { fail(p, "must not be empty") } else if key.count > 500 { fail(p, "a unique key has at most 500 characters") }
                else { result.append(.key(key)) }
            default:
                fail(p, "expected a job id (a number) or a unique key (a string), found \(item.kindName)")
            }
        }
        var seen = Set<JobReference>()
        return result.filter { seen.insert($0).inserted }
    }

    /// No output may be an input (by path, or by identity: another spelling, a symbolic link, a hard
    /// link); an existing output needs `"overwrite": true` when the context refuses existing outputs.
    mutating func checkOutputs(_ outputs: [(String, String)], inputs: [(String, String)], overwrite: Bool) {
        var inputIdentities: [(String, String, FileIdentity?)] = []
        for (jsonPath, path) in inputs where !inputIdentities.contains(where: { $0.1 == path }) {
            inputIdentities.append((jsonPath, path, context.fileIdentity(path)))
        }
        var seen: [(String, String, FileIdentity?)] = []
        for (jsonPath, path) in outputs {
            let identity = context.fileIdentity(path)
            defer { seen.append((jsonPath, path, identity)) }
            if let farmFile = context.protectedFile(path) {
                fail(jsonPath, "\(path) is \(farmFile): an output never replaces the farm's own files; choose another path")
            } else if let other = seen.first(where: { $0.1 != path && identity != nil && $0.2 == identity }) {
                fail(jsonPath, "is the same file as \(other.0) (\(path) and \(other.1) are one file)")
            } else if let input = inputIdentities.first(where: { $0.1 == path || (identity != nil && $0.2 == identity) }) {
                let how = input.1 == path ? "" : " (\(path) and \(input.1) are one file)"
                fail(jsonPath, "would overwrite the input \(input.0)\(how): an export never replaces its own source")
            } else if context.refuseExistingOutputs, !overwrite, identity?.exists == true {
                fail(jsonPath, "\(path) already exists; set \"overwrite\": true at the manifest's top level to replace it")
            }
        }
    }

    mutating func edits(_ value: JSONValue) -> [JobManifest.Edit] {
        guard case .array(let items) = value else { fail("$.edits", "expected an array of edits, found \(value.kindName)"); return [] }
        if items.isEmpty { fail("$.edits", "must hold at least one edit") }
        var result: [JobManifest.Edit] = []
        for (i, item) in items.enumerated() {
            let p = "$.edits[\(i)]"
            guard let o = object(item, p, allowed: ["source", "start", "duration"]) else { continue }
            let source = path(o["source"], "\(p).source", required: true)
            let start = time(o["start"], "\(p).start") ?? .zero
            let duration = time(o["duration"], "\(p).duration", positive: true)
            if let source { result.append(JobManifest.Edit(source: source, start: start, duration: duration, path: "\(p).source")) }
        }
        return result
    }

    mutating func scale(_ value: JSONValue) -> [JobManifest.ScaleRange] {
        guard case .array(let items) = value else { fail("$.scale", "expected an array of ranges, found \(value.kindName)"); return [] }
        var result: [(Int, JobManifest.ScaleRange)] = []
        let minRate = Rational(1, 32), maxRate = Rational(32, 1)
        for (i, item) in items.enumerated() {
            let p = "$.scale[\(i)]"
            guard let o = object(item, p, allowed: ["start", "duration", "toDuration", "rate"]) else { continue }
            let start = time(o["start"], "\(p).start", required: true)
            let duration = time(o["duration"], "\(p).duration", required: true, positive: true)
            var toDuration: MediaTime?
            switch (o["toDuration"], o["rate"]) {
            case (nil, nil): fail(p, "needs \"toDuration\" or \"rate\"")
            case (.some, .some): fail("\(p).rate", "give \"toDuration\" or \"rate\", not both")
            case (let t?, nil):
                toDuration = time(t, "\(p).toDuration", positive: true)
            case (nil, let r?):
                if let rate = rate(r, "\(p).rate") {
                    if rate.doubleValue < minRate.doubleValue || rate.doubleValue > maxRate.doubleValue {
                        fail("\(p).rate", "rate \(r.numberText) is outside 1/32...32")
                    } else if let duration {
                        toDuration = duration.multiplied(by: rate.inverted)
                    }
                }
            }
            guard let start, let duration, let toDuration else { continue }
            let range = JobManifest.ScaleRange(start: start, duration: duration, toDuration: toDuration)
            if o["toDuration"] != nil {
                let r = range.rate.map(\.doubleValue) ?? 0
                if r < minRate.doubleValue || r > maxRate.doubleValue {
                    fail("\(p).toDuration", "gives rate \(MediaTime.formatSeconds(r)), outside 1/32...32")
                    continue
                }
            }
            result.append((i, range))
        }
        let sorted = result.sorted { $0.1.start < $1.1.start }
        for (a, b) in zip(sorted, sorted.dropFirst()) where b.1.start < a.1.range.end {
            fail("$.scale[\(b.0)]", "overlaps $.scale[\(a.0)] (\(describe(a.1.range)))")
        }
        return sorted.map(\.1)
    }

    private func describe(_ r: TimeRange) -> String {
        "\(MediaTime.formatSeconds(r.start.seconds)) s to \(MediaTime.formatSeconds(r.end.seconds)) s"
    }

    mutating func scan(_ value: JSONValue) -> JobManifest.ScanSettings? {
        guard let o = object(value, "$.scan", allowed: ["symbologies", "regionOfInterest", "interval", "maxCodesPerFrame", "images"]) else { return nil }
        var symbologies: [String] = []
        if let list = o["symbologies"] {
            if case .array(let items) = list {
                for (i, item) in items.enumerated() {
                    guard let s = string(item, "$.scan.symbologies[\(i)]") else { continue }
                    if let name = KnownSymbology.canonical(s) {
                        if !symbologies.contains(name) { symbologies.append(name) }
                    } else {
                        let hint = Suggestion.hint(s, in: KnownSymbology.names)
                        fail("$.scan.symbologies[\(i)]", "unknown symbology \"\(s)\"\(hint); known: \(KnownSymbology.names.joined(separator: ", "))")
                    }
                }
            } else {
                fail("$.scan.symbologies", "expected an array of names, found \(list.kindName)")
            }
        } else {
            fail("$.scan.symbologies", "is required: symbologies are opt-in (for example [\"qr\"])")
        }
        var roi: JobManifest.NormalizedRect?
        if let r = o["regionOfInterest"], let ro = object(r, "$.scan.regionOfInterest", allowed: ["x", "y", "width", "height"]) {
            var parts: [Double] = []
            for key in ["x", "y", "width", "height"] {
                let p = "$.scan.regionOfInterest.\(key)"
                guard let v = fraction(ro[key], p) else { if ro[key] == nil { fail(p, "is required") }; continue }
                guard v >= 0 && v <= 1 else { fail(p, "must be between 0 and 1 (normalized coordinates)"); continue }
                parts.append(v)
            }
            if parts.count == 4 {
                if parts[2] == 0 || parts[3] == 0 { fail("$.scan.regionOfInterest", "must have a non-zero width and height") }
                else if parts[0] + parts[2] > 1.000001 || parts[1] + parts[3] > 1.000001 {
                    fail("$.scan.regionOfInterest", "must lie inside the frame (x + width and y + height at most 1)")
                } else {
                    roi = JobManifest.NormalizedRect(x: parts[0], y: parts[1], width: parts[2], height: parts[3])
                }
            }
        }
        let interval = time(o["interval"], "$.scan.interval") ?? .zero
        let maxCodes = integer(o["maxCodesPerFrame"], "$.scan.maxCodesPerFrame", in: 1...1000) ?? 64
        var settings = JobManifest.ScanSettings(symbologies: symbologies, regionOfInterest: roi, interval: interval, maxCodesPerFrame: maxCodes)
        settings.images = o["images"].flatMap { scanImages($0) }
        return settings
    }
}

extension JSONValue {
    /// The literal text of a number, or its kind for anything else (for messages).
    var numberText: String {
        if case .number(let n) = self { return n }
        if case .string(let s) = self { return "\"\(s)\"" }
        return kindName
    }
}

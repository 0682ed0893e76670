import Foundation
import MediaTime
import QualityModel

/// `"checks"` in a manifest (`JobManifest.ChecksSettings`): quality checks of the job's input or of its
/// export, each `true` (its defaults) or an object of thresholds and a `severity`.
extension Walker {
    static let checkNames = ["black", "freeze", "levels", "interlace", "cadence", "silence", "clipping", "channels", "loudness", "length", "spec", "fidelity"]

    mutating func checks(_ value: JSONValue, at p: String = "$.checks") -> JobManifest.ChecksSettings? {
        guard let o = object(value, p, allowed: ["of"] + Self.checkNames) else { return nil }
        var plan = CheckPlan()
        let of = enumeration(o["of"], "\(p).of", JobManifest.ChecksSettings.Subject.self)
        pictureChecks(&plan, o, at: p)
        if let m = checkMembers(o, "silence", at: p, ["duration", "noise", "eachChannel"]) {
            var c = CheckPlan.Silence()
            c.severity = checkSeverity(m, "silence", at: p, c.severity)
            c.duration = seconds(m["duration"], "\(p).silence.duration") ?? c.duration
            c.noise = level(m["noise"], "\(p).silence.noise") ?? c.noise
            c.eachChannel = boolean(m["eachChannel"], "\(p).silence.eachChannel") ?? c.eachChannel
            plan.silence = c
        }
        if let m = checkMembers(o, "clipping", at: p, ["level", "samples", "gap"]) {
            var c = CheckPlan.Clipping()
            c.severity = checkSeverity(m, "clipping", at: p, c.severity)
            if let l = level(m["level"], "\(p).clipping.level") {
                if l >= 0.5 { c.level = l } else { fail("\(p).clipping.level", "must be at least 0.5 (-6 dBFS): full scale is 1 (0 dBFS)") }
            }
            c.samples = integer(m["samples"], "\(p).clipping.samples", in: 1...48000) ?? c.samples
            if let g = seconds(m["gap"], "\(p).clipping.gap") {
                if g <= 10 { c.gap = g } else { fail("\(p).clipping.gap", "must be at most 10 seconds") }
            }
            plan.clipping = c
        }
        if let m = checkMembers(o, "channels", at: p, []) {
            var c = CheckPlan.Channels()
            c.severity = checkSeverity(m, "channels", at: p, c.severity)
            plan.channels = c
        }
        if let v = o["loudness"] {
            if case .bool(true) = v {
                fail("\(p).loudness", "needs a \"standard\" (\(LoudnessStandard.allCases.map(\.rawValue).joined(separator: ", "))) or a \"target\" in LUFS")
            } else if let m = checkMembers(o, "loudness", at: p, ["standard", "target", "tolerance", "truePeak"]) {
                let standard = enumeration(m["standard"], "\(p).loudness.standard", LoudnessStandard.self)
                let target = decibels(m["target"], "\(p).loudness.target", in: -70...0, unit: "LUFS")
                let peak = decibels(m["truePeak"], "\(p).loudness.truePeak", in: -20...3, unit: "dBTP")
                let tolerance = decibels(m["tolerance"], "\(p).loudness.tolerance", in: 0...10, unit: "LU")
                if standard == nil && m["target"] == nil {
                    fail("\(p).loudness", "needs a \"standard\" (\(LoudnessStandard.allCases.map(\.rawValue).joined(separator: ", "))) or a \"target\" in LUFS")
                } else if let t = target ?? standard?.target {
                    var c = CheckPlan.Loudness(target: t, tolerance: tolerance ?? standard?.tolerance ?? 1, truePeak: peak ?? standard?.truePeak ?? -1)
                    c.severity = checkSeverity(m, "loudness", at: p, c.severity)
                    plan.loudness = c
                }
            }
        }
        if let m = checkMembers(o, "length", at: p, ["duration", "durationTolerance", "frames", "frameTolerance"]) {
            var c = CheckPlan.Length()
            c.severity = checkSeverity(m, "length", at: p, c.severity)
            c.duration = seconds(m["duration"], "\(p).length.duration")
            c.durationTolerance = seconds(m["durationTolerance"], "\(p).length.durationTolerance") ?? 0
            c.frames = integer(m["frames"], "\(p).length.frames", in: 0...100_000_000)
            c.frameTolerance = integer(m["frameTolerance"], "\(p).length.frameTolerance", in: 0...100_000_000) ?? 0
            if m["duration"] == nil && m["frames"] == nil { fail("\(p).length", "needs the expected \"duration\" (seconds) or \"frames\"") }
            plan.length = c
        }
        if let v = o["spec"] {
            if case .object = v { plan.spec = spec(v, at: "\(p).spec") } else { fail("\(p).spec", "expected an object of the fields to hold the file to, found \(v.kindName)") }
        }
        if let m = checkMembers(o, "fidelity", at: p, ["psnr", "ssim"]) {
            var c = CheckPlan.Fidelity()
            c.severity = checkSeverity(m, "fidelity", at: p, c.severity)
            // 0: no minimum (SSIM may be negative, PSNR may be 0).
            if let psnr = decibels(m["psnr"], "\(p).fidelity.psnr", in: 0...100, unit: "dB") { c.psnr = psnr == 0 ? nil : psnr }
            if let ssim = unitFraction(m["ssim"], "\(p).fidelity.ssim") { c.ssim = ssim == 0 ? nil : ssim }
            plan.fidelity = c
        }
        if plan == CheckPlan() {
            fail(p, "names no check; give one or more of \(Self.checkNames.joined(separator: ", ")), each true (its defaults) or an object")
        }
        return JobManifest.ChecksSettings(of: of, plan: plan)
    }

    /// Checks of an export need one (a package's renditions are not checked yet); checks of the input are of one
    /// whole input, as it is.
    mutating func checkSubject(_ checks: JobManifest.ChecksSettings, _ o: [String: JSONValue], export: JobManifest.ExportSettings?,
                               stream: JobManifest.StreamSettings?) {
        if checks.of == .export && export == nil {
            fail("$.checks.of", stream != nil ? "a streaming package's renditions are not checked: check the input (\"of\": \"input\"), or export a movie too"
                 : "the job has no \"export\" to check: check its input (\"of\": \"input\") or add an export")
        }
        let ofInput = checks.subject(hasExport: export != nil) == .input
        if checks.plan.fidelity != nil {
            if ofInput || export == nil {
                fail("$.checks.fidelity", "measures an export against its composition: the job needs an \"export\" and checks of it (\"of\": \"export\")")
            } else if export?.mode == .passthrough {
                fail("$.checks.fidelity", "a passthrough export copies its pictures, so there is nothing to measure: export \"mode\": \"constantFrameRate\", or drop the fidelity check")
            } else if export?.chunkDuration != nil {
                fail("$.checks.fidelity", "is measured as the export encodes, and a chunked export's chunks are encoded apart: drop \"chunkSeconds\" or the fidelity check")
            }
        }
        if ofInput && o["edits"] != nil {
            fail("$.checks", "checks of the input are of one whole input: give \"input\", not \"edits\" (to check an edited composition, check its export: \"of\": \"export\")")
        } else if ofInput && o["scale"] != nil && export == nil {
            fail("$.checks", "checks of the input are of the input as it is, not retimed: check the export (\"of\": \"export\")")
        }
    }

    /// `"spec"`: a file spec, each field an allowed value (or list of them) or a range.
    mutating func spec(_ value: JSONValue, at p: String) -> CheckPlan.Spec? {
        guard let o = object(value, p, allowed: ["severity", "container", "size", "bitRate", "video", "audio"]) else { return nil }
        var spec = CheckPlan.Spec()
        spec.severity = enumeration(o["severity"], "\(p).severity", CheckSeverity.self) ?? spec.severity
        spec.container = names(o["container"], "\(p).container")
        spec.size = specRange(o["size"], "\(p).size", in: 0...1e15)
        spec.bitRate = specRange(o["bitRate"], "\(p).bitRate", in: 0...1e12)
        if let v = o["video"], let m = object(v, "\(p).video", allowed: ["codec", "profile", "level", "width", "height", "pixelFormat", "frameRate",
                                                                        "scanType", "bitRate"]) {
            var video = CheckPlan.Spec.Video()
            video.codec = names(m["codec"], "\(p).video.codec")
            video.profile = names(m["profile"], "\(p).video.profile")
            video.level = specRange(m["level"], "\(p).video.level", in: 0...100)
            video.width = specRange(m["width"], "\(p).video.width", in: 1...65536)
            video.height = specRange(m["height"], "\(p).video.height", in: 1...65536)
            video.pixelFormat = names(m["pixelFormat"], "\(p).video.pixelFormat")
            if let f = m["frameRate"] {
                let items: [JSONValue] = if case .array(let list) = f { list } else { [f] }
                if items.isEmpty || items.count > 32 { fail("\(p).video.frameRate", "expected a rate or a list of 1 to 32 rates") } else {
                    let rates = items.enumerated().compactMap { rate($0.element, "\(p).video.frameRate" + (items.count > 1 ? "[\($0.offset)]" : "")) }
                    if rates.count == items.count {
                        if let bad = rates.first(where: { $0.doubleValue > 1000 }) { fail("\(p).video.frameRate", "\(bad) is above 1000 pictures a second") }
                        else { video.frameRate = rates.map(\.doubleValue) }
                    }
                }
            }
            if let scan = string(m["scanType"], "\(p).video.scanType") {
                if ["progressive", "interlaced"].contains(scan) { video.scanType = scan } else { fail("\(p).video.scanType", "\"\(scan)\" is not one of progressive, interlaced") }
            }
            video.bitRate = specRange(m["bitRate"], "\(p).video.bitRate", in: 0...1e12)
            spec.video = video
        }
        if let v = o["audio"], let m = object(v, "\(p).audio", allowed: ["codec", "profile", "sampleRate", "channels", "channelLayout", "bitRate"]) {
            var audio = CheckPlan.Spec.Audio()
            audio.codec = names(m["codec"], "\(p).audio.codec")
            audio.profile = names(m["profile"], "\(p).audio.profile")
            if let r = m["sampleRate"] {
                let items: [JSONValue] = if case .array(let list) = r { list } else { [r] }
                let rates = items.enumerated().compactMap { integer($0.element, "\(p).audio.sampleRate" + (items.count > 1 ? "[\($0.offset)]" : ""), in: 1000...768_000) }
                if items.isEmpty { fail("\(p).audio.sampleRate", "expected a rate or a list of rates") } else if rates.count == items.count { audio.sampleRate = rates }
            }
            audio.channels = specRange(m["channels"], "\(p).audio.channels", in: 1...64)
            audio.channelLayout = names(m["channelLayout"], "\(p).audio.channelLayout")
            audio.bitRate = specRange(m["bitRate"], "\(p).audio.bitRate", in: 0...1e12)
            spec.audio = audio
        }
        if ["container", "size", "bitRate", "video", "audio"].allSatisfy({ o[$0] == nil }) {
            fail(p, "names no field; give one or more of container, size, bitRate, video, audio")
        }
        return spec
    }

    /// A name or a list of 1 to 32 names.
    mutating func names(_ value: JSONValue?, _ path: String) -> [String]? {
        guard let value else { return nil }
        if case .array(let items) = value {
            guard !items.isEmpty, items.count <= 32 else { fail(path, "expected 1 to 32 names, found \(items.count)"); return nil }
            let list = items.enumerated().compactMap { string($0.element, "\(path)[\($0.offset)]") }
            return list.count == items.count ? list : nil
        }
        return string(value, path).map { [$0] }
    }

    /// An exact number, or `{"min": …, "max": …}` (either end may be left out), each inside `bounds`.
    mutating func specRange(_ value: JSONValue?, _ path: String, in bounds: ClosedRange<Double>) -> SpecRange? {
        guard let value else { return nil }
        func bounded(_ v: JSONValue?, _ at: String) -> Double? {
            guard let v else { return nil }
            guard case .number(let text) = v else { fail(at, "expected a number, found \(v.kindName)"); return nil }
            guard let d = Double(text), d.isFinite, bounds.contains(d) else {
                fail(at, "\(text) is outside \(bounds.lowerBound.shortText)...\(bounds.upperBound.shortText)")
                return nil
            }
            return d
        }
        if case .object = value {
            guard let m = object(value, path, allowed: ["min", "max"]) else { return nil }
            let low = bounded(m["min"], "\(path).min"), high = bounded(m["max"], "\(path).max")
            if m["min"] == nil && m["max"] == nil { fail(path, "needs \"min\", \"max\" or both"); return nil }
            if let low, let high, low > high { fail(path, "\"min\" \(low.shortText) is above \"max\" \(high.shortText)"); return nil }
            if (m["min"] != nil && low == nil) || (m["max"] != nil && high == nil) { return nil }
            return SpecRange(min: low, max: high)
        }
        guard let exact = bounded(value, path) else { return nil }
        return SpecRange(min: exact, max: exact)
    }

    /// A check's members, or nil when it is off; `true` gives an empty object (its defaults).
    private mutating func checkMembers(_ o: [String: JSONValue], _ name: String, at p: String, _ allowed: [String]) -> [String: JSONValue]? {
        guard let v = o[name] else { return nil }
        if case .bool(let on) = v { return on ? [:] : nil }
        return object(v, "\(p).\(name)", allowed: ["severity"] + allowed)
    }

    private mutating func checkSeverity(_ m: [String: JSONValue], _ name: String, at p: String, _ fallback: CheckSeverity) -> CheckSeverity {
        enumeration(m["severity"], "\(p).\(name).severity", CheckSeverity.self) ?? fallback
    }

    /// The picture checks of `"checks"`: black, freeze, levels, interlace, cadence.
    private mutating func pictureChecks(_ plan: inout CheckPlan, _ o: [String: JSONValue], at p: String) {
        if let m = checkMembers(o, "black", at: p, ["duration", "pictureRatio", "pixelThreshold"]) {
            var c = CheckPlan.Black()
            c.severity = checkSeverity(m, "black", at: p, c.severity)
            c.duration = seconds(m["duration"], "\(p).black.duration") ?? c.duration
            c.pictureRatio = unitFraction(m["pictureRatio"], "\(p).black.pictureRatio") ?? c.pictureRatio
            c.pixelThreshold = unitFraction(m["pixelThreshold"], "\(p).black.pixelThreshold") ?? c.pixelThreshold
            plan.black = c
        }
        if let m = checkMembers(o, "freeze", at: p, ["duration", "noise"]) {
            var c = CheckPlan.Freeze()
            c.severity = checkSeverity(m, "freeze", at: p, c.severity)
            c.duration = seconds(m["duration"], "\(p).freeze.duration") ?? c.duration
            c.noise = level(m["noise"], "\(p).freeze.noise") ?? c.noise
            plan.freeze = c
        }
        if let m = checkMembers(o, "levels", at: p, ["pixelShare", "duration"]) {
            var c = CheckPlan.Levels()
            c.severity = checkSeverity(m, "levels", at: p, c.severity)
            c.pixelShare = unitFraction(m["pixelShare"], "\(p).levels.pixelShare") ?? c.pixelShare
            c.duration = seconds(m["duration"], "\(p).levels.duration") ?? c.duration
            plan.levels = c
        }
        if let m = checkMembers(o, "interlace", at: p, ["duration", "threshold"]) {
            var c = CheckPlan.Interlace()
            c.severity = checkSeverity(m, "interlace", at: p, c.severity)
            c.duration = seconds(m["duration"], "\(p).interlace.duration") ?? c.duration
            if let t = fraction(m["threshold"], "\(p).interlace.threshold") {
                if (1...10).contains(t) { c.threshold = t } else { fail("\(p).interlace.threshold", "\(m["threshold"]!.numberText) is outside 1...10 (FFmpeg's idet uses 1.04)") }
            }
            plan.interlace = c
        }
        if let m = checkMembers(o, "cadence", at: p, []) {
            var c = CheckPlan.Cadence()
            c.severity = checkSeverity(m, "cadence", at: p, c.severity)
            plan.cadence = c
        }
    }

    /// Seconds as a time is written (2.5, "5/2", "00:00:02.500"), 0 to 48 hours.
    mutating func seconds(_ value: JSONValue?, _ path: String) -> Double? {
        time(value, path).map(\.seconds)
    }

    /// An amplitude from 0 to 1 (0.001), or in decibels below full scale as FFmpeg's filters take it ("-60dB").
    mutating func level(_ value: JSONValue?, _ path: String) -> Double? {
        guard let value else { return nil }
        if case .string(let text) = value, text.lowercased().hasSuffix("db") {
            guard let db = Double(text.dropLast(2).trimmingCharacters(in: .whitespaces)), db.isFinite, db <= 0, db >= -200 else {
                fail(path, "\"\(text)\" is not a level from -200dB to 0dB")
                return nil
            }
            return Self.amplitude(decibels: db)
        }
        guard case .number = value else { fail(path, "expected a number from 0 to 1 or a level like \"-60dB\", found \(value.kindName)"); return nil }
        return unitFraction(value, path)
    }

    /// 10^(dB/20), as FFmpeg reads "-60dB".
    static func amplitude(decibels db: Double) -> Double { pow(10, db / 20) }

    /// A number of decibels inside `range`; one that is no Double at all (1e400) is outside it.
    mutating func decibels(_ value: JSONValue?, _ path: String, in range: ClosedRange<Double>, unit: String) -> Double? {
        guard let value else { return nil }
        guard case .number(let text) = value else { fail(path, "expected a number of \(unit), found \(value.kindName)"); return nil }
        guard let d = Double(text), d.isFinite, range.contains(d) else {
            fail(path, "\(text) \(unit) is outside \(range.lowerBound.shortText)...\(range.upperBound.shortText)")
            return nil
        }
        return d
    }
}

extension Double {
    /// -70 as "-70", 0.5 as "0.5".
    var shortText: String { self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self) }
}

extension JobManifest.ChecksSettings {
    /// Every check with every threshold written out, as the validator reads it back.
    var document: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let of { members.append(("of", .string(of.rawValue))) }
        func add(_ name: String, _ severity: CheckSeverity, _ fields: [(key: String, value: JSONValue)]) {
            members.append((name, .object([("severity", .string(severity.rawValue))] + fields)))
        }
        if let c = plan.black {
            add("black", c.severity, [("duration", .decimal(c.duration)), ("pictureRatio", .decimal(c.pictureRatio)), ("pixelThreshold", .decimal(c.pixelThreshold))])
        }
        if let c = plan.freeze { add("freeze", c.severity, [("duration", .decimal(c.duration)), ("noise", .decimal(c.noise))]) }
        if let c = plan.levels { add("levels", c.severity, [("pixelShare", .decimal(c.pixelShare)), ("duration", .decimal(c.duration))]) }
        if let c = plan.interlace { add("interlace", c.severity, [("duration", .decimal(c.duration)), ("threshold", .decimal(c.threshold))]) }
        if let c = plan.cadence { add("cadence", c.severity, []) }
        if let c = plan.silence {
            add("silence", c.severity, [("duration", .decimal(c.duration)), ("noise", .decimal(c.noise)), ("eachChannel", .bool(c.eachChannel))])
        }
        if let c = plan.clipping { add("clipping", c.severity, [("level", .decimal(c.level)), ("samples", .whole(c.samples)), ("gap", .decimal(c.gap))]) }
        if let c = plan.channels { add("channels", c.severity, []) }
        if let c = plan.loudness {
            add("loudness", c.severity, [("target", .decimal(c.target)), ("tolerance", .decimal(c.tolerance)), ("truePeak", .decimal(c.truePeak))])
        }
        if let spec = plan.spec { members.append(("spec", spec.document)) }
        if let c = plan.fidelity {
            add("fidelity", c.severity, [("psnr", .decimal(c.psnr ?? 0)), ("ssim", .decimal(c.ssim ?? 0))])
        }
        if let c = plan.length {
            var fields: [(key: String, value: JSONValue)] = []
            if let d = c.duration { fields += [("duration", .decimal(d)), ("durationTolerance", .decimal(c.durationTolerance))] }
            if let f = c.frames { fields += [("frames", .whole(f)), ("frameTolerance", .whole(c.frameTolerance))] }
            add("length", c.severity, fields)
        }
        return .object(members)
    }
}

extension ManifestValidator {
    /// A `"checks"` section on its own (`mediafarm check --checks FILE`): the plan, or every problem with its path.
    public static func checks(json bytes: [UInt8], file: String) -> Result<JobManifest.ChecksSettings, ManifestValidationError> {
        let document: JSONValue
        do { document = try JSONParser.parse(bytes) } catch {
            return .failure(ManifestValidationError(file: file, issues: [ManifestIssue(path: "$", message: error.description)]))
        }
        var w = Walker(context: ManifestContext(baseDirectory: "/"))
        let settings = w.checks(document, at: "$")
        if let settings, w.issues.isEmpty { return .success(settings) }
        return .failure(ManifestValidationError(file: file, issues: w.issues))
    }
}

extension CheckPlan.Spec {
    var document: JSONValue {
        func names(_ list: [String]?) -> JSONValue? { list.map { .array($0.map(JSONValue.string)) } }
        func range(_ r: SpecRange?) -> JSONValue? {
            guard let r else { return nil }
            var m: [(key: String, value: JSONValue)] = []
            if let a = r.min { m.append(("min", .decimal(a))) }
            if let b = r.max { m.append(("max", .decimal(b))) }
            return .object(m)
        }
        func object(_ fields: [(String, JSONValue?)]) -> JSONValue { .object(fields.compactMap { k, v in v.map { (key: k, value: $0) } }) }
        var fields: [(String, JSONValue?)] = [("severity", .string(severity.rawValue)), ("container", names(container)), ("size", range(size)),
                                               ("bitRate", range(bitRate))]
        if let v = video {
            fields.append(("video", object([("codec", names(v.codec)), ("profile", names(v.profile)), ("level", range(v.level)), ("width", range(v.width)),
                                            ("height", range(v.height)), ("pixelFormat", names(v.pixelFormat)),
                                            // Nine decimals at most, as a time is read (30000/1001 within 1e-9: well inside the 0.1% a rate is held to).
                                            ("frameRate", v.frameRate.map { .array($0.map { .number(String(format: "%.9f", $0)) }) }),
                                            ("scanType", v.scanType.map(JSONValue.string)), ("bitRate", range(v.bitRate))])))
        }
        if let a = audio {
            fields.append(("audio", object([("codec", names(a.codec)), ("profile", names(a.profile)),
                                            ("sampleRate", a.sampleRate.map { .array($0.map(JSONValue.whole)) }), ("channels", range(a.channels)),
                                            ("channelLayout", names(a.channelLayout)), ("bitRate", range(a.bitRate))])))
        }
        return object(fields)
    }
}

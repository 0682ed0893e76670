import Foundation
import MediaTime
import QualityModel

/// `"checks"` in a manifest (`JobManifest.ChecksSettings`): quality checks of the job's input or of its
/// export, each `true` (its defaults) or an object of thresholds and a `severity`.
extension Walker {
    static let checkNames = ["black", "freeze", "levels", "interlace", "cadence", "silence", "clipping", "channels", "loudness", "length"]

    mutating func checks(_ value: JSONValue, at p: String = "$.checks") -> JobManifest.ChecksSettings? {
        guard let o = object(value, p, allowed: ["of"] + Self.checkNames) else { return nil }
        var plan = CheckPlan()
        let of = enumeration(o["of"], "\(p).of", JobManifest.ChecksSettings.Subject.self)
        /// The check's members, or nil when it is off; `true` gives an empty object (its defaults).
        func members(_ name: String, _ allowed: [String]) -> [String: JSONValue]? {
            guard let v = o[name] else { return nil }
            if case .bool(let on) = v { return on ? [:] : nil }
            return object(v, "\(p).\(name)", allowed: ["severity"] + allowed)
        }
        func severity(_ m: [String: JSONValue], _ name: String, _ fallback: CheckSeverity) -> CheckSeverity {
            enumeration(m["severity"], "\(p).\(name).severity", CheckSeverity.self) ?? fallback
        }
        if let m = members("black", ["duration", "pictureRatio", "pixelThreshold"]) {
            var c = CheckPlan.Black()
            c.severity = severity(m, "black", c.severity)
            c.duration = seconds(m["duration"], "\(p).black.duration") ?? c.duration
            c.pictureRatio = unitFraction(m["pictureRatio"], "\(p).black.pictureRatio") ?? c.pictureRatio
            c.pixelThreshold = unitFraction(m["pixelThreshold"], "\(p).black.pixelThreshold") ?? c.pixelThreshold
            plan.black = c
        }
        if let m = members("freeze", ["duration", "noise"]) {
            var c = CheckPlan.Freeze()
            c.severity = severity(m, "freeze", c.severity)
            c.duration = seconds(m["duration"], "\(p).freeze.duration") ?? c.duration
            c.noise = level(m["noise"], "\(p).freeze.noise") ?? c.noise
            plan.freeze = c
        }
        if let m = members("levels", ["pixelShare", "duration"]) {
            var c = CheckPlan.Levels()
            c.severity = severity(m, "levels", c.severity)
            c.pixelShare = unitFraction(m["pixelShare"], "\(p).levels.pixelShare") ?? c.pixelShare
            c.duration = seconds(m["duration"], "\(p).levels.duration") ?? c.duration
            plan.levels = c
        }
        if let m = members("interlace", ["duration", "threshold"]) {
            var c = CheckPlan.Interlace()
            c.severity = severity(m, "interlace", c.severity)
            c.duration = seconds(m["duration"], "\(p).interlace.duration") ?? c.duration
            if let t = fraction(m["threshold"], "\(p).interlace.threshold") {
                if (1...10).contains(t) { c.threshold = t } else { fail("\(p).interlace.threshold", "\(m["threshold"]!.numberText) is outside 1...10 (FFmpeg's idet uses 1.04)") }
            }
            plan.interlace = c
        }
        if let m = members("cadence", []) {
            var c = CheckPlan.Cadence()
            c.severity = severity(m, "cadence", c.severity)
            plan.cadence = c
        }
        if let m = members("silence", ["duration", "noise", "eachChannel"]) {
            var c = CheckPlan.Silence()
            c.severity = severity(m, "silence", c.severity)
            c.duration = seconds(m["duration"], "\(p).silence.duration") ?? c.duration
            c.noise = level(m["noise"], "\(p).silence.noise") ?? c.noise
            c.eachChannel = boolean(m["eachChannel"], "\(p).silence.eachChannel") ?? c.eachChannel
            plan.silence = c
        }
        if let m = members("clipping", ["level", "samples", "gap"]) {
            var c = CheckPlan.Clipping()
            c.severity = severity(m, "clipping", c.severity)
            if let l = level(m["level"], "\(p).clipping.level") {
                if l >= 0.5 { c.level = l } else { fail("\(p).clipping.level", "must be at least 0.5 (-6 dBFS): full scale is 1 (0 dBFS)") }
            }
            c.samples = integer(m["samples"], "\(p).clipping.samples", in: 1...48000) ?? c.samples
            if let g = seconds(m["gap"], "\(p).clipping.gap") {
                if g <= 10 { c.gap = g } else { fail("\(p).clipping.gap", "must be at most 10 seconds") }
            }
            plan.clipping = c
        }
        if let m = members("channels", []) {
            var c = CheckPlan.Channels()
            c.severity = severity(m, "channels", c.severity)
            plan.channels = c
        }
        if let v = o["loudness"] {
            if case .bool(true) = v {
                fail("\(p).loudness", "needs a \"standard\" (\(LoudnessStandard.allCases.map(\.rawValue).joined(separator: ", "))) or a \"target\" in LUFS")
            } else if let m = members("loudness", ["standard", "target", "tolerance", "truePeak"]) {
                let standard = enumeration(m["standard"], "\(p).loudness.standard", LoudnessStandard.self)
                let target = decibels(m["target"], "\(p).loudness.target", in: -70...0, unit: "LUFS")
                let peak = decibels(m["truePeak"], "\(p).loudness.truePeak", in: -20...3, unit: "dBTP")
                let tolerance = decibels(m["tolerance"], "\(p).loudness.tolerance", in: 0...10, unit: "LU")
                if standard == nil && m["target"] == nil {
                    fail("\(p).loudness", "needs a \"standard\" (\(LoudnessStandard.allCases.map(\.rawValue).joined(separator: ", "))) or a \"target\" in LUFS")
                } else if let t = target ?? standard?.target {
                    var c = CheckPlan.Loudness(target: t, tolerance: tolerance ?? standard?.tolerance ?? 1, truePeak: peak ?? standard?.truePeak ?? -1)
                    c.severity = severity(m, "loudness", c.severity)
                    plan.loudness = c
                }
            }
        }
        if let m = members("length", ["duration", "durationTolerance", "frames", "frameTolerance"]) {
            var c = CheckPlan.Length()
            c.severity = severity(m, "length", c.severity)
            c.duration = seconds(m["duration"], "\(p).length.duration")
            c.durationTolerance = seconds(m["durationTolerance"], "\(p).length.durationTolerance") ?? 0
            c.frames = integer(m["frames"], "\(p).length.frames", in: 0...100_000_000)
            c.frameTolerance = integer(m["frameTolerance"], "\(p).length.frameTolerance", in: 0...100_000_000) ?? 0
            if m["duration"] == nil && m["frames"] == nil { fail("\(p).length", "needs the expected \"duration\" (seconds) or \"frames\"") }
            plan.length = c
        }
        if Self.checkNames.allSatisfy({ o[$0] == nil }) {
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
        let ofInput = checks.of == .input || (checks.of == nil && export == nil)
        if ofInput && o["edits"] != nil {
            fail("$.checks", "checks of the input are of one whole input: give \"input\", not \"edits\" (to check an edited composition, check its export: \"of\": \"export\")")
        } else if ofInput && o["scale"] != nil && export == nil {
            fail("$.checks", "checks of the input are of the input as it is, not retimed: check the export (\"of\": \"export\")")
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

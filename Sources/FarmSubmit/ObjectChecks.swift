import FarmModel
import Foundation
import S3Client

/// The objects a submission names, checked as its local files are: each input object is there (HEAD), and
/// each output's bucket exists (a listing of nothing in it), so that a missing bucket is refused at
/// submission, not found after the whole encode at upload. An input that is allowed to be missing
/// (`--allow-missing-inputs`) is not looked at. Only the server's answer that an object or a bucket is not
/// there is an issue: a submitter without object storage settings, or one the server does not answer or
/// refuses, may still queue (the workers have their own credentials, and check the buckets before work).
enum ObjectChecks {
    /// The objects of `manifest` with their JSON paths: its inputs, and its outputs' buckets.
    static func named(_ manifest: JobManifest, inputs: Bool) -> (inputs: [(path: String, address: String)], outputs: [(path: String, address: String)]) {
        var found: (inputs: [(path: String, address: String)], outputs: [(path: String, address: String)]) = ([], [])
        if inputs {
            for (i, edit) in manifest.edits.enumerated() where PathRules.isObject(edit.source) {
                found.inputs.append((manifest.edits.count == 1 ? "$.input" : "$.edits[\(i)].source", edit.source))
            }
        }
        var outputs: [(String, String?)] = [("$.export.output", manifest.export?.output), ("$.report", manifest.report),
                                            ("$.poster.output", manifest.poster?.output), ("$.export.poster.output", manifest.export?.poster?.output),
                                            ("$.waveform.output", manifest.waveform?.output), ("$.storyboard.output", manifest.storyboard?.output),
                                            ("$.images.output", manifest.images?.output), ("$.scan.images.output", manifest.scan?.images?.output)]
        outputs.append(("$.waveform.peaks", manifest.waveform?.peaks))
        for case let (path, address?) in outputs where PathRules.isObject(address) { found.outputs.append((path, address)) }
        return found
    }

    /// The issues of `checked`'s valid manifests' objects, by file (none when they name no object).
    static func issues(_ checked: CheckedManifests, rules: SubmissionRules, environment: [String: String]) async -> [String: [ManifestIssue]] {
        let named = checked.valid.map { (file: $0.offer.file, objects: Self.named($0.manifest, inputs: rules.missingInputWayOut != nil)) }
        guard named.contains(where: { !$0.objects.inputs.isEmpty || !$0.objects.outputs.isEmpty }) else { return [:] }
        var issues: [String: [ManifestIssue]] = [:]
        // No settings here: nothing can be asked (see above).
        guard let configuration = try? S3Configuration.fromEnvironment(environment) else { return [:] }
        let s3 = S3(configuration: configuration)
        defer { Task { await s3.shutdown() } }
        var buckets: [String: String?] = [:]  // bucket -> its problem (nil: it exists)
        for (file, objects) in named {
            for (path, address) in objects.inputs {
                do {
                    _ = try await s3.head(try S3Location(parsing: address))
                } catch where error.kind == .noSuchKey || error.kind == .noSuchBucket {
                    let wayOut = rules.missingInputWayOut.map { " (\($0))" } ?? ""
                    issues[file, default: []].append(ManifestIssue(path: path, message: "\(address): no such object" + wayOut))
                } catch {
                    continue  // not an answer about the object (see above)
                }
            }
            for (path, address) in objects.outputs {
                guard let location = try? S3Location(parsing: address) else { continue }  // the validator named a malformed address already
                if buckets[location.bucket] == nil {
                    do {
                        _ = try await s3.listMultipartUploads(S3Location(bucket: location.bucket, key: "mediafarm-bucket-check"))
                        buckets[location.bucket] = .some(nil)
                    } catch {
                        buckets[location.bucket] = .some(error.kind == .noSuchBucket ? "no such bucket \(location.bucket) (make the bucket, or write elsewhere)" : nil)
                    }
                }
                if case let problem?? = buckets[location.bucket] {
                    issues[file, default: []].append(ManifestIssue(path: path, message: "\(address): \(problem)"))
                }
            }
        }
        return issues
    }
}

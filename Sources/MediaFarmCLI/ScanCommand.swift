import ArgumentParser
import CodeScan
import FarmModel
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import QueueCLI

/// `mediafarm scan`: find bar codes and QR codes in movies and still images.
struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Find bar codes and QR codes in movies and still images (PNG, JPEG).",
        discussion: """
        Symbologies are opt-in (as AVCaptureMetadataOutput): \(Symbology.allCases.map(\.rawValue).joined(separator: ", ")). \
        Detections of the same code are merged across frames, with the first and last time it was seen. \
        Exit status: 0 when every input was scanned, 1 when any failed, 2 for bad usage.
        """)

    @Flag(name: .long, help: "Print a JSON array, one object per input, in input order.")
    var json = false

    @Option(name: .long, help: "Comma-separated symbologies to look for (required), e.g. qr,ean13.")
    var symbologies: String

    @Option(name: .long, help: "Region of interest x,y,width,height in normalized coordinates (0...1); codes intersecting it are reported.")
    var roi: String?

    @Option(name: .long, parsing: .unconditional, help: "Scan one frame every this many seconds (default: every frame).")
    var interval: String?

    @Option(name: .customLong("max-codes"), parsing: .unconditional, help: "At most this many codes per frame \(UserNumbers.maxCodes.inHelp).", transform: UserNumbers.maxCodes.option)
    var maxCodes: Int = 64

    @Option(name: .long, parsing: .unconditional, help: "How many files to scan at once (each scan uses the decoder's threads) \(UserNumbers.threads.inHelp).", transform: UserNumbers.threads.option)
    var concurrency: Int = 1

    @Argument(help: "Movies, images or folders.")
    var paths: [String]

    func validate() throws { _ = try configuration() }

    func configuration() throws -> CodeScanner.Configuration {
        let list: [Symbology]
        do { list = try Symbology.parseList(symbologies) } catch { throw ValidationError(Self.describe(error)) }
        guard !list.isEmpty else { throw ValidationError("--symbologies names none; symbologies are opt-in") }
        let region = try Self.region(roi)
        var every = MediaTime.zero
        if let interval {
            do { every = try MediaTime(parsing: interval) } catch { throw ValidationError("--interval: \(error.description)") }
            guard !(every < .zero) else { throw ValidationError("--interval must not be negative") }
        }
        guard (1...64).contains(concurrency) else { throw ValidationError("--concurrency must be between 1 and 64") }
        return CodeScanner.Configuration(symbologies: list, regionOfInterest: region, interval: every, maxCodesPerFrame: maxCodes)
    }

    /// Unknown symbology names, each with the nearest known one when it looks like a typo.
    static func describe(_ error: UnknownSymbology) -> String {
        let known = Symbology.allCases.map(\.rawValue)
        return "unknown symbology " + error.names.map { "\"\($0)\"" + Suggestion.hint($0, in: known) }.joined(separator: ", ")
            + "; known (in any case): " + known.joined(separator: ", ")
    }

    /// `--roi x,y,width,height` (normalized); nil is the whole picture.
    static func region(_ roi: String?) throws -> NormalizedRect {
        guard let roi else { return .full }
        let parts = roi.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let x = parts[0], let y = parts[1], let w = parts[2], let h = parts[3],
              x >= 0, y >= 0, w > 0, h > 0, x + w <= 1.000001, y + h <= 1.000001 else {
            throw ValidationError("--roi must be x,y,width,height inside 0...1 with a non-zero size, got \"\(roi)\"")
        }
        return NormalizedRect(x: x, y: y, width: w, height: h)
    }

    @OptionGroup var stall: StallOptions

    func run() async throws {
        stall.apply()
        let config = try configuration()
        var extensions = MediaFileFinder.mediaExtensions
        extensions.formUnion(["png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp"])
        let entries = MediaFileFinder.expand(paths, extensions: extensions)
        let pool = BlockingWorkPool(threads: concurrency)
        let progress = TerminalProgress(label: "scanning", total: entries.count)
        let stop = SignalStop()
        let results = try await stop.run { await concurrentMap(entries, limit: concurrency, progress: { done, _ in progress.update(done) }) { entry in
            switch entry {
            case .emptyFolder(let folder):
                return ScanOutput(path: folder, error: "\(folder): the folder contains no media files or images")
            case .file(let path):
                do {
                    return ScanOutput(try await FileScanner.scan(path: path, configuration: config, pool: pool))
                } catch let e as MediaFileError {
                    return ScanOutput(path: path, error: e.description)
                } catch {
                    return ScanOutput(path: path, error: "\(path): \(error)")
                }
            }
        } }
        progress.finish()
        try stop.exitIfStopped("scan")
        if json {
            FileHandle.standardOutput.write(try JSONEncoder.mediafarm().encode(results))
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            for r in results {
                if let e = r.error {
                    print("\(r.path)\n  ERROR \(e)\n")
                    FileHandle.standardError.write(Data("error: \(e)\n".utf8))
                    continue
                }
                print("\(r.path)  \(counted(r.codes.count, "code"))\(r.framesScanned.map { ", \(counted($0, "frame")) scanned" } ?? "")")
                for c in r.codes {
                    let text = c.payload.map { "\"\($0)\"" } ?? "(binary, base64 \(Data(c.payloadBytes).base64EncodedString()))"
                    let span = "\(MediaTime.formatSeconds(c.firstTime.seconds))-\(MediaTime.formatSeconds(c.lastTime.seconds)) s"
                    print("  \(c.symbology)  \(text)  \(span)  \(c.frameCount) frame\(c.frameCount == 1 ? "" : "s")  at \(c.pixelBounds[0]),\(c.pixelBounds[1]) \(c.pixelBounds[2])x\(c.pixelBounds[3])")
                }
                print("")
            }
        }
        if results.contains(where: { $0.error != nil }) { throw ExitCode(ExitStatus.failure) }
    }
}

/// One input's scan, as `scan --json` prints it.
struct ScanOutput: Encodable, Sendable {
    var path: String
    var error: String?
    var codes: [ScannedCode] = []
    var framesScanned: Int?
    var framesDecoded: Int?
    var seconds: Double?

    init(path: String, error: String) {
        self.path = path
        self.error = error
    }

    init(_ r: FileScanReport) {
        path = r.path
        framesScanned = r.framesScanned
        framesDecoded = r.framesDecoded
        seconds = r.seconds
        codes = r.codes
    }

    private enum Keys: String, CodingKey { case path, error, codes, framesScanned, framesDecoded, seconds }
    func encode(to encoder: any Swift.Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(path, forKey: .path)
        try c.encode(error, forKey: .error)
        try c.encode(codes, forKey: .codes)
        try c.encodeIfPresent(framesScanned, forKey: .framesScanned)
        try c.encodeIfPresent(framesDecoded, forKey: .framesDecoded)
        try c.encodeIfPresent(seconds, forKey: .seconds)
    }
}

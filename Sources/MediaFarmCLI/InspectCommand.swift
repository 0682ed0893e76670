import ArgumentParser
import FarmModel
import Foundation
import MediaCore
import MediaInspect
import MediaTime
import QueueCLI

/// `mediafarm inspect`: load asset properties of many files concurrently and report them.
struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Inspect media files: duration, tracks, codecs, frame rates, metadata, chapters.",
        discussion: """
        PATH may be a file or a folder (walked for media files). Files are inspected concurrently; \
        results come out in input order. Exit status: 0 when every input was inspected, 1 when any \
        failed, 2 for bad usage.

        Keys: \(AssetKey.allCases.map(\.rawValue).joined(separator: ", ")). All but loudness by default: it decodes all \
        the audio (--loudness adds it; `mediafarm loudness` prints only it).
        """)

    @Flag(name: .long, help: "Print a JSON array, one object per input, in input order.")
    var json = false

    @Option(name: .long, help: "Comma-separated asset keys to load (default: all but loudness).")
    var keys: String?

    @Flag(name: .long, help: "Measure the audio's loudness too (EBU R128: integrated, range, true peak), as key loudness.")
    var loudness = false

    @Option(name: .long, parsing: .unconditional, help: "How many files to inspect at once (default: number of cores, at least 2) \(UserNumbers.threads.inHelp).", transform: UserNumbers.threads.option)
    var concurrency: Int?

    @Argument(help: "Media files or folders.")
    var paths: [String]

    func validate() throws {
        _ = try parsedKeys()
    }

    func parsedKeys() throws -> Set<AssetKey> {
        guard let keys else { return AssetKey.standard.union(loudness ? [.loudness] : []) }
        var result: Set<AssetKey> = []
        for name in keys.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            guard let key = AssetKey(rawValue: name) else {
                throw ValidationError("unknown key \"\(name)\"; known keys: \(AssetKey.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            result.insert(key)
        }
        guard !result.isEmpty else { throw ValidationError("--keys names no key") }
        return result.union(loudness ? [.loudness] : [])
    }

    @OptionGroup var stall: StallOptions

    func run() async throws {
        stall.apply()
        let keys = try parsedKeys()
        let width = concurrency ?? max(2, ProcessInfo.processInfo.activeProcessorCount)
        var options = AssetOptions()
        options.pool = BlockingWorkPool(threads: width)
        let entries = MediaFileFinder.expand(paths)
        let progress = TerminalProgress(label: "inspecting", total: entries.count)
        let stop = SignalStop()
        let batchOptions = options
        let reports = try await stop.run {
            await BatchInspector.inspect(entries, keys: keys, options: batchOptions, concurrency: width) { done, total in
                progress.update(done)
            }
        }
        progress.finish()
        try stop.exitIfStopped("inspect")

        if json {
            FileHandle.standardOutput.write(try JSONEncoder.mediafarm().encode(reports))
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            print(InspectText.render(reports), terminator: "")
            for r in reports { if let e = r.error { FileHandle.standardError.write(Data("error: \(e)\n".utf8)) } }
        }
        if reports.contains(where: { $0.error != nil }) { throw ExitCode(ExitStatus.failure) }
    }
}

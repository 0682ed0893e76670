// MediaFarm's libFuzzer targets. GPL-2.0-or-later.
//
// Built by script/fuzz with `swift build --sanitize=fuzzer --sanitize=address -Xswiftc -DFUZZING`, the
// program is libFuzzer (its main) with the target MEDIAFARM_FUZZ_TARGET names:
//   manifest   the manifest parser and validator
//   inspect    inspection of mutated media files
// In an ordinary build it replays inputs once, for the kept regression fixtures:
//   mediafarm-fuzz replay TARGET FILE...
import Dispatch
import FarmModel
import Foundation
import MediaInspect

/// One input through the manifest parser and validator.
func fuzzManifest(_ bytes: UnsafeBufferPointer<UInt8>) {
    let context = ManifestContext(baseDirectory: "/fuzz", outputRoots: ["/fuzz/out"])
    switch ManifestValidator.validate(json: Array(bytes), file: "fuzz.json", context: context) {
    case .success(let manifest): _ = manifest.edits.count
    case .failure(let error): _ = error.description
    }
}

/// One input written to a file and inspected with every key, as `mediafarm inspect` does.
let scratch: String = {
    let folder = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    return "\(folder)/mediafarm-fuzz-\(getpid()).bin"
}()

func fuzzInspect(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard bytes.count > 0 else { return }
    _ = FileManager.default.createFile(atPath: scratch, contents: Data(buffer: bytes))
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let asset = Asset(path: scratch)
        let report = await AssetReport.inspect(asset, keys: Set(AssetKey.allCases))
        _ = report.error
        done.signal()
    }
    done.wait()
}

func target(named name: String) -> ((UnsafeBufferPointer<UInt8>) -> Void)? {
    switch name {
    case "manifest": fuzzManifest
    case "inspect": fuzzInspect
    default: nil
    }
}

#if FUZZING
nonisolated(unsafe) let selected: (UnsafeBufferPointer<UInt8>) -> Void = {
    let name = ProcessInfo.processInfo.environment["MEDIAFARM_FUZZ_TARGET"] ?? ""
    guard let chosen = target(named: name) else {
        FileHandle.standardError.write(Data("MEDIAFARM_FUZZ_TARGET must be manifest or inspect, not \"\(name)\"\n".utf8))
        exit(2)
    }
    return chosen
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selected(UnsafeBufferPointer(start: data, count: size))
    return 0
}
#else
@main
struct Replay {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3, arguments[1] == "replay", let run = target(named: arguments[2]) else {
            FileHandle.standardError.write(Data("usage: mediafarm-fuzz replay manifest|inspect FILE... (script/fuzz builds the fuzzer)\n".utf8))
            exit(2)
        }
        for path in arguments.dropFirst(3) {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("\(path): cannot read\n".utf8))
                exit(2)
            }
            data.withUnsafeBytes { run($0.bindMemory(to: UInt8.self)) }
            print("\(path): ok")
        }
        unlink(scratch)
    }
}
#endif

// swift-tools-version:6.0
// MediaFarm: a batch media processing worker farm. GPL-2.0-or-later.
import PackageDescription

/// The front's Swift runtime and Foundation, linked in: a program linked to their shared libraries spends
/// some 15 ms loading them (ICU's among them) before its first instruction. Not position-independent (no
/// relocations to apply at each start), exporting no symbol, unused sections dropped.
let staticFoundation = ["-static-stdlib", "-Xclang-linker", "-no-pie", "-Xlinker", "--no-export-dynamic", "-Xlinker", "--gc-sections",
                        "-Xlinker", "--start-group"]
    + ["Foundation", "FoundationEssentials", "FoundationInternationalization", "CoreFoundation", "_FoundationICU",
       "_FoundationCShims", "_FoundationCollections", "swiftSynchronization", "swiftDispatch", "dispatch", "BlocksRuntime"].map { "-l" + $0 }
    + ["-Xlinker", "--end-group"]

let package = Package(
    name: "MediaFarm",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "mediafarm", targets: ["mediafarm"]),
        .library(name: "MediaTime", targets: ["MediaTime"]),
        .library(name: "MediaCore", targets: ["MediaCore"]),
        .library(name: "MediaInspect", targets: ["MediaInspect"]),
        .library(name: "MediaFarmCLI", targets: ["MediaFarmCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"5.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // C at the edge: system libraries found through pkg-config, and the shims Swift cannot import.
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat",
                       providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev",
                                         "libswresample-dev", "libswscale-dev"])]),
        .systemLibrary(name: "CRubberBand", pkgConfig: "rubberband", providers: [.apt(["librubberband-dev"])]),
        .systemLibrary(name: "CZBar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        // EBU R128 / ITU BS.1770-4 loudness: integrated, range, true peak (libebur128).
        .systemLibrary(name: "CEbur128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),
        .target(name: "CMediaShims", dependencies: ["CFFmpeg"]),
        // Process spawning with resource limits (fork/exec in C: only async-signal-safe calls in the child).
        .target(name: "CProcessShims"),
        // V4L2 device queries (ioctl), for listing capture devices.
        .target(name: "CDeviceShims"),
        // zxing-cpp (C++) behind a C header, for Aztec, Data Matrix and PDF417.
        .target(name: "CZXingShim", linkerSettings: [.linkedLibrary("ZXing")]),
        // renameat2(RENAME_NOREPLACE), which Glibc's Swift overlay does not export.
        .target(name: "CFileShims"),
        // Files never lost: moves that cannot replace, one quarantine writer, the farm's own files.
        .target(name: "SafeFiles", dependencies: ["CFileShims"]),

        // Pure Swift time model.
        .target(name: "MediaTime"),
        // Pure Swift: the quality checks' plan, severities, verdict and report, one shape for the manifest and the checks.
        .target(name: "QualityModel"),

        // Swift over FFmpeg, no policy.
        .target(name: "MediaCore", dependencies: [
            "CFFmpeg", "CMediaShims", "CRubberBand", "CZBar", "CEbur128", "CZXingShim", "MediaTime", "S3Client",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "MediaInspect", dependencies: ["MediaCore", "MediaTime", "QualityModel"]),
        .target(name: "CodeScan", dependencies: ["MediaCore", "MediaTime"]),
        .target(name: "MediaEdit", dependencies: ["MediaCore", "MediaTime",
                                                  .product(name: "Logging", package: "swift-log"),
                                                  // AES-128-CBC for HLS's encrypted segments.
                                                  .product(name: "Crypto", package: "swift-crypto"),
                                                  .product(name: "CryptoExtras", package: "swift-crypto")]),
        // Pictures of the media (AVAssetImageGenerator): frames at times, sized, turned, in true colours.
        .target(name: "MediaImage", dependencies: ["MediaCore", "MediaTime"]),

        // Live capture: sources, the segment writer, the capture session (AVCaptureMovieFileOutput).
        .target(name: "MediaCapture", dependencies: ["CDeviceShims", "CodeScan", "MediaImage", "MediaCore", "MediaTime", "SafeFiles"]),
        // The farm's pure model: manifests, jobs, state machine. No I/O.
        .target(name: "FarmModel", dependencies: ["MediaTime", "QualityModel"]),
        // The queue: one protocol; SQLite (GRDB) the embedded backend, PostgreSQL (postgres-nio) for several hosts.
        .target(name: "FarmStore", dependencies: [
            "FarmModel", "QualityModel", "SafeFiles",
            .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The asset library: content ids, local paths per host, albums, fetches, representations, changes.
        .target(name: "FarmLibrary", dependencies: [
            "FarmStore", "FarmModel", "MediaTime", "SafeFiles", "S3Client", "QualityModel",
            .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // Where the library meets inspection: an asset's facts from MediaInspect (AssetInspector.media).
        .target(name: "FarmLibraryMedia", dependencies: ["FarmLibrary", "MediaCore", "MediaInspect"]),
        // The one way jobs enter the queue (submit, the API, ingest, capture): manifests read and checked
        // against the file system, unknown assets, a scoped token's policy, templates, enqueueing, lineage.
        .target(name: "FarmSubmit", dependencies: ["FarmModel", "FarmStore", "FarmLibrary", "SafeFiles", "S3Client"]),
        // Watch-folder ingest: settle state, probe gate, content hashes, quarantine, templates.
        .target(name: "FarmIngest", dependencies: [
            "FarmModel", "FarmStore", "FarmLibrary", "FarmLibraryMedia", "FarmSubmit", "MediaInspect", "MediaCapture", "MediaTime", "SafeFiles", "S3Client",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // Where the farm meets the media modules: JobRunner, the coordinator and its worker processes.
        .target(name: "FarmRuntime", dependencies: [
            "FarmModel", "FarmStore", "FarmLibrary", "FarmLibraryMedia", "FarmSubmit", "SafeFiles", "CProcessShims", "CodeScan", "MediaImage", "MediaEdit", "MediaInspect", "MediaCore", "MediaTime", "QualityModel",
            "S3Client", .product(name: "NIOCore", package: "swift-nio"), .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        // An S3 client of its own (no AWS SDK here): Signature Version 4 over swift-crypto, requests over
        // async-http-client, ranged reads for demuxers, multipart uploads.
        .target(name: "S3Client", dependencies: [
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        // Webhooks: the outbox's sender (any coordinator delivers), Standard Webhooks signatures, the SSRF guard.
        .target(name: "FarmWebhooks", dependencies: [
            "FarmStore", "FarmModel",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // The coordinator's HTTP face: health, Prometheus metrics, the JSON API, the status page.
        .target(name: "FarmHTTP", dependencies: [
            "FarmRuntime", "FarmLibrary", "FarmLibraryMedia", "FarmStore", "FarmModel", "FarmSubmit", "S3Client", "QualityModel", "MediaImage",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], plugins: ["OpenAPIPlugin"]),
        // The coordinator and batch processes wired as service groups (the coordinator, the HTTP face, the
        // webhook deliverer, the stop signals), built by a function the command line and tests call alike.
        .target(name: "FarmApplication", dependencies: [
            "FarmHTTP", "FarmWebhooks", "FarmRuntime", "FarmStore", "FarmModel",
            // The pod-deletion cost's patches to the Kubernetes API server.
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // docs/openapi.json built into FarmHTTP (OpenAPIDocument), served at /api/openapi.json.
        .executableTarget(name: "EmbedOpenAPI"),
        .plugin(name: "OpenAPIPlugin", capability: .buildTool(), dependencies: ["EmbedOpenAPI"]),
        // The queue's commands (submit, status, cancel, retry, queue, webhooks, the library's that read no
        // media), as a library that loads no media module; and the `mediafarm` front that runs them or
        // hands every other command to the media program.
        .target(name: "QueueCLI", dependencies: [
            "FarmSubmit", "FarmLibrary", "FarmStore", "FarmModel", "QualityModel", "SafeFiles",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "MediaFarmCLI", dependencies: [
            "QueueCLI", "FarmApplication", "FarmLibraryMedia", "FarmHTTP", "FarmWebhooks", "MediaCapture", "FarmRuntime", "FarmSubmit", "SafeFiles", "FarmStore", "FarmLibrary", "FarmIngest", "CodeScan", "MediaImage", "MediaInspect", "MediaCore", "MediaTime", "FarmModel", "QualityModel",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        // `mediafarm`: the queue's commands in a program without the media libraries (its Swift runtime
        // linked in, so that it starts in a few milliseconds); every other command is handed, by exec, to
        // `mediafarm-engine` beside it.
        .executableTarget(name: "mediafarm", dependencies: ["QueueCLI"], linkerSettings: [.unsafeFlags(staticFoundation)]),
        // The media program: every command.
        .executableTarget(name: "mediafarm-engine", dependencies: ["MediaFarmCLI"],
                          linkerSettings: [.unsafeFlags(["-Xlinker", "--no-export-dynamic", "-Xlinker", "--gc-sections"])]),
        // libFuzzer targets (script/fuzz builds them with -DFUZZING and the fuzzer sanitizer); in an ordinary
        // build it replays the kept regression inputs.
        .executableTarget(name: "mediafarm-fuzz", dependencies: ["FarmModel", "MediaInspect"], path: "fuzz",
                          exclude: ["regressions"]),
        // bench/queue's store throughput measurement.
        .executableTarget(name: "mediafarm-queue-bench", dependencies: ["FarmStore", "FarmModel"], path: "bench/QueueBench"),
        // bench/library's fetch and resolve measurement over a large library.
        .executableTarget(name: "mediafarm-library-bench", dependencies: ["FarmLibrary", "FarmLibraryMedia", "FarmStore", "FarmModel", "MediaTime", "SafeFiles"], path: "bench/LibraryBench"),

        // Tests: one target per module, plus a helper that makes media fixtures with real FFmpeg.
        .target(name: "FarmTestSupport", path: "Tests/FarmTestSupport"),
        // The streaming package checker, for the packager's tests and the farm's.
        .target(name: "StreamTestSupport", dependencies: ["MediaEdit", "FarmTestSupport"], path: "Tests/StreamTestSupport"),
        .testTarget(name: "MediaTimeTests", dependencies: ["MediaTime"]),
        .testTarget(name: "SafeFilesTests", dependencies: ["SafeFiles", "FarmTestSupport"]),
        .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore", "MediaTime", "FarmTestSupport", "CRubberBand", "CZBar", "CEbur128"]),
        .testTarget(name: "MediaInspectTests", dependencies: ["MediaInspect", "MediaCore", "MediaTime", "QualityModel", "FarmTestSupport"]),
        .testTarget(name: "MediaEditTests", dependencies: ["MediaEdit", "MediaInspect", "MediaCore", "MediaTime", "FarmTestSupport", "StreamTestSupport"]),
        .testTarget(name: "MediaImageTests", dependencies: ["MediaImage", "MediaCore", "MediaTime", "FarmTestSupport"]),
        .testTarget(name: "FarmModelTests", dependencies: ["FarmModel", "MediaTime", "QualityModel"]),
        .testTarget(name: "FarmStoreTests", dependencies: ["FarmStore", "FarmModel", "FarmTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "MediaCaptureTests", dependencies: ["MediaCapture", "FarmTestSupport"]),
        .testTarget(name: "FarmIngestTests", dependencies: ["FarmIngest", "FarmSubmit", "FarmStore", "FarmTestSupport"]),
        .testTarget(name: "FarmSubmitTests", dependencies: ["FarmSubmit", "FarmLibrary", "FarmLibraryMedia", "FarmStore", "FarmModel", "FarmTestSupport"]),
        .testTarget(name: "FarmLibraryTests", dependencies: ["FarmLibrary", "FarmLibraryMedia", "FarmStore", "FarmModel", "SafeFiles", "FarmTestSupport"]),
        .testTarget(name: "FarmRuntimeTests", dependencies: ["FarmRuntime", "MediaFarmCLI", "QueueCLI", "FarmSubmit", "FarmStore", "FarmModel", "MediaTime", "CodeScan", "MediaEdit", "FarmTestSupport", "StreamTestSupport", "S3Client",
                                                         .product(name: "NIOCore", package: "swift-nio"), .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "CodeScanTests", dependencies: ["CodeScan", "MediaCore", "MediaTime", "FarmTestSupport"]),
        .testTarget(name: "MediaFarmCLITests", dependencies: ["MediaFarmCLI", "QueueCLI", "FarmApplication", "FarmRuntime", "FarmStore", "FarmSubmit", "FarmTestSupport", "S3Client",
                                                           .product(name: "NIOCore", package: "swift-nio")]),
        .testTarget(name: "S3ClientTests", dependencies: ["S3Client", "FarmTestSupport"]),
        .testTarget(name: "FarmWebhooksTests", dependencies: ["FarmWebhooks", "FarmStore", "FarmModel", "FarmTestSupport",
                                                              .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "FarmApplicationTests", dependencies: [
            "FarmApplication", "FarmHTTP", "FarmRuntime", "FarmStore", "FarmModel", "FarmTestSupport",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            // A stand-in for the Kubernetes API server (PodDeletionCostTests).
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
        ]),
        .testTarget(name: "FarmHTTPTests", dependencies: [
            "FarmHTTP", "FarmLibrary", "FarmRuntime", "FarmStore", "FarmTestSupport",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    cxxLanguageStandard: .cxx17
)

// Every Swift module of MediaFarm reaches type metadata through accessors, not by mangled name: a type
// looked up by name has its generic requirements checked at run time, each check the first time a scan of
// every protocol conformance in the program (some 11,000 in the front). That was a third of the
// front's start-up, which a queue command is mostly made of.
for target in package.targets where [.regular, .executable, .test].contains(target.type) && !(target.name.first == "C" && target.name.dropFirst().first?.isUppercase == true) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"])]
}

// The quality checks' arithmetic runs over every sample of real movies in the tests: it is built optimized
// in debug builds too (unoptimized, its row loops run a sample at a time: the corpus's checks took 431 s, 28 s
// optimized).
for target in package.targets where target.name == "MediaInspect" {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-O"], .when(configuration: .debug))]
}

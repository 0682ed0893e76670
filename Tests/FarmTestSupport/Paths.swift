import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where things are, relative to the package.
public enum TestPaths {
    /// The package root (the folder holding Package.swift).
    public static let packageRoot: URL = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }()

    /// The real-world corpus, `Tests/Fixtures/corpus` (see its NOTICE), or nil when it is absent (tests
    /// that need it then fail; `CorpusTests.corpusIsPresent` says so once).
    public static let corpus: URL? = {
        let url = packageRoot.appendingPathComponent("Tests/Fixtures/corpus")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    /// Every media file of the corpus (not its README, NOTICE or license), sorted; empty when the corpus is absent.
    public static var corpusFiles: [URL] {
        guard let corpus else { return [] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []
        return names.filter { !$0.hasSuffix(".md") && $0 != "NOTICE" && !$0.hasPrefix("LICENSE") }.sorted()
            .map { corpus.appendingPathComponent($0) }
    }

    /// The built `mediafarm` executable (debug build made by `swift build --build-tests`).
    public static var mediafarmExecutable: String {
        let candidates = [".build/debug/mediafarm", ".build/release/mediafarm"].map { packageRoot.appendingPathComponent($0).path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }

    /// Waits up to `timeout` seconds until `folder` holds an output temporary (`*.tmp`) of at least `bytes`:
    /// an export is writing (and has written that much). The temporaries' names (empty when none appeared).
    @discardableResult
    public static func waitForTemporary(in folder: URL, timeout: Double, holding bytes: Int64 = 0) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".tmp") }  // none yet
            let written = names.contains { name in
                let size = (try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size] as? NSNumber)  // gone
                return (size?.int64Value ?? -1) >= bytes
            }
            if written || Date() >= deadline { return names }
            usleep(20_000)
        }
    }

    /// Waits up to `timeout` seconds until process `pid` has `path` open (it has begun reading it). Whether it has.
    @discardableResult
    public static func waitUntilOpen(_ path: String, by pid: Int32, timeout: Double = 30) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        while Date() < deadline {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []  // not started yet, or ended
            if fds.contains(where: { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == real }) {  // closed meanwhile
                return true
            }
            usleep(10_000)
        }
        return false
    }

    /// Waits up to `timeout` seconds until something listens on loopback `port` (a UDP socket bound to it,
    /// or a TCP socket listening), as /proc/net shows it: a receiver is ready before its sender starts.
    /// Whether it does.
    @discardableResult
    public static func waitForListener(port: Int, udp: Bool = true, timeout: Double = 30) -> Bool {
        let hex = String(format: ":%04X", port)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            for table in udp ? ["/proc/net/udp", "/proc/net/udp6"] : ["/proc/net/tcp", "/proc/net/tcp6"] {
                // Read to its end: `String(contentsOfFile:)` reads a /proc file's first 4 KiB only (27 sockets).
                let whole = FileHandle(forReadingAtPath: table)?.readDataToEndOfFile() ?? Data()
                let lines = String(decoding: whole, as: UTF8.self).split(separator: "\n").dropFirst()
                for line in lines {
                    let fields = line.split(separator: " ")
                    // local_address is the second field; TCP's state 0A is LISTEN.
                    guard fields.count > 3, fields[1].hasSuffix(hex) else { continue }
                    if udp || fields[3] == "0A" { return true }
                }
            }
            usleep(20_000)
        }
        return false
    }

    /// A new empty folder under the system temporary folder, readable by every user.
    public static func makeTemporaryFolder(_ label: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("mediafarm-tests-\(label)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        return url
    }

    /// A port on 127.0.0.1 that nothing listens on now (the kernel's pick), for a live stream in a test.
    public static func freeLoopbackPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

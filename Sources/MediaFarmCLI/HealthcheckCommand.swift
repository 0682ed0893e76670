import ArgumentParser
import FarmModel
import Foundation
import QueueCLI
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm healthcheck`: asks a coordinator's /healthz, for a container's HEALTHCHECK (the image has
/// no curl). Exit 0 when it answers 200, 1 otherwise, with the reason on stderr.
struct HealthcheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck",
        abstract: "Ask a coordinator's HTTP face whether it is healthy (for container health checks).")

    @Option(help: "The health endpoint (default: MEDIAFARM_HEALTH_URL, else http://127.0.0.1:8080/healthz).")
    var url: String?

    @Option(parsing: .unconditional, help: "Seconds to wait for the answer \(UserNumbers.wait.inHelp).", transform: UserNumbers.wait.option)
    var timeout: Double = 5

    func run() throws {
        let text = url ?? ProcessInfo.processInfo.environment["MEDIAFARM_HEALTH_URL"] ?? "http://127.0.0.1:8080/healthz"
        guard let components = URLComponents(string: text), components.scheme == "http", let host = components.host else {
            throw CLIError("\(text): give an http:// URL", status: ExitStatus.usage)
        }
        let status = try Self.get(host: host, port: components.port ?? 80, path: components.path.isEmpty ? "/" : components.path,
                                  timeout: timeout)
        guard status == 200 else { throw CLIError("\(text): answered \(status)") }
        print("\(text): healthy")
    }

    /// The status code of `GET path` (HTTP/1.0, one connection).
    static func get(host: String, port: Int, path: String, timeout: Double) throws -> Int {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(bare, String(port), &hints, &list) == 0, let info = list else { throw CLIError("\(host): cannot resolve") }
        defer { freeaddrinfo(list) }
        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard fd >= 0 else { throw CLIError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            throw CLIError("\(host):\(port): cannot connect: \(String(cString: strerror(errno)))")
        }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: \(host)\r\n\r\n".utf8)
        guard send(fd, request, request.count, 0) == request.count else { throw CLIError("\(host):\(port): cannot send the request") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while !answer.contains(UInt8(ascii: "\n")) {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { throw CLIError("\(host):\(port): no answer within \(timeout) s") }
            answer += buffer[..<n]
        }
        let line = String(decoding: answer.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else { throw CLIError("\(host):\(port): not an HTTP answer: \(line)") }
        return status
    }
}

import Foundation

/// Runs a program to completion and captures its output. For fixtures, oracles and black-box CLI tests.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var stdoutData: Data
}

public enum ProcessRunner {
    /// Runs `executable` (a path, or a name looked up on PATH) with `arguments`.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], currentDirectory: String? = nil,
                           environment: [String: String]? = nil) throws -> ProcessResult {
        let process = Process()
        if executable.contains("/") {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [executable] + arguments
        }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes concurrently so neither fills up and blocks the child.
        let errBox = DataBox()
        let errReader = Thread { errBox.data = err.fileHandleForReading.readDataToEndOfFile() }
        errReader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errBox.done { usleep(1000) }
        return ProcessResult(status: process.terminationStatus,
                             stdout: String(decoding: outData, as: UTF8.self),
                             stderr: String(decoding: errBox.data, as: UTF8.self),
                             stdoutData: outData)
    }

    /// Runs and throws when the program fails, with its stderr in the message.
    @discardableResult
    public static func check(_ executable: String, _ arguments: [String]) throws -> ProcessResult {
        let r = try run(executable, arguments)
        guard r.status == 0 else {
            throw FixtureError("\(executable) \(arguments.joined(separator: " ")) exited \(r.status): \(r.stderr)")
        }
        return r
    }
}

private final class DataBox: @unchecked Sendable {
    private let lock = NSLock()
    private var _data = Data()
    private var _done = false
    var data: Data {
        get { lock.withLock { _data } }
        set { lock.withLock { _data = newValue; _done = true } }
    }
    var done: Bool { lock.withLock { _done } }
}

public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

import ArgumentParser
import FarmLibrary
import FarmModel
import FarmStore
import Foundation

/// The library's host name and access: `--host` (else MEDIAFARM_HOST, else this machine's short name) and
/// a scoped token from `--token-file` (else MEDIAFARM_LIBRARY_TOKEN); without a token, full access.
public struct LibraryOptions: ParsableArguments {
    public init() {}

    @Option(help: ArgumentHelp("This host's name in the library (default: $MEDIAFARM_HOST, else the machine's host name).", valueName: "name"))
    public var host: String?

    @Option(name: .customLong("token-file"), help: ArgumentHelp("A file holding a scoped library token: only its albums' assets are seen (default: $MEDIAFARM_LIBRARY_TOKEN).", valueName: "file"))
    public var tokenFile: String?

    public var hostName: String { Self.hostName(host) }

    /// `host`, else MEDIAFARM_HOST, else this machine's short host name.
    public static func hostName(_ host: String?) -> String {
        host ?? ProcessInfo.processInfo.environment["MEDIAFARM_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? AssetLibrary.defaultHost
    }

    public func token() throws -> String? {
        if let tokenFile {
            guard let data = FileManager.default.contents(atPath: tokenFile) else {
                throw CLIError("\(tokenFile): cannot be read (no such file, or no permission)", status: ExitStatus.usage)
            }
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else { throw CLIError("\(tokenFile): holds no token", status: ExitStatus.usage) }
            return token
        }
        return ProcessInfo.processInfo.environment["MEDIAFARM_LIBRARY_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public func validate() throws {
        if let host, host.isEmpty || host.contains(where: { $0.isWhitespace || $0 == "/" }) {
            throw ValidationError("--host \(host): a name without spaces or slashes")
        }
    }

    /// The library of `store`, as this host, with the token's access; `inspector` learns the facts of
    /// content new to the library (`.none`: this program reads no media).
    public func open(_ store: any JobStore, inspector: AssetInspector = .none) async throws -> AssetLibrary {
        try await Self.run { try await AssetLibrary.open(store, host: hostName, token: try token(), inspector: inspector) }
    }

    /// Runs a library call; its errors become CLI errors with their exit status.
    public static func run<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as LibraryError {
            throw CLIError(error.description, status: error.isUsage ? ExitStatus.usage : ExitStatus.failure)
        }
    }
}

/// Asset ids on the command line: a malformed one is a usage error.
public func parseAssetIDs(_ texts: [String]) throws -> [AssetID] {
    try texts.map { text in
        let bare = text.hasPrefix(AssetID.scheme) ? String(text.dropFirst(AssetID.scheme.count)) : text
        guard let id = AssetID(bare) else { throw CLIError(AssetIDError(text: text).description, status: ExitStatus.usage) }
        return id
    }
}

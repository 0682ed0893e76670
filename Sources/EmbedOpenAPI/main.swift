// The build's tool that puts docs/openapi.json in the binary (Plugins/OpenAPIPlugin runs it): it writes a
// Swift file holding the document's bytes, so that the face serves exactly what docs/ holds, with no copy
// of it in the sources.
//   embed-openapi DOCUMENT OUTPUT.swift
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: embed-openapi DOCUMENT OUTPUT.swift\n".utf8))
    exit(2)
}
let text: String
do {
    text = try String(contentsOfFile: arguments[1], encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("embed-openapi: \(arguments[1]): \(error.localizedDescription)\n".utf8))
    exit(1)
}
guard !text.contains("\"\"\"#") else {
    FileHandle.standardError.write(Data("embed-openapi: \(arguments[1]) holds '\"\"\"#', which would end the Swift literal\n".utf8))
    exit(1)
}
let source = """
    // Made by Plugins/OpenAPIPlugin from docs/openapi.json at build time.

    /// The face's own description (OpenAPI 3.1), served at `/api/openapi.json`: the bytes of docs/openapi.json.
    enum OpenAPIDocument {
        static let json = #\"\"\"
    \(text.hasSuffix("\n") ? String(text.dropLast()) : text)
    \"\"\"#
    }

    """
do {
    try source.write(toFile: arguments[2], atomically: true, encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("embed-openapi: \(arguments[2]): \(error.localizedDescription)\n".utf8))
    exit(1)
}

import Foundation
import PackagePlugin

/// Builds docs/openapi.json into FarmHTTP (`OpenAPIDocument.json`), so the served document is the one in
/// docs/ and the sources hold no copy of it.
@main
struct OpenAPIPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let document = context.package.directoryURL.appending(path: "docs/openapi.json")
        let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument.swift")
        return [.buildCommand(displayName: "Embedding docs/openapi.json", executable: try context.tool(named: "EmbedOpenAPI").url,
                              arguments: [document.path, output.path], inputFiles: [document], outputFiles: [output])]
    }
}

/// The first line a standby worker (`mediafarm worker --standby`) reads on stdin: the job's options,
/// which a worker started for its job gets as arguments. The manifest follows on the next line.
public struct WorkerHeader: Codable, Sendable, Hashable {
    public var name: String
    public var baseDirectory: String
    public var outputRoots: [String]
    public var stageToken: String?

    public init(name: String, baseDirectory: String, outputRoots: [String], stageToken: String?) {
        self.name = name
        self.baseDirectory = baseDirectory
        self.outputRoots = outputRoots
        self.stageToken = stageToken
    }
}

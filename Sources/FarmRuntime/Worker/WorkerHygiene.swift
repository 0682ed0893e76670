internal import CProcessShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a kept worker process must look like before each job, so that nothing of one job reaches the
/// next: taken once before the first job, checked and put back after every job. The working directory,
/// the environment, the resource limits and the umask are restored; each job gets a temporary folder of
/// its own (`TMPDIR`), removed with whatever it holds; a descriptor the job left open cannot be closed
/// safely (something may still use it) and makes the worker retire instead.
public struct WorkerHygiene {
    private var directory: String
    private var environment: [String: String]
    private var limits: [(resource: Int32, limit: rlimit)]
    private var mask: mode_t
    private var descriptors: Set<Int32>
    /// The temporary folder's parent: the worker's own TMPDIR, else /tmp.
    private let temporaryRoot: String
    private var jobs = 0
    /// The current job's temporary folder.
    private var jobTemporaries: String?

    /// The limits a job may change and the worker puts back.
    private static let resources: [Int32] = [Int32(RLIMIT_AS.rawValue), Int32(RLIMIT_CPU.rawValue), Int32(RLIMIT_FSIZE.rawValue),
                                             Int32(RLIMIT_NOFILE.rawValue), Int32(RLIMIT_STACK.rawValue), Int32(RLIMIT_CORE.rawValue),
                                             Int32(RLIMIT_DATA.rawValue)]

    /// Takes the process's state as the one every job starts from.
    public init() {
        directory = FileManager.default.currentDirectoryPath
        environment = Self.currentEnvironment()
        limits = Self.resources.map { resource in
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(UInt32(resource)), &limit)
            return (resource, limit)
        }
        mask = umask(0o022)
        umask(mask)
        descriptors = Set(Self.openDescriptors().keys)
        temporaryRoot = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// Before a job: a new, empty temporary folder as its TMPDIR.
    public mutating func prepareJob() {
        jobs += 1
        let folder = "\(temporaryRoot)/mediafarm-worker-\(getpid())-\(jobs)"
        if mkdir(folder, 0o700) == 0 {
            jobTemporaries = folder
            setenv("TMPDIR", folder, 1)
        } else {
            jobTemporaries = nil
        }
    }

    /// After a job: puts back what it changed and removes its temporaries. `restored` says what was put
    /// back; `unfixable` what could not be (a reason to retire the worker).
    public mutating func cleanUp() -> (restored: [String], unfixable: [String]) {
        var restored: [String] = []
        var unfixable: [String] = []
        if let folder = jobTemporaries {
            let left = Self.count(folder)
            if left > 0 { restored.append("removed \(left) temporary file(s) the job left in its TMPDIR") }
            // A folder still there after the removal is what is reported.
            if (try? FileManager.default.removeItem(atPath: folder)) == nil, FileManager.default.fileExists(atPath: folder) {
                unfixable.append("cannot remove the job's temporary folder \(folder)")
            }
            jobTemporaries = nil
        }
        if FileManager.default.currentDirectoryPath != directory {
            if chdir(directory) == 0 {
                restored.append("changed directory back to \(directory)")
            } else {
                unfixable.append("cannot change directory back to \(directory): \(String(cString: strerror(errno)))")
            }
        }
        let now = Self.currentEnvironment()
        var variables: [String] = []
        for (key, value) in now where environment[key] != value {
            if let original = environment[key] { setenv(key, original, 1) } else { unsetenv(key) }
            if key != "TMPDIR" { variables.append(key) }
        }
        for (key, value) in environment where now[key] == nil {
            setenv(key, value, 1)
            variables.append(key)
        }
        if !variables.isEmpty { restored.append("restored the environment (\(variables.sorted().joined(separator: ", ")))") }
        for (resource, original) in limits {
            var current = rlimit()
            getrlimit(__rlimit_resource_t(UInt32(resource)), &current)
            guard current.rlim_cur != original.rlim_cur || current.rlim_max != original.rlim_max else { continue }
            var wanted = original
            if setrlimit(__rlimit_resource_t(UInt32(resource)), &wanted) == 0 {
                restored.append("restored resource limit \(Self.limitName(resource))")
            } else {
                unfixable.append("cannot restore resource limit \(Self.limitName(resource)): \(String(cString: strerror(errno)))")
            }
        }
        let currentMask = umask(mask)
        if currentMask != mask { restored.append("restored the umask to \(String(mask, radix: 8))") }
        for (fd, target) in Self.openDescriptors().sorted(by: { $0.key < $1.key }) where !descriptors.contains(fd) {
            // The runtime's own event descriptors (epoll, eventfd, timerfd), opened on first use, stay.
            if target.hasPrefix("anon_inode:") {
                descriptors.insert(fd)
                continue
            }
            unfixable.append("the job left descriptor \(fd) open (\(target))")
        }
        return (restored, unfixable)
    }

    /// Resident memory in bytes. Above `limit`, freed heap memory is given back first and the size read
    /// again, so that only memory still in use counts against it; below, the heap is left as it is: giving
    /// it back after every job made the next job fault it in again (a tenth of a small job's time).
    public static func residentBytes(limit: UInt64 = 0) -> UInt64 {
        let resident = readResidentBytes()
        guard limit > 0, resident > limit else { return resident }
        mf_trim_heap()
        return readResidentBytes()
    }

    private static func readResidentBytes() -> UInt64 {
        // no /proc: the memory limit cannot be measured and is not enforced
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = UInt64(fields[1]) else { return 0 }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Open descriptors and what each names (readlink of /proc/self/fd/N).
    static func openDescriptors() -> [Int32: String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [:] }  // no /proc: descriptors are not checked
        var open: [Int32: String] = [:]
        var buffer = [CChar](repeating: 0, count: 4096)
        for name in names {
            guard let fd = Int32(name) else { continue }
            let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
            guard n > 0 else { continue }  // closed since the listing (the listing's own descriptor)
            let target = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasSuffix("/fd") && target.hasPrefix("/proc/") { continue }
            open[fd] = target
        }
        return open
    }

    static func currentEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }

    private static func count(_ folder: String) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return 0 }
        var n = 0
        while walker.nextObject() != nil { n += 1 }
        return n
    }

    private static func limitName(_ resource: Int32) -> String {
        switch resource {
        case Int32(RLIMIT_AS.rawValue): "RLIMIT_AS"
        case Int32(RLIMIT_CPU.rawValue): "RLIMIT_CPU"
        case Int32(RLIMIT_FSIZE.rawValue): "RLIMIT_FSIZE"
        case Int32(RLIMIT_NOFILE.rawValue): "RLIMIT_NOFILE"
        case Int32(RLIMIT_STACK.rawValue): "RLIMIT_STACK"
        case Int32(RLIMIT_CORE.rawValue): "RLIMIT_CORE"
        default: "RLIMIT_DATA"
        }
    }
}

/// What a test makes a kept worker do to itself during a job (`mediafarm worker --test-misbehave`, a
/// hidden option), to check that the next job starts clean; and `report`, which logs the worker's state
/// at each job's start.
public struct WorkerMisbehaviour: Sendable {
    public var kinds: Set<String>
    public static let known: Set<String> = ["fd", "cwd", "env", "temp", "limit", "umask", "report"]

    public init(_ kinds: Set<String>) { self.kinds = kinds }

    /// Leaves state behind, as a careless job would.
    public func leaveState() {
        if kinds.contains("fd") { _ = open("/dev/null", O_RDONLY) }
        if kinds.contains("cwd") { _ = chdir("/") }
        if kinds.contains("env") { setenv("MEDIAFARM_TEST_LEFT_BEHIND", "1", 1) }
        if kinds.contains("temp"), let folder = ProcessInfo.processInfo.environment["TMPDIR"] {
            _ = FileManager.default.createFile(atPath: "\(folder)/left-behind.tmp", contents: Data("x".utf8))
        }
        if kinds.contains("limit") {
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue)), &limit)
            limit.rlim_cur = min(limit.rlim_cur, 100)
            setrlimit(__rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue)), &limit)
        }
        if kinds.contains("umask") { umask(0o077) }
    }

    /// The worker's state as one line: descriptors open (other than the runtime's event descriptors), directory, the test variable, the
    /// temporaries in TMPDIR's parent left by earlier jobs, the open-files limit and the umask.
    public static func describeState() -> String {
        let env = WorkerHygiene.currentEnvironment()
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue)), &limit)
        let mask = umask(0o022)
        umask(mask)
        let tmp = env["TMPDIR"] ?? "/tmp"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: tmp))?.count ?? -1  // -1 in the diagnostic line: cannot be listed
        let parent = (tmp as NSString).deletingLastPathComponent
        let leftover = ((try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? [])  // a diagnostic only
            .filter { $0.hasPrefix("mediafarm-worker-\(getpid())-") && "\(parent)/\($0)" != tmp }.count
        return "state pid=\(getpid()) descriptors=\(WorkerHygiene.openDescriptors().values.filter { !$0.hasPrefix("anon_inode:") }.count) cwd=\(FileManager.default.currentDirectoryPath) "
            + "left=\(env["MEDIAFARM_TEST_LEFT_BEHIND"] ?? "unset") tmpEntries=\(entries) oldTmpFolders=\(leftover) "
            + "nofile=\(limit.rlim_cur) umask=\(String(mask, radix: 8))"
    }
}

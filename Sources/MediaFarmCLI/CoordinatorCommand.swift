import ArgumentParser
import FarmApplication
import FarmHTTP
import FarmLibrary
import FarmLibraryMedia
import FarmModel
import FarmRuntime
import FarmStore
import FarmWebhooks
import Foundation
import Logging
import Metrics
import QueueCLI
import SafeFiles
import ServiceLifecycle
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `mediafarm coordinator`: runs queued jobs in worker processes until stopped (SIGTERM drains), or
/// with --exit-when-idle until the queue is empty.
struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coordinator",
        abstract: "Run queued jobs in worker processes (each kept for up to --recycle-after jobs, default 100).",
        discussion: """
        Claims jobs only for free worker slots and renews their leases while they run; jobs of a coordinator \
        that died are rescued when their lease expires. A worker that crashes, is killed or passes its timeout \
        fails that attempt; the job is retried with exponential backoff and is dead after its max attempts. \
        SIGTERM or SIGINT drains: no new claims; running jobs get --grace seconds, then are stopped and given \
        back to the queue without using up an attempt. With --exit-when-idle the coordinator exits once nothing \
        is queued or running: status 1 when a job it ran failed or died, else 0.

        With --http HOST:PORT it serves /healthz, /readyz (503 while draining), /metrics (Prometheus), the JSON \
        API under /api (see docs/openapi.json) and a status page at /. Requests carry `Authorization: Bearer TOKEN` \
        (browsers sign in at /login, or open the URL printed at start): the token comes from --token-file, which \
        listening beyond loopback requires; on loopback without it, a token is made for the run and printed \
        (--no-auth serves loopback without one). A Host header that is not an IP address, localhost, the listen \
        address or an --allowed-host name is refused (421).
        """)

    @OptionGroup var queue: QueueOptions

    @Option(parsing: .unconditional, help: "Worker processes at once \(UserNumbers.workers.inHelp).", transform: UserNumbers.workers.option)
    var workers: Int = 2

    @Flag(name: .customLong("exit-when-idle"), help: "Exit when nothing is queued or running (for CI); status 1 if a job failed.")
    var exitWhenIdle = false

    @Option(name: .customLong("exit-after-idle"), parsing: .unconditional,
            help: ArgumentHelp("Exit (status 0) once this coordinator has run nothing and found nothing to claim for this many seconds, whatever runs elsewhere (a pod of a Kubernetes ScaledJob) \(UserNumbers.idleExit.inHelp).", valueName: "seconds"),
            transform: UserNumbers.idleExit.option)
    var exitAfterIdle: Double?

    @Option(parsing: .unconditional, help: "Seconds a lease holds without renewal \(UserNumbers.lease.inHelp).", transform: UserNumbers.lease.option)
    var lease: Double = 30

    @Option(name: .customLong("job-timeout"), parsing: .unconditional, help: "Seconds an attempt may take unless its job sets --timeout \(UserNumbers.timeout.inHelp).", transform: UserNumbers.timeout.option)
    var jobTimeout: Double = 3600

    @Option(parsing: .unconditional, help: "Seconds running jobs get to finish after SIGTERM \(UserNumbers.grace.inHelp).", transform: UserNumbers.grace.option)
    var grace: Double = 30

    @Option(name: .customLong("max-memory"), parsing: .unconditional, help: "Address-space limit of each worker (e.g. 8G, 512M; 0: none) \(UserNumbers.bytes.inHelp).", transform: UserNumbers.bytes.option)
    var maxMemory: UInt64 = 8 << 30

    @Option(name: .customLong("max-cpu"), parsing: .unconditional, help: "CPU-time limit of each worker in seconds (0: none) \(UserNumbers.cpuSeconds.inHelp).", transform: UserNumbers.cpuSeconds.option)
    var maxCPU: UInt64 = 0

    @Option(name: .customLong("max-file-size"), parsing: .unconditional, help: "Largest file a worker may write (e.g. 20G; 0: none) \(UserNumbers.bytes.inHelp).", transform: UserNumbers.bytes.option)
    var maxFileSize: UInt64 = 0

    @Option(name: .customLong("worker-command"),
            help: "The worker program and its first arguments, split on spaces; the worker's arguments are appended (default: this program's `worker`).")
    var workerCommand: String?

    @Flag(name: .customLong("no-standby"), help: "Start a worker process for each job when it is claimed: no kept workers (slower; for wrappers that cannot run several jobs).")
    var noStandby = false

    @OptionGroup var reuse: WorkerReuseOptions

    @Option(name: .customLong("chunk-seconds"), parsing: .unconditional,
            help: "Encode constant-frame-rate exports and streaming packages that do not say otherwise in chunks of about this many seconds, each a job any worker of any host runs (a manifest's \"chunkSeconds\" wins) \(UserNumbers.chunkSeconds.inHelp).", transform: UserNumbers.chunkSeconds.option)
    var chunkSeconds: Double?

    @Option(name: .customLong("chunk-above"), parsing: .unconditional,
            help: "With --chunk-seconds: only exports and packages longer than this many seconds are chunked; shorter ones are encoded whole \(UserNumbers.duration.inHelp).", transform: UserNumbers.duration.option)
    var chunkAbove: Double?

    @Flag(name: .customLong("no-reuse-results"),
          help: "Run every job, never answering one from an earlier job's result with the same content, and record no results (manifests opt out one by one with \"reuse\": false).")
    var noReuseResults = false

    @Option(help: "This host's name in leases, as `status` and `queue stats` show it (default: the machine's host name).")
    var host: String?

    @Option(name: .customLong("provides"), help: ArgumentHelp(
        "A capability of this host (repeatable, e.g. gpu): jobs that require it (\"requires\": [\"gpu\"]) are claimed only by coordinators that provide it.",
        valueName: "tag"))
    var provides: [String] = []

    @Option(name: .customLong("keep-finished"), parsing: .unconditional,
            help: "Days finished jobs stay in the queue before this coordinator prunes them (0: keep them) \(UserNumbers.keepDays.inHelp).", transform: UserNumbers.keepDays.option)
    var keepFinished: Double = 30

    @Flag(help: "Print one JSON event per line (started, progress, finished, notice).")
    var json = false

    @Option(help: ArgumentHelp("Serve health, metrics, the JSON API and the status page on HOST:PORT (port 0: any free port).",
                               valueName: "host:port"))
    var http: String?

    @Option(name: .customLong("token-file"), help: "A file holding the bearer token HTTP requests must carry (required off loopback).")
    var tokenFile: String?

    @Option(name: .customLong("read-only-token-file"), help: "A file holding a second token that may only look: its bearers and the console's sessions signed in with it see everything and can change nothing (GET and HEAD only).")
    var readOnlyTokenFile: String?

    @Flag(name: .customLong("no-auth"), help: "Serve loopback HTTP without a token (any local program and any page a local browser opens may then use the API).")
    var noAuth = false

    @Option(name: .customLong("allowed-host"),
            help: ArgumentHelp("A name clients reach the HTTP face by, besides IP addresses, localhost and the listen address (repeatable); other Host headers are refused.", valueName: "name"))
    var allowedHosts: [String] = []

    @Flag(name: .customLong("cookie-secure"), help: "Mark browser session cookies Secure (the HTTP face is behind a TLS proxy).")
    var cookieSecure = false

    @Flag(name: .customLong("api-allow-overwrite"), help: "Let manifests posted with the coordinator's token set \"overwrite\": true (replace existing files).")
    var apiAllowOverwrite = false

    @Option(name: .customLong("api-base-dir"), help: "Relative paths in manifests posted to the API resolve against this folder (default: the current one).")
    var apiBaseDir: String?

    @Option(name: .customLong("output-root"),
            help: "A folder outputs of API-submitted manifests may be written under (repeatable; default: MEDIAFARM_OUTPUT_ROOTS, else --api-base-dir).")
    var outputRoots: [String] = []

    func validate() throws {
        if chunkAbove != nil, chunkSeconds == nil { throw ValidationError("--chunk-above needs --chunk-seconds: the length of the chunks") }
        if let host, host.isEmpty || host.contains(":") { throw ValidationError("--host \(host): give a name without ':'") }
        for tag in provides { if let problem = HostCapability.problem(tag) { throw ValidationError("--provides: \(problem)") } }
        if let http {
            guard let address = BindAddress(http) else { throw ValidationError("--http \(http): give HOST:PORT, e.g. 127.0.0.1:8080") }
            if noAuth && tokenFile != nil { throw ValidationError("--no-auth and --token-file contradict each other: give one") }
            if noAuth && !address.isLoopback { throw ValidationError("--no-auth is for loopback only; beyond this machine give --token-file") }
            if !address.isLoopback && tokenFile == nil {
                throw ValidationError("--http \(http) listens beyond this machine: give --token-file with the bearer token clients must send")
            }
        } else if tokenFile != nil || readOnlyTokenFile != nil || apiBaseDir != nil || !outputRoots.isEmpty || noAuth || !allowedHosts.isEmpty || cookieSecure || apiAllowOverwrite {
            throw ValidationError("--token-file, --read-only-token-file, --no-auth, --allowed-host, --cookie-secure, --api-allow-overwrite, --api-base-dir and --output-root "
                                  + "apply to --http: give --http HOST:PORT")
        }
    }

    /// The HTTP face's settings, the token read from its file (whitespace around it dropped).
    func httpConfiguration() throws -> HTTPFaceConfiguration? {
        guard let http, let address = BindAddress(http) else { return nil }
        var token: String?
        /// A token from its file (whitespace around it dropped), checked.
        func read(_ file: String, _ option: String, role: String) throws -> String {
            guard let data = FileManager.default.contents(atPath: file) else { throw CLIError("\(option) \(file): cannot be read", status: ExitStatus.usage) }
            ProtectedFiles.shared.protect(file, role: role)
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.count >= 16, !text.contains(where: \.isWhitespace) else {
                throw CLIError("\(option) \(file): the token must be at least 16 characters without spaces (e.g. `openssl rand -hex 32`)", status: ExitStatus.usage)
            }
            let bits = TokenStrength.estimatedBits(text)
            guard bits >= TokenStrength.minimumBits else {
                throw CLIError("\(option) \(file): the token is too easy to guess (about \(Int(bits)) bits; at least \(Int(TokenStrength.minimumBits)) are needed): "
                               + "make one with `openssl rand -hex 32 > \(file)`", status: ExitStatus.usage)
            }
            return text
        }
        if let tokenFile {
            token = try read(tokenFile, "--token-file", role: "the HTTP face's token file")
        } else if !noAuth {
            // Loopback without a token file: a token for this run, printed with the URL that signs a browser in.
            token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        }
        let cwd = FileManager.default.currentDirectoryPath
        let base = apiBaseDir.map { PathRules.resolve($0, against: cwd) } ?? cwd
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: base, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError("--api-base-dir \(base): no such folder", status: ExitStatus.usage)
        }
        var configuration = HTTPFaceConfiguration(host: address.host, port: address.port, token: token, baseDirectory: base,
                                                  outputRoots: OutputRoots.chosen(outputRoots))
        configuration.libraryHost = LibraryOptions.hostName(host)
        configuration.allowedHosts = allowedHosts
        configuration.cookieSecure = cookieSecure
        configuration.allowOverwrite = apiAllowOverwrite
        limits.apply(to: &configuration)
        if let readOnlyTokenFile {
            guard token != nil else { throw CLIError("--read-only-token-file needs a token to act with: not with --no-auth", status: ExitStatus.usage) }
            let readOnly = try read(readOnlyTokenFile, "--read-only-token-file", role: "the HTTP face's read-only token file")
            guard readOnly != token else { throw CLIError("--read-only-token-file \(readOnlyTokenFile): the same token as --token-file; give another", status: ExitStatus.usage) }
            configuration.readOnlyToken = readOnly
        }
        return configuration
    }

    @OptionGroup(title: "HTTP limits") var limits: FaceLimitOptions
    @OptionGroup var stall: StallOptions
    @OptionGroup(title: "Webhooks") var webhooks: WebhookOptions

    func run() async throws {
        stall.apply()
        try await run(printer: CoordinatorPrinter(json: json))
    }

    /// The command, saying what it says to `printer`: standard output, or a test's own when it runs the
    /// command in its process (`stopSignals` false: the test's process's signals are not its own).
    func run(printer: CoordinatorPrinter, stopSignals: Bool = true) async throws {
        let built = try await application(printer: printer, stopSignals: stopSignals)
        let application = built.application
        do {
            try await application.group.run()
        } catch where application.face != nil && "\(error)".contains("bind") {
            throw CLIError("--http \(http ?? ""): cannot listen: \(error)")
        }
        printer.finish()
        let failed = application.coordinator.failedJobs
        printer.notice("coordinator stopped: \(application.coordinator.succeededCount) succeeded, \(failed.count) failed or dead")
        let undelivered = exitWhenIdle ? await undeliveredWebhooks(built.store, delivering: built.delivering, printer: printer) : false
        if exitWhenIdle && (!failed.isEmpty || undelivered) { throw ExitCode(ExitStatus.failure) }
    }

    /// The application these options ask for, built (not run) on its opened queue, saying what it says to
    /// `printer`: what `run` runs, and what a test runs in its own process.
    func application(printer: CoordinatorPrinter, stopSignals: Bool = true) async throws -> (application: FarmApplication, store: any JobStore, delivering: Bool) {
        var faces = FarmApplication.Faces()
        faces.http = try httpConfiguration()
        faces.tokenMadeForThisRun = tokenFile == nil
        faces.webhookEndpoints = webhooks.parsedEndpoints
        faces.webhookAllowHosts = webhooks.allowHosts
        let secret = try webhooks.secret()
        let store = try await queue.open(create: true, connections: workers + 4, listen: true)
        let configuration = try coordinatorConfiguration(store)
        faces.webhookDelivery = secret.map { ($0, webhooks.configuration(owner: configuration.owner, exitWhenIdle: exitWhenIdle)) }
        printer.notice("coordinator \(configuration.owner): \(Spoken.count(workers, "worker")) on \(store.location)")
        // In a Kubernetes pod (deploy/kubernetes sets its name and namespace): its deletion cost kept current.
        switch KubernetesPod.from(environment: ProcessInfo.processInfo.environment) {
        case .success(let pod)?:
            faces.pod = pod
            printer.notice("pod deletion cost: keeping \(PodDeletionCost.annotation) of pod \(pod.namespace)/\(pod.name) current")
        case .failure(let problem)?: printer.notice("pod deletion cost: not kept: \(problem)")
        case nil: break
        }
        let application: FarmApplication
        do {
            application = try await FarmApplication.coordinator(store: store, configuration: configuration, faces: faces, stopSignals: stopSignals,
                                                                 events: { printer.print($0) }, notice: { printer.notice($0) })
        } catch {
            throw CLIError(error.description)
        }
        return (application, store, secret != nil)
    }

    /// The coordinator's settings from the options; its asset library opened on `store`.
    func coordinatorConfiguration(_ store: any JobStore) throws -> CoordinatorConfiguration {
        var configuration = CoordinatorConfiguration()
        configuration.workers = workers
        configuration.leaseDuration = lease
        configuration.renewInterval = min(1, lease / 4)
        configuration.jobTimeout = jobTimeout
        configuration.grace = grace
        configuration.exitWhenIdle = exitWhenIdle
        configuration.exitAfterIdle = exitAfterIdle
        configuration.standbyWorkers = !noStandby
        configuration.reuseResults = !noReuseResults
        configuration.defaultChunking = chunkSeconds.map { DefaultChunking(seconds: $0, above: chunkAbove) }
        try reuse.apply(to: &configuration)
        let libraryHost = LibraryOptions.hostName(host)
        // One name for the host in leases and in the library: a job reading assets is claimed where they are.
        configuration.owner = CoordinatorConfiguration.defaultOwner(host: libraryHost)
        configuration.provides = provides
        // A library that cannot open stops the coordinator here, with its cause: without it every asset:ID
        // job would fail for good with "this coordinator has no asset library".
        do {
            configuration.library = try AssetLibrary(store: store, host: libraryHost, inspector: .media)
        } catch {
            throw CLIError("coordinator: the asset library on \(store.location) cannot be opened: \(error)")
        }
        configuration.keepFinished = keepFinished > 0 ? keepFinished * 86400 : nil
        configuration.limits = WorkerLimits(addressSpaceBytes: maxMemory, cpuSeconds: maxCPU, fileSizeBytes: maxFileSize)
        if let workerCommand {
            configuration.workerCommand = workerCommand.split(separator: " ").map(String.init)
        }
        return configuration
    }

    /// In CI the deliveries must not wait for a coordinator that may never come: what is left is said.
    /// Whether that fails the run (a coordinator without the secret leaves them to one with it).
    func undeliveredWebhooks(_ store: any JobStore, delivering: Bool, printer: CoordinatorPrinter) async -> Bool {
        guard let pending = try? await store.deliveries(matching: DeliveryQuery(states: [.pending], limit: 1000)), !pending.isEmpty else {  // no answer: nothing to say
            return false
        }
        let waited = delivering ? "after waiting up to \(Int(webhooks.drainSeconds)) s (--webhook-drain-seconds)"
            : "this coordinator does not deliver (no --webhook-secret-file)"
        let last = pending.compactMap(\.lastError).first.map { "; the last error: \($0)" } ?? ""
        printer.notice("webhooks: \(pending.count)\(pending.count == 1000 ? "+" : "") deliveries still pending, \(waited)\(last); "
                       + "`mediafarm webhooks list` shows them, and the next coordinator with the secret sends them")
        return delivering
    }
}

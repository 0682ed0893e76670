import ArgumentParser
import FarmHTTP
import FarmModel
import QueueCLI

/// How long the coordinator's HTTP face waits on clients and on browser sessions, and how many tries and
/// half-open connections it allows (with `--http`).
struct FaceLimitOptions: ParsableArguments {
    @Option(name: .customLong("session-idle-minutes"), parsing: .unconditional,
            help: "Minutes a browser session may go unused before it ends (sign in again) \(UserNumbers.sessionIdleMinutes.inHelp).",
            transform: UserNumbers.sessionIdleMinutes.option)
    var sessionIdleMinutes: Double = 120

    @Option(name: .customLong("http-auth-failures-allowed"), parsing: .unconditional,
            help: "Failed sign-ins and bearer checks from one address before each next try from it waits, 2 s doubling to 5 min (behind a proxy every client has its address) \(UserNumbers.limit.inHelp).",
            transform: UserNumbers.limit.option)
    var httpAuthFailuresAllowed: Int = 5

    @Option(name: .customLong("http-header-timeout"), parsing: .unconditional,
            help: "Seconds a client has to send a request's head, from its first byte \(UserNumbers.wait.inHelp).", transform: UserNumbers.wait.option)
    var httpHeaderTimeout: Double = 10

    @Option(name: .customLong("http-idle-timeout"), parsing: .unconditional,
            help: "Seconds a connection with no request under way stays open \(UserNumbers.wait.inHelp).", transform: UserNumbers.wait.option)
    var httpIdleTimeout: Double = 60

    @Option(name: .customLong("http-min-body-rate"), parsing: .unconditional,
            help: "The slowest a request's body may arrive, in bytes a second over each 10 s (0: no floor) \(UserNumbers.bodyRate.inHelp).",
            transform: UserNumbers.bodyRate.option)
    var httpMinBodyRate: Double = 1024

    @Option(name: .customLong("http-max-pending-connections"), parsing: .unconditional,
            help: "Connections at once from one client (an address; IPv6 by its /64) that have not yet sent a whole request; more are closed at once \(UserNumbers.limit.inHelp).",
            transform: UserNumbers.limit.option)
    var httpMaxPendingConnections: Int = 64

    func apply(to configuration: inout HTTPFaceConfiguration) {
        configuration.sessionIdleSeconds = sessionIdleMinutes * 60
        configuration.authFailuresAllowed = httpAuthFailuresAllowed
        configuration.connections.headerSeconds = httpHeaderTimeout
        configuration.connections.idleSeconds = httpIdleTimeout
        configuration.connections.minimumBodyBytesPerSecond = httpMinBodyRate
        configuration.connections.maxPendingConnections = httpMaxPendingConnections
    }
}

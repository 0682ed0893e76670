import ArgumentParser
import FarmModel
import FarmWebhooks
import QueueCLI
import Foundation
import SafeFiles

/// A coordinator's webhook options: where events go, which hosts jobs may name, the signing key, and how
/// long deliveries are retried.
public struct WebhookOptions: ParsableArguments {
    public init() {}

    @Option(name: .customLong("webhook"), help: ArgumentHelp(
        "Send every job's terminal events to URL (repeatable); TYPES=URL sends only those (e.g. job.failed,job.dead=https://pager.example/hook). Kept in the queue: every coordinator with the secret delivers them.",
        valueName: "[types=]url"))
    public var endpoints: [String] = []

    @Option(name: .customLong("webhook-allow-host"), help: ArgumentHelp(
        "A host jobs' \"notify\" URLs may name (repeatable): host for its scheme's port (80, 443), host:port for that port, host:low-high for a range. A name is resolved at each delivery and must give public addresses only; an address written out (10.0.0.5:8080) is taken as it is. Other hosts are refused at submission and never requested.",
        valueName: "host[:port]"))
    public var allowHosts: [String] = []

    @Flag(name: .customLong("webhook-record-failure-bodies"), help: ArgumentHelp(
        "Keep the first 200 bytes of a receiver's failed answer with the delivery (webhooks list, the API's deliveries); by default only its status line and content type are kept."))
    public var recordFailureBodies = false

    @Option(name: .customLong("webhook-secret-file"), help: ArgumentHelp(
        "A file holding the signing secret (whsec_ + base64, per Standard Webhooks; `mediafarm webhooks new-secret` makes one). With it this coordinator delivers the queue's webhooks.",
        valueName: "file"))
    public var secretFile: String?

    @Option(name: .customLong("webhook-retry-hours"), parsing: .unconditional, help: "Hours a delivery is retried before it is given up \(UserNumbers.retryHours.inHelp).", transform: UserNumbers.retryHours.option)
    public var retryHours: Double = 24

    @Option(name: .customLong("webhook-backoff"), parsing: .unconditional, help: "Seconds before a failed delivery's first retry (doubling after each, up to an hour) \(UserNumbers.wait.inHelp).", transform: UserNumbers.wait.option)
    public var backoff: Double = 5

    @Option(name: .customLong("webhook-timeout"), parsing: .unconditional, help: "Seconds a receiver has to answer \(UserNumbers.wait.inHelp).", transform: UserNumbers.wait.option)
    public var timeout: Double = 10

    @Option(name: .customLong("webhook-drain-seconds"), parsing: .unconditional,
            help: "With --exit-when-idle: seconds to wait for the pending deliveries, retries included, before exiting (then non-zero if any is left) \(UserNumbers.wait.inHelp).",
            transform: UserNumbers.wait.option)
    public var drainSeconds: Double = 60

    public func validate() throws {
        for spec in endpoints {
            if case .failure(let problem) = WebhookEndpoint.parse(spec) { throw ValidationError("--webhook: \(problem.message)") }
        }
        for host in allowHosts {
            if let problem = WebhookAllowance.problem(host) { throw ValidationError("--webhook-allow-host: \(problem)") }
        }
    }

    public var parsedEndpoints: [WebhookEndpoint] { endpoints.compactMap { try? WebhookEndpoint.parse($0).get() } }  // checked in validate()

    /// The signing secret, when this coordinator delivers.
    public func secret() throws -> WebhookSecret? {
        guard let secretFile else { return nil }
        do {
            let secret = try WebhookSecret(contentsOf: secretFile)
            ProtectedFiles.shared.protect(secretFile, role: "the webhook secret file")
            return secret
        } catch {
            throw CLIError("--webhook-secret-file \(error.message)", status: ExitStatus.usage)
        }
    }

    public func configuration(owner: String, exitWhenIdle: Bool) -> WebhookDelivererConfiguration {
        var configuration = WebhookDelivererConfiguration(owner: owner, timeout: timeout, retryFor: retryHours * 3600, backoff: backoff,
                                                          maxBackoff: 3600, poll: min(1, backoff))
        if exitWhenIdle { (configuration.drainSeconds, configuration.drainPending) = (drainSeconds, true) }
        configuration.recordFailureBodies = recordFailureBodies
        return configuration
    }
}

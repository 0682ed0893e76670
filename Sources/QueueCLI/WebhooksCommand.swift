import ArgumentParser
import FarmModel
import FarmStore
import Foundation

/// `mediafarm webhooks`: the farm's webhook settings and deliveries, as the queue holds them.
public struct WebhooksCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Show the farm's webhook endpoints, allowed hosts and deliveries; remove a target; make a signing secret.",
        discussion: """
            Coordinators add endpoints (--webhook) and allowed hosts (--webhook-allow-host) to the queue when they \
            start; every terminal event of a job (job.succeeded, job.failed, job.dead, job.cancelled) is recorded \
            with the state change and delivered by any coordinator given --webhook-secret-file, retried with backoff \
            for --webhook-retry-hours (24). Receivers verify the Standard Webhooks signature headers.
            """,
        subcommands: [List.self, Deliveries.self, Retry.self, Remove.self, NewSecret.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Endpoints, allowed hosts, and deliveries by state.")
        @OptionGroup var queue: QueueOptions
        @Flag(help: "Print the settings as JSON.")
        var json = false

        func run() async throws {
            let store = try await queue.open()
            let now = Date()
            let view: WebhookSettingsView
            let settings: WebhookSettings
            do {
                settings = try await store.webhookSettings(at: now)
                view = WebhookSettingsView(settings, failed: json ? try await WebhookSettingsView.failures(store) : [])
            } catch {
                throw CLIError(String(describing: error))
            }
            await store.close()
            if json {
                // As GET /api/webhooks answers.
                print(String(decoding: try JSONEncoder.sortedPretty().encode(view), as: UTF8.self))
                return
            }
            print(settings.endpoints.isEmpty ? "endpoints: none (coordinator --webhook URL adds one)" : "endpoints:")
            for e in settings.endpoints {
                print("  \(e.url)  \(e.events.map { $0.joined(separator: ",") } ?? "all events")  (added by \(e.addedBy))")
            }
            print(settings.allowedHosts.isEmpty ? "hosts jobs may notify: the endpoints' only (coordinator --webhook-allow-host HOST adds one)"
                  : "hosts jobs may notify: " + settings.allowedHosts.map(\.host).joined(separator: ", "))
            let counts = WebhookDeliveryState.allCases.map { "\(settings.counts[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
            let oldest = settings.oldestPendingAt.map { "; the oldest pending is \(Int(now.timeIntervalSince($0))) s old" } ?? ""
            print("deliveries: \(counts)\(oldest)")
        }
    }

    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "deliveries", abstract: "Deliveries, newest first, with their attempts and last error.")
        @OptionGroup var queue: QueueOptions
        @Option(parsing: .unconditional, help: "Only this job's \(UserNumbers.jobID.inHelp).", transform: UserNumbers.jobID.option)
        var job: Int64?
        @Option(help: "Only deliveries in this state (pending, delivered, failed, refused); repeatable.")
        var state: [String] = []
        @Option(parsing: .unconditional, help: "At most this many.")
        var limit = 50
        @Flag(help: "Print the deliveries as JSON.")
        var json = false

        func validate() throws {
            for s in state where WebhookDeliveryState(rawValue: s) == nil {
                throw ValidationError("--state \(s): one of \(WebhookDeliveryState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1 to 10000") }
        }

        func run() async throws {
            let store = try await queue.open()
            let rows: [WebhookDelivery]
            do {
                rows = try await store.deliveries(matching: DeliveryQuery(jobID: job, states: state.isEmpty ? nil : state.compactMap(WebhookDeliveryState.init),
                                                                          limit: limit))
            } catch {
                throw CLIError(String(describing: error))
            }
            await store.close()
            if json {
                print(String(decoding: try JSONEncoder.sortedPretty().encode(rows.map(DeliveryView.init)), as: UTF8.self))
                return
            }
            if rows.isEmpty { print("no deliveries") }
            for d in rows {
                var line = "\(d.id)  job \(d.jobID)  \(d.type)  \(d.url)  \(d.state.rawValue), \(d.attempts) attempt\(d.attempts == 1 ? "" : "s")"
                if let status = d.lastStatus { line += ", last HTTP \(status)" }
                if d.state == .pending, let next = d.nextAttemptAt { line += ", next at \(next.formatted(.iso8601))" }
                if let error = d.lastError, d.state != .delivered { line += ": \(error)" }
                print(line)
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "retry",
            abstract: "Send again deliveries that failed (or were refused): by id, or every failed one with --failed.",
            discussion: "Each is pending again and due now: the next coordinator with the secret sends it, same webhook-id, its attempts counted on.")
        @OptionGroup var queue: QueueOptions
        @Flag(help: "Every delivery that failed.")
        var failed = false
        @Flag(help: "Print the deliveries sent again as JSON.")
        var json = false
        @Argument(help: "Delivery ids, as `webhooks deliveries` shows them.", transform: { text in
            guard case .success(let id) = UserNumbers.jobID.parse(text) else { throw ValidationError("\(text): a delivery id is a positive whole number") }
            return id
        })
        var ids: [Int64] = []

        func validate() throws {
            if ids.isEmpty == !failed {
                throw ValidationError(failed ? "give delivery ids or --failed, not both" : "name the deliveries to send again, or --failed for every failed one")
            }
        }

        func run() async throws {
            let store = try await queue.open()
            let resent: [WebhookDelivery]
            var unknown: [Int64] = []
            do {
                if !failed {
                    let known = Set(try await store.deliveries(matching: DeliveryQuery(ids: ids, limit: ids.count)).map(\.id))
                    unknown = ids.filter { !known.contains($0) }
                }
                resent = try await store.sendAgain(ids: failed ? nil : ids, at: Date())
            } catch {
                throw CLIError(String(describing: error))
            }
            await store.close()
            if json {
                print(String(decoding: try JSONEncoder.sortedPretty().encode(resent.map(DeliveryView.init)), as: UTF8.self))
            } else {
                if resent.isEmpty && (failed || unknown.count < ids.count) { print(failed ? "no failed deliveries" : "none of those deliveries failed or was refused") }
                for d in resent { print("\(d.id)  job \(d.jobID)  \(d.type)  \(d.url)  sent again (after \(d.attempts) attempt\(d.attempts == 1 ? "" : "s"))") }
            }
            let missed = failed ? [] : ids.filter { id in !resent.contains { $0.id == id } && !unknown.contains(id) }
            var problems: [String] = []
            if !unknown.isEmpty {
                problems.append("no delivery \(unknown.map(String.init).joined(separator: ", ")) in \(store.location) (`mediafarm webhooks deliveries` lists them)")
            }
            if !missed.isEmpty {
                problems.append("not sent again: \(missed.map(String.init).joined(separator: ", ")) (it did not fail or was not refused)")
            }
            if !problems.isEmpty { throw CLIError(problems.joined(separator: "; ")) }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Remove an endpoint (by its URL) or an allowed host; deliveries already recorded stay.",
            discussion: "A coordinator started again with the same --webhook or --webhook-allow-host adds it back.")
        @OptionGroup var queue: QueueOptions
        @Argument(help: "The endpoint's URL, or the allowed host, as `webhooks list` shows it.")
        var target: String

        func run() async throws {
            let store = try await queue.open()
            let removed: Bool
            do { removed = try await store.removeWebhookTarget(target) } catch { throw CLIError(String(describing: error)) }
            await store.close()
            guard removed else { throw CLIError("\(target): no such endpoint or allowed host (see `mediafarm webhooks list`)") }
            print("removed \(target)")
        }
    }

    struct NewSecret: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new-secret",
            abstract: "Print a new signing secret (whsec_ + 32 random bytes in base64) for --webhook-secret-file and your receivers.")

        func run() {
            print(WebhookSecretText.generate())
        }
    }
}

@testable import FarmWebhooks
import FarmModel
import FarmStore
import FarmTestSupport
import Foundation
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Where a job's webhook may go: allowances by host and port, and the addresses a name may resolve to.
@Suite struct WebhookDestinationTests {
    @Test func anAllowedHostAllowsItsSchemesPortOrTheOnesItNames() throws {
        func url(_ text: String) throws -> WebhookURL { try WebhookURL.parse(text).get() }
        // A bare host: the scheme's own port, no other.
        #expect(WebhookAllowance.allows(try url("http://vm/x"), entries: ["vm"]))
        #expect(WebhookAllowance.allows(try url("https://vm/x"), entries: ["vm"]))
        #expect(!WebhookAllowance.allows(try url("http://vm:18081/x"), entries: ["vm"]))
        #expect(!WebhookAllowance.allows(try url("https://vm:80/x"), entries: ["vm"]))
        // A port, a range.
        #expect(WebhookAllowance.allows(try url("http://vm:18081/x"), entries: ["vm:18081"]))
        #expect(!WebhookAllowance.allows(try url("http://vm:18082/x"), entries: ["vm:18081"]))
        #expect(WebhookAllowance.allows(try url("http://vm:8050/x"), entries: ["vm:8000-8099"]))
        #expect(!WebhookAllowance.allows(try url("http://vm:8100/x"), entries: ["vm:8000-8099"]))
        #expect(WebhookAllowance.allows(try url("http://[fd00::5]:8080/x"), entries: ["[fd00::5]:8080"]))
        #expect(!WebhookAllowance.allows(try url("http://[fd00::5]:8081/x"), entries: ["[fd00::5]:8080"]))
        #expect(!WebhookAllowance.allows(try url("http://evil.vm/x"), entries: ["vm"]))
        for good in ["vm", "Hooks.Example.com:443", "10.0.0.5:8080", "vm:1-65535", "[::1]:80", "[fd00::5]"] {
            #expect(WebhookAllowance.problem(good) == nil, "\(good)")
        }
        for bad in ["vm:0", "vm:65536", "vm:9-8", "vm:80-", "vm:-80", "vm:1e3", "http://vm/", "vm/x", "", "vm:80:81", "[::1", "user@vm"] {
            #expect(WebhookAllowance.problem(bad)?.contains("host:low-high") == true, "\(bad)")
        }
    }

    /// Every form of loopback, link-local, private, metadata and reserved address, in IPv4 and IPv6 (IPv4
    /// written in IPv6 too), is not public; ordinary public addresses are.
    @Test func addressesThatAreNotPublicAreNamed() {
        let refused: [(String, String)] = [
            ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"), ("::1", "loopback"), ("::ffff:127.0.0.1", "loopback"),
            ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("::ffff:169.254.169.254", "link-local"),
            ("64:ff9b::a9fe:a9fe", "link-local"), ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.255", "private"),
            ("192.168.1.1", "private"), ("fd00:ec2::254", "private"), ("fc00::1", "private"), ("100.64.0.1", "carrier-grade"),
            ("0.0.0.0", "this network"), ("::", "unspecified"), ("192.0.0.192", "IETF"), ("224.0.0.1", "multicast"), ("ff02::1", "multicast"),
            ("255.255.255.255", "reserved"), ("::127.0.0.1", "loopback"), ("not-an-address", "not an address"),
        ]
        for (address, kind) in refused {
            #expect(AddressRules.nonPublic(address)?.contains(kind) == true, "\(address): \(AddressRules.nonPublic(address) ?? "public")")
        }
        for address in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:93.184.216.34"] {
            #expect(AddressRules.nonPublic(address) == nil, "\(address): \(AddressRules.nonPublic(address) ?? "")")
        }
    }

    /// A name is resolved and every address it gives is held to the rules: `localhost` and the shorthand
    /// and decimal spellings of 127.0.0.1 that resolvers accept are refused; an address written out is taken
    /// without resolving; a name that does not resolve may be tried again.
    @Test func aNameIsJudgedByWhatItResolvesTo() async throws {
        for text in ["http://localhost:8080/x", "http://127.1:8080/x", "http://2130706433/x", "http://0x7f000001/x"] {
            let destination = await WebhookDestination.of(try WebhookURL.parse(text).get())
            guard case .refused(let reason) = destination else { Issue.record("\(text): \(destination)"); continue }
            #expect(reason.contains("a loopback address") && reason.contains("--webhook-allow-host"), "\(reason)")
        }
        #expect(await WebhookDestination.of(try WebhookURL.parse("http://127.0.0.1:9/x").get()) == .connect(address: nil))
        #expect(await WebhookDestination.of(try WebhookURL.parse("http://[::1]:9/x").get()) == .connect(address: nil))
        guard case .unresolved = await WebhookDestination.of(try WebhookURL.parse("http://no-such-host.invalid/x").get()) else {
            Issue.record("a name that does not resolve was not said to be unresolved")
            return
        }
        // One public and one private address: refused (every address is checked, not the first).
        let mixed = WebhookDestination.judge(host: "two.example", .success(["93.184.216.34", "10.0.0.7"]))
        #expect(mixed == .refused(WebhookDestination.refusalText(host: "two.example", address: "10.0.0.7", kind: "a private address")), "\(mixed)")
        #expect(WebhookDestination.judge(host: "one.example", .success(["93.184.216.34"])) == .connect(address: "93.184.216.34"))
    }

    @Test func aReceiversWordsAreKeptOnOneLine() {
        #expect(UserText.printable("x\u{1B}[2K\r\u{1B}]0;pwned\u{07}\nhttp: console: cancel") == "x\\u{1B}[2K\\r\\u{1B}]0;pwned\\u{7}\\nhttp: console: cancel")
        #expect(UserText.printable("a\u{85}b\u{2028}c\u{7F}") == "a\\u{85}b\\u{2028}c\\u{7F}")
        #expect(UserText.printable("ordinary – ünïcode ✓") == "ordinary – ünïcode ✓")
    }
}

/// The connection goes to the address that was checked: a name that resolves nowhere (`.invalid`),
/// checked as one address, reaches the receiver listening there, so the client never looked the name up
/// again. And an international name is checked in the spelling the client connects by.
@Suite struct WebhookPinningTests {
    @Test func aDeliveryConnectsToTheAddressThatWasChecked() async throws {
        let folder = try TestPaths.makeTemporaryFolder("webhook-pinning")
        let secretText = WebhookSecretText.generate()
        let secretFile = folder.appendingPathComponent("secret").path
        try secretText.write(toFile: secretFile, atomically: true, encoding: .utf8)
        let portFile = folder.appendingPathComponent("port").path
        let receiver = try Background(["/usr/bin/python3", TestPaths.packageRoot.appendingPathComponent("script/webhook-receiver").path,
                                       "--secret-file", secretFile, "--log", folder.appendingPathComponent("received.jsonl").path,
                                       "--port-file", portFile], log: folder.appendingPathComponent("receiver.out").path)
        defer { receiver.kill(SIGKILL); _ = receiver.wait(timeout: 5) }
        let deadline = Date().addingTimeInterval(15)
        while !FileManager.default.fileExists(atPath: portFile) && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let port = try #require(Int((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""), "\(receiver.log)")

        let store = try SQLiteJobStore(path: folder.appendingPathComponent("queue.sqlite").path)
        let t0 = Date()
        try await store.registerWebhooks([], allowing: ["pinned.invalid:\(port)"], by: "h:1:a", at: t0)
        let url = "http://pinned.invalid:\(port)/pinned"
        let id = try await store.enqueue([NewJob(name: "pinned", manifest: #"{"version":1,"input":"a.mp4","notify":["\#(url)"]}"#,
                                                 baseDirectory: "/data", maxAttempts: 1)], at: t0)[0].id
        let claimed = try #require(try await store.claim(limit: 1, owner: "h:1:a", leaseDuration: 60, at: t0).first)
        _ = try await store.finish(id: id, token: claimed.lease!.token, outcome: .succeeded(result: nil), at: t0)
        let delivery = try #require(try await store.claimDeliveries(limit: 1, owner: "s", leaseDuration: 30, at: t0).first)

        var configuration = WebhookDelivererConfiguration(owner: "s")
        configuration.destination = { checked in checked.host == "pinned.invalid" ? .connect(address: "127.0.0.1") : .refused("not this test's") }
        let deliverer = WebhookDeliverer(store: store, secret: try WebhookSecret(text: secretText), configuration: configuration,
                                         logger: Logger(label: "test"))
        let outcome = await deliverer.attempt(delivery)
        try await deliverer.client.shutdown()  // a deliverer that never ran keeps its client open
        #expect(outcome == .delivered(status: 204), "\(outcome) \(receiver.log)")
        let received = (try? String(contentsOfFile: folder.appendingPathComponent("received.jsonl").path, encoding: .utf8)) ?? ""
        #expect(received.contains("\"path\": \"/pinned\"") && received.contains("\"verified\": true"), "\(received)")
        // Without the pin the name resolves nowhere: the same delivery cannot connect.
        configuration.destination = { _ in .connect(address: nil) }
        let unpinned = WebhookDeliverer(store: store, secret: try WebhookSecret(text: secretText), configuration: configuration,
                                        logger: Logger(label: "test"))
        let unpinnedOutcome = await unpinned.attempt(delivery)
        try await unpinned.client.shutdown()
        if case .delivered = unpinnedOutcome { Issue.record("an unpinned name that resolves nowhere was delivered") }
    }

    /// The host is checked in the spelling the HTTP client connects by: an international name in its ASCII
    /// form, however the URL wrote it.
    @Test func anInternationalHostIsCheckedAsTheClientReadsIt() {
        #expect((try? WebhookURL.parse("http://bücher.example/hook").get())?.host == "xn--bcher-kva.example")
        #expect((try? WebhookURL.parse("http://xn--bcher-kva.example/hook").get())?.host == "xn--bcher-kva.example")
        #expect(URL(string: "http://bücher.example/hook")?.host == "xn--bcher-kva.example", "the client's reading changed: check the pin's key")
    }
}

import FarmModel
import FarmWebhooks
import Foundation
import Testing

@Suite struct WebhookSignatureTests {
    /// The Standard Webhooks specification's own example: this secret, id, timestamp and body sign to this.
    @Test func signsTheSpecificationsExample() throws {
        let secret = try WebhookSecret(text: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        let signature = WebhookSignature.sign(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265330,
                                              body: Data(#"{"test": 2432232314}"#.utf8), secret: secret)
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        // Another body, id or time signs differently.
        #expect(WebhookSignature.sign(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265331,
                                      body: Data(#"{"test": 2432232314}"#.utf8), secret: secret) != signature)
    }

    @Test func refusesSecretsThatAreNotStandardWebhooksKeys() {
        for (text, problem) in [("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "starts with whsec_"), ("whsec_!!!notbase64", "not base64"),
                                ("whsec_c2hvcnQ=", "5 bytes")] {
            #expect(throws: WebhookError.self) { try WebhookSecret(text: text) }
            do { _ = try WebhookSecret(text: text) } catch { #expect(error.message.contains(problem), "\(error.message)") }
        }
        let made = WebhookSecretText.generate()
        #expect(made.hasPrefix("whsec_"))
        #expect(throws: Never.self) { try WebhookSecret(text: made) }
        #expect(WebhookSecretText.generate() != made)
    }

    @Test func endpointsTakeAnEventFilterAndRefuseWhatCannotReceive() throws {
        let all = try WebhookEndpoint.parse("https://hooks.example.com/farm?x=a=b").get()
        #expect(all.events == nil && all.url.hostKey == "hooks.example.com:443" && all.url.text == "https://hooks.example.com/farm?x=a=b")
        let some = try WebhookEndpoint.parse("job.failed,dead=http://10.0.0.5:8080/hook").get()
        #expect(some.events == [.failed, .dead] && some.url.hostKey == "10.0.0.5:8080")
        #expect(!some.wants(.succeeded) && some.wants(.dead))
        for bad in ["ftp://x/y", "http://user:pw@x/y", "job.finished=http://x/", "not a url", "http:///path"] {
            guard case .failure = WebhookEndpoint.parse(bad) else { Issue.record("\(bad) was taken"); continue }
        }
        let url = try WebhookURL.parse("http://Hooks.Example.com:8080/a").get()
        // A bare host allows its scheme's port only (WebhookDestinationTests has the rest).
        #expect(!WebhookAllowance.allows(url, entries: ["hooks.example.com"]))
        #expect(WebhookAllowance.allows(url, entries: ["hooks.example.com:8080"]))
        #expect(!WebhookAllowance.allows(url, entries: ["hooks.example.com:80", "example.com", "evil.example.com"]))
        #expect(WebhookAllowance.problem("hooks.example.com:8080") == nil)
        #expect(WebhookAllowance.problem("http://x/") != nil)
    }

    @Test func retriesBackOffWithinTheWindow() {
        let c = WebhookDelivererConfiguration(owner: "t", retryFor: 3600, backoff: 5, maxBackoff: 600)
        let event = Date(timeIntervalSince1970: 1000)
        #expect(c.nextAttempt(after: 1, eventAt: event, now: event, jitter: 1) == event.addingTimeInterval(5))
        #expect(c.nextAttempt(after: 3, eventAt: event, now: event, jitter: 1) == event.addingTimeInterval(20))
        #expect(c.nextAttempt(after: 20, eventAt: event, now: event, jitter: 1) == event.addingTimeInterval(600))
        #expect(c.nextAttempt(after: 20, eventAt: event, now: event.addingTimeInterval(3500), jitter: 1) == nil)
    }
}

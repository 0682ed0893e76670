import Foundation
import Metrics
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Failed sign-ins and bearer checks, per client address: a few are free (`--http-auth-failures-allowed`,
/// 5; behind a proxy every client has the proxy's address, and may need more); after them each next try waits
/// a backoff that doubles (2 s, 4 s, … up to 5 min), answered 429 without the credential being looked at,
/// so that guessing a token is slow whatever the guesses are. A client is its address, an IPv6 address by
/// its /64 (one host may hold all of it). A burst is said once (without the guesses)
/// when its backoff begins; every failure is counted in `mediafarm_http_auth_failures_total`. A client with
/// no failure for a quiet minute starts afresh. Bounded: at most `capacity` clients are remembered.
final class GuessLimiter: Sendable {
    struct Client {
        var failures = 0
        var last = Date.distantPast
        var blockedUntil: Date?
    }

    /// What a failure was: a bearer that is no token, or a sign-in (`/login`, `?token=`).
    enum Kind: String, CaseIterable { case bearer, signIn = "sign_in" }

    static let metric = "mediafarm_http_auth_failures_total"
    let freeFailures: Int
    let quietSeconds = 60.0
    let maxBackoff = 300.0
    let capacity = 10_000
    private let clients = Mutex<[String: Client]>([:])
    let now: @Sendable () -> Date
    let factory: any MetricsFactory
    /// Where a burst is said.
    let say: @Sendable (String) -> Void

    init(freeFailures: Int = 5, factory: any MetricsFactory, now: @escaping @Sendable () -> Date = { Date() },
         say: @escaping @Sendable (String) -> Void) {
        self.freeFailures = freeFailures
        self.factory = factory
        self.now = now
        self.say = say
    }

    /// The client an address is: itself, or for IPv6 its /64 (`2001:db8:0:1::/64`).
    static func client(of address: String) -> String {
        var v6 = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12...].map(String.init).joined(separator: ".")  // IPv4 written in IPv6: the IPv4 address
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// Seconds `client` must still wait before its credential is looked at; nil when it need not.
    func wait(_ client: String) -> Double? {
        let now = self.now()
        return clients.withLock { table in
            guard let until = table[client]?.blockedUntil, until > now else { return nil }
            return until.timeIntervalSince(now)
        }
    }

    /// A failed guess from `client`.
    func failed(_ client: String, _ kind: Kind) {
        Counter(label: Self.metric, dimensions: [("kind", kind.rawValue)], factory: factory).increment()
        let now = self.now()
        let burst: (failures: Int, backoff: Double)? = clients.withLock { table in
            if table.count >= capacity, table[client] == nil {
                table = table.filter { now.timeIntervalSince(max($0.value.last, $0.value.blockedUntil ?? .distantPast)) < quietSeconds }
                if table.count >= capacity { return nil }  // full of live bursts: this one is counted, not remembered
            }
            var entry = table[client] ?? Client()
            // Quiet since its last failure and since its wait ended: it starts afresh (a wait of a minute or
            // more does not, by itself, wipe the count).
            if now.timeIntervalSince(max(entry.last, entry.blockedUntil ?? .distantPast)) >= quietSeconds { entry = Client() }
            entry.failures += 1
            entry.last = now
            var said: (Int, Double)?
            if entry.failures > freeFailures {
                let backoff = min(maxBackoff, pow(2, Double(entry.failures - freeFailures)))
                entry.blockedUntil = now.addingTimeInterval(backoff)
                if entry.failures == freeFailures + 1 { said = (entry.failures, backoff) }
            }
            table[client] = entry
            return said
        }
        if let burst {
            say("http: \(burst.failures) failed sign-ins or bearer checks from \(client) in a row; each next try from it waits "
                + "(\(Int(burst.backoff)) s now, doubling up to \(Int(maxBackoff)) s) and is answered 429 meanwhile")
        }
    }
}

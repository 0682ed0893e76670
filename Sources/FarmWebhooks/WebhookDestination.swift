import FarmModel
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a job's `notify` delivery may connect. An allowance names a host, but a name is only as good as
/// what it resolves to at the moment of sending: a job author who controls an allowed name's DNS could
/// point it at the farm's own loopback services or a cloud's metadata address. So a name is resolved at
/// each delivery, every address it gives must be public, and the request connects to the address that was
/// checked (never resolving again). An address written in the URL and in the allowance is the operator's
/// own choice and is taken as it is.
public enum WebhookDestination: Sendable, Equatable {
    /// Connect to `address` (numeric), the one checked; nil: the URL's host is an address itself.
    case connect(address: String?)
    /// Never requested: why.
    case refused(String)
    /// The name did not resolve now (a DNS failure may pass): why.
    case unresolved(String)

    /// The destination of `url`, resolving its host on a thread of its own (getaddrinfo blocks).
    public static func of(_ url: WebhookURL) async -> WebhookDestination {
        if AddressRules.isLiteral(url.host) { return .connect(address: nil) }
        let host = url.host
        let resolved = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: resolve(host)) }
        }
        return judge(host: host, resolved)
    }

    /// The verdict on `host`'s addresses (or on why it did not resolve).
    static func judge(host: String, _ resolved: Result<[String], WebhookError>) -> WebhookDestination {
        switch resolved {
        case .failure(let reason): return .unresolved("\(host) does not resolve: \(reason.message)")
        case .success(let addresses):
            guard let first = addresses.first else { return .unresolved("\(host) resolves to no address") }
            for address in addresses {
                if let kind = AddressRules.nonPublic(address) { return .refused(refusalText(host: host, address: address, kind: kind)) }
            }
            return .connect(address: first)
        }
    }

    /// Why `host` is refused, and how an operator sends there on purpose.
    static func refusalText(host: String, address: String, kind: String) -> String {
        "\(host) resolves to \(address), \(kind): a job's \"notify\" goes to public addresses only (to send to it, allow the "
            + "address itself, --webhook-allow-host \(address.contains(":") ? "[\(address)]" : address):PORT, and name it in the URL; "
            + "or make it one of the farm's own endpoints with --webhook)"
    }

    /// Every address `host` resolves to, numeric; or why none.
    static func resolve(_ host: String) -> Result<[String], WebhookError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { return .failure(WebhookError(String(cString: gai_strerror(status)))) }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var entry = list
        while let info = entry {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(info.pointee.ai_addr, info.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 {
                let address = String(cString: text)
                if !addresses.contains(address) { addresses.append(address) }
            }
            entry = info.pointee.ai_next
        }
        return .success(addresses)
    }
}

/// Which addresses are not public: the rules a resolved address is held to.
public enum AddressRules {
    /// An IPv4 or IPv6 address as written (no name, no shorthand such as `127.1`).
    public static func isLiteral(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// What kind of address `address` is when it is not public ("a loopback address"); nil when it is public.
    /// Something that is not an address is not public either.
    public static func nonPublic(_ address: String) -> String? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return nonPublic(v4: UInt32(bigEndian: v4.s_addr))
        }
        guard inet_pton(AF_INET6, address.split(separator: "%").first.map(String.init) ?? address, &v6) == 1 else {
            return "not an address"
        }
        let b = withUnsafeBytes(of: v6) { Array($0) }
        let high = b[0..<12]
        let embedded = UInt32(b[12]) << 24 | UInt32(b[13]) << 16 | UInt32(b[14]) << 8 | UInt32(b[15])
        if b.allSatisfy({ $0 == 0 }) { return "the unspecified address" }
        if high.allSatisfy({ $0 == 0 }) && embedded == 1 { return "a loopback address" }
        // IPv4 written in IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d).
        if high.prefix(10).allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff { return nonPublic(v4: embedded) }
        if high.allSatisfy({ $0 == 0 }) { return nonPublic(v4: embedded) }
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4..<12].allSatisfy({ $0 == 0 }) { return nonPublic(v4: embedded) }
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return "a link-local address" }
        if b[0] & 0xfe == 0xfc { return "a private (unique local) address" }
        if b[0] == 0xff { return "a multicast address" }
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8 { return "a documentation address" }
        return nil
    }

    /// The IPv4 rules, on the address as a number.
    static func nonPublic(v4 a: UInt32) -> String? {
        func within(_ network: UInt32, _ bits: UInt32) -> Bool { a >> (32 - bits) == network >> (32 - bits) }
        if within(0x7f00_0000, 8) { return "a loopback address" }
        if within(0xa9fe_0000, 16) { return "a link-local address (where clouds serve instance metadata)" }
        if within(0x0a00_0000, 8) || within(0xac10_0000, 12) || within(0xc0a8_0000, 16) { return "a private address" }
        if within(0x6440_0000, 10) { return "a shared (carrier-grade NAT) address" }
        if within(0x0000_0000, 8) { return "an address of this network" }
        if within(0xc000_0000, 24) { return "an IETF protocol address (where some clouds serve instance metadata)" }
        if within(0xc612_0000, 15) { return "a benchmarking address" }
        if within(0xc000_0200, 24) || within(0xc633_6400, 24) || within(0xcb00_7100, 24) { return "a documentation address" }
        if within(0xe000_0000, 4) { return "a multicast address" }
        if within(0xf000_0000, 4) { return "a reserved address" }
        return nil
    }
}

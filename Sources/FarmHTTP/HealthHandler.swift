import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers `GET /healthz` on the connection's event loop, in the channel pipeline, before the request
/// reaches Hummingbird's responder: a probe asking thousands of times a second then costs no hop to a
/// task and back (two thread wake-ups per request, most of what serving one cost). Every other request
/// passes through untouched. The answer is the one `/healthz` gives (`HTTPFace.health`, made at most
/// every 0.1 s); like the route, it needs no token and answers any `Host`.
final class HealthHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let answer: @Sendable () -> (HTTPResponse.Status, ByteBuffer)
    private let serverName: String
    /// Between the head of a health request and its end (its body, if any, is dropped).
    private var answering = false

    init(serverName: String, answer: @escaping @Sendable () -> (HTTPResponse.Status, ByteBuffer)) {
        self.serverName = serverName
        self.answer = answer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case .head(let request) where Self.isHealthRequest(request):
            answering = true
        case .body where answering:
            break
        case .end where answering:
            answering = false
            let (status, body) = answer()
            var head = HTTPResponse(status: status)
            head.headerFields[.contentType] = "application/json; charset=utf-8"
            head.headerFields[.contentLength] = String(body.readableBytes)
            head.headerFields[.server] = serverName
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(body)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        default:
            context.fireChannelRead(data)
        }
    }

    /// A plain `GET /healthz` on a connection that stays open (one that asks to close goes the usual way).
    static func isHealthRequest(_ request: HTTPRequest) -> Bool {
        guard request.method == .get, let path = request.path else { return false }
        let plain = path == "/healthz" || path.hasPrefix("/healthz?")
        guard plain else { return false }
        return !(request.headerFields[.connection]?.lowercased().contains("close") ?? false)
    }
}

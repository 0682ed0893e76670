import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Synchronization

/// How long the face waits on a client, and for how many (`--http-header-timeout` and the options beside
/// it). Every connection is held to them; a request that has arrived whole is not (an event stream, a
/// long answer).
public struct ConnectionLimits: Sendable, Equatable {
    /// A request's head must arrive whole within this many seconds of its first byte.
    public var headerSeconds: Double = 10
    /// A connection with no request under way is closed after this many seconds.
    public var idleSeconds: Double = 60
    /// While a body arrives, at least this many bytes a second, over each `rateWindowSeconds`.
    public var minimumBodyBytesPerSecond: Double = 1024
    public var rateWindowSeconds: Double = 10
    /// At most this many connections at once from one client (an address; an IPv6 one by its /64) that
    /// have not yet sent a whole request (the ones a client holds open cheaply); one over the cap is closed
    /// at once.
    public var maxPendingConnections = 64

    public init() {}
}

/// One connection's watch, shared by its two handlers (both on the connection's event loop): `RawSide`
/// at the front of the pipeline sees bytes arrive and the reads the face asks for, `HTTPSide` after the
/// decoder sees requests begin and end and answers end. A timer looks every `tick` and closes the
/// connection that breaks a limit.
///
/// Where a connection is, from two facts kept apart: whether a request's body is being read (its head came,
/// its end not yet), and how many requests came whose answers have not ended. It waits (the header and idle
/// limits) only when neither holds; a body is held to the rate floor only while the face asks for it.
final class ConnectionGuard {
    let limits: ConnectionLimits
    let pending: PendingConnections
    /// A request's head came and its end has not.
    var readingBody = false
    /// Requests whose answers have not ended (pipelined ones count each).
    var unanswered = 0
    /// When the connection last began to wait (opened, or the last request read and answered).
    var idleSince = NIODeadline.now()
    /// The first byte of the head being read; nil before it.
    var headStarted: NIODeadline?
    /// The body's bytes and the time the face asked for them, since the rate was last checked.
    var demandedBytes = 0
    var demanded = TimeAmount.zero
    /// The face asked for bytes (a read) and has not had them all yet.
    var readPending = false
    var lastTick = NIODeadline.now()
    /// The client's key in the pending count, while counted.
    var countedAs: String?
    var timer: RepeatedTask?
    static let tick = TimeAmount.milliseconds(500)

    init(limits: ConnectionLimits, pending: PendingConnections) {
        self.limits = limits
        self.pending = pending
    }

    /// The handler to put in the pipeline after the HTTP decoder; it puts its raw side ahead of the decoder.
    static func handler(limits: ConnectionLimits, pending: PendingConnections) -> HTTPSide {
        HTTPSide(ConnectionGuard(limits: limits, pending: pending))
    }

    static func span(_ seconds: Double) -> TimeAmount { .nanoseconds(Int64(min(seconds, 1e6) * 1e9)) }

    var waiting: Bool { !readingBody && unanswered == 0 }

    func start(_ context: ChannelHandlerContext) {
        guard timer == nil else { return }
        let client = context.channel.remoteAddress?.ipAddress.map(GuessLimiter.client(of:)) ?? "unknown"
        guard pending.enter(client) else {
            context.close(promise: nil)
            return
        }
        countedAs = client
        let channel = context.channel
        lastTick = .now()
        // The timer runs on the connection's loop: the compiler holds it to that.
        let watch = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleRepeatedTask(initialDelay: Self.tick, delay: Self.tick) { task in
            if watch.value.broken(at: .now()) != nil {
                task.cancel()
                channel.close(promise: nil)
            }
        }
    }

    func stop() {
        timer?.cancel()
        timer = nil
        leavePending()
    }

    func leavePending() {
        if let client = countedAs { pending.leave(client); countedAs = nil }
    }

    /// Which limit the connection breaks at `now`; nil: none.
    func broken(at now: NIODeadline) -> String? {
        let elapsed = now - lastTick
        lastTick = now
        if waiting {
            if let started = headStarted, now - started > Self.span(limits.headerSeconds) { return "header timeout" }
            if headStarted == nil, now - idleSince > Self.span(limits.idleSeconds) { return "idle" }
        } else if readingBody {
            // Only while the face asks for the body: a handler that reads it later holds nothing against the client.
            if readPending { demanded = demanded + elapsed }
            if demanded >= Self.span(limits.rateWindowSeconds) {
                let floor = limits.minimumBodyBytesPerSecond * Double(demanded.nanoseconds) / 1e9
                if Double(demandedBytes) < floor { return "body too slow" }
                (demanded, demandedBytes) = (.zero, 0)
            }
        }
        return nil
    }

    /// Bytes arrived.
    func received(_ count: Int) {
        if waiting, headStarted == nil { headStarted = .now() }
        if readingBody { demandedBytes += count }
    }

    /// A request's head arrived whole: its body (if any) is read next.
    func headArrived() {
        leavePending()
        headStarted = nil
        readingBody = true
        unanswered += 1
        (demanded, demandedBytes) = (.zero, 0)
    }

    /// The request arrived whole.
    func requestEnded() {
        readingBody = false
        becameIdle()
    }

    /// An answer was sent.
    func answerEnded() {
        unanswered = max(0, unanswered - 1)
        becameIdle()
    }

    func becameIdle() {
        guard waiting else { return }
        headStarted = nil
        idleSince = .now()
    }
}

extension ConnectionGuard {
    /// Sees the bytes as they arrive, before the HTTP decoder, and the reads asked of the socket.
    final class RawSide: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let watch: ConnectionGuard

        init(_ watch: ConnectionGuard) { self.watch = watch }

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { watch.start(context) }
        }

        func channelActive(context: ChannelHandlerContext) {
            watch.start(context)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            watch.received(unwrapInboundIn(data).readableBytes)
            context.fireChannelRead(data)
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            watch.readPending = false
            context.fireChannelReadComplete()
        }

        func read(context: ChannelHandlerContext) {
            watch.readPending = true
            context.read()
        }

        func channelInactive(context: ChannelHandlerContext) {
            watch.stop()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) { watch.stop() }
    }

    /// Sees where the request is, after the HTTP decoder; puts the raw side ahead of the decoder when it is
    /// added (Hummingbird adds it after).
    final class HTTPSide: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart
        let watch: ConnectionGuard

        init(_ watch: ConnectionGuard) { self.watch = watch }

        func handlerAdded(context: ChannelHandlerContext) {
            // The pipeline is being set up on the connection's event loop.
            try? context.pipeline.syncOperations.addHandler(RawSide(watch), position: .first)  // a pipeline being closed: nothing to watch
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head: watch.headArrived()
            case .body: break
            case .end: watch.requestEnded()
            }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) { watch.answerEnded() }
            context.write(data, promise: promise)
        }

        /// A request head the HTTP decoder could not read (an unknown transfer coding, a malformed head) is
        /// the client's fault: answered 400 and the connection closed, not passed on as the server's error.
        /// Within a request (its body) the error goes on: the request's handler sees its body fail.
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            guard error is HTTPParserError, watch.waiting else {
                context.fireErrorCaught(error)
                return
            }
            let body = ByteBuffer(string: #"{"error":"the request is not one this face can read (\#(error)): see RFC 9112"}"# + "\n")
            var head = HTTPResponse(status: .badRequest)
            head.headerFields[.contentType] = "application/json; charset=utf-8"
            head.headerFields[.contentLength] = String(body.readableBytes)
            head.headerFields[.connection] = "close"
            watch.unanswered += 1
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(body)), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// The connections of a face that have not yet sent a whole request head, counted per client against
/// the cap: one client holding many open cannot keep the others out.
final class PendingConnections: Sendable {
    let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) { self.limit = limit }

    /// Counts one more for `client`; false (not counted) when it has reached the cap.
    func enter(_ client: String) -> Bool {
        counts.withLock { table in
            guard table[client, default: 0] < limit else { return false }
            table[client, default: 0] += 1
            return true
        }
    }

    func leave(_ client: String) {
        counts.withLock { table in
            let left = (table[client] ?? 1) - 1
            table[client] = left > 0 ? left : nil
        }
    }

    func current(_ client: String) -> Int { counts.withLock { $0[client] ?? 0 } }
}

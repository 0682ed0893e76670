@testable import FarmHTTP
import FarmModel
import FarmTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Numbers in query strings go through the same rules as the command line's options: a hostile value is a
/// 400 naming the parameter and its range, never a job queued for the year 506713; the OpenAPI document
/// states the same ranges.
@Suite struct QueryNumberTests {
    @Test func hostileNumbersAreRefusedNamingTheRange() async throws {
        let cases: [(HTTPRequest.Method, String, String)] = [
            (.post, "/api/jobs?delay=1.6e13", "delay 1.6e13: give a number from 0 to 315360000 seconds"),
            (.post, "/api/jobs?delay=1e300", "from 0 to 315360000 seconds"),
            (.post, "/api/jobs?delay=315360001", "from 0 to 315360000 seconds"),
            (.post, "/api/jobs?delay=nan", "from 0 to 315360000 seconds"),
            (.post, "/api/jobs?timeout=inf", "greater than 0 and at most 31536000 seconds"),
            (.post, "/api/jobs?timeout=0", "greater than 0 and at most 31536000 seconds"),
            (.post, "/api/jobs?priority=1e30", "from -1000000000 to 1000000000"),
            (.post, "/api/jobs?priority=-0", "from -1000000000 to 1000000000"),
            (.post, "/api/jobs?maxAttempts=99999999999999999999", "from 1 to 1000"),
            (.get, "/api/jobs?limit=nan", "from 1 to 1000"),
            (.get, "/api/jobs?after=-0", "after -0: give a number from 1 to 9223372036854775807"),
            (.get, "/api/assets?minDuration=inf", "from 0 to 315360000 seconds"),
        ]
        try await MiddlewareTests.application().test(.router) { client in
            for (method, uri, expected) in cases {
                let body = method == .post ? ByteBuffer(string: #"{"version": 1, "input": "clip.mp4"}"#) : nil
                try await client.execute(uri: uri, method: method, headers: MiddlewareTests.bearer(MiddlewareTests.token), body: body) { response in
                    #expect(response.status == .badRequest, "\(uri): \(response.status)")
                    #expect(String(buffer: response.body).contains(expected), "\(uri): \(String(buffer: response.body))")
                }
            }
        }
    }

    /// The document's minimum and maximum of each numeric parameter are the rule's.
    @Test func theOpenAPIDocumentStatesTheSameRanges() throws {
        let data = try Data(contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/openapi.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        func schema(_ path: String, _ method: String, _ name: String) throws -> [String: Any] {
            let operation = try #require(paths[path]?[method] as? [String: Any])
            let parameters = try #require(operation["parameters"] as? [[String: Any]])
            let parameter = try #require(parameters.first { $0["name"] as? String == name }, "\(method) \(path) \(name)")
            return try #require(parameter["schema"] as? [String: Any])
        }
        func expectRange<V: BinaryInteger>(_ s: [String: Any], _ rule: NumberRule<V>, _ what: String) {
            #expect((s["minimum"] as? NSNumber)?.int64Value == Int64(rule.minimum), "\(what) minimum")
            #expect((s["maximum"] as? NSNumber)?.int64Value == Int64(rule.maximum), "\(what) maximum")
        }
        func expectRange(_ s: [String: Any], _ rule: NumberRule<Double>, _ what: String) {
            let key = rule.minimumExclusive ? "exclusiveMinimum" : "minimum"
            #expect((s[key] as? NSNumber)?.doubleValue == rule.minimum, "\(what) \(key)")
            #expect((s["maximum"] as? NSNumber)?.doubleValue == rule.maximum, "\(what) maximum")
        }
        expectRange(try schema("/api/jobs", "post", "delay"), UserNumbers.delay, "delay")
        expectRange(try schema("/api/jobs", "post", "timeout"), UserNumbers.timeout, "timeout")
        expectRange(try schema("/api/jobs", "post", "priority"), UserNumbers.priority, "priority")
        expectRange(try schema("/api/jobs", "post", "maxAttempts"), UserNumbers.attempts, "maxAttempts")
        expectRange(try schema("/api/jobs", "get", "limit"), JobsAPI.pageSize, "limit")
        expectRange(try schema("/api/assets", "get", "minDuration"), UserNumbers.duration, "minDuration")
        expectRange(try schema("/api/assets", "get", "maxDuration"), UserNumbers.duration, "maxDuration")
        #expect((try schema("/api/jobs", "get", "after")["minimum"] as? NSNumber)?.int64Value == UserNumbers.jobID.minimum)
    }

    /// A retry that another live job's unique key forbids is the caller's conflict: 409, which the OpenAPI
    /// document lists, never 503.
    @Test func aRetryBlockedByAUniqueKeyIsAConflict() async throws {
        try await MiddlewareTests.application().test(.router) { client in
            let headers = MiddlewareTests.bearer(MiddlewareTests.token)
            let manifest = ByteBuffer(string: #"{"version": 1, "input": "clip.mp4"}"#)
            let uri = "/api/jobs?key=k&allowMissingInputs=true"
            let first = try await client.execute(uri: uri, method: .post, headers: headers, body: manifest) { response in
                #expect(response.status == .created, "\(String(buffer: response.body))")
                return try JSONDecoder().decode([String: AnyDecodable].self, from: Data(buffer: response.body))
            }
            let id = try #require(first["id"]?.int)
            try await client.execute(uri: "/api/jobs/\(id)/cancel", method: .post, headers: headers) { #expect($0.status == .ok) }
            try await client.execute(uri: uri, method: .post, headers: headers, body: manifest) { #expect($0.status == .created) }
            try await client.execute(uri: "/api/jobs/\(id)/retry", method: .post, headers: headers) { response in
                #expect(response.status == .conflict)
                #expect(String(buffer: response.body).contains("another live job holds its unique key"), "\(String(buffer: response.body))")
            }
            try await client.execute(uri: "/api/jobs/999999/retry", method: .post, headers: headers) { #expect($0.status == .notFound) }
        }
    }
}

/// A JSON value of which the tests read integers.
struct AnyDecodable: Decodable {
    var int: Int64?
    init(from decoder: any Decoder) throws {
        int = try? decoder.singleValueContainer().decode(Int64.self)
    }
}

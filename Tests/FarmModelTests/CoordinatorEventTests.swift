import FarmModel
import Foundation
import Testing

/// The farm's events: one case per kind with its own fields, one encoding with ISO 8601 times.
struct CoordinatorEventTests {
    static let at = Date(timeIntervalSince1970: 1_796_268_912.125)

    static let every: [CoordinatorEvent] = [
        .started(id: 7, name: "film", attempt: 2, pid: 4242, queuedFor: 0.25, hops: .init(wait: 0.2, claim: 0.00003, hand: 0.0001), at: at),
        .progress(id: 7, name: "film", fraction: 0.5, phase: "copying", at: at),
        .finished(id: 7, name: "film", state: "succeeded", attempt: 2, message: nil, seconds: 3.5, at: at),
        .finished(id: 8, name: "bad", state: "failed", attempt: 1, message: "no video", seconds: 0.1, at: at),
        .notice("job 9: rescued", at: at),
        .submitted(id: 10, name: "new", queued: false, at: at),
        .changed(.cancelled, id: 11, name: "gone", state: "cancelled", at: at),
        .changed(.retried, id: 12, name: "again", state: "queued", at: at),
    ]

    @Test func eachKindReadsBackAsWrittenWithItsOwnFieldsOnly() throws {
        for event in Self.every {
            let object = try #require(JSONSerialization.jsonObject(with: Data(event.json.utf8)) as? [String: Any])
            #expect(object["event"] as? String == event.kind.rawValue)
            #expect(object["at"] as? String == "2026-12-03T03:35:12.125Z", "\(event.json)")
            #expect(try JSONDecoder.farm().decode(CoordinatorEvent.self, from: Data(event.json.utf8)) == event, "\(event.json)")
            #expect(!event.json.contains("null") && !event.json.contains("\n"))
            let fields: Set<String> = switch event.kind {
            case .started: ["event", "at", "job", "name", "attempt", "pid", "queuedFor", "hops"]
            case .progress: ["event", "at", "job", "name", "fraction", "phase"]
            case .finished: Set(["event", "at", "job", "name", "state", "attempt", "seconds"] + (object["message"] == nil ? [] : ["message"]))
            case .notice: ["event", "at", "message"]
            case .submitted: ["event", "at", "job", "name", "queued"]
            case .cancelled, .retried: ["event", "at", "job", "name", "state"]
            }
            #expect(Set(object.keys) == fields, "\(event.json)")
        }
        #expect(Set(Self.every.map(\.kind)) == Set(CoordinatorEvent.Kind.allCases))
    }

    @Test func aLineOfAnUnknownKindOrWithoutItsFieldsIsRefused() {
        for line in [#"{"event":"exploded","at":"2026-12-03T03:35:12.125Z"}"#, #"{"event":"started","at":"2026-12-03T03:35:12.125Z","job":1}"#,
                     #"{"event":"notice","at":1796268912.123,"message":"epoch seconds are no longer the encoding"}"#] {
            #expect(throws: DecodingError.self, "\(line)") { try JSONDecoder.farm().decode(CoordinatorEvent.self, from: Data(line.utf8)) }
        }
    }
}

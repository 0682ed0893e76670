@testable import FarmIngest
import Foundation
import Testing

/// The lines a capture's queue feeder prints: one Codable type, its JSON and its line for people.
@Suite struct CaptureFeedEventTests {
    func object(_ event: CaptureFeedEvent) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(event.json.utf8)) as? [String: Any])
    }

    @Test func eachKindHasItsFieldsAndNothingElse() throws {
        let enqueued = try object(.enqueued(captureID: "cam", index: 3, job: 12, queued: false, latencyMs: 4.5))
        #expect(Set(enqueued.keys) == ["event", "captureID", "index", "job", "queued", "latencyMs"])
        #expect(enqueued["event"] as? String == "enqueued" && enqueued["job"] as? Int == 12 && enqueued["queued"] as? Bool == false)
        #expect(CaptureFeedEvent.enqueued(captureID: "cam", index: 3, job: 12, queued: false, latencyMs: 4.5).line == "segment 3: job 12 (already queued)")

        let notice = try object(.notice("the queue did not take it"))
        #expect(Set(notice.keys) == ["event", "message"] && notice["event"] as? String == "notice")

        let salvaged = CaptureFeedEvent.salvaged(captureID: "cam", index: 2, path: "/c/cam-2.mp4", duration: 1.5, packets: 45)
        #expect(Set(try object(salvaged).keys) == ["event", "captureID", "index", "path", "duration", "packets"])
        #expect(salvaged.json.contains(#""path":"/c/cam-2.mp4""#), "slashes as written")
        #expect(salvaged.line == "salvaged segment 2 of cam: /c/cam-2.mp4")
        // Decodes back to itself: one type both ways.
        #expect(try JSONDecoder().decode(CaptureFeedEvent.self, from: Data(salvaged.json.utf8)) == salvaged)
    }
}

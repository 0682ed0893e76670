import FarmModel
import Testing

/// Unique keys in the namespace of the way they came in: one type spells them all.
@Suite struct UniqueKeyTests {
    /// Each way in's keys as the queue keeps them, and the names a manifest's `"after"` finds them by.
    @Test func keysAreSpelledByTheirWayInAndFoundByTheirName() {
        let id = AssetID(digest: [UInt8](repeating: 1, count: 16))
        #expect(UniqueKey.given("nightly").stored == "nightly")
        #expect(UniqueKey.api("nightly", scopedToken: nil).stored == "api:nightly")
        #expect(UniqueKey.api("nightly", scopedToken: "reader").stored == "api:reader:nightly")
        #expect(UniqueKey.ingest(hash: "abc").stored == "ingest:abc" && UniqueKey.ingest(hash: "abc", step: "proxy").stored == "ingest:abc:proxy")
        #expect(UniqueKey.captureSegment("cam", index: 3).stored == "capture:cam:3")
        #expect(UniqueKey.captureAssembly("cam", first: 0).stored == "capture:cam:assembly:0")
        #expect(UniqueKey.posterRequest(id).stored == "poster-request:\(id.rawValue)")
        #expect(UniqueKey(stored: "api:reader:nightly").isNamed("nightly") && UniqueKey(stored: "api:nightly").isNamed("nightly"))
        #expect(UniqueKey(stored: "nightly").isNamed("nightly"))
        #expect(!UniqueKey(stored: "ingest:nightly").isNamed("nightly") && !UniqueKey(stored: "api:nightly2").isNamed("nightly"))
        #expect(KeyNamespace.api(scopedToken: "reader").reference(.key("k")) == .key("api:reader:k"))
        #expect(KeyNamespace.api(scopedToken: nil).reference(.id(4)) == .id(4) && KeyNamespace.given.reference(.key("k")) == .key("k"))
    }
}

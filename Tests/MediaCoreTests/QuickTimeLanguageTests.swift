import FarmTestSupport
import Foundation
import MediaCore
import MediaTime
import Testing

/// FFmpeg's QuickTime muxer keeps one form of each ISO 639-2 bibliographic/terminology pair and drops the
/// other: a mov keeps the language of a track tagged in either form (Māori excepted: it knows neither).
@Suite struct QuickTimeLanguageTests {
    @Test func everyFormOfAPairIsKeptInAMov() throws {
        let pairs = [("alb", "sqi"), ("arm", "hye"), ("baq", "eus"), ("bur", "mya"), ("chi", "zho"), ("cze", "ces"), ("dut", "nld"), ("fre", "fra"),
                     ("geo", "kat"), ("ger", "deu"), ("gre", "ell"), ("ice", "isl"), ("mac", "mkd"), ("may", "msa"), ("per", "fas"), ("rum", "ron"),
                     ("slo", "slk"), ("tib", "bod"), ("wel", "cym")]
        let codes = pairs.flatMap { [$0.0, $0.1] } + ["eng", "spa"]
        let path = try TestPaths.makeTemporaryFolder("quicktime-languages").appendingPathComponent("languages.mov").path
        let file = try OutputFile(path: path, format: "mov")
        let streams = try codes.map { try file.addTextStream(.movText, language: $0) }
        try file.writeHeader()
        var packet = Packet()
        for stream in streams {
            packet.replaceData(with: TextTrackCodec.movText.packet("cue"))
            packet.retime(pts: 0, dts: 0, duration: 1000, streamIndex: stream)
            try file.write(&packet)
        }
        try file.finish()
        let tags = try ProcessRunner.check("ffprobe", ["-v", "error", "-show_entries", "stream_tags=language", "-of", "csv=p=0", path])
            .stdout.split(separator: "\n", omittingEmptySubsequences: false).prefix(codes.count).map(String.init)
        let kept = Dictionary(uniqueKeysWithValues: pairs.flatMap { b, t in [(b, b), (t, b)] } + [("eng", "eng"), ("spa", "spa")])
            .merging(["cze": "ces", "ces": "ces", "fre": "fra", "fra": "fra", "rum": "ron", "ron": "ron", "slo": "slk", "slk": "slk"]) { _, new in new }
        #expect(tags == codes.map { kept[$0]! }, "\(Array(zip(codes, tags)))")
    }
}

import FarmTestSupport
import Foundation
import SafeFiles
import Testing
@testable import FarmRuntime

/// A package's folder published under its staged name: once, whatever step a coordinator died after. A
/// resumed publication finishes what the dead one began and never puts the old package back; what is
/// never replaced (a folder that is no package, one holding the job's input) is refused.
@Suite struct PackageFolderTests {
    /// A package made by the attempt holding `token`: its marker and one segment saying which it is.
    static func package(_ path: String, token: String?) throws {
        try FileManager.default.createDirectory(atPath: path + "/video-1", withIntermediateDirectories: true)
        try Data(token.map { "made by \($0)" }?.utf8 ?? "no marker".utf8).write(to: URL(fileURLWithPath: path + "/video-1/1.m4s"))
        if let token {
            try JSONEncoder().encode(PackageFolder.Marker(token: token, entryPoints: ["master.m3u8"]))
                .write(to: URL(fileURLWithPath: path + "/" + PackageFolder.marker))
        }
    }

    static func madeBy(_ path: String) -> String? {
        (try? String(contentsOfFile: path + "/video-1/1.m4s", encoding: .utf8))  // absent: nothing there
    }

    func folder() throws -> (final: String, staged: String) {
        let root = try TestPaths.makeTemporaryFolder("package-folder").path
        return (root + "/show", root + "/.show.mediafarm-staged-new")
    }

    func names(_ final: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: (final as NSString).deletingLastPathComponent)) ?? []).sorted()
    }

    /// What a killed `mediafarm run` left beside a package (a staged folder without its marker that no
    /// writer holds, older than a minute) is removed before the next package is written there; a folder
    /// being written (its writer holds it locked), a whole package waiting for its coordinator (it has its
    /// marker) and a folder just made stay.
    @Test func whatAKilledWriterLeftIsSweptAndNothingElse() throws {
        let root = try TestPaths.makeTemporaryFolder("package-sweep").path
        let final = root + "/show"
        let abandoned = root + "/.show.mediafarm-staged-killed", waiting = root + "/.show.mediafarm-staged-whole"
        let young = root + "/.show.mediafarm-staged-young", writing = root + "/.other.mediafarm-staged-alive"
        try Self.package(abandoned, token: nil)
        try Self.package(waiting, token: "whole")
        try Self.package(young, token: nil)
        let lock = try PackageFolder.create(writing)
        for path in [abandoned, waiting, writing] {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -120)], ofItemAtPath: path)
        }
        #expect(PackageFolder.sweepAbandoned(beside: final) == [abandoned])
        #expect(names(final) == [".other.mediafarm-staged-alive", ".show.mediafarm-staged-whole", ".show.mediafarm-staged-young"])
        close(lock)
        #expect(PackageFolder.sweepAbandoned(beside: final) == [writing])
        #expect(FileManager.default.fileExists(atPath: waiting + "/" + PackageFolder.marker) && FileManager.default.fileExists(atPath: young))
    }

    @Test func anOldPackageIsExchangedForTheNewAndRemoved() throws {
        let (final, staged) = try folder()
        try Self.package(final, token: "old")
        try Self.package(staged, token: "new")
        #expect(throws: JobError.self) { try PackageFolder.publish(staged, to: final, token: "new", allowExisting: false, inputs: []) }
        #expect(Self.madeBy(final) == "made by old" && Self.madeBy(staged) == "made by new")
        try PackageFolder.publish(staged, to: final, token: "new", allowExisting: true, inputs: [])
        #expect(Self.madeBy(final) == "made by new" && names(final) == ["show"])
    }

    /// A coordinator died after the exchange: the new package is in place and the old one at the staged
    /// name (its marker perhaps removed already). Resumed, the old one is removed and the new one stays.
    @Test(arguments: [Optional("old"), nil]) func aResumedPublicationNeverPutsTheOldPackageBack(_ oldMarker: String?) throws {
        let (final, staged) = try folder()
        try Self.package(final, token: "new")
        try Self.package(staged, token: oldMarker)
        try PackageFolder.publish(staged, to: final, token: "new", allowExisting: true, inputs: [], resuming: true)
        #expect(Self.madeBy(final) == "made by new" && names(final) == ["show"], "\(names(final))")
        // And again, as a second rescuer would: nothing changes.
        try PackageFolder.publish(staged, to: final, token: "new", allowExisting: true, inputs: [], resuming: true)
        #expect(Self.madeBy(final) == "made by new" && names(final) == ["show"])
    }

    /// Not resuming, a staged folder without this attempt's marker is not published: it may be incomplete.
    @Test func aStagedFolderThatIsNotThisAttemptsIsNotPublished() throws {
        let (final, staged) = try folder()
        try Self.package(staged, token: nil)
        #expect(throws: JobError.self) { try PackageFolder.publish(staged, to: final, token: "new", allowExisting: true, inputs: []) }
        #expect(!FileManager.default.fileExists(atPath: final))
    }

    /// The job's input inside the package there (by a link, too) stops its replacement; so does a folder
    /// that is no package.
    @Test func whatIsNeverReplacedIsRefused() throws {
        let (final, staged) = try folder()
        try Self.package(final, token: "old")
        try Self.package(staged, token: "new")
        try Data("movie".utf8).write(to: URL(fileURLWithPath: final + "/source.mp4"))
        let link = (final as NSString).deletingLastPathComponent + "/input.mp4"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: final + "/source.mp4")
        do {
            try PackageFolder.publish(staged, to: final, token: "new", allowExisting: true, inputs: [link])
            Issue.record("a package holding the job's input was replaced")
        } catch { #expect("\(error)".contains("holds the job's input \(link)"), "\(error)") }
        #expect(Self.madeBy(final) == "made by old")
        // One of the farm's own files inside the old package (a queue's database someone put there).
        try FileManager.default.removeItem(atPath: link)
        let database = final + "/video-1/queue.sqlite"
        try Data("SQLite format 3\u{0}".utf8).write(to: URL(fileURLWithPath: database))
        ProtectedFiles.shared.protect(database, role: "the queue's database")
        do {
            try PackageFolder.publish(staged, to: final, token: "new", allowExisting: true, inputs: [])
            Issue.record("a package holding the farm's own file was replaced")
        } catch { #expect("\(error)".contains("holds video-1/queue.sqlite, one of the farm's own files"), "\(error)") }
        #expect(Self.madeBy(final) == "made by old" && FileManager.default.fileExists(atPath: database))
        try FileManager.default.removeItem(atPath: final + "/" + PackageFolder.marker)
        do {
            try PackageFolder.publish(staged, to: final, token: "new", allowExisting: true, inputs: [])
            Issue.record("a folder that is no package was replaced")
        } catch { #expect("\(error)".contains("is not a package the farm made"), "\(error)") }
        #expect(Self.madeBy(final) == "made by old" && Self.madeBy(staged) == "made by new")
    }
}

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

    /// What a killed writer left beside a package (a staged folder without its marker, whose writer file
    /// nobody holds locked and nobody touched for ten minutes, or without one, the folder untouched as long)
    /// is removed before the next package is written there; a folder being written here (its file locked),
    /// one whose writer on another host touched its file lately, a whole package waiting for its
    /// coordinator (it has its marker) and a folder just made stay.
    @Test func whatAKilledWriterLeftIsSweptAndNothingElse() throws {
        let root = try TestPaths.makeTemporaryFolder("package-sweep").path
        let final = root + "/show"
        func staged(_ name: String) -> String { root + "/.show.mediafarm-staged-" + name }
        let old = Date(timeIntervalSinceNow: -1200)
        func age(_ path: String) throws { try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path) }
        // Killed before making its writer file; killed after (its file unlocked and stale).
        try Self.package(staged("killed-early"), token: nil)
        try age(staged("killed-early"))
        try Self.package(staged("killed"), token: nil)
        try Data().write(to: URL(fileURLWithPath: staged("killed") + "/" + PackageWriting.name))
        try age(staged("killed") + "/" + PackageWriting.name)
        // Alive on another host: unlocked here, touched lately (its folder is old).
        try Self.package(staged("elsewhere"), token: nil)
        try Data().write(to: URL(fileURLWithPath: staged("elsewhere") + "/" + PackageWriting.name))
        try age(staged("elsewhere"))
        // Alive here: locked, its file stale.
        let writing = try PackageFolder.create(staged("writing"))
        try age(writing.path)
        try age(staged("writing"))
        // Whole, and just made.
        try Self.package(staged("whole"), token: "whole")
        try age(staged("whole"))
        try Self.package(staged("young"), token: nil)

        #expect(PackageWriting.sweepAbandoned(beside: final).sorted() == [staged("killed"), staged("killed-early")])
        #expect(names(final) == [".show.mediafarm-staged-elsewhere", ".show.mediafarm-staged-whole", ".show.mediafarm-staged-writing",
                                 ".show.mediafarm-staged-young"])
        // Done writing: its file is gone with its lock, and the package does not hold it.
        writing.end()
        #expect(!FileManager.default.fileExists(atPath: writing.path))
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

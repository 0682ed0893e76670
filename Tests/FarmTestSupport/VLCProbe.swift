import Foundation

/// VLC 3.0's own demuxers (libvlc through python3-vlc): the duration it gives a file. VLC refuses to run
/// as root, so as root it runs as `nobody`, on a copy of the file in a folder that user may read.
public enum VLCProbe {
    public static func duration(_ path: String) throws -> Double {
        let folder = try TestPaths.makeTemporaryFolder("vlc")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        let movie = folder.appendingPathComponent("movie." + (path as NSString).pathExtension).path
        try FileManager.default.copyItem(atPath: path, toPath: movie)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: movie)
        let script = """
        import sys, time, vlc
        media = vlc.Instance("--no-audio", "--vout=dummy", "--intf=dummy").media_new(sys.argv[1])
        media.parse_with_options(vlc.MediaParseFlag.local, 60000)
        deadline = time.monotonic() + 60  # a limit on a parse that never ends, not on VLC's speed
        while media.get_parsed_status() != vlc.MediaParsedStatus.done and time.monotonic() < deadline:
            time.sleep(0.05)
        print(media.get_parsed_status(), media.get_duration())
        """
        let python = ["/usr/bin/python3", "-c", script, movie]
        let r = getuid() == 0 ? try ProcessRunner.check("runuser", ["-u", "nobody", "--"] + python)
                              : try ProcessRunner.check(python[0], Array(python.dropFirst()))
        // "MediaParsedStatus.done MILLISECONDS"
        guard let line = r.stdout.split(separator: "\n").last, line.hasPrefix("MediaParsedStatus.done"),
              let ms = line.split(separator: " ").last.flatMap({ Int($0) }), ms > 0 else {
            throw VLCError(description: "VLC could not parse \(path): \(r.stdout.suffix(300)) \(r.stderr.suffix(300))")
        }
        return Double(ms) / 1000
    }

    public struct VLCError: Error, CustomStringConvertible {
        public let description: String
    }
}

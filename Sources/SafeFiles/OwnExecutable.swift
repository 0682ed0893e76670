import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// This program's own file, its links followed (`/proc/self/exe`): what starts workers, and where the
/// `mediafarm` front finds the media program beside it.
public enum OwnExecutable {
    /// The path, or nil where /proc cannot say.
    public static var path: String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return n > 0 ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }
}

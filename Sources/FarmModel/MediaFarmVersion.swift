/// MediaFarm's release: `mediafarm --version`, and part of a result's key (a result made by another
/// release is not reused).
public enum MediaFarmVersion {
    public static let string = "0.1.0"
}

import FarmModel

/// Where a job may run, as both backends store it: what a claimer must provide, and the library assets
/// the job reads (a claimer's host must hold each, present).
enum Placement {
    /// The job's requirements as a JSON array, nil when it has none.
    static func requires(_ new: NewJob) -> String? {
        new.requires.isEmpty ? nil : JobCoding.json(new.requires)
    }

    /// The assets the manifest names (`asset:ID`) as a JSON array of ids, nil when it names none.
    static func assets(_ new: NewJob) -> String? {
        guard new.manifest.contains(AssetID.scheme) else { return nil }
        let ids = Array(Set(AssetID.references(inManifest: Array(new.manifest.utf8)).map(\.id.rawValue))).sorted()
        return ids.isEmpty ? nil : JobCoding.json(ids)
    }
}

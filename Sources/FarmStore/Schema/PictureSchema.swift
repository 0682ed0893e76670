/// Pictures in the queue's tables (migration v12): a representation of an asset says what kind it is (an
/// `export`, a `poster`, a `storyboard`), so that the poster of an asset is found without reading the jobs
/// that made its representations; and a reusable result keeps its pictures' files (`ReusableResult.files`).
enum PictureSchema {
    static func statements(_ dialect: SQLDialect) -> [String] {
        let prefix = dialect == .postgres ? "{schema}." : ""
        return [
            "ALTER TABLE \(prefix)asset_representations ADD COLUMN kind TEXT NOT NULL DEFAULT 'export'",
            "CREATE INDEX asset_representations_kind ON \(prefix)asset_representations (source_id, kind, id)",
            // A reusable result's pictures: each file with its SHA-256 and size, and the counts of numbered ones.
            "ALTER TABLE \(prefix)job_results ADD COLUMN files TEXT",
        ]
    }
}

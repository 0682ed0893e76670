import FarmModel

/// The queue's tables beside the jobs, on the opened store: each a type with one contract on both
/// backends, so that nothing outside FarmStore builds queries on the store's database.
extension JobStore {
    /// What is paused, and by whom.
    public var pauses: QueuePauses { get throws(JobStoreError) { QueuePauses(try database) } }
    /// The coordinators that share the queue.
    public var registry: CoordinatorRegistry { get throws(JobStoreError) { CoordinatorRegistry(try database) } }
    /// The queue's depth over time, for the console's charts.
    public var history: QueueHistory { get throws(JobStoreError) { QueueHistory(try database) } }
    /// How many coordinators of a kind the queue asks for (autoscaling).
    public var scaling: ScalingDemands { get throws(JobStoreError) { ScalingDemands(try database) } }
    /// Results kept by content, for reuse.
    public var results: ResultRecords { get throws(JobStoreError) { ResultRecords(try database) } }
}

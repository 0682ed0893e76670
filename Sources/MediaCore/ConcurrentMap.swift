/// Runs `body` for every element with at most `limit` running at once, and returns the results in
/// the elements' order. `progress` is told (done, total) as each finishes.
public func concurrentMap<Element: Sendable, Result: Sendable>(
    _ elements: [Element], limit: Int, progress: (@Sendable (Int, Int) -> Void)? = nil,
    _ body: @escaping @Sendable (Element) async -> Result
) async -> [Result] {
    var results = [Result?](repeating: nil, count: elements.count)
    await withTaskGroup(of: (Int, Result).self) { group in
        var next = 0, done = 0
        func start() {
            let i = next
            next += 1
            group.addTask { (i, await body(elements[i])) }
        }
        while next < elements.count && next < max(1, limit) { start() }
        for await (i, result) in group {
            results[i] = result
            done += 1
            progress?(done, elements.count)
            if next < elements.count { start() }
        }
    }
    return results.map { $0! }
}

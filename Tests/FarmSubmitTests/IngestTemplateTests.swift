import FarmModel
import FarmSubmit
import Testing

/// Ingest and capture templates' placeholders.
@Suite struct IngestTemplateTests {
    /// Placeholders are put in in one pass: a file whose name holds a placeholder's braces keeps them in
    /// `{input}` and `{stem}`, whatever order the values are held in. (They were replaced one name after
    /// another in a dictionary's order, which changes from run to run: `{stem}` first put `{hash}` in for
    /// `{hash}` to replace.)
    @Test func placeholdersAreExpandedInOnePass() throws {
        let template = try JSONParser.parse(#"""
            {"version": 1, "name": "{date} {{stem}} {nope} {", "input": "{input}",
             "export": {"mode": "passthrough", "output": "out/{stem}-{hash}.{ext}"}}
            """#)
        let file = "/in/clip{hash}{ext}.mov"
        let given = ["input": file, "hash": "0123456789abcdef", "date": "2026-12-02"]
        // The same values in dictionaries of other sizes: other orders of their keys.
        for capacity in [3, 8, 16, 64, 256, 1024] {
            var values = [String: String](minimumCapacity: capacity)
            for (key, value) in given { values[key] = value }
            let filled = IngestTemplate.filled(template, values: values, file: file)
            #expect(filled["input"] == .string(file))
            #expect(filled["export"]?["output"] == .string("out/clip{hash}{ext}-0123456789abcdef.mov"), "\(filled.text)")
            #expect(filled["name"] == .string("2026-12-02 {clip{hash}{ext}} {nope} {"), "\(filled.text)")
        }
        #expect(IngestTemplate.expand("{a}{b}}{", ["a": "{b}", "b": "x"]) == "{b}x}{")
    }
}

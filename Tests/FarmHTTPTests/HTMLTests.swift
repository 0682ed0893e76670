@testable import FarmHTTP
import Testing

/// The pages' markup type: what goes in as text is escaped, markup stays markup.
@Suite struct HTMLTests {
    @Test func textIsEscapedAndMarkupIsNot() {
        let name = #"<script>alert("x")</script> & 'co'"#
        let cell: HTML = "<td class=\"name\">\(name)</td>"
        #expect(cell.text == #"<td class="name">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</td>"#)
        let link: HTML = "<a href=\"/jobs/\(7)\">\(cell)</a>"
        #expect(link.text == "<a href=\"/jobs/7\">" + cell.text + "</a>")
        // A literal inside an interpolation is text too: markup there must be written as HTML.
        let bold = true
        let asText: HTML = "x\(bold ? "<b>" : "")"
        let asMarkup: HTML = "x\(bold ? "<b>" as HTML : "")"
        #expect(asText.text == "x&lt;b&gt;" && asMarkup.text == "x<b>")
        #expect(["<i>a</i>", "\("<i>")"].joined(separator: "<br>").text == "<i>a</i><br>&lt;i&gt;")
        #expect(HTML(text: "a<b").text == "a&lt;b" && ("1" + HTML(text: "<")).text == "1&lt;")
        let nothing: HTML? = nil
        #expect(("[\(nothing)]" as HTML).text == "[]" && ("\(2.5)" as HTML).text == "2.5")
    }

    /// A hostile job name on the status page and the sign-in page's flag stay text.
    @Test func pagesPutWhatTheyAreGivenInAsText() {
        #expect(StatusPage.login(failed: true).text.contains("<p class=\"error\">That is not the coordinator's token.</p>"))
        let page = Console.page(title: "<title>", section: .jobs, body: "<p>\("</main>")</p>")
        #expect(page.text.contains("<title>&lt;title&gt;</title>") && page.text.contains("<p>&lt;/main&gt;</p>"))
        #expect(page.text.contains("<a href=\"/jobs\" aria-current=\"page\">Jobs</a>"))
    }
}

local T = require "wb.test"
local page = require "wb.page"
local svg = require "wb.svg"
local fs = require "wb.fs"

local HOSTILE = [[<script>alert("x")</script> & 'q' *b* _u_ `t` |p|]]

T.case("text is escaped everywhere; fragments are placed as they are", function()
  T.eq(page.escape(HOSTILE), "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39; *b* _u_ `t` |p|")
  local p = page.p(HOSTILE)
  T.eq(p.html, "<p>" .. page.escape(HOSTILE) .. "</p>\n")
  T.eq(p.md, [[\<script\>alert("x")\</script\> & 'q' \*b\* \_u\_ \`t\` \|p\|]])
  T.eq(page.p("snake_case _edge_ a__b").md, [[snake_case \_edge\_ a\_\_b]], "an underscore inside a word stays")
  T.eq(page.md_text("snake_case"), [[snake\_case]], "md_text escapes every markup character")
  T.eq(page.code("a`b").md, "``a`b``")
  T.eq(page.code("<x>").html, "<code>&lt;x&gt;</code>")
  T.eq(page.strong(page.code("x")).html, "<b><code>x</code></b>")
  T.eq(page.strong("x").md, "**x**")
  T.eq(page.link("a.svg?x=1&y", "see <it>").html, '<a href="a.svg?x=1&amp;y">see &lt;it&gt;</a>')
  T.eq(page.link("a.svg").md, "[a.svg](a.svg)")
  T.eq(page.join({ "a<", page.code("b"), 3 }, ", ").html, "a&lt;, <code>b</code>, 3")
  T.ok(page.is_fragment(page.join {}))
  T.ok(not page.is_fragment("x"))
  T.eq(tostring(page.code("z")), "<code>z</code>")
end)

T.case("table: header, alignment classes, row classes; Markdown cells kept as written", function()
  local t = page.table({ { "name", "n" }, { "a_b", 12 }, { page.strong("c|d"), 3 } },
    { align = { "l", "r" }, class = "k", row_class = { [3] = "hot" } })
  T.eq(t.html, '<div class="scroll"><table class="k">\n<thead><tr><th>name</th><th class="r">n</th></tr></thead>\n'
    .. '<tbody>\n<tr><td>a_b</td><td class="r">12</td></tr>\n<tr class="hot"><td><b>c|d</b></td><td class="r">3</td></tr>\n'
    .. "</tbody></table></div>\n")
  T.eq(t.md, "| name     |   n |\n| :------- | --: |\n| a_b      |  12 |\n| **c\\|d** |   3 |", "the pipe escaped once")
  T.eq(page.md_table({ { "x" }, { "é" } }, {}), "| x   |\n| :-- |\n| é   |\n")
  local hostile = page.table({ { HOSTILE }, { HOSTILE } })
  T.ok(not hostile.html:find("<script", 1, true), "no raw script")
end)

T.case("blocks: list, figure, frame, pre, markdown, section", function()
  T.eq(page.list({ "a<", page.code("b") }).html, "<ul>\n<li>a&lt;</li>\n<li><code>b</code></li>\n</ul>\n")
  T.eq(page.list({ "x", "y" }, { ordered = true }).md, "1. x\n2. y")
  local chart = svg.bar_chart { bars = { { label = "a", value = 1 } }, title = "t" }
  local f = page.figure(chart, "cap <1>", { file = "c.svg" })
  T.match(f.html, "^<figure>\n<svg ")
  T.match(f.html, "<figcaption>cap &lt;1&gt;</figcaption>\n</figure>\n$")
  T.eq(f.md, "[cap \\<1\\>](c.svg)")
  T.eq(page.figure('<?xml version="1.0"?>\n<svg/>', "c").html, "<figure>\n<svg/>\n<figcaption>c</figcaption>\n</figure>\n")
  local fr = page.frame('<?xml version="1.0"?>\n<svg height="90" x="&"><script>1</script></svg>', "fg")
  T.match(fr.html, '^<iframe title="fg" height="98" srcdoc="&lt;!DOCTYPE html&gt;')
  T.ok(not fr.html:find("<svg", 1, true) and not fr.html:find("<?xml", 1, true))
  T.eq(page.pre("a ``` <b>\n").html, "<pre>a ``` &lt;b&gt;\n</pre>\n")
  T.eq(page.pre("a ``` <b>\n").md, "````\na ``` <b>\n````")
  T.eq(page.markdown("# T\n\nx `y`\n", { shift = 1 }).html, "<h2>T</h2>\n<p>x <code>y</code></p>\n")
  local s = page.section("S & t", { "para", page.list { "i" } }, { class = "warnings" })
  T.eq(s.html, '<section class="warnings">\n<h2>S &amp; t</h2>\n<p>para</p>\n<ul>\n<li>i</li>\n</ul>\n</section>\n')
  T.eq(s.md, "## S & t\n\npara\n\n- i")
  T.eq(page.section("one", page.p("x")).md, "## one\n\nx")
end)

T.case("document: a self-contained page and its Markdown; write through a campaign", function()
  local doc = page.document { title = "T " .. HOSTILE, generator = "wb test",
    meta = { { "a", page.strong("b") }, {} }, lead = page.join { "lead ", page.code("c") }, footer = "f<" }
  doc:add(page.section("S", { "x" })):add("plain <p>")
  local html = page.html(doc)
  T.match(html, "^<!DOCTYPE html>\n<html lang=\"en\">")
  T.match(html, '<meta name="generator" content="wb test">')
  T.eq(T.count(html, "<script"), 0, "the hostile title is text")
  T.match(html, '<p class="meta"><span>a</span> <span class="sep">·</span> <span><b>b</b></span></p>\n<p class="lead">', "empty meta lines drop")
  T.match(html, '<p class="lead">lead <code>c</code></p>')
  T.match(html, "<section>\n<h2>S</h2>\n<p>x</p>\n</section>\n<p>plain &lt;p&gt;</p>\n<footer>f&lt;</footer>")
  T.ok(not html:find("<link", 1, true) and not html:find("%ssrc="), "nothing loaded from elsewhere")
  T.eq(page.md(doc), "# T \\<script\\>alert(\"x\")\\</script\\> & 'q' \\*b\\* \\_u\\_ \\`t\\` \\|p\\|\n\na · **b**\n\n"
    .. "lead `c`\n\n## S\n\nx\n\nplain \\<p\\>\n")
  T.eq(doc:md(), page.md(doc))
  local dir = T.tmpdir()
  local c = { write = function(_, rel, text)
    assert(fs.write(dir .. "/" .. rel, text))
    return dir .. "/" .. rel
  end }
  T.eq(doc:write(c, "report"), { dir .. "/report.html" })
  T.eq(doc:write(c, "r2", { md = true }), { dir .. "/r2.html", dir .. "/r2.md" })
  T.eq(fs.read(dir .. "/r2.md"), page.md(doc))
  T.eq(fs.read(dir .. "/report.html"), html)
  T.raises(function() page.document {} end, "a title is needed")
end)


local T = require "wb.test"
local md = require "wb.markdown"

T.case("headings, paragraphs, lists and inline markup become HTML, text escaped", function()
  local html = md.html("# Title\n\nSome `a<b>` and **bold** and z-score \\> 3.5\nsecond line\n\n1. one\n2. two\n\n- x\n- y\n", { shift = 1 })
  T.eq(html, "<h2>Title</h2>\n<p>Some <code>a&lt;b&gt;</code> and <b>bold</b> and z-score &gt; 3.5\nsecond line</p>\n" ..
    "<ol>\n<li>one</li>\n<li>two</li>\n</ol>\n<ul>\n<li>x</li>\n<li>y</li>\n</ul>\n")
end)

T.case("pipe tables: alignment from the rule row, escaped pipes and pipes in code stay in their cell", function()
  local html = md.html("| a | b |\n| :-- | --: |\n| `x \\| y` | 1\\|2 |\n")
  T.eq(html, '<table>\n<thead><tr><th>a</th><th style="text-align:right">b</th></tr>\n</thead>\n<tbody>\n' ..
    '<tr><td><code>x | y</code></td><td style="text-align:right">1|2</td></tr>\n</tbody>\n</table>\n')
end)

T.case("what it does not know stays text: a lone pipe line, an unclosed code span", function()
  T.eq(md.html("| not a table\n`open"), "<p>| not a table\n`open</p>\n")
end)

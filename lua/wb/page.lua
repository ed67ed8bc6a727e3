-- The page kit: one document built from blocks, rendered as a self-contained HTML page (inline
-- CSS and SVG, no external resource) and as Markdown. Every wb report is made with it; a recipe
-- says what goes on its page and never writes HTML or escapes text.
--
-- A plain string (or number) anywhere is text: escaped for HTML, Markdown's markup characters
-- escaped for Markdown (not an underscore inside a word; in table cells Markdown text is kept as
-- written, pipes and newlines made safe, so names stay readable in a terminal). Every builder returns a fragment, which is placed
-- as it is. Inline: page.code, page.strong, page.link, page.join. Blocks: page.p, page.list,
-- page.table, page.figure, page.frame, page.pre, page.markdown, page.section. Document:
-- page.document, then page.html(doc) / page.md(doc), or doc:write(c, base).
local svg = require "wb.svg"

local M = {}

local Fragment = {}
Fragment.__index = Fragment
Fragment.__tostring = function(f) return f.html end

local function frag(html, md) return setmetatable({ html = html, md = md }, Fragment) end

-- yes = page.is_fragment(v) : v was made by the page kit
function M.is_fragment(v) return getmetatable(v) == Fragment end

-- s = page.escape(v) : tostring(v) safe in HTML/XML text and quoted attributes (& < > " ')
M.escape = svg.escape
local esc = M.escape

-- s = page.md_text(v) : text with Markdown's inline markup characters escaped, newlines as spaces
function M.md_text(s)
  return (tostring(s):gsub("[\r\n]+", " "):gsub("([\\`*_%[%]<>|])", "\\%1"))
end

-- s = page.md_code(v) : v as a Markdown code span (a fence longer than any backtick run in v)
function M.md_code(s)
  s = tostring(s):gsub("[\r\n]+", " ")
  local run = 0
  for r in s:gmatch("`+") do run = math.max(run, #r) end
  local fence = ("`"):rep(run + 1)
  local pad = (s:find("^`") or s:find("`$")) and " " or ""
  return fence .. pad .. s .. pad .. fence
end

-- Text in Markdown: markup characters escaped, underscores only at a word's edge (inside a word,
-- as in snake_case names, one is not emphasis), newlines as spaces.
local function md_inline(v)
  local s = tostring(v):gsub("[\r\n]+", " "):gsub("([\\`*%[%]<>|])", "\\%1")
  return (s:gsub("()_()", function(i, j)
    return (s:sub(i - 1, i - 1):find("^%w") and s:sub(j, j):find("^%w")) and "_" or "\\_"
  end))
end

-- The fragment of an inline value: a fragment as it is, anything else text.
local function inline(v, md_plain)
  if getmetatable(v) == Fragment then return v end
  if v == nil then return frag("", "") end
  return frag(esc(v), md_plain and tostring(v) or md_inline(v))
end

-- ---- inline ----------------------------------------------------------------------------------

-- f = page.code(s) : s in a code span
function M.code(s) return frag("<code>" .. esc(s) .. "</code>", M.md_code(s)) end

-- f = page.strong(x) : x (text or fragment) in bold
function M.strong(x)
  local f = inline(x)
  return frag("<b>" .. f.html .. "</b>", "**" .. f.md .. "**")
end

-- f = page.link(href, x) : x (text or fragment; default href) linking to href
function M.link(href, x)
  local f = inline(x == nil and href or x)
  return frag('<a href="' .. esc(href) .. '">' .. f.html .. "</a>", "[" .. f.md .. "](" .. tostring(href) .. ")")
end

-- f = page.join(list [, sep]) : the items (text or fragments) one after another, sep (text) between
function M.join(list, sep)
  local h, m = {}, {}
  for i, v in ipairs(list) do
    local f = inline(v)
    h[i], m[i] = f.html, f.md
  end
  local s = inline(sep or "")
  return frag(table.concat(h, s.html), table.concat(m, s.md))
end

-- ---- blocks ----------------------------------------------------------------------------------

local function class_attr(class) return class and (' class="' .. esc(class) .. '"') or "" end

-- f = page.p(line, ... [, {class = C}]) : a paragraph of one or more lines (text or fragments)
function M.p(...)
  local lines, opts = { ... }, nil
  if type(lines[#lines]) == "table" and not M.is_fragment(lines[#lines]) then opts = table.remove(lines) end
  local h, m = {}, {}
  for i, v in ipairs(lines) do
    local f = inline(v)
    h[i], m[i] = f.html, f.md
  end
  return frag("<p" .. class_attr(opts and opts.class) .. ">" .. table.concat(h, "\n") .. "</p>\n",
    table.concat(m, "\n"))
end

-- f = page.list(items [, {ordered = false}]) : a list; each item text or a fragment
function M.list(items, opts)
  local ordered = opts and opts.ordered
  local h, m = {}, {}
  for i, v in ipairs(items) do
    local f = inline(v)
    h[i] = "<li>" .. f.html .. "</li>\n"
    m[i] = (ordered and (i .. ". ") or "- ") .. f.md
  end
  local tag = ordered and "ol" or "ul"
  return frag("<" .. tag .. ">\n" .. table.concat(h) .. "</" .. tag .. ">\n", table.concat(m, "\n"))
end

-- The Markdown table of rows of strings (rows[1] the header), columns padded and aligned.
local function md_table(rows, align)
  local ncol, width = 0, {}
  for _, row in ipairs(rows) do ncol = math.max(ncol, #row) end
  local cells = {}
  for i, row in ipairs(rows) do
    cells[i] = {}
    for j = 1, ncol do
      local s = row[j] == nil and "" or tostring(row[j])
      if s:find("[\r\n|]") then s = s:gsub("[\r\n]+", " "):gsub("\\?|", "\\|") end -- escaped once
      cells[i][j] = s
      width[j] = math.max(width[j] or 3, utf8.len(s) or #s)
    end
  end
  local function pad(s, w, a)
    local gap = w - (utf8.len(s) or #s)
    if a == "r" then return (" "):rep(gap) .. s end
    if a == "c" then return (" "):rep(gap // 2) .. s .. (" "):rep(gap - gap // 2) end
    return s .. (" "):rep(gap)
  end
  local out = {}
  for i, row in ipairs(cells) do
    local line = {}
    for j = 1, ncol do line[j] = pad(row[j], width[j], align[j]) end
    out[#out + 1] = "| " .. table.concat(line, " | ") .. " |"
    if i == 1 then
      local rule = {}
      for j = 1, ncol do
        local a = align[j] or "l"
        rule[j] = ((a == "l" or a == "c") and ":" or "-") .. ("-"):rep(width[j] - 2) .. ((a == "r" or a == "c") and ":" or "-")
      end
      out[#out + 1] = "| " .. table.concat(rule, " | ") .. " |"
    end
  end
  return table.concat(out, "\n") .. "\n"
end
M.md_table = md_table

-- f = page.table(rows [, {align = {"l"|"r"|"c", ...}, class = C, row_class = {[i] = C}}]) : a
-- table, rows[1] the header; cells text or fragments; right-aligned columns get class "r"
function M.table(rows, opts)
  opts = opts or {}
  local align, row_class = opts.align or {}, opts.row_class or {}
  local h = { '<div class="scroll"><table' .. class_attr(opts.class) .. ">\n<thead><tr>" }
  local md = {}
  for i, row in ipairs(rows) do
    local tag = i == 1 and "th" or "td"
    if i > 1 then h[#h + 1] = "<tr" .. class_attr(row_class[i]) .. ">" end
    local mrow = {}
    for j, v in ipairs(row) do
      local f = inline(v, true)
      local a = align[j]
      local cls = a == "r" and ' class="r"' or ""
      h[#h + 1] = "<" .. tag .. cls .. ">" .. f.html .. "</" .. tag .. ">"
      mrow[j] = f.md
    end
    md[i] = mrow
    h[#h + 1] = i == 1 and "</tr></thead>\n<tbody>\n" or "</tr>\n"
  end
  if #rows == 0 then h[#h + 1] = "</tr></thead>\n<tbody>\n" end
  h[#h + 1] = "</tbody></table></div>\n"
  return frag(table.concat(h), (md_table(md, align):gsub("\n$", "")))
end

-- f = page.figure(svg_text, caption [, {file = PATH, class = C}]) : a chart (wb.svg) with its
-- caption (text or fragment); in Markdown the caption, linking to file when given (the SVG
-- written beside it)
function M.figure(chart, caption, opts)
  local c = inline(caption)
  local file = opts and opts.file
  local chart_text = tostring(chart):gsub("^<%?xml[^>]*>%s*", "")
  return frag("<figure" .. class_attr(opts and opts.class) .. ">\n" .. chart_text .. "\n<figcaption>" .. c.html .. "</figcaption>\n</figure>\n",
    file and ("[" .. c.md .. "](" .. file .. ")") or ("*" .. c.md .. "*"))
end

-- f = page.frame(svg_text, title [, {file = PATH}]) : an interactive SVG (a flame graph, with its
-- script) embedded whole in an iframe's srcdoc, sized to its height; Markdown links to file
function M.frame(doc, title, opts)
  local height = tonumber(doc:match('<svg[^>]- height="([%d.]+)"')) or 600
  local inner = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{margin:0}</style></head><body>"
    .. doc:gsub("^<%?xml[^>]*>%s*", "") .. "</body></html>"
  local file = opts and opts.file
  return frag(string.format('<iframe title="%s" height="%d" srcdoc="%s"></iframe>\n', esc(title),
    math.floor(height + 8), esc(inner)), file and ("[" .. M.md_text(title) .. "](" .. file .. ")") or M.md_text(title))
end

-- f = page.pre(text) : preformatted text (a log, a command's output)
function M.pre(text)
  local s = tostring(text)
  local run = 2
  for r in s:gmatch("`+") do run = math.max(run, #r) end
  local fence = ("`"):rep(run + 1)
  return frag("<pre>" .. esc(s) .. "</pre>\n", fence .. "\n" .. s:gsub("\n$", "") .. "\n" .. fence)
end

-- f = page.markdown(text [, {shift = 1}]) : Markdown of the kind wb writes (wb.markdown), as a block
function M.markdown(text, opts)
  return frag(require("wb.markdown").html(text, opts), (tostring(text):gsub("\n+$", "")))
end

-- f = page.raw(html [, md]) : markup a library module made itself (for wb's own reports; a
-- recipe builds its page from the blocks above)
function M.raw(html, md) return frag(html, md or "") end

-- f = page.section(title, blocks [, {class = C}]) : a titled section of blocks (fragments or
-- text paragraphs); title text or a fragment
function M.section(title, blocks, opts)
  if M.is_fragment(blocks) then blocks = { blocks } end
  local t = inline(title)
  local h, m = {}, {}
  for i, b in ipairs(blocks) do
    local f = M.is_fragment(b) and b or M.p(b)
    h[i] = f.html
    if f.md ~= "" then m[#m + 1] = f.md end
  end
  return frag(string.format("<section%s>\n<h2>%s</h2>\n%s</section>\n", class_attr(opts and opts.class), t.html,
    table.concat(h)), "## " .. t.md .. (#m > 0 and ("\n\n" .. table.concat(m, "\n\n")) or ""))
end

-- ---- the document ----------------------------------------------------------------------------

M.CSS = [[
:root{--text:#1f2328;--muted:#59636e;--border:#d0d7de;--rule:#eaeef2;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;background:#f3f4f6;color:var(--text);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:1120px;margin:0 auto;padding:32px 24px 40px}
h1{font-size:26px;line-height:1.25;margin:0 0 8px}
h2{font-size:17px;margin:0 0 14px}
.meta{color:var(--muted);margin:2px 0;font-size:14px}
.meta span{white-space:nowrap}
.meta .sep{margin:0 4px;color:#b6bec7}
.meta b{color:var(--text);font-weight:600}
.lead{font-size:16px;margin:12px 0 0}
section{background:#fff;border:1px solid var(--border);border-radius:10px;padding:20px 24px;margin-top:20px;box-shadow:0 1px 2px rgba(31,35,40,.04)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:14px;font-variant-numeric:tabular-nums}
th,td{padding:8px 12px;border-bottom:1px solid var(--rule);vertical-align:top;white-space:nowrap}
thead th{color:var(--muted);font-size:13px;font-weight:600;text-align:left;border-bottom:2px solid var(--border)}
tbody th{font-weight:normal;text-align:left;white-space:normal;min-width:180px;overflow-wrap:anywhere;padding-left:30px;text-indent:-18px}
.r{text-align:right}
tbody tr:nth-child(even){background:var(--soft)}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:13px}
.cmd{color:var(--muted);font-size:12px;margin-top:2px;text-indent:0;word-break:break-all}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:8px}
.badge{display:inline-block;text-indent:0;font-size:11px;line-height:16px;padding:0 7px;border-radius:999px;background:#eef2f6;color:var(--muted);margin-left:6px}
.warn{color:#9a6700;margin-left:6px;cursor:help}
.faster{color:#00795a}.slower{color:#b34700}
ul{margin:0;padding:0;list-style:none}
li{padding:7px 0;border-bottom:1px solid var(--rule)}
li:last-child{border-bottom:0}
.chip{display:inline-block;min-width:104px;text-align:center;font-size:13px;font-weight:600;padding:1px 10px;border-radius:999px;margin-right:10px}
.chip.faster{background:#e3f6ef}.chip.slower{background:#fdece3}.chip.same{background:#eef2f6;color:var(--muted)}
table.compare td:last-child{white-space:normal}
tr.regression td:nth-child(4){color:#b34700}tr.improvement td:nth-child(4){color:#00795a}
section.warnings{background:#fffaeb;border-color:#eed9a2}
section.warnings li{border-color:#f3e6c2}
figure{margin:0;overflow-x:auto}
figure svg{display:block;width:100%;min-width:600px;height:auto}
figcaption{color:var(--muted);font-size:13px;margin-top:10px}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:24px}
@media print{body{background:#fff}section{box-shadow:none;break-inside:avoid}}
]]

local Doc = {}
Doc.__index = Doc

-- doc = page.document{title, meta = {line, ...}, lead, blocks = {...}, footer, css, generator} :
-- a page; each meta line is a list of items (text or fragments) shown separated by dots; lead
-- (text or a fragment) a paragraph under the title; blocks sections (page.section) or other blocks; css added to the
-- kit's style sheet; generator the <meta name="generator"> content
function M.document(o)
  if type(o) ~= "table" or o.title == nil then error("page.document: a title is needed", 2) end
  local d = setmetatable({ title = o.title, meta = o.meta or {}, lead = o.lead, blocks = {}, footer = o.footer,
    css = o.css, generator = o.generator }, Doc)
  for _, b in ipairs(o.blocks or {}) do d:add(b) end
  return d
end

-- doc:add(block) : appends a block (a fragment, or a text paragraph); returns doc
function Doc:add(b)
  if b ~= nil then self.blocks[#self.blocks + 1] = M.is_fragment(b) and b or M.p(b) end
  return self
end

local function meta_html(items)
  if #items == 0 then return "" end
  local h = {}
  for i, v in ipairs(items) do h[i] = inline(v).html end
  return '<p class="meta"><span>' .. table.concat(h, '</span> <span class="sep">·</span> <span>') .. "</span></p>\n"
end

-- text = page.html(doc) : the whole HTML document
function M.html(d)
  local title = inline(d.title)
  local out = {
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
    d.generator and ('<meta name="generator" content="' .. esc(d.generator) .. '">\n') or "",
    "<title>", esc(d.title), "</title>\n<style>\n", M.CSS, d.css or "", "</style>\n</head>\n<body>\n<main>\n",
    "<header>\n<h1>", title.html, "</h1>\n",
  }
  for _, items in ipairs(d.meta) do out[#out + 1] = meta_html(items) end
  if d.lead then out[#out + 1] = M.p(d.lead, { class = "lead" }).html end
  out[#out + 1] = "</header>\n"
  for _, b in ipairs(d.blocks) do out[#out + 1] = b.html end
  if d.footer then out[#out + 1] = "<footer>" .. inline(d.footer).html .. "</footer>\n" end
  out[#out + 1] = "</main>\n</body>\n</html>\n"
  return table.concat(out)
end

-- text = page.md(doc) : the document as Markdown (title, meta lines, lead, blocks), ending in "\n"
function M.md(d)
  local out = { "# " .. inline(d.title).md }
  local meta = {}
  for _, items in ipairs(d.meta) do
    local m = {}
    for i, v in ipairs(items) do m[i] = inline(v).md end
    if #m > 0 then meta[#meta + 1] = table.concat(m, " · ") end
  end
  if #meta > 0 then out[#out + 1] = table.concat(meta, "\n") end
  if d.lead then out[#out + 1] = inline(d.lead).md end
  for _, b in ipairs(d.blocks) do
    if b.md ~= "" then out[#out + 1] = b.md end
  end
  return table.concat(out, "\n\n") .. "\n"
end

Doc.html, Doc.md = M.html, M.md

-- paths = doc:write(c, base [, {md = true}]) : writes base.html (with md: base.md too) into the
-- campaign c's run directory (c:write: atomic, redacted); returns the paths written
function Doc:write(c, base, opts)
  local paths = { c:write(base .. ".html", M.html(self)) }
  if opts and opts.md then paths[#paths + 1] = c:write(base .. ".md", M.md(self)) end
  return paths
end

return M

-- The Markdown wb itself writes (lua/wb/report.lua: headings, paragraphs, `-` and `1.` lists,
-- pipe tables with an alignment row, `code`, **bold**, backslash escapes), turned into HTML for
-- the reports. Not a general Markdown parser: anything else is kept as text, escaped.
--
--   html = markdown.html(text [, {shift = 1}])  headings moved down by `shift` levels (# -> h2)
local M = {}

local function esc(s)
  return (s:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

-- Inline markup of one line: code spans (any fence length), **bold**, backslash escapes.
local function inline(s)
  local out, i = {}, 1
  while i <= #s do
    local fence = s:match("^`+", i)
    local close = fence and s:find(fence, i + #fence, true)
    if fence and close then
      local code = s:sub(i + #fence, close - 1):gsub("^ (.*) $", "%1")
      out[#out + 1] = "<code>" .. esc(code) .. "</code>"
      i = close + #fence
    elseif s:sub(i, i + 1) == "**" and s:find("**", i + 2, true) then
      local e = s:find("**", i + 2, true)
      out[#out + 1] = "<b>" .. inline(s:sub(i + 2, e - 1)) .. "</b>"
      i = e + 2
    elseif s:sub(i, i) == "\\" and s:sub(i + 1, i + 1):match("%p") then
      out[#out + 1] = esc(s:sub(i + 1, i + 1))
      i = i + 2
    else
      local j = s:find("[`*\\]", i + 1) or #s + 1
      out[#out + 1] = esc(s:sub(i, j - 1))
      i = j
    end
  end
  return table.concat(out)
end

-- The cells of a table row: split at pipes that are not escaped (`\|`) and not in code spans.
local function cells(line)
  local body = line:match("^%s*|(.*)|%s*$") or line
  local out, cur, i, in_code = {}, {}, 1, false
  while i <= #body do
    local ch = body:sub(i, i)
    if ch == "\\" and body:sub(i + 1, i + 1) == "|" then
      cur[#cur + 1] = in_code and "|" or "\\|"
      i = i + 2
    else
      if ch == "`" then in_code = not in_code end
      if ch == "|" and not in_code then
        out[#out + 1] = table.concat(cur):match("^%s*(.-)%s*$")
        cur = {}
      else
        cur[#cur + 1] = ch
      end
      i = i + 1
    end
  end
  out[#out + 1] = table.concat(cur):match("^%s*(.-)%s*$")
  return out
end

local function is_rule(line)
  return line:match("^%s*|[%s:|%-]+|%s*$") ~= nil and line:find("-", 1, true) ~= nil
end

local function table_html(lines)
  local head, align = cells(lines[1]), {}
  for j, c in ipairs(cells(lines[2])) do
    align[j] = (c:match("^:.*:$") and "center") or (c:match(":$") and "right") or nil
  end
  local function row(list, tag)
    local out = {}
    for j, c in ipairs(list) do
      local style = align[j] and (' style="text-align:' .. align[j] .. '"') or ""
      out[j] = "<" .. tag .. style .. ">" .. inline(c) .. "</" .. tag .. ">"
    end
    return "<tr>" .. table.concat(out) .. "</tr>\n"
  end
  local out = { "<table>\n<thead>", row(head, "th"), "</thead>\n<tbody>\n" }
  for k = 3, #lines do out[#out + 1] = row(cells(lines[k]), "td") end
  out[#out + 1] = "</tbody>\n</table>\n"
  return table.concat(out)
end

function M.html(text, opts)
  local shift = opts and opts.shift or 0
  local lines = {}
  for l in (text .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = l end
  local out, i = {}, 1
  while i <= #lines do
    local line = lines[i]
    local hashes, title = line:match("^(#+)%s+(.*)$")
    if hashes then
      local level = math.min(#hashes + shift, 6)
      out[#out + 1] = string.format("<h%d>%s</h%d>\n", level, inline(title), level)
      i = i + 1
    elseif line:match("^%s*|") and lines[i + 1] and is_rule(lines[i + 1]) then
      local block = {}
      while lines[i] and lines[i]:match("^%s*|") do
        block[#block + 1] = lines[i]
        i = i + 1
      end
      out[#out + 1] = table_html(block)
    elseif line:match("^%- ") or line:match("^%d+%. ") then
      local ordered = line:match("^%d+%. ") ~= nil
      local items = {}
      while lines[i] and (ordered and lines[i]:match("^%d+%. ") or not ordered and lines[i]:match("^%- ")) do
        items[#items + 1] = "<li>" .. inline(lines[i]:gsub(ordered and "^%d+%. " or "^%- ", "", 1)) .. "</li>\n"
        i = i + 1
      end
      local tag = ordered and "ol" or "ul"
      out[#out + 1] = "<" .. tag .. ">\n" .. table.concat(items) .. "</" .. tag .. ">\n"
    elseif line:match("%S") then
      local para = { inline(line) }
      i = i + 1
      while lines[i] and lines[i]:match("%S") and not lines[i]:match("^#+%s") and not lines[i]:match("^%s*|")
          and not lines[i]:match("^%- ") and not lines[i]:match("^%d+%. ") do
        para[#para + 1] = inline(lines[i])
        i = i + 1
      end
      out[#out + 1] = "<p>" .. table.concat(para, "\n") .. "</p>\n"
    else
      i = i + 1
    end
  end
  return table.concat(out)
end

return M

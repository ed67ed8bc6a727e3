-- The command-line override grammar (DESIGN §4), independent of any config:
--   key=value   +key=value (add)   ++key=value (add or replace)   ~key  ~key=value (delete)
-- Keys are dotted paths (`tool.trials`) or config group paths (`machine`, `machine/sub`).
-- Values are YAML-like flow values: null, true/false, integers, floats, strings (plain, or quoted
-- with '...' / "..." to keep commas, brackets and spaces), lists [a, [b, c]], mappings {k: v};
-- `${...}` interpolations stay inside plain strings. Commas at the top level make a sweep
-- (`tool.threads=1,2,4`), the values of a multirun.
local core = require "wb.core"
local errors = require "wb.errors"
local util = require "wb.util"

local M = {}

local null = core.null

-- An override as an error message shows it: a long one cut, so that the message stays one line
-- a reader can take in.
function M.shown(text)
  if #text <= 120 then return text end
  return text:sub(1, 100) .. "... (" .. #text .. " bytes)"
end

local function fail(text, msg) errors.raise(2, "override '" .. M.shown(text) .. "': " .. msg, 0) end

-- v = override.scalar(raw) : a plain (unquoted) scalar typed as YAML's core schema does:
-- null, boolean, integer, float, else the string itself
function M.scalar(raw)
  local low = raw:lower()
  if low == "null" or raw == "~" then return null end
  if low == "true" then return true end
  if low == "false" then return false end
  if raw:match("^[-+]?%d+$") or raw:match("^[-+]?%d[%d_]*%d$") then
    local n = tonumber((raw:gsub("_", "")))
    return math.tointeger(n) or n
  end
  local mant = raw:match("^[-+]?(%d*%.?%d*)[eE][-+]?%d+$") or raw:match("^[-+]?(%d*%.%d*)$")
  if mant and mant:find("%d") then return tonumber(raw) end
  local sign, word = raw:match("^([-+]?)%.?(%a+)$")
  if word then
    word = word:lower()
    if word == "inf" then return sign == "-" and -math.huge or math.huge end
    if word == "nan" and sign == "" then return 0 / 0 end
  end
  return raw
end

-- ---- the value parser ------------------------------------------------------------------

-- Parser state p: {text = the override (for messages), s = the value string, pos}.
local function skip_space(p)
  p.pos = p.s:find("[^ \t]", p.pos) or #p.s + 1
end

local function peek(p) return p.s:sub(p.pos, p.pos) end

local parse_element

-- Reads a `${...}` (nested braces allowed) starting at p.pos; returns its text.
local function read_interpolation(p)
  local depth, i = 0, p.pos
  while i <= #p.s do
    local c = p.s:sub(i, i)
    if c == "{" then
      depth = depth + 1
    elseif c == "}" then
      depth = depth - 1
      if depth == 0 then
        local text = p.s:sub(p.pos, i)
        p.pos = i + 1
        return text
      end
    end
    i = i + 1
  end
  fail(p.text, "malformed interpolation: missing '}'")
end

-- s without its trailing blanks, except one that a backslash escapes.
local function trim_end(s)
  local body = s:gsub("[ \t]+$", "")
  if #body < #s and #body:match("\\*$") % 2 == 1 then return s:sub(1, #body + 1) end
  return body
end

-- A plain scalar: runs to the next , [ ] { } (or : for mapping keys) outside `${...}`;
-- `\` escapes the next character, which also makes the value a string.
local function parse_plain(p, stops)
  local buf, escaped, kept = {}, false, 0
  while p.pos <= #p.s do
    local c = peek(p)
    if c == "\\" and p.pos < #p.s then
      local nxt = p.s:sub(p.pos + 1, p.pos + 1)
      if nxt == "$" then
        buf[#buf + 1] = "\\"
        p.pos = p.pos + 1
      else
        buf[#buf + 1] = nxt
        escaped, kept = true, #buf
        p.pos = p.pos + 2
      end
    elseif c == "$" and p.s:sub(p.pos + 1, p.pos + 1) == "{" then
      buf[#buf + 1] = read_interpolation(p)
    elseif stops:find(c, 1, true) then
      break
    else
      buf[#buf + 1] = c
      p.pos = p.pos + 1
    end
  end
  local n = #buf
  while n > kept and (buf[n] == " " or buf[n] == "\t") do n = n - 1 end
  local raw = table.concat(buf, "", 1, n)
  if escaped then return raw, raw end
  return M.scalar(raw), raw
end

local function parse_quoted(p)
  local q = peek(p)
  local buf, i = {}, p.pos + 1
  while i <= #p.s do
    local c = p.s:sub(i, i)
    if c == "\\" and i < #p.s then
      buf[#buf + 1] = p.s:sub(i + 1, i + 1)
      i = i + 2
    elseif c == q then
      p.pos = i + 1
      return table.concat(buf)
    else
      buf[#buf + 1] = c
      i = i + 1
    end
  end
  fail(p.text, "malformed value: unterminated quote " .. q)
end

local function expect_separator(p, closer)
  skip_space(p)
  local c = peek(p)
  if c == "," or c == closer or (c == "" and closer == "") then return end
  if c == "" then
    fail(p.text, (closer == "]" and "malformed list" or "malformed mapping") .. ": missing '" .. closer .. "'")
  end
  fail(p.text, "malformed value: unexpected '" .. c .. "' at position " .. p.pos .. " (quote the value?)")
end

-- Parses comma-separated elements up to closer ("]", "}" or "" for the end of the value).
-- each(p) parses one element and returns it; returns the list of results.
local function parse_sequence(p, closer, each)
  local out = {}
  skip_space(p)
  if closer ~= "" and peek(p) == closer then
    p.pos = p.pos + 1
    return out
  end
  while true do
    out[#out + 1] = each(p)
    expect_separator(p, closer)
    local c = peek(p)
    p.pos = p.pos + 1
    if c ~= "," then return out end
    skip_space(p)
    if closer ~= "" and peek(p) == closer then
      fail(p.text, "malformed value: empty element before '" .. closer .. "'")
    end
  end
end

local function parse_list(p)
  p.pos = p.pos + 1
  local list = core.array()
  for i, v in ipairs(parse_sequence(p, "]", function(q) return (parse_element(q, ",]")) end)) do
    list[i] = v
  end
  return list
end

local function parse_mapping(p)
  p.pos = p.pos + 1
  local map = core.ordered()
  parse_sequence(p, "}", function(q)
    local key
    if peek(q) == "'" or peek(q) == '"' then
      key = parse_quoted(q)
    else
      local _, raw = parse_plain(q, ",:[]{}")
      key = raw
    end
    skip_space(q)
    if key == "" or peek(q) ~= ":" then fail(q.text, "malformed mapping: expected 'key: value'") end
    q.pos = q.pos + 1
    map[key] = parse_element(q, ",}")
  end)
  return map
end

-- Parses one element at p.pos; returns the value and its source text.
function parse_element(p, stops)
  skip_space(p)
  local start = p.pos
  local c = peek(p)
  local v
  if c == "" or c == "," then
    fail(p.text, "malformed value: empty element")
  elseif c == "[" then
    v = parse_list(p)
  elseif c == "{" then
    v = parse_mapping(p)
  elseif c == "'" or c == '"' then
    v = parse_quoted(p)
  elseif c == "]" or c == "}" then
    fail(p.text, "malformed value: unexpected '" .. c .. "'")
  else
    v = parse_plain(p, stops)
  end
  return v, trim_end(p.s:sub(start, p.pos - 1))
end

-- elements = override.parse_values(value_text [, override_text]) : the {value, raw} elements
-- of a value (several for a sweep)
function M.parse_values(value_text, override_text)
  local p = { s = value_text, pos = 1, text = override_text or value_text }
  if value_text:match("^[ \t]*$") then return { { value = "", raw = "" } } end
  return parse_sequence(p, "", function(q)
    local v, raw = parse_element(q, ",[]{}")
    return { value = v, raw = raw }
  end)
end

-- ---- overrides ---------------------------------------------------------------------------

local KEY_SEGMENT = "^[%a_][%w_%-]*$"

-- The most dotted (or slashed) parts a key may have: configurations are a few levels deep, and a
-- deeper key would make documents no JSON or YAML reader takes back.
M.MAX_KEY_DEPTH = 32

local function valid_key(key)
  if key:find("/", 1, true) then
    for seg in (key .. "/"):gmatch("(.-)/") do
      if not seg:match(KEY_SEGMENT) then return false end
    end
    return true
  end
  for seg in (key .. "."):gmatch("(.-)%.") do
    if not seg:match(KEY_SEGMENT) then return false end
  end
  return true
end

-- msg = override.key_problem(key) : why key is not a valid key ("bad key 'tool.trіals': 'і' is
-- not an ASCII character"), or nil when it is one
function M.key_problem(key)
  local depth = select(2, key:gsub("[./]", "")) + 1
  if depth > M.MAX_KEY_DEPTH then
    return string.format("bad key '%s': %d levels deep, at most %d", M.shown(key), depth, M.MAX_KEY_DEPTH)
  end
  if valid_key(key) then return nil end
  local msg = "bad key '" .. M.shown(key) .. "'"
  local other = key:match("[\192-\255][\128-\191]*") or key:match("[\128-\255]")
  if other then return msg .. ": '" .. other .. "' is not an ASCII character" end
  if key:match("^%d") or key:match("[./]%d") then return msg .. ": a key starts with a letter or '_'" end
  return msg
end

-- o = override.parse(text) : {text, op = "set"|"add"|"force"|"delete", key, path = {segments},
-- prefix, has_value, value_text, value, raw, values = {{value, raw}...} (a sweep when #values > 1)}
function M.parse(text)
  if type(text) ~= "string" then error("override: expected a string, got " .. type(text), 2) end
  local prefix, rest = text:match("^(%+%+)(.*)$")
  if not prefix then prefix, rest = text:match("^([%+~]?)(.*)$") end
  local key, value_text = rest:match("^([^=]*)=(.*)$")
  if not key then
    if prefix ~= "~" then fail(text, "expected key=value") end
    key = rest
  end
  key = key:match("^%s*(.-)%s*$")
  if key == "" then fail(text, "missing key before '='") end
  if M.key_problem(key) then fail(text, M.key_problem(key)) end
  local o = {
    text = text, key = key, prefix = prefix, value_text = value_text, has_value = value_text ~= nil,
    op = ({ [""] = "set", ["+"] = "add", ["++"] = "force", ["~"] = "delete" })[prefix],
  }
  o.path = {}
  for seg in (key .. "."):gmatch("(.-)%.") do o.path[#o.path + 1] = seg end
  if o.has_value then
    o.values = M.parse_values(value_text, text)
    o.value, o.raw = o.values[1].value, o.values[1].raw
  end
  return o
end

-- ---- formatting --------------------------------------------------------------------------

-- yes = override.is_list(v) : v is a wb.array list (util.is_list)
local is_list = util.is_list
M.is_list = is_list

-- yes = override.is_sequence(v) : v is a wb.array list, or a plain table (no metatable) whose
-- keys are exactly 1..#v, #v > 0
function M.is_sequence(t)
  if type(t) ~= "table" then return false end
  if is_list(t) then return true end
  if getmetatable(t) ~= nil or t[1] == nil then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end

-- keys = override.keys(t) : the keys of a mapping, an ordered table's in their order, a plain
-- table's sorted (util.keys)
M.keys = util.keys

local function plain_safe(s)
  return s ~= "" and not s:find("^[ \t]") and not s:find("[ \t]$") and not s:find("[,:%[%]{}'\"#]")
      and type(M.scalar(s)) == "string"
end

-- text = override.format(v) : v as one line of flow YAML: 5, 2.5, true, null, abc, 'a, b',
-- [1, 2], {k: v}
function M.format(v)
  if v == null then return "null" end
  local t = type(v)
  if t == "string" then
    if plain_safe(v) then return v end
    return "'" .. v:gsub("'", "''") .. "'"
  elseif math.type(v) == "float" then
    if v ~= v then return ".nan" end
    if v == math.huge then return ".inf" end
    if v == -math.huge then return "-.inf" end
    return tostring(v)
  elseif t == "table" then
    local parts = {}
    if is_list(v) or (next(v) ~= nil and #v > 0 and not core.ordered_keys(v)) then
      for i, x in ipairs(v) do parts[i] = M.format(x) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    for i, k in ipairs(M.keys(v)) do parts[i] = M.format(k) .. ": " .. M.format(v[k]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

-- k = override.kind(v) : null, boolean, integer, float, string, list or mapping
function M.kind(v)
  if v == null then return "null" end
  local t = type(v)
  if t == "number" then return math.type(v) end
  if t == "table" then return is_list(v) and "list" or "mapping" end
  return t
end

-- The values each override sweeps (a list of override texts; one for an override that does not
-- sweep), and whether any sweeps.
local function sweep_choices(overrides, is_list)
  local choices, any = {}, false
  for i, text in ipairs(overrides) do
    local o = M.parse(text)
    if o.values and #o.values > 1 and not (is_list and is_list(o)) then
      any = true
      local lhs = text:sub(1, #text - #o.value_text)
      choices[i] = {}
      for j, e in ipairs(o.values) do choices[i][j] = lhs .. e.raw end
    else
      choices[i] = { text }
    end
  end
  return choices, any
end

-- n, factors = override.multirun_count(overrides [, is_list]) : the number of runs multirun
-- would make (without making them) and the number of values of each sweeping override; nil when
-- no override has several values
function M.multirun_count(overrides, is_list)
  local choices, any = sweep_choices(overrides, is_list)
  if not any then return nil end
  local n, factors = 1, {}
  for _, options in ipairs(choices) do
    n = n * #options
    if #options > 1 then factors[#factors + 1] = #options end
  end
  return n, factors
end

-- runs = override.multirun(overrides [, is_list]) : nil when no override has several values, else
-- the cartesian product (the first sweeping override varies slowest) as lists of override texts;
-- is_list(o) true keeps o's values together (a list value, not a sweep)
function M.multirun(overrides, is_list)
  local choices, any = sweep_choices(overrides, is_list)
  if not any then return nil end
  local runs = { {} }
  for _, options in ipairs(choices) do
    local nxt = {}
    for _, run in ipairs(runs) do
      for _, opt in ipairs(options) do
        local r = table.move(run, 1, #run, 1, {})
        r[#r + 1] = opt
        nxt[#nxt + 1] = r
      end
    end
    runs = nxt
  end
  return runs
end

return M

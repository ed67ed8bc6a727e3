-- Small helpers shared by the Lua library: quoting, word splitting, hashing, secrets, suggestions,
-- paths, table keys and lists, number formatting, and opt(v) (nil for wb.null, for optional
-- config values).
local core = require "wb.core"

local M = {}

-- s = util.shell_quote(word) : a word the POSIX shell reads back unchanged
function M.shell_quote(s)
  s = tostring(s)
  if s ~= "" and not s:find("[^%w%-%+%./_=:,@%%]") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- s = util.shell_join(argv) : argv shell-quoted and joined by spaces (for display)
function M.shell_join(argv)
  local out = {}
  for i, a in ipairs(argv) do out[i] = M.shell_quote(a) end
  return table.concat(out, " ")
end

-- argv, err = util.split_words(s) : splits a command string into words as a POSIX shell does
-- (single quotes, double quotes with \ escapes, backslash outside quotes); no expansion.
function M.split_words(s)
  local words, cur, i, n, have = {}, {}, 1, #s, false
  while i <= n do
    local c = s:sub(i, i)
    if c:match("%s") then
      if have then words[#words + 1], cur, have = table.concat(cur), {}, false end
    elseif c == "'" then
      local j = s:find("'", i + 1, true)
      if not j then return nil, "unterminated single quote" end
      cur[#cur + 1], have, i = s:sub(i + 1, j - 1), true, j
    elseif c == '"' then
      have = true
      i = i + 1
      while true do
        if i > n then return nil, "unterminated double quote" end
        local d = s:sub(i, i)
        if d == '"' then break end
        if d == "\\" and i < n and s:sub(i + 1, i + 1):match('["\\$`\n]') then
          i = i + 1
          d = s:sub(i, i)
        end
        cur[#cur + 1] = d
        i = i + 1
      end
    elseif c == "\\" then
      if i == n then return nil, "trailing backslash" end
      i = i + 1
      cur[#cur + 1], have = s:sub(i, i), true
    else
      cur[#cur + 1], have = c, true
    end
    i = i + 1
  end
  if have then words[#words + 1] = table.concat(cur) end
  return words
end

-- hex = util.hash(s) : FNV-1a 64-bit of s as 16 hex digits (identity, not security)
function M.hash(s)
  local h = -3750763034362895579 -- 0xcbf29ce484222325
  for i = 1, #s do
    h = h ~ s:byte(i)
    h = h * 1099511628211
  end
  return string.format("%016x", h)
end

-- Words that make a name secret (case-insensitive, anywhere in the name): SECRET_WORDS for
-- environment variables, SECRET_KEYS for config keys (narrower: a config key like sort_key is not
-- a secret). Both are extended by the comma-separated words of $WB_SECRET_NAMES; recipes may
-- add to the tables.
M.SECRET_WORDS = { "TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL" }
M.SECRET_KEYS = { "password", "passwd", "token", "secret", "api_key", "apikey", "access_key",
  "private_key", "credential" }

local function extra_words()
  local out = {}
  for w in (os.getenv("WB_SECRET_NAMES") or ""):gmatch("[^,%s]+") do out[#out + 1] = w end
  return out
end

local function matches(name, words)
  local low = name:lower()
  for _, w in ipairs(words) do
    if low:find(w:lower(), 1, true) then return true end
  end
  for _, w in ipairs(extra_words()) do
    if low:find(w:lower(), 1, true) then return true end
  end
  return false
end

-- yes = util.is_secret_name(name) : environment variable names whose values must not reach disk
function M.is_secret_name(name) return matches(name, M.SECRET_WORDS) end

-- yes = util.is_secret_key(name) : config keys (the last part of a dotted key) whose values must
-- not reach disk
function M.is_secret_key(name) return matches(name, M.SECRET_KEYS) end

-- values = util.config_secret_values(cfg) : the values (4 bytes or longer, as strings) of the
-- secret-named keys anywhere in the config tree cfg, and every string inside them
function M.config_secret_values(cfg)
  local out, seen = {}, {}
  local function add(v)
    local s = (type(v) == "string" or type(v) == "number") and tostring(v)
    if s and #s >= 4 and not seen[s] then
      seen[s] = true
      out[#out + 1] = s
    end
  end
  local function walk(t, secret, depth)
    if depth > 100 then return end
    for k, v in pairs(t) do
      local s = secret or (type(k) == "string" and M.is_secret_key(k))
      if type(v) == "table" then walk(v, s, depth + 1) elseif s then add(v) end
    end
  end
  if type(cfg) == "table" then walk(cfg, false, 0) end
  return out
end

-- values = util.secret_values([env]) : the values of secret-named variables in env (a table) or
-- in wb's environment; values shorter than 4 bytes are ignored (they would redact noise)
function M.secret_values(env)
  local out, seen = {}, {}
  local function add(name, value)
    if M.is_secret_name(name) and #value >= 4 and not seen[value] then
      seen[value] = true
      out[#out + 1] = value
    end
  end
  if env then
    for k, v in pairs(env) do add(tostring(k), tostring(v)) end
  else
    local p = io.open("/proc/self/environ", "rb")
    if p then
      for entry in p:read("a"):gmatch("([^%z]+)") do
        local k, v = entry:match("^([^=]+)=(.*)$")
        if k then add(k, v) end
      end
      p:close()
    end
  end
  table.sort(out, function(a, b) return #a > #b end)
  return out
end

-- text = util.redact(text, values) : every occurrence of each value replaced by "[REDACTED]"
function M.redact(text, values)
  for _, v in ipairs(values) do
    local start = 1
    local parts = {}
    while true do
      local i, j = text:find(v, start, true)
      if not i then break end
      parts[#parts + 1] = text:sub(start, i - 1)
      parts[#parts + 1] = "[REDACTED]"
      start = j + 1
    end
    if #parts > 0 then
      parts[#parts + 1] = text:sub(start)
      text = table.concat(parts)
    end
  end
  return text
end

-- forms = util.secret_forms(values) : each value as wb's writers may spell it, so that redaction
-- finds it: itself, its JSON string escape (YAML's double-quoted form too), its YAML plain or
-- quoted scalar, its HTML entities (of the value and of its JSON form: JSON inside a page), its
-- CSV field, its Markdown text and its shell single-quoted form. Distinct, longest first.
function M.secret_forms(values)
  local json, yaml, page = require "wb.json", require "wb.yaml", require "wb.page"
  local function html(x, apos)
    return (x:gsub(apos and "[&<>\"']" or "[&<>\"]",
      { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }))
  end
  local out, seen = {}, {}
  for _, v in ipairs(values) do
    local j = json.encode(v):sub(2, -2)
    local y = yaml.dump(v):gsub("\n$", "")
    y = y:match('^"(.*)"$') or y:match("^'(.*)'$") or y
    for _, f in ipairs { v, j, y, html(v, true), html(v, false), html(j, true), html(j, false),
      (v:gsub('"', '""')), page.md_text(v), (v:gsub("'", "'\\''")) } do
      if #f >= 4 and not seen[f] then
        seen[f] = true
        out[#out + 1] = f
      end
    end
  end
  table.sort(out, function(a, b) return #a > #b end)
  return out
end

-- list = util.redact_overrides(overrides) : a copy with the value of each override of a
-- secret-named key (util.is_secret_key of any dotted part) replaced by [REDACTED], as typed: a
-- quoted or escaped value differs from the parsed one that redaction looks for
function M.redact_overrides(overrides)
  local out = {}
  for i, text in ipairs(overrides) do
    local key = text:match("^[%+~]?%+?([^=]+)=")
    local secret = false
    for part in (key or ""):gmatch("[^%.]+") do secret = secret or M.is_secret_key(part) end
    out[i] = secret and text:match("^[^=]+=") .. "[REDACTED]" or text
  end
  return out
end

-- keys = util.redacted_keys(overrides) : the keys of the overrides util.redact_overrides left
-- without their value ("db.password"), in order; {} when none
function M.redacted_keys(overrides)
  local keys = {}
  for _, text in ipairs(overrides) do
    local key = tostring(text):match("^[%+~]?%+?([^=]+)=%[REDACTED%]$")
    if key then keys[#keys + 1] = key end
  end
  return keys
end

-- copy = util.deep_copy(v) : tables copied recursively (metatables kept: ordered/array marks)
function M.deep_copy(v, seen)
  if type(v) ~= "table" then return v end
  seen = seen or {}
  if seen[v] then return seen[v] end
  local out = setmetatable({}, getmetatable(v)) -- pairs/__newindex keep an ordered table's order
  seen[v] = out
  for k, x in pairs(v) do out[k] = M.deep_copy(x, seen) end
  return out
end

-- yes = util.deep_equal(a, b) : same values, recursively (metatables ignored)
function M.deep_equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do if not M.deep_equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- yes = util.is_list(v) : v is a wb.array list
function M.is_list(v) return getmetatable(v) == getmetatable(core.array()) end

-- keys = util.keys(t) : the keys of a mapping, an ordered table's in their order, a plain
-- table's sorted by tostring
function M.keys(t)
  local keys = core.ordered_keys(t)
  if keys then return keys end
  keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

-- v = util.opt(v) : nil for wb.null (an optional config value left unset), else v
function M.opt(v)
  if v == core.null then return nil end
  return v
end

-- keys = util.sorted_keys(t)
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  return keys
end

-- Edit distance, for "did you mean" suggestions.
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

-- near = util.suggest(word, candidates) : up to 3 candidates close to word ("did you mean"),
-- those starting with word first, then by edit distance
function M.suggest(word, candidates)
  local scored = {}
  for _, c in ipairs(candidates) do
    local d = distance(word, c)
    local prefix = #word >= 2 and c:sub(1, #word) == word
    if prefix or d <= math.max(2, #word // 3) then scored[#scored + 1] = { c, prefix and -1 or d } end
  end
  table.sort(scored, function(x, y) return x[2] < y[2] or (x[2] == y[2] and x[1] < y[1]) end)
  local out = {}
  for i = 1, math.min(3, #scored) do out[i] = scored[i][1] end
  return out
end

-- name = util.basename(path); dir = util.dirname(path); path = util.join(a, b, ...)
function M.basename(path) return (path:gsub("/+$", ""):match("([^/]*)$")) end

function M.dirname(path)
  local d = path:gsub("/+$", ""):match("^(.*)/[^/]*$")
  if d == nil then return "." end
  return d == "" and "/" or d
end

function M.join(...)
  local parts = { ... }
  local out = parts[1]
  for i = 2, #parts do
    local p = parts[i]
    if p:sub(1, 1) == "/" then out = p else out = out:gsub("/+$", "") .. "/" .. p end
  end
  return out
end

-- s = util.safe_name(s) : a string usable as one path component
function M.safe_name(s)
  s = tostring(s):gsub("[^%w%-%._=,+]", "_")
  if s == "" or s == "." or s == ".." then s = "_" end
  return s
end

-- s = util.thousands(n) : an integer with thousands separators ("-1,234,567"); any other number
-- as tostring shows it (the caller rounds)
function M.thousands(n)
  local s = tostring(math.tointeger(n) or n)
  local sign, digits = s:match("^(-?)(%d+)$")
  if not digits then return s end
  return sign .. digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
end

-- s = util.format_seconds(x) : "12.3 ms", "1.234 s", "2m 03s"
function M.format_seconds(x)
  if x == nil then return "-" end
  if x < 1e-3 then return string.format("%.1f µs", x * 1e6) end
  if x < 1 then return string.format("%.1f ms", x * 1e3) end
  if x < 120 then return string.format("%.3f s", x) end
  return string.format("%.0fm %02.0fs", math.floor(x / 60), math.floor(x % 60)) -- not %d: x may be past 2^63, inf or nan
end

-- s = util.format_bytes(n) : "812 B", "12.4 KiB", "201.3 MiB", "2.10 GiB" (negative n too)
function M.format_bytes(n)
  local a = math.abs(n)
  if a < 1024 then return string.format("%s B", M.thousands(math.floor(n + 0.5))) end
  if a < 1024 ^ 2 then return string.format("%.1f KiB", n / 1024) end
  if a < 1024 ^ 3 then return string.format("%.1f MiB", n / 1024 ^ 2) end
  return string.format("%.2f GiB", n / 1024 ^ 3)
end

return M

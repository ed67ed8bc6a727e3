-- How `wb repl` (core/repl.c) shows values and completes names.
-- format(...) turns the results of a statement into one line: strings raw, tables as a short
-- one-level preview in a stable key order, other values with tostring, separated by tabs.
-- complete(word, before) lists the Lua names that complete `word`.
local core = require "wb.core"

local M = {}

local MAX_ITEMS = 20      -- entries shown in a table preview
local MAX_SORTED = 10000 -- keys ordered for a preview; a larger table shows some of the others
local MAX_STRING = 60    -- bytes of a string shown inside a preview

local KEYWORDS = {
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
  "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
}
local reserved = {}
for _, k in ipairs(KEYWORDS) do reserved[k] = true end

local G = _ENV
local package = package
local byte, concat, find, format, getmeta = string.byte, table.concat, string.find, string.format,
    debug.getmetatable
local gmatch, gsub, match, mtype, pack, sort, sub = string.gmatch, string.gsub, string.match,
    math.type, table.pack, table.sort, string.sub
local error, ipairs, next, pcall, rawequal, rawget, tostring, type = error, ipairs, next, pcall,
    rawequal, rawget, tostring, type

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function escape(c) return ESCAPES[c] or format("\\%03d", byte(c)) end

-- A string as a Lua literal, cut (at a UTF-8 character boundary) after MAX_STRING bytes.
local function quote(s)
  local cut = #s > MAX_STRING
  if cut then
    local n = MAX_STRING
    while n > 1 and (byte(s, n + 1) or 0) & 0xC0 == 0x80 do n = n - 1 end
    s = sub(s, 1, n)
  end
  return '"' .. gsub(s, '[%c"\\]', escape) .. '"' .. (cut and "..." or "")
end

local function has_tostring(v)
  local mt = getmeta(v)
  return mt ~= nil and rawget(mt, "__tostring") ~= nil
end

-- tostring(v) that survives a failing __tostring (an interrupt still propagates).
local function safe_tostring(v)
  local ok, s = pcall(tostring, v)
  if ok and type(s) == "string" then return s end
  if not ok and core.interrupted() then error(s, 0) end
  return "<" .. type(v) .. ">"
end

-- A value inside a preview: nested tables are not opened.
local function item(v)
  local t = type(v)
  if t == "string" then return quote(v) end
  if rawequal(v, core.null) then return "wb.null" end
  if t == "table" and not has_tostring(v) then return next(v) == nil and "{}" or "{...}" end
  return safe_tostring(v)
end

local function key_text(k)
  if type(k) == "string" and match(k, "^[%a_][%w_]*$") and not reserved[k] then return k end
  return "[" .. item(k) .. "]"
end

local RANK = { number = 1, string = 2, boolean = 3 }

-- Keys other than the sequence 1..seq, ordered: numbers, strings, booleans, then the rest in
-- traversal order. Also returns the number of keys in t.
local function sorted_keys(t, seq)
  local keys, pos, total = {}, {}, 0
  for k in next, t do
    total = total + 1
    if not (mtype(k) == "integer" and k >= 1 and k <= seq) and #keys < MAX_SORTED then
      keys[#keys + 1] = k
      pos[k] = #keys
    end
  end
  sort(keys, function(a, b)
    local ra, rb = RANK[type(a)] or 4, RANK[type(b)] or 4
    if ra ~= rb then return ra < rb end
    if ra <= 2 then return a < b end
    if ra == 3 then return not a and b end
    return pos[a] < pos[b]
  end)
  return keys, total
end

-- {"x", "y", a = 1, b = {...}, [true] = 2, ... (N more)}; wb.ordered tables in insertion order.
local function preview(t)
  local keys, total, seq = core.ordered_keys(t), 0, 0
  if keys then
    total = #keys
  else
    while rawget(t, seq + 1) ~= nil do seq = seq + 1 end
    keys, total = sorted_keys(t, seq)
  end
  local parts = {}
  for i = 1, seq do
    if #parts == MAX_ITEMS then break end
    parts[#parts + 1] = item(rawget(t, i))
  end
  for _, k in ipairs(keys) do
    if #parts == MAX_ITEMS then break end
    parts[#parts + 1] = key_text(k) .. " = " .. item(rawget(t, k))
  end
  if total > #parts then parts[#parts + 1] = "... (" .. (total - #parts) .. " more)" end
  return "{" .. concat(parts, ", ") .. "}"
end

local function show(v)
  if type(v) == "string" then return v end
  if rawequal(v, core.null) then return "wb.null" end
  if type(v) == "table" and not has_tostring(v) then return preview(v) end
  return tostring(v)
end

-- line = format(...) : the values shown on one line, separated by tabs
function M.format(...)
  local values = pack(...)
  local out = {}
  for i = 1, values.n do out[i] = show(values[i]) end
  return concat(out, "\t")
end

-- True when `before` ends inside a quoted or long-bracket string literal.
local function in_string(before)
  local i, n = 1, #before
  while i <= n do
    local c = sub(before, i, i)
    if c == '"' or c == "'" then
      local j = i + 1
      while j <= n and sub(before, j, j) ~= c do
        if sub(before, j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      if j > n then return true end
      i = j
    elseif c == "[" and match(before, "^%[=*%[", i) then
      local level = match(before, "^%[(=*)%[", i)
      local _, close = find(before, "]" .. level .. "]", i, true)
      if not close then return true end
      i = close
    end
    i = i + 1
  end
  return false
end

-- Identifier keys of v starting with prefix, following __index tables (methods: functions only).
local function collect(v, prefix, methods, out, seen)
  for _ = 1, 8 do
    if type(v) == "table" then
      for k, x in next, v do
        if type(k) == "string" and not seen[k] and sub(k, 1, #prefix) == prefix
            and match(k, "^[%a_][%w_]*$") and (not methods or type(x) == "function") then
          seen[k] = true
          out[#out + 1] = k
        end
      end
    end
    local mt = getmeta(v)
    v = mt and rawget(mt, "__index")
    if type(v) ~= "table" then return end
  end
end

-- v[k], or nil when indexing fails.
local function field(v, k)
  local ok, x = pcall(function() return v[k] end)
  if ok then return x end
end

-- list = complete(word, before) : completions of `word` ("name", "a.b.na", "obj:me"), where
-- `before` is the line before it; nil inside a string literal (complete file names instead).
function M.complete(word, before)
  if in_string(before) then return nil end
  local path, sep, prefix = match(word, "^(.-)([.:]?)([%w_]*)$")
  if not path then return {} end
  local v = G
  if path ~= "" then
    for name in gmatch(path .. ".", "(.-)%.") do
      if not match(name, "^[%a_][%w_]*$") then return {} end
      v = field(v, name)
      if v == nil then return {} end
    end
  end
  local out, seen = {}, {}
  collect(v, prefix, sep == ":", out, seen)
  if sep == "." then -- modules not loaded yet, e.g. wb.proc
    for _, list in ipairs({ package.loaded, package.preload }) do
      for name in next, list do
        local k = type(name) == "string" and sub(name, 1, #path + 1) == path .. "." and
            sub(name, #path + 2)
        if k and not seen[k] and sub(k, 1, #prefix) == prefix and match(k, "^[%a_][%w_]*$")
            and field(v, k) ~= nil then
          seen[k] = true
          out[#out + 1] = k
        end
      end
    end
  end
  if path == "" then
    for _, k in ipairs(KEYWORDS) do
      if sub(k, 1, #prefix) == prefix and not seen[k] then out[#out + 1] = k end
    end
  end
  sort(out)
  for i = 1, #out do out[i] = path .. sep .. out[i] end
  return out
end

return M

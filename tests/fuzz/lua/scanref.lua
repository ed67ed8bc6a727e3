-- A plain-Lua reading of the wb.scan.file contract (core/scan.h, core/scan.c) for small,
-- uncompressed logs: the oracle the fuzz drivers hold the scanner's results to. Numbers are read
-- with wb.scan.number (checked against strtod by fuzz_scan_tokens), so this judges segmenting,
-- matching, tokenizing, grouping and aggregation. Sums are compared within rounding (the scanner
-- adds exact decimals); counts, minima, maxima, kept lines and medians exactly.
local F = require "fuzzlib"
local core = require "wb.core"
local scan = require "wb.scan"

local R = {}

local SUM_KINDS = { time = 1, count = 2, number = 3, all = 7 } -- SCAN_TIME | SCAN_COUNT | SCAN_BOOL
local UNIT_KIND = { s = 1, [""] = 2, bool = 4 }
local NUM = { numbers_only = true }

local function number(text)
  local x, unit = scan.number(text)
  if x == nil then return 0 end
  return UNIT_KIND[unit], x
end

local function new_agg() return { count = 0, sum = 0, abs = 0 } end

local function agg_add(a, x)
  a.count, a.sum, a.abs = a.count + 1, a.sum + x, a.abs + math.abs(x)
  if a.min == nil or x < a.min then a.min = x end
  if a.max == nil or x > a.max then a.max = x end
end

local function new_bucket(collect) return { n = 0, keys = {}, order = {}, value = new_agg(), vals = collect and {} } end

local function add_value(b, x)
  agg_add(b.value, x)
  if b.vals then b.vals[#b.vals + 1] = x end
end

local function has_word(rest, w)
  for tok in rest:gmatch("[^ \t]+") do
    if tok == w then return true end
  end
  return false
end

-- "label......   123.4ms": the label (spaces and dots trimmed) and the trailing value.
local function parse_label(rest, kinds)
  local body = rest:gsub("[ \t]+$", "")
  local v = body:match("[^ \t]*$")
  local kind, x = number(v)
  if kind & kinds == 0 then return nil end
  local label = body:sub(1, #body - #v):gsub("^[ \t]+", ""):gsub("[ \t.]+$", "")
  if label == "" or label:find("=", 1, true) then return nil end
  return label, x
end

local function wants_collect(r, name)
  if r.collect == true then return true end
  if type(r.collect) == "table" then
    for _, g in ipairs(r.collect) do
      if g == name then return true end
    end
  end
  return false
end

local function tokens(r, b, rest)
  local sum = SUM_KINDS[r.sum] or 0
  local rank = {}
  for i, k in ipairs(type(r.value) == "table" and r.value or { r.value }) do
    if rank[k] == nil then rank[k] = i end
  end
  local best, line_value
  for tok in rest:gmatch("[^ \t]+") do
    local eq = tok:find("=", 1, true)
    if eq and eq > 1 then
      local k = tok:sub(1, eq - 1)
      local kind, x = number(tok:sub(eq + 1))
      if kind ~= 0 then
        if kind & sum ~= 0 then
          if not b.keys[k] then
            b.keys[k] = new_agg()
            b.order[#b.order + 1] = k
          end
          agg_add(b.keys[k], x)
        end
        if rank[k] and (best == nil or rank[k] < best) then best, line_value = rank[k], x end
      end
    end
  end
  if best then add_value(b, line_value) end
end

local function group_bucket(res, r, name)
  if not res.groups[name] then
    res.groups[name] = new_bucket(wants_collect(r, name))
    res.gorder[#res.gorder + 1] = name
  end
  return res.groups[name]
end

local function apply(r, res, seg)
  local rest = seg:sub(#r.tag + 1)
  if r.word and not has_word(rest, r.word) then return end
  local b, label_value
  if r.group == "event" then
    local first = rest:match("^[ \t]*([^ \t]*)")
    if first:find("=", 1, true) then first = "" end
    b = group_bucket(res, r, first)
  elseif r.group == "label" then
    local label
    label, label_value = parse_label(rest, SUM_KINDS[r.sum or "number"])
    if not label then return end
    b = group_bucket(res, r, label)
  else
    b = res.whole
  end
  res.n = res.n + 1
  b.n = b.n + 1
  if r.keep == "last" or (r.keep == "first" and not b.line) then b.line = seg end
  if r.group == "label" then
    add_value(b, label_value)
  elseif r.sum or r.value then
    tokens(r, b, rest)
  end
end

-- results = R.run(rules, data) : per rule {n, whole = bucket, groups = {name = bucket}, gorder}
function R.run(rules, data)
  local out = {}
  for i, r in ipairs(rules) do
    out[i] = { n = 0, whole = new_bucket(r.group == nil and r.collect == true), groups = {}, gorder = {} }
  end
  for seg in data:gmatch("[^\r\n]*") do
    if seg ~= "" then
      for i, r in ipairs(rules) do
        if seg:sub(1, #r.tag) == r.tag then apply(r, out[i], seg) end
      end
    end
  end
  return out
end

local function check_sum(got, a, what)
  if a.abs == a.abs and a.abs < 1e300 then
    F.check(math.abs(got - a.sum) <= 1e-9 * a.abs + 1e-300, "%s: sum %.17g, expected %.17g", what, got, a.sum)
  end
end

local function check_agg(got, a, what)
  F.check(got and got.count == a.count, "%s: count %s, expected %d", what, got and got.count, a.count)
  check_sum(got.sum, a, what)
  if a.count > 0 then
    F.check(F.same(got.min, a.min, NUM) and F.same(got.max, a.max, NUM),
      "%s: min/max %.17g/%.17g, expected %.17g/%.17g", what, got.min, got.max, a.min, a.max)
  end
end

local function check_bucket(got, b, r, what)
  F.check(got.n == b.n, "%s: n %d, expected %d", what, got.n, b.n)
  F.check(got.line == b.line, "%s: kept line %q, expected %q", what, tostring(got.line), tostring(b.line))
  if r.sum and r.group ~= "label" then
    local keys = core.ordered_keys(got.keys)
    F.check(#keys == #b.order, "%s: %d keys, expected %d", what, #keys, #b.order)
    for i, k in ipairs(b.order) do
      F.check(keys[i] == k, "%s: key %d is %q, expected %q", what, i, tostring(keys[i]), k)
      check_agg(got.keys[k], b.keys[k], what .. " key " .. F.printable(k))
    end
  end
  if r.value or r.group == "label" then check_agg(got.value, b.value, what .. " value") end
  if b.vals then
    local d, v = got.dist, b.vals
    F.check(d and d.n == #v, "%s: dist of %s values, expected %d", what, d and d.n, #v)
    if #v > 0 then
      table.sort(v)
      local k = #v // 2 + 1
      local median = #v % 2 == 1 and v[k] or (v[k - 1] + v[k]) / 2
      F.check(F.same(d.min, v[1], NUM) and F.same(d.max, v[#v], NUM) and F.same(d.median, median, NUM),
        "%s: dist min/median/max %.17g/%.17g/%.17g, expected %.17g/%.17g/%.17g", what, d.min, d.median, d.max,
        v[1], median, v[#v])
      check_sum(d.mean * #v, b.value, what .. " dist mean")
    end
  else
    F.check(got.dist == nil, "%s: a dist nobody asked for", what)
  end
end

-- R.check(rules, data, res) : raises a finding where res (wb.scan.file's result) departs from
-- R.run(rules, data)
function R.check(rules, data, res)
  F.check(res.bytes == #data, "bytes %d, expected %d", res.bytes, #data)
  local _, nl = data:gsub("\n", "")
  local lines = nl + ((data ~= "" and data:sub(-1) ~= "\n") and 1 or 0)
  F.check(res.lines == lines, "lines %d, expected %d", res.lines, lines)
  F.check(res.truncated == 0 and not res.gzip, "truncated %d, gzip %s", res.truncated, tostring(res.gzip))
  for i, ref in ipairs(R.run(rules, data)) do
    local r, got = rules[i], res.rules[i]
    local what = "rule " .. i .. " (" .. r.tag .. ")"
    F.check(got.n == ref.n, "%s: n %d, expected %d", what, got.n, ref.n)
    F.check(got.dropped_keys == nil and got.dropped_groups == nil, "%s: dropped keys or groups", what)
    if r.group then
      local names = core.ordered_keys(got.groups)
      F.check(#names == #ref.gorder, "%s: %d groups, expected %d", what, #names, #ref.gorder)
      for j, g in ipairs(ref.gorder) do
        F.check(names[j] == g, "%s: group %d is %q, expected %q", what, j, tostring(names[j]), g)
        check_bucket(got.groups[g], ref.groups[g], r, what .. " group " .. F.printable(g))
      end
    else
      check_bucket(got, ref.whole, r, what)
    end
  end
end

return R

-- `${...}` interpolation of a composed config, resolved in place (DESIGN §4):
--   ${a.b}  ${a.list[0]}  ${.sibling}  ${..uncle}     a reference; a whole-value reference keeps the
--                                                      referenced value's type, an embedded one is
--                                                      turned into text
--   ${env:VAR}  ${env:VAR,default}  (also ${oc.env:...}, as Hydra writes it)
--   ${wb:examples}                                     the bundled example programs' directory
--                                                      (lua/wb/paths.lua)
--   \${...}                                            a literal ${...}
-- Errors name where the string was defined: "FILE:LINE: interpolation ${x}: no such key 'x'".
local core = require "wb.core"
local errors = require "wb.errors"
local override = require "wb.override"

local M = {}

local null = core.null
local is_list = override.is_list

local function raise(msg) errors.raise(2, msg, 0) end

-- The most bytes one interpolated value may hold ($WB_MAX_INTERPOLATION overrides it); all the
-- interpolations of one config together may make TOTAL_FACTOR times that. A reference bomb
-- (levels of keys each referring several times to the level below) stops at the first value
-- over the limit, with memory bounded by it.
M.MAX_BYTES = 1 << 20
M.TOTAL_FACTOR = 64

-- The size of v in bytes as the limit counts it (strings by length, other scalars and table
-- entries 8 bytes), counting stops once past `cap`.
local function size_of(v, cap)
  if type(v) == "string" then return #v end
  if type(v) ~= "table" then return 8 end
  local n = 0
  for k, x in pairs(v) do
    n = n + 8 + (type(k) == "string" and #k or 0) + size_of(x, cap - n)
    if n > cap then return n end
  end
  return n
end

local function keys_of(t)
  if is_list(t) then
    local ks = {}
    for i = 1, #t do ks[i] = i end
    return ks
  end
  return override.keys(t)
end

-- Dotted text of a path of segments (list positions are stored 1-based and shown 0-based).
local function path_string(segs)
  local out = {}
  for _, s in ipairs(segs) do
    if type(s) == "number" then
      out[math.max(#out, 1)] = (out[#out] or "") .. "[" .. (s - 1) .. "]"
    else
      out[#out + 1] = s
    end
  end
  return table.concat(out, ".")
end

local function append(segs, key)
  local out = table.move(segs, 1, #segs, 1, {})
  out[#out + 1] = key
  return out
end

local function stringify(v)
  if type(v) == "string" then return v end
  if math.type(v) == "integer" then return tostring(v) end
  return override.format(v)
end

-- Splits a string into literal parts and `${...}` expressions (nested braces allowed).
local function split(s, fail)
  local parts, buf, i = {}, {}, 1
  local function flush()
    if #buf > 0 then
      parts[#parts + 1] = { lit = table.concat(buf) }
      buf = {}
    end
  end
  while i <= #s do
    if s:sub(i, i + 2) == "\\${" then
      buf[#buf + 1] = "${"
      i = i + 3
    elseif s:sub(i, i + 1) == "${" then
      local depth, j = 0, i + 1
      repeat
        local c = s:sub(j, j)
        if c == "{" then
          depth = depth + 1
        elseif c == "}" then
          depth = depth - 1
        end
        j = j + 1
      until depth == 0 or j > #s
      if depth ~= 0 then fail(s:sub(i), "missing '}'") end
      flush()
      parts[#parts + 1] = { expr = s:sub(i + 2, j - 2), text = s:sub(i, j - 1) }
      i = j
    else
      local nxt = s:find("[\\$]", i + 1) or #s + 1
      buf[#buf + 1] = s:sub(i, nxt - 1)
      i = nxt
    end
  end
  flush()
  return parts
end

-- Splits "NAME,default" at the first comma outside `${...}`; returns name, default or nil.
local function split_default(body)
  local depth = 0
  for i = 1, #body do
    local c = body:sub(i, i)
    if c == "{" then
      depth = depth + 1
    elseif c == "}" then
      depth = depth - 1
    elseif c == "," and depth == 0 then
      return body:sub(1, i - 1), body:sub(i + 1)
    end
  end
  return body, nil
end

-- The absolute path of a reference made from the string at path `segs`; nil when malformed.
local function reference(expr, segs)
  local dots, rest = expr:match("^(%.*)(.*)$")
  local out = {}
  if #dots > 0 then
    local n = #segs - #dots
    if n < 0 then return nil end
    table.move(segs, 1, n, 1, out)
  end
  if rest == "" then return #out > 0 and out or nil end
  for part in (rest .. "."):gmatch("(.-)%.") do
    local name, idx = part:match("^([^%[%]]*)(.*)$")
    if name == "" and idx == "" then return nil end
    if name ~= "" then out[#out + 1] = name end
    local consumed = idx:gsub("%[(%d+)%]", function(n)
      out[#out + 1] = tonumber(n) + 1
      return ""
    end)
    if consumed ~= "" then return nil end
  end
  return out
end

local Resolver = {}
Resolver.__index = Resolver

function Resolver:prefix(tbl, key, segs)
  local w = self.where(tbl, key)
  return (w or ("'" .. path_string(segs) .. "'")) .. ": "
end

function Resolver:cycle(path)
  for i, frame in ipairs(self.stack) do
    if frame.path == path then
      local names = {}
      for j = i, #self.stack do names[#names + 1] = self.stack[j].path end
      names[#names + 1] = path
      raise(self.stack[#self.stack].prefix .. "interpolation cycle: " .. table.concat(names, " -> "))
    end
  end
end

function Resolver:seal(v)
  if type(v) ~= "table" then return end
  self.finished[v] = true
  for _, k in ipairs(keys_of(v)) do self:seal(v[k]) end
end

-- Resolves every string under table t (at path segs) in place.
function Resolver:tree(t, segs, prefix)
  if self.finished[t] then return end
  local path = path_string(segs)
  self.stack[#self.stack + 1] = { path = path, prefix = prefix }
  self.active[t] = path
  for _, k in ipairs(keys_of(t)) do self:node(t, k, append(segs, k)) end
  self.active[t] = nil
  self.stack[#self.stack] = nil
  self.finished[t] = true
end

-- Resolves t[key] (at path segs) in place and returns it. `whole` is set when the value is
-- wanted as a whole by a reference, so a table still being resolved is a cycle.
function Resolver:node(t, key, segs, whole)
  local v = t[key]
  if type(v) == "table" then
    if self.active[v] then
      if whole then self:cycle(self.active[v]) end
      return v
    end
    self:tree(v, segs, self:prefix(t, key, segs))
    return v
  end
  if type(v) ~= "string" or self.finished[t] or not v:find("${", 1, true) then return v end
  local done = self.done[t]
  if done and done[key] then return v end
  local path = path_string(segs)
  self:cycle(path)
  local prefix = self:prefix(t, key, segs)
  self.stack[#self.stack + 1] = { path = path, prefix = prefix }
  local out = self:string(v, segs, prefix)
  self.stack[#self.stack] = nil
  t[key] = out
  self.done[t] = self.done[t] or {}
  self.done[t][key] = true
  return out
end

-- Follows a reference from the root; returns a copy of the (resolved) value.
function Resolver:lookup(target, text, prefix)
  local t = self.root
  for i, seg in ipairs(target) do
    if type(seg) == "string" and is_list(t) and seg:match("^%d+$") then
      seg = tonumber(seg) + 1
      target[i] = seg
    end
    local v
    if type(t) == "table" then v = t[seg] end
    if v == nil then
      raise(prefix .. "interpolation " .. text .. ": no such key '" .. path_string(target) .. "'")
    end
    local sub = table.move(target, 1, i, 1, {})
    if i == #target then return self.copy(self:node(t, seg, sub, true)) end
    if type(v) == "string" then v = self:node(t, seg, sub) end
    t = v
  end
end

function Resolver:env(body, text, segs, prefix)
  local name, default = split_default(body)
  name = name:match("^%s*(.-)%s*$")
  if name == "" then raise(prefix .. "interpolation " .. text .. ": missing variable name") end
  local value = os.getenv(name)
  if value then return value end
  if default == nil then
    raise(prefix .. "interpolation " .. text .. ": environment variable '" .. name .. "' is not set")
  end
  default = default:match("^%s*(.-)%s*$")
  local quoted = default:match("^'(.*)'$") or default:match('^"(.*)"$')
  if quoted then return quoted end
  if default == "null" then return null end
  return stringify(self:string(default, segs, prefix))
end

function Resolver:eval(part, segs, prefix)
  local expr = part.expr:match("^%s*(.-)%s*$")
  local scheme, body = expr:match("^([%a_][%w_%.]*):(.*)$")
  if scheme == "env" or scheme == "oc.env" then return self:env(body, part.text, segs, prefix) end
  if scheme == "wb" then
    local name = body:match("^%s*(.-)%s*$")
    if name ~= "examples" then raise(prefix .. "interpolation " .. part.text .. ": unknown wb directory '" .. name .. "' (known: examples)") end
    local dir, err = require("wb.paths").examples_dir()
    if not dir then raise(prefix .. "interpolation " .. part.text .. ": " .. err) end
    return dir
  end
  if scheme then raise(prefix .. "interpolation " .. part.text .. ": unknown resolver '" .. scheme .. "'") end
  local target = reference(expr, segs)
  if not target then raise(prefix .. "interpolation " .. part.text .. ": bad reference '" .. expr .. "'") end
  return self:lookup(target, part.text, prefix)
end

-- Counts n bytes made by the interpolation of s against the limits; raises when over one.
function Resolver:charge(n, s, prefix)
  self.total = self.total + n
  local over = n > self.max and self.max or self.total > self.max * M.TOTAL_FACTOR and self.max * M.TOTAL_FACTOR
  if not over then return end
  local text = #s > 60 and (s:sub(1, 57) .. "...") or s
  raise(string.format("%sinterpolation %s: %s over the limit of %d bytes (WB_MAX_INTERPOLATION=N raises it)",
    prefix, text, n > self.max and "the value would be" or "the config's interpolations would make", over))
end

-- Interpolates string s found at path segs.
function Resolver:string(s, segs, prefix)
  local parts = split(s, function(text, problem)
    raise(prefix .. "interpolation " .. text .. ": " .. problem)
  end)
  if #parts == 1 and parts[1].expr then
    local v = self:eval(parts[1], segs, prefix)
    self:charge(size_of(v, self.max), s, prefix)
    self:seal(v)
    return v
  end
  local out, n = {}, 0
  for i, p in ipairs(parts) do
    out[i] = p.lit or stringify(self:eval(p, segs, prefix))
    n = n + #out[i]
    if n > self.max then self:charge(n, s, prefix) end
  end
  self:charge(n, s, prefix)
  return table.concat(out)
end

-- cfg = interpolate.resolve(cfg, {where = fn, copy = fn}) : resolves every interpolation in cfg
-- in place; where(tbl, key) gives the "FILE:LINE" (or "override '...'") where tbl[key] was
-- defined, copy(v) deep-copies a value
function M.resolve(cfg, opts)
  local r = setmetatable({
    root = cfg, where = opts.where, copy = opts.copy,
    stack = {}, active = {}, finished = {}, done = {}, total = 0,
    max = math.tointeger(tonumber(os.getenv("WB_MAX_INTERPOLATION") or "")) or M.MAX_BYTES,
  }, Resolver)
  r:tree(cfg, {}, "")
  return cfg
end

return M

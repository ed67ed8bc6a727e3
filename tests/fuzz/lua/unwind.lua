-- The stack walker (wb.unwind: core/unwind.c, core/unwind_obj.c) on any bytes: the first 8 choose the
-- ip inside one of this process's executable mappings (so the walk reads real CFI rows of the
-- fuzzer, libc, the vDSO), the next 8 the frame pointer, the rest is the stack copy. The walk
-- ends with a known reason, starts with the ip, never returns more than asked, and repeats
-- itself (the row cache gives what libdw gave).
local F = require "fuzzlib"
local fs = require "wb.fs"
local unwind = require "wb.unwind"

local REASONS = { complete = true, no_mapping = true, no_cfi = true, complex_rule = true, signal_frame = true,
  off_stack = true, bad_frame = true, depth = true, no_stack = true }
local SP = 0x7ff000000000

local u, code, pid
local function setup()
  pid = tonumber(fs.read("/proc/self/stat"):match("^(%d+)"))
  u = unwind.new()
  assert(u:snapshot(pid))
  code = {}
  for line in fs.read("/proc/self/maps"):gmatch("[^\n]+") do
    local lo, hi, perms, path = line:match("^(%x+)%-(%x+) (%S+) %S+ %S+ %S+%s*(.*)$")
    if perms:sub(3, 3) == "x" and (path:sub(1, 1) == "/" or path == "[vdso]") then
      code[#code + 1] = { tonumber(lo, 16), tonumber(hi, 16) }
    end
  end
end

return function(data)
  if not u then setup() end
  if #data < 16 then return end
  local pick, off, bp = string.unpack("<I4I4I8", data)
  local m = code[pick % #code + 1]
  local ip = m[1] + off % (m[2] - m[1])
  local stack = data:sub(17)
  local max = pick % 7 == 0 and 3 or 1024
  local pcs, stop = u:walk(pid, { ip = ip, sp = SP + (bp & 7) * 8, bp = bp }, stack, max)
  F.check(REASONS[stop], "unknown stop %s", tostring(stop))
  F.check(#pcs >= 1 and #pcs <= max and pcs[1] == ip, "%d pcs, first %s", #pcs, tostring(pcs[1]))
  local again, stop2 = u:walk(pid, { ip = ip, sp = SP + (bp & 7) * 8, bp = bp }, stack, max)
  F.check(stop2 == stop and #again == #pcs, "a second walk differs: %s/%s %d/%d", stop, stop2, #pcs, #again)
  for i = 1, #pcs do F.check(again[i] == pcs[i], "frame %d differs", i) end
end

-- ELF and DWARF files of any content (tests/fuzz/fuzz_elf.c): wb.sym.file, wb.sym.lookup,
-- wb.unwind.object, wb.unwind.symbolize and the CFI rows never raise, never hang (libFuzzer's
-- -timeout), stay within libFuzzer's memory limit (decompression caps), and describe the file
-- consistently: a file wb cannot read says why and names nothing; names are strings, offsets
-- and rule offsets are integers.
local F = require "fuzzlib"
local sym = require "wb.sym"
local unwind = require "wb.unwind"

-- Up to 8 addresses to ask about: 64-bit words of the input, kept below 2^40 (where ELF files map)
local function addresses(data)
  local out = {}
  for i = 1, math.min(8, #data // 8) do
    out[#out + 1] = string.unpack("<I8", data, (i - 1) * 8 + 1) % (1 << 40)
  end
  out[#out + 1] = 0
  return out
end

return function(data)
  local path = fuzz.tmpfile(data)
  local info = sym.file(path)
  F.check(type(info) == "table", "wb.sym.file gave a %s", type(info))
  F.check(math.type(info.symbols) == "integer" and info.symbols >= 0, "symbols %s", tostring(info.symbols))
  if info.unreadable then
    F.check(type(info.error) == "string" and #info.error > 0, "an unreadable file without a reason")
    F.check(info.symbols == 0, "an unreadable file with %d symbols", info.symbols)
  end
  local o = unwind.object(path)
  F.check(type(o) == "table" and type(o.eh_frame) == "boolean" and type(o.debug_info) == "boolean",
    "wb.unwind.object gave %s", type(o))
  for _, addr in ipairs(addresses(data)) do
    local name, off = sym.lookup(path, addr)
    F.check(name == nil or (type(name) == "string" and math.type(off) == "integer" and off >= 0),
      "lookup at 0x%x: %s %s", addr, tostring(name), tostring(off))
    F.check(name == nil or not info.unreadable, "a name from an unreadable file at 0x%x", addr)
    local frames = unwind.symbolize(path, addr)
    F.check(type(frames) == "table", "symbolize gave a %s", type(frames))
    for i, f in ipairs(frames) do
      F.check(type(f.name) == "string" and type(f.inlined) == "boolean", "frame %d at 0x%x", i, addr)
      F.check(f.line == nil or math.type(f.line) == "integer", "line %s", tostring(f.line))
      F.check(f.inlined == (i < #frames), "frame %d of %d: inlined %s", i, #frames, tostring(f.inlined))
    end
    local kind, cfa, ra = fuzz.cfi(path, addr)
    F.check(kind == nil or (math.type(kind) == "integer" and math.type(cfa) == "integer" and math.type(ra) == "integer"),
      "cfi row at 0x%x", addr)
  end
end

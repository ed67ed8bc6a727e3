-- wb.sym: ELF symbol tables, address spaces from /proc/PID/maps and perf records, kallsyms.
local T = require "wb.test"
local sym = require "wb.sym"
local proc = require "wb.proc"
local fs = require "wb.fs"

local SPLIT = T.example("cpu_split")

local function run(argv)
  local res = assert(proc.run { argv = argv, stdout = "capture", stderr = "capture" })
  assert(res.ok, table.concat(argv, " ") .. ": " .. res.stderr)
  return res.stdout
end

-- {name = vaddr} of the functions nm lists in a file
local function nm(path)
  local out = {}
  for addr, name in run({ "nm", path }):gmatch("(%x+) [tTwW] ([%w_.@]+)") do out[name] = tonumber(addr, 16) end
  return out
end

-- A C program compiled into dir with extra flags; returns its path.
local function compile(dir, name, source, flags)
  local src = dir .. "/" .. name .. ".c"
  assert(fs.write(src, source))
  local argv = { "gcc", "-std=c11", "-O2", "-o", dir .. "/" .. name, src }
  for _, f in ipairs(flags or {}) do argv[#argv + 1] = f end
  run(argv)
  return dir .. "/" .. name
end

local BURN = [[
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void leaf(int n) { for (int i = 0; i < n; i++) sink += (unsigned long)i * 7; }
__attribute__((noinline)) void middle(int n) { for (int i = 0; i < 3; i++) leaf(n); sink++; }
__attribute__((noinline)) void outer(int n) { for (int i = 0; i < 3; i++) middle(n); sink++; }
int main(int argc, char **argv) { (void)argv; outer(argc * 1000); if (argc > 1) pause(); return 0; }
]]

-- The load address of path in a running process: the start of its mapping at file offset 0.
local function load_base(pid, path)
  for line in fs.read("/proc/" .. pid .. "/maps"):gmatch("[^\n]+") do
    local lo, off, p = line:match("^(%x+)%-%x+ %S+ (%x+) %S+ %d+%s+(.*)$")
    if p == path and tonumber(off, 16) == 0 then return tonumber(lo, 16) end
  end
end

T.case("file: build id, .symtab, frame pointers of the bundled example", function()
  local f = sym.file(SPLIT)
  local readelf = run({ "readelf", "-n", SPLIT }):match("Build ID: (%x+)")
  T.eq(f.build_id, readelf)
  T.eq(f.symtab, true)
  T.ok(f.symbols >= 8)
  T.eq(f.error, nil)
  T.ok(f.frame_pointers.functions >= 6)
  T.ok(f.frame_pointers.with >= 0.8 * f.frame_pointers.functions, "built with -fno-omit-frame-pointer")
end)

T.case("file: a build without frame pointers is detected; a missing file has an error", function()
  local dir = T.tmpdir()
  local nofp = compile(dir, "nofp", BURN, { "-fomit-frame-pointer" })
  local withfp = compile(dir, "withfp", BURN, { "-fno-omit-frame-pointer" })
  local a, b = sym.file(nofp).frame_pointers, sym.file(withfp).frame_pointers
  T.ok(a.with / a.functions < 0.5, string.format("%d of %d", a.with, a.functions))
  T.ok(b.with / b.functions >= 0.6, string.format("%d of %d", b.with, b.functions))
  local stripped = compile(dir, "stripped", BURN, { "-s" })
  local s = sym.file(stripped)
  T.eq({ s.symtab, s.frame_pointers }, { false, nil })
  local missing = sym.file(dir .. "/nothing-here")
  T.eq(missing.symbols, 0)
  T.match(missing.error, "No such file")
end)

T.case("lookup: every function nm lists, at its start and inside it", function()
  local names = nm(SPLIT)
  for _, fn in ipairs({ "main", "spin_a", "spin_b", "sleep_phase", "pause_for", "run", "worker" }) do
    T.ok(names[fn], fn .. " in nm")
    T.eq({ sym.lookup(SPLIT, names[fn]) }, { fn, 0 })
    T.eq({ sym.lookup(SPLIT, names[fn] + 5) }, { fn, 5 })
  end
  T.eq(sym.lookup(SPLIT, 16), nil)
end)

-- Code reached through untyped, sizeless assembler labels: one on its own (as ld.so's _start),
-- one inside a C function, one at the end of .text (as _etext).
local LABELS = [[
__asm__(".text\n.globl bare_entry\nbare_entry:\n nop\n nop\n nop\n ret\n");
__attribute__((noinline)) int typed(int x) {
  for (volatile int i = 0; i < x; i++) {}
  __asm__ volatile(".globl inner_label\ninner_label:\n nop");
  return x * 3;
}
void bare_entry(void);
int main(int argc, char **argv) { (void)argv; if (argc > 5) bare_entry(); return typed(argc); }
]]

T.case("lookup: an untyped code label names the code up to the next symbol, never code inside a "
  .. "function", function()
  local exe = compile(T.tmpdir(), "labels", LABELS, { "-g" })
  local addr = {}
  for a, t, name in run({ "nm", exe }):gmatch("(%x+) (%a) ([%w_]+)") do addr[name] = tonumber(a, 16) end
  T.eq({ sym.lookup(exe, addr.bare_entry + 2) }, { "bare_entry", 2 })
  T.ok(addr.inner_label > addr.typed, "the label is inside typed")
  T.eq(sym.lookup(exe, addr.inner_label), "typed")
  T.eq(sym.lookup(exe, addr.inner_label + 1), "typed")
end)

-- Calls through the PLT to a shared library's function and to libc's.
local PLT_CALLS = [[
#include <stdio.h>
#include <string.h>
unsigned long tiny(unsigned long);
int main(int argc, char **argv) { printf("%lu %zu\n", tiny((unsigned long)argc), strlen(argv[0])); return 0; }
]]

T.case("lookup: PLT stubs are func@plt as objdump names them (lazy, -z now, IBT .plt.sec, .plt.got), the "
  .. "resolver stubs [plt]", function()
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/tiny.c", "unsigned long tiny(unsigned long x) { return x * 3; }\n"))
  run({ "gcc", "-O2", "-shared", "-fPIC", "-o", dir .. "/libtiny.so", dir .. "/tiny.c" })
  local lib = { "-L" .. dir, "-ltiny", "-Wl,-rpath," .. dir }
  local variants = {
    lazy = { "-Wl,-z,lazy" }, now = { "-Wl,-z,now" }, ibt = { "-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,lazy" },
  }
  for name, flags in pairs(variants) do
    local exe = compile(dir, "plt_" .. name, PLT_CALLS, table.move(lib, 1, #lib, #flags + 1, table.move(flags, 1, #flags, 1, {})))
    local stubs = {}
    for addr, stub in run({ "objdump", "-d", exe }):gmatch("\n(%x+) <([%w_.]+@plt)>:") do stubs[stub] = tonumber(addr, 16) end
    T.ok(stubs["tiny@plt"] and stubs["printf@plt"], name .. ": objdump lists the stubs")
    for stub, addr in pairs(stubs) do
      T.eq(sym.lookup(exe, addr), stub, name .. ": " .. stub)
      T.eq(select(1, sym.lookup(exe, addr + 5)), stub, name .. ": inside " .. stub)
    end
    local plt0 = tonumber(run({ "sh", "-c", "readelf -SW " .. exe .. " | awk '$2 == \".plt\" {print $4}'" }), 16)
    T.eq(sym.lookup(exe, plt0), "[plt]", name .. ": PLT0, the lazy binding's entry")
  end
end)

T.case("a file replaced on disk is read again", function()
  local dir = T.tmpdir()
  local path = dir .. "/prog"
  run({ "cp", SPLIT, path })
  T.eq(sym.lookup(path, nm(path).spin_a), "spin_a")
  local other = compile(dir, "other", BURN, { "-fno-omit-frame-pointer" })
  os.remove(path)
  run({ "cp", other, path })
  T.eq(sym.lookup(path, nm(path).outer), "outer")
  T.eq(sym.file(path).build_id, sym.file(other).build_id)
end)

-- Run by the case below in a wb of its own: a file's objects, the file replaced on disk, read again
-- through wb.sym only, then through the unwinder; prints the build ids it saw.
local REPLACED = [[
local wb = require "wb"
local function copy(from, to)
  local i, o = assert(io.open(from, "rb")), assert(io.open(to, "wb"))
  o:write(i:read("a"))
  i:close()
  o:close()
end
return wb.recipe { run = function()
  local path = os.getenv("REPLACED_PATH")
  copy("/bin/true", path)
  local first = wb.unwind.object(path).build_id
  copy("/bin/false", path .. ".new")
  assert(os.rename(path .. ".new", path))
  local by_sym = wb.sym.file(path).build_id -- only the symbol table is read again here
  print(first, by_sym, wb.unwind.object(path).build_id)
end }
]]

T.case("a file replaced on disk is never taken for another: the unwinder's object of the old file is not "
  .. "handed back for the new one (glibc's heap told to reuse freed memory at once)", function()
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/replaced.lua", REPLACED))
  local res = T.wb({ "run", dir .. "/replaced.lua" },
    { env = { GLIBC_TUNABLES = "glibc.malloc.tcache_count=0", REPLACED_PATH = dir .. "/prog" } })
  T.eq(res.code, 0, res.stderr)
  local first, by_sym, by_unwinder = res.stdout:match("(%x+)%s+(%x+)%s+(%x+)")
  T.eq(first, sym.file("/bin/true").build_id)
  T.eq(by_sym, sym.file("/bin/false").build_id)
  T.eq(by_unwinder, by_sym, "the unwinder's object is of the file now on disk")
end)

T.case("snapshot of a running process: user frames by name, module+0xoff, [unknown]", function()
  local dir = T.tmpdir()
  local stripped = compile(dir, "stripped", BURN, { "-s" })
  local p <close> = assert(proc.spawn { argv = { SPLIT, "--cpu", "0", "--sleep", "30" } })
  local q <close> = assert(proc.spawn { argv = { stripped, "wait" } })
  local s <close> = sym.new()
  local function snapshot(pid, what)
    T.wait_until(what, 10, function()
      local n = s:snapshot(pid)
      return n and n >= 3 and load_base(pid, pid == p.pid and SPLIT or stripped) and n
    end)
  end
  snapshot(p.pid, "maps of the example")
  snapshot(q.pid, "maps of the stripped program")
  local base = load_base(p.pid, SPLIT)
  local names = nm(SPLIT)
  local name, module, off = s:resolve(p.pid, base + names.spin_b + 3)
  T.eq({ name, module, off }, { "spin_b", "cpu_split", 3 })
  local frames, unresolved = s:frames(p.pid, { base + names.spin_a + 1, base + names.run + 1, 16 })
  T.eq(frames, { "spin_a", "run", "[unknown]" })
  T.eq(unresolved, 1)
  local qbase = load_base(q.pid, stripped)
  local text_off = nm(compile(dir, "unstripped", BURN)).main
  local f2, bad = s:frames(q.pid, { qbase + text_off })
  T.match(f2[1], "^stripped%+0x%x+$")
  T.eq(bad, 1)
  T.eq(select(1, s:resolve(q.pid, qbase + text_off)), nil)
  T.eq(s:resolve(p.pid, 16), nil)
  local pids = s:pids()
  table.sort(pids)
  T.eq(pids, { math.min(p.pid, q.pid), math.max(p.pid, q.pid) })
  local gone, err = s:snapshot(2 ^ 22 + 4321)
  T.eq(gone, nil)
  T.match(err, "^sym: snapshot")
end)

-- A process of nobody's (setpriv) with extra groups, once it runs as nobody.
local function as_nobody(groups)
  local argv = { "setpriv", "--reuid=65534", "--regid=65534", groups and "--groups=" .. groups or "--clear-groups",
    "sleep", "30" }
  local p = assert(proc.spawn { argv = argv })
  T.wait_until("the process runs as nobody", 10, function()
    return (fs.read("/proc/" .. p.pid .. "/status") or ""):match("\nUid:%s+65534%s") and
      (fs.read("/proc/" .. p.pid .. "/comm") or ""):match("^sleep")
  end)
  return p
end

T.case("users: nothing is named from a file a noted user could not read (mode, directories, groups)", function()
  if not T.is_root() then T.skip("needs root: unprivileged, wb reads with its own user's rights") end
  local dir = T.tmpdir() -- mode 0700: nobody cannot reach what it holds
  local prog = compile(dir, "burn", BURN, { "-fno-omit-frame-pointer" })
  local p <close> = assert(proc.spawn { argv = { prog, "wait" } })
  local s <close> = sym.new()
  T.wait_until("maps of burn", 10, function() return load_base(p.pid, prog) and s:snapshot(p.pid) end)
  local addr = load_base(p.pid, prog) + nm(prog).outer + 1
  T.eq(s:frames(p.pid, { addr }), { "outer" }) -- root's own process: root reads all
  T.eq(s:readable(prog), true)
  s:add_user(65534, 65534) -- as a BPF sample of nobody's gives it
  local frames, unresolved = s:frames(p.pid, { addr })
  T.match(frames[1], "^burn%+0x%x+ %[not readable by the profiled user%]$")
  T.eq(unresolved, 1)
  T.eq(s:readable("/usr/bin/true"), true)
  T.eq(s:denied(), { { path = prog, uid = 65534 } })
  local unknown <close> = sym.new()
  unknown:add_user() -- someone wb could not see: only what every user may read
  T.eq({ unknown:readable(prog), unknown:readable("/usr/bin/true") }, { false, true })
  local root <close> = sym.new()
  root:add_user(0, 0)
  T.eq(root:readable(prog), true)
  -- a file of mode 0640 of group 4242 in a directory every user may enter: the group's members read it
  local open = dir .. "/open"
  run({ "mkdir", "-m", "755", open })
  run({ "cp", prog, open .. "/grouped" })
  run({ "chmod", "640", open .. "/grouped" })
  run({ "chgrp", "4242", open .. "/grouped" })
  run({ "chmod", "711", dir })
  local member <close> = as_nobody("4242")
  local stranger <close> = as_nobody()
  local with <close> = sym.new()
  local without <close> = sym.new()
  T.ok(with:observe(member.pid) >= 1, "observed")
  T.ok(without:observe(stranger.pid) >= 1, "observed")
  T.eq({ with:readable(open .. "/grouped"), without:readable(open .. "/grouped") }, { true, false })
  T.eq({ with:readable(prog), without:readable(prog) }, { true, true }) -- mode 0755, its directory now 0711
  run({ "chmod", "711", prog }) -- execute-only
  local later <close> = sym.new()
  later:observe(member.pid)
  T.eq(later:readable(prog), false)
end)

T.case("the vDSO is named from this process's own image", function()
  local p <close> = assert(proc.spawn { argv = { "sleep", "30" } })
  local s <close> = sym.new()
  local lo, hi = table.unpack(T.wait_until("a [vdso] mapping of sleep", 10, function()
    local maps = fs.read("/proc/" .. p.pid .. "/maps") or ""
    local l, h = maps:match("(%x+)%-(%x+) [^\n]*%[vdso%]")
    return l and maps:find("sleep") and { l, h }
  end))
  T.ok(lo, "a [vdso] mapping")
  assert(s:snapshot(p.pid))
  local found = {}
  for a = tonumber(lo, 16), tonumber(hi, 16) - 1, 16 do
    local name = s:resolve(p.pid, a)
    if name then found[name] = true end
  end
  T.ok(found.__vdso_clock_gettime or found.clock_gettime, "clock_gettime in the vDSO")
end)

T.case("perf records: add_map, fork copies, exec forgets, a later mmap replaces, build ids", function()
  local s <close> = sym.new()
  local names = nm(SPLIT)
  local f = sym.file(SPLIT)
  local base = 0x10000000
  s:add_map(100, base, 0x100000, 0, SPLIT, f.build_id)
  T.eq(s:resolve(100, base + names.main), "main")
  s:fork(101, 100)
  T.eq(s:resolve(101, base + names.spin_a), "spin_a")
  s:exec(101)
  T.eq(s:resolve(101, base + names.spin_a), nil)
  s:add_map(101, base, 0x100000, 0, "/nonexistent/prog")
  local frames = s:frames(101, { base + 0x1234 })
  T.eq(frames, { "prog+0x1234" })
  T.eq(s:resolve(100, base + names.main), "main", "the parent keeps its mappings")
  s:add_map(102, base, 0x100000, 0, SPLIT, string.rep("ab", 20))
  T.eq({ s:resolve(102, base + names.main) }, { nil, "cpu_split", names.main }, "another build id: not named")
  T.match(tostring(s), "^wb%.sym %(%d+ processes%)$")
  s:close()
  T.raises(function() s:resolve(100, base) end, "closed")
end)

-- The address /proc/kallsyms gives a kernel text symbol (the last such line), or nil.
local function kallsyms_address(want)
  local addr
  for line in io.lines("/proc/kallsyms") do
    local a, name = line:match("^(%x+) [tT] (%S+)$")
    if name == want then addr = tonumber(a, 16) end
  end
  return addr
end

T.case("kernel addresses through /proc/kallsyms", function()
  local addr = kallsyms_address("schedule")
  if not addr or addr == 0 then T.skip("kallsyms hides addresses from this user") end
  T.eq({ sym.kernel(addr) }, { "schedule", 0 })
  T.eq({ sym.kernel(addr + 4) }, { "schedule", 4 })
  local s <close> = sym.new()
  T.eq(s:frames(0, { addr + 4, addr + 5 }, "kernel"), { "schedule_[k]", "schedule_[k]" })
  T.raises(function() s:frames(0, {}, "both") end, "\"user\" or \"kernel\" expected")
end)

T.case("kernel addresses past the kernel image's text (_etext, _einittext) are unnamed, not the marker's", function()
  local etext = kallsyms_address("_einittext")
  if not etext or etext == 0 then T.skip("kallsyms hides addresses from this user, or has no _einittext") end
  T.eq(sym.kernel(etext + 64), nil)
end)

-- Prints "name off" (or "nil") for each address (hex arguments) as a fresh wb names it; with
-- "bpf" first, loads wb's BPF programs and names the address kallsyms now gives one of them.
local KERNEL_NAMES = [[
local wb = require "wb"
return wb.recipe { run = function(ctx)
  local args = ctx.args
  local s <close> = args[1] == "bpf" and assert(wb.bpf.open { ustack = 8192 }) or nil -- open while naming
  if s then
    local progs, last = {}, nil
    for line in io.lines("/proc/kallsyms") do
      local a, name = line:match("^(%x+) t (bpf_prog_%x+_on_%a+)\t%[bpf%]$")
      if a then progs[#progs + 1] = { a, name } end
      last = line
    end
    local p = progs[1] -- not the last line: the last symbol has no known end
    if p and last:find(p[2], 1, true) then p = progs[2] end
    args = { p and p[1] }
    if p then io.write(p[2], " 0\n") end
  end
  for _, hex in ipairs(args) do
    local name, off = wb.sym.kernel(tonumber(hex, 16))
    io.write(name and (name .. " " .. off) or "nil", "\n")
  end
end }
]]

T.case("the kernel image's symbols are cached per boot (0600, checked), the rest read from kallsyms as it is", function()
  local lines, at_addr = {}, {}
  for line in io.lines("/proc/kallsyms") do
    local a, name, rest = line:match("^(%x+) [tTwW] (%S+)(.*)$")
    if a and tonumber(a, 16) ~= 0 and rest == "" then
      lines[#lines + 1] = { a, name }
      at_addr[a] = (at_addr[a] or 0) + 1
    end
  end
  local want, addrs = {}, {}
  for k, l in ipairs(lines) do -- functions alone at their address, within each, at an offset
    if (k % 9973 == 1 or l[2] == "schedule") and at_addr[l[1]] == 1 and k < #lines then
      addrs[#addrs + 1], want[#want + 1] = string.format("%x", tonumber(l[1], 16) + 1), l[2] .. " 1"
    end
  end
  if #addrs == 0 then T.skip("kallsyms hides addresses from this user") end
  local dir = T.tmpdir()
  local script = dir .. "/names.lua"
  assert(fs.write(script, KERNEL_NAMES))
  local env = { XDG_CACHE_HOME = dir .. "/cache" }
  local function names()
    local res = T.wb({ "run", script, "--", table.unpack(addrs) }, { env = env })
    T.eq(res.code, 0, res.stderr)
    local out = {}
    for l in res.stdout:gmatch("[^\n]+") do out[#out + 1] = l end
    return out
  end
  T.eq(names(), want) -- read from kallsyms, then cached
  local boot = assert(fs.read("/proc/sys/kernel/random/boot_id")):match("%S+")
  local cache = dir .. "/cache/wb/kallsyms-" .. boot
  local st = assert(fs.stat(cache))
  T.eq(st.mode & 511, 384, "mode 0600")
  T.eq(names(), want) -- from the cache
  -- the cache is what the second run read: a name changed in it is the name given
  local blob = assert(fs.read(cache))
  local at = blob:find("\0schedule\0", 1, true)
  T.ok(at, "schedule is in the cache")
  assert(fs.write(cache, blob:sub(1, at) .. "schedulX" .. blob:sub(at + 9)))
  os.execute("chmod 600 " .. cache)
  local changed = names()
  for k, w in ipairs(want) do
    if w:match("^schedule ") then T.eq(changed[k], "schedulX 1") else T.eq(changed[k], w) end
  end
  -- one that another user could have written (group- or world-writable), or cut short, is not
  -- trusted: kallsyms is read again and the cache rewritten
  os.execute("chmod 666 " .. cache)
  T.eq(names(), want)
  T.eq(assert(fs.stat(cache)).mode & 511, 384)
  assert(fs.write(cache, blob:sub(1, #blob // 2)))
  os.execute("chmod 600 " .. cache)
  T.eq(names(), want)
  T.eq(assert(fs.stat(cache)).size, #blob)
  -- a BPF program's address (outside the image: never cached) is named from kallsyms as it is
  if require("wb.bpf").available() then
    local res = T.wb({ "run", script, "--", "bpf" }, { env = env })
    T.eq(res.code, 0, res.stderr)
    local w, got = res.stdout:match("^(bpf_prog_%x+_on_%a+ 0)\n([^\n]*)\n$")
    T.ok(w, res.stdout)
    T.eq(got, w)
  end
end)

-- MiniDebugInfo as Fedora's build makes it (gdb's manual, "MiniDebugInfo"): the functions that
-- .dynsym lacks, kept in an xz-compressed ELF in .gnu_debugdata of the stripped file.
T.case("MiniDebugInfo: a stripped file's .gnu_debugdata names its local functions", function()
  for _, tool in ipairs({ "objcopy", "xz", "strip" }) do
    if not proc.which(tool) then T.skip(tool .. " not installed") end
  end
  local dir = T.tmpdir()
  local exe = compile(dir, "mini", BURN, { "-g" })
  local want = nm(exe)
  local dynamic = {}
  for name in run({ "nm", "-D", "--defined-only", exe }):gmatch("%x+ %a ([%w_.@]+)") do dynamic[name] = true end
  local keep = {}
  for name in pairs(want) do
    if not dynamic[name] then keep[#keep + 1] = name end
  end
  assert(fs.write(dir .. "/keep", table.concat(keep, "\n") .. "\n"))
  run({ "objcopy", "--only-keep-debug", exe, dir .. "/full.debug" })
  run({ "objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment",
    "--keep-symbols=" .. dir .. "/keep", dir .. "/full.debug", dir .. "/mini.debug" })
  run({ "xz", "-k", dir .. "/mini.debug" })
  run({ "strip", "--strip-all", exe })
  T.eq(sym.file(exe).symtab, false, "stripped")
  local stripped = dir .. "/mini_plain"
  run({ "cp", exe, stripped })
  run({ "objcopy", "--add-section", ".gnu_debugdata=" .. dir .. "/mini.debug.xz", exe })
  local f = sym.file(exe)
  T.eq({ f.symtab, f.minidebug }, { true, true })
  for _, name in ipairs({ "leaf", "middle", "outer", "main" }) do
    T.eq(sym.lookup(exe, want[name] + 1), name, name .. " from .gnu_debugdata")
  end
  T.eq(sym.lookup(stripped, want.leaf + 1), nil, "without it, the stripped file has no name for leaf")
end)
T.case("/tmp/perf-PID.map names code outside every file only when it is a regular file of root or of the " ..
  "process's user; after the process exited, of a user the tree ran as", function()
  if not T.is_root() then T.skip("needs root (files of another user)") end
  local function named(pid, owner, link, alive_user)
    local map = "/tmp/perf-" .. pid .. ".map"
    fs.remove(map)
    if link then
      local target = T.tmpdir() .. "/map"
      assert(fs.write(target, "10000 100 planted_fn\n"))
      assert(proc.run({ argv = { "ln", "-s", target, map } }).ok)
    else
      assert(fs.write(map, "10000 100 planted_fn\n"))
      assert(proc.run({ argv = { "chown", tostring(owner), map } }).ok)
    end
    local s <close> = sym.new()
    if alive_user then s:add_user(alive_user, alive_user) end
    local names = s:frames(pid, { 0x10040 })
    fs.remove(map)
    return names[1] == "planted_fn"
  end
  local p = assert(proc.spawn { argv = { "sleep", "30" } })
  T.eq(named(p.pid, 0), true, "root's map of root's live process")
  T.eq(named(p.pid, 65534), false, "another user's map")
  T.eq(named(p.pid, 0, true), false, "a symbolic link")
  p:kill(9)
  p:wait()
  T.eq(named(p.pid, 0), true, "root's map, the process gone")
  T.eq(named(p.pid, 65534, false, 0), false, "another user's map, the process gone, the tree ran as root")
  T.eq(named(p.pid, 65534, false, 65534), true, "the map of the user the tree ran as, the process gone")
end)


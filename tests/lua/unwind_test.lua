-- wb.unwind and wb.capture{unwind = "dwarf"}: user stacks walked with each object's CFI from a
-- copy of the stack per perf_event sample, of programs this test builds (gcc -O2 -g with and
-- without -fno-omit-frame-pointer, g++ with inlining, threads, rustc -O when installed), checked
-- against what the programs planted and measured themselves, and against addr2line.
local T = require "wb.test"
local capture = require "wb.capture"
local fs = require "wb.fs"
local perf = require "wb.perf"
local proc = require "wb.proc"
local unwind = require "wb.unwind"

local function run(argv)
  local res = assert(proc.run { argv = argv, stdout = "capture", stderr = "capture" })
  assert(res.ok, table.concat(argv, " ") .. ": " .. res.stderr)
  return res.stdout
end

local dir -- one build directory for the file

local function build(name, ext, source, compiler, flags)
  dir = dir or T.tmpdir()
  local src = dir .. "/" .. name .. "." .. ext
  assert(fs.write(src, source))
  local argv = { compiler, compiler == "rustc" and "-O" or "-O2", "-g", "-o", dir .. "/" .. name, src }
  for _, f in ipairs(flags or {}) do argv[#argv + 1] = f end
  run(argv)
  return dir .. "/" .. name, src
end

local function need_perf()
  local s, err = perf.sampler(0, { sample = false })
  if not s then T.skip("perf_event unavailable: " .. tostring(err)) end
  s:close()
end

-- res of a dwarf-unwound capture of argv
local function profile(argv, freq, method)
  local res = assert(capture.run { argv = argv, freq = freq or 999, unwind = "dwarf", stdout = "capture",
    method = method or "perf_event" })
  T.eq(res.method, method or "perf_event")
  T.ok(res.ok, "the program ran")
  return res
end

-- Asserts a sampled share within 3 points of the truth, or within 3.5 standard errors of a
-- share of `total` independent samples when fewer samples make that wider (a busy machine gives
-- the program less CPU time in the same wall time, so fewer samples of its split).
local function near_share(count, total, truth, what, res)
  local tolerance = math.max(0.03, 3.5 * math.sqrt(truth * (1 - truth) / total))
  T.near(count / total, truth, tolerance, string.format("%s (%d samples; lost records %s)", what, total,
    tostring(res and res.oncpu and res.oncpu.lost)))
end

-- The count of samples whose stack holds frame `fn` (the root frame, the process, excluded), and
-- the total.
-- The heaviest folded line without `fn` among its frames: what a failed share was made of.
local function heaviest_outside(folded, fn)
  local best, most = "none", -1
  for line in folded:gmatch("[^\n]+") do
    local stack, c = line:match("^(.*) (%d+)$")
    if not (";" .. stack .. ";"):find(";" .. fn .. ";", 1, true) and tonumber(c) > most then
      best, most = line, tonumber(c)
    end
  end
  return best
end

local function under(folded, fn)
  local n, total = 0, 0
  for line in folded:gmatch("[^\n]+") do
    local stack, c = line:match("^(.*) (%d+)$")
    c = tonumber(c)
    total = total + c
    if (";" .. stack:gsub("^[^;]*", "") .. ";"):find(";" .. fn .. ";", 1, true) then n = n + c end
  end
  return n, total
end

-- What a capture says of its walks, for an assertion's message when stacks do not reach their
-- entry: the method (and any fallback), the stack copy size, why walks stopped, the warnings and
-- the largest stack without the frame `reach`.
local function walk_report(res, reach)
  local why, other, other_n = {}, "", 0
  for k, v in pairs(res.oncpu.unwind and res.oncpu.unwind.reasons or {}) do why[#why + 1] = k .. "=" .. v end
  table.sort(why)
  for line in res.oncpu.folded_text:gmatch("[^\n]+") do
    local n = tonumber(line:match(" (%d+)$"))
    if n and n > other_n and not line:find(reach, 1, true) then other, other_n = line, n end
  end
  local u = res.oncpu.unwind or {}
  return string.format("method %s%s, stack copies %s bytes (%s per walk), walks stopped: %s; warnings: %s; the " ..
    "largest stack without %s: %s", tostring(res.method), res.fallback and (", fallen back: " .. res.fallback) or "",
    tostring(u.stack_size), u.stack_bytes and u.walks and u.walks > 0 and string.format("%.0f", u.stack_bytes / u.walks)
    or "?", table.concat(why, " "),
    table.concat(res.warnings, " | "), reach, other)
end

-- Two callers of one hot function; the program measures the CPU time under each itself.
local SPLIT = [[
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* CPU time: the loop runs for `secs` of it and measures it under each caller, whatever the load */
static double now(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
volatile unsigned long sink;
__attribute__((noinline)) unsigned long churn(unsigned long x, long n) {
  for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}
__attribute__((noinline)) void outer_alpha(long n) { sink += churn(sink, n); }
__attribute__((noinline)) void outer_beta(long n) { sink += churn(sink ^ 1, n); }
int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1.0, t0 = now(), ta = 0, tb = 0;
  while (now() - t0 < secs) {
    double a = now();
    outer_alpha(8000000);
    outer_alpha(8000000);
    double b = now();
    outer_beta(8000000);
    ta += b - a;
    tb += now() - b;
  }
  printf("%.6f %.6f\n", ta, tb);
  return 0;
}
]]

for _, variant in ipairs({ { "-O2 -g", {} }, { "-O2 -g -fno-omit-frame-pointer", { "-fno-omit-frame-pointer" } } }) do
  T.case("2:1 split between two callers of one hot function, " .. variant[1] .. ": shares within 3 points of "
    .. "the program's own measurement, >= 95% of samples reach main", function()
    need_perf()
    local exe = build("split" .. #variant[2], "c", SPLIT, "gcc", variant[2])
    local res = profile({ exe, "1.2" })
    local ta, tb = res.result.stdout:match("^(%S+) (%S+)\n$")
    local truth = tonumber(ta) / (tonumber(ta) + tonumber(tb))
    T.near(truth, 2 / 3, 0.03, "the planted split, as the program measured it")
    local folded = res.oncpu.folded_text
    local alpha, total = under(folded, "outer_alpha")
    local beta = under(folded, "outer_beta")
    T.ok(total > 600, "samples: " .. total)
    near_share(alpha, total, truth, "outer_alpha's share", res)
    near_share(beta, total, 1 - truth, "outer_beta's share", res)
    local in_main = under(folded, "main")
    T.ok(in_main / total >= 0.95, string.format("%.1f%% reach main", 100 * in_main / total))
    local u = res.oncpu.unwind
    T.ok(u.reach_entry_fraction >= 0.95 and u.truncated_fraction <= 0.05, "quality figures")
    T.eq(u.walks, res.oncpu.samples)
    T.eq(u.stack_size, 8192)
    local methods = {}
    for _, o in ipairs(u.objects) do methods[o.path] = o.method end
    T.eq(methods[exe], "cfi")
    for _, w in ipairs(res.warnings) do T.ok(not w:find("no frame pointers", 1, true), "no frame-pointer warning: " .. w) end
  end)
end

local INLINE = [[
#include <cstdio>
#include <cstdlib>
#include <ctime>
namespace app {
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
template <typename T> inline T mix_kernel(T x, long n) {
  for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL; // HOT
  return x;
}
struct Worker {
  unsigned long state = 1;
  __attribute__((noinline)) void spin(long n) { state = mix_kernel<unsigned long>(state, n); } // CALL
};
}
int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1.0, t0 = app::now();
  app::Worker w;
  while (app::now() - t0 < secs) w.spin(10000000);
  printf("%lu\n", w.state);
  return 0;
}
]]

local function line_of(source, marker)
  local n = 0
  for line in (source .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:find(marker, 1, true) then return n end
  end
end

T.case("C++ -O2 -g: the inlined hot function is a frame with its file:line, names demangled", function()
  need_perf()
  local exe, src = build("inl", "cc", INLINE, "g++")
  local res = profile({ exe, "0.8" })
  local leaf = "unsigned long app::mix_kernel<unsigned long>(unsigned long, long) (inlined)"
  local n, total = under(res.oncpu.folded_text, "app::Worker::spin(long);" .. leaf)
  T.ok(n / total >= 0.9, string.format("%d of %d samples in the inlined frame under its caller", n, total))
  local at = res.oncpu.symbols[leaf]
  T.eq(at.file, src)
  T.eq(at.line, line_of(INLINE, "// HOT"))
  T.eq(at.mangled, "_ZN3app10mix_kernelImEET_S1_l")
  local caller = res.oncpu.symbols["app::Worker::spin(long)"]
  T.eq(caller.mangled, "_ZN3app6Worker4spinEl")
  T.eq(caller.line, line_of(INLINE, "// CALL"), "the caller's line is the call site")
  T.ok(under(res.oncpu.folded_text, "main") / total >= 0.95)
end)

T.case("symbolize: the inline chain of an address as addr2line -i -f prints it", function()
  local exe = build("inl", "cc", INLINE, "g++")
  local base = tonumber(run({ "nm", exe }):match("(%x+) [tTwW] _ZN3app6Worker4spinEl\n"), 16)
  local checked = 0
  for off = 0, 48 do
    local want = {}
    for name, pos in run({ "addr2line", "-i", "-f", "-e", exe, string.format("0x%x", base + off) })
      :gmatch("([^\n]+)\n([^\n]+)\n") do
      want[#want + 1] = { name = name, line = tonumber(pos:match(":(%d+)")) }
    end
    local got = unwind.symbolize(exe, base + off)
    T.eq(#got, #want, string.format("frames at +0x%x", off))
    for i, f in ipairs(got) do
      T.eq(f.mangled or f.name, want[i].name)
      T.eq(f.line, want[i].line)
      T.eq(f.inlined, i < #got)
    end
    if #got > 1 then checked = checked + 1 end
  end
  T.ok(checked > 0, "some addresses are in the inlined function")
  T.eq(#unwind.symbolize("/nonexistent", 0x1000), 0)
end)

local THREADS = [[
#include <pthread.h>
#include <stdio.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long worker_spin(unsigned long x, long n) {
  for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}
static void *worker(void *arg) { sink += worker_spin((unsigned long)arg, 300000000L); return NULL; }
int main(void) {
  pthread_t t[2];
  for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  printf("%lu\n", sink);
  return 0;
}
]]

T.case("threads: stacks reach start_thread", function()
  need_perf()
  local exe = build("thr", "c", THREADS, "gcc", { "-pthread" })
  local res = profile({ exe })
  local spin, total = under(res.oncpu.folded_text, "worker_spin")
  local through = under(res.oncpu.folded_text, "start_thread;worker;worker_spin")
  T.ok(spin > 100, "samples in worker_spin: " .. spin)
  T.ok(through / spin >= 0.95, string.format("%d of %d worker_spin samples under start_thread", through, spin))
  T.ok(res.oncpu.unwind.reach_entry_fraction >= 0.95)
  T.ok(total > 0)
end)

-- Forks twelve children; each runs before_exec for 30 ms of CPU (about one drain of wb's), then
-- execs the program again, which runs after_exec for 20 ms.
local FORK_EXEC = [[
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
__attribute__((noinline)) static unsigned long spin(double s) {
  unsigned long x = 1;
  for (double t0 = cpu(); cpu() - t0 < s;)
    for (int i = 0; i < 10000; i++) x = x * 6364136223846793005UL + 1;
  return x;
}
__attribute__((noinline)) unsigned long before_exec(void) { return spin(0.03) * 3; } /* not a tail call */
__attribute__((noinline)) unsigned long after_exec(void) { return spin(0.02) * 3; }
int main(int argc, char **argv) {
  if (argc > 1) return (int)(after_exec() & 1);
  for (int i = 0; i < 12; i++) {
    pid_t p = fork();
    if (p == 0) {
      before_exec();
      execl(argv[0], argv[0], "exec", (char *)NULL);
      _exit(127);
    }
    waitpid(p, NULL, 0);
  }
  return 0;
}
]]

T.case("eBPF: the samples of a forked child after its exec are walked with the new image's mappings, "
  .. "those before it with the old one's", function()
  local ok, why = require("wb.bpf").available()
  if not ok then T.skip(why) end
  local exe = build("forkexec", "c", FORK_EXEC, "gcc")
  local res = assert(capture.run { argv = { exe }, freq = 999, stdout = "capture", offcpu = false, method = "bpf" })
  local on = res.oncpu.folded_text
  local after = under(on, "after_exec")
  T.ok(after > 100, "after_exec samples: " .. after)
  T.ok(under(on, "main;after_exec") / after >= 0.95, string.format("%d of %d after_exec samples reach main (%s)",
    under(on, "main;after_exec"), after, walk_report(res, ";main;")))
  -- before the exec the child runs the parent's image: its walks complete too (the symbolizer names
  -- a process's frames with its last mappings, so they stay unnamed)
  local u = res.oncpu.unwind
  T.ok(u.truncated_fraction <= 0.05, string.format("%.1f%% of walks truncated (%s)", 100 * u.truncated_fraction,
    walk_report(res, ";main;")))
end)

-- Forks twelve children; each dlopens a library (code its parent never mapped), runs its spin for
-- 30 ms of CPU and exits: most are gone before wb's next drain.
local FORK_DLOPEN_LIB = [[
#include <time.h>
__attribute__((noinline)) unsigned long lib_spin(double s) {
  struct timespec t;
  unsigned long x = 1;
  for (double t0 = -1, now = 0; t0 < 0 || now - t0 < s;) {
    for (int i = 0; i < 10000; i++) x = x * 6364136223846793005UL + 1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    now = t.tv_sec + t.tv_nsec / 1e9;
    if (t0 < 0) t0 = now;
  }
  return x * 3;
}
]]
local FORK_DLOPEN = [[
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  (void)argc;
  for (int i = 0; i < 12; i++) {
    pid_t p = fork();
    if (p == 0) {
      void *lib = dlopen(argv[1], RTLD_NOW);
      unsigned long (*spin)(double) = lib ? (unsigned long (*)(double))dlsym(lib, "lib_spin") : NULL;
      _exit(spin ? (int)(spin(0.03) & 1) : 127);
    }
    waitpid(p, NULL, 0);
  }
  return 0;
}
]]

T.case("eBPF: a forked child that maps code its parent never had, and exits before the next drain, "
  .. "is walked with its own mappings", function()
  local ok, why = require("wb.bpf").available()
  if not ok then T.skip(why) end
  dir = dir or T.tmpdir()
  assert(fs.write(dir .. "/spinlib.c", FORK_DLOPEN_LIB))
  run({ "gcc", "-O2", "-g", "-shared", "-fPIC", "-o", dir .. "/libspin.so", dir .. "/spinlib.c" })
  local exe = build("forkdlopen", "c", FORK_DLOPEN, "gcc", { "-ldl" })
  local res = assert(capture.run { argv = { exe, dir .. "/libspin.so" }, freq = 999, stdout = "capture",
    offcpu = false, method = "bpf" })
  local on = res.oncpu.folded_text
  local all = under(on, "lib_spin")
  T.ok(all > 100, "lib_spin samples: " .. all)
  T.ok(under(on, "main;lib_spin") / all >= 0.95, string.format("%d of %d lib_spin samples reach main (%s)",
    under(on, "main;lib_spin"), all, walk_report(res, ";main;")))
end)

local RUST = [[
#[repr(C)]
struct Timespec { tv_sec: i64, tv_nsec: i64 }
extern "C" { fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32; }
fn cpu_now() -> f64 { // CLOCK_THREAD_CPUTIME_ID
    let mut t = Timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { clock_gettime(3, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}
pub mod work {
    #[inline(never)]
    pub fn alpha_spin(mut x: u64, n: u64) -> u64 {
        for _ in 0..n { x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); }
        x
    }
    #[inline(never)]
    pub fn beta_spin(mut x: u64, n: u64) -> u64 {
        for _ in 0..n { x = x.wrapping_mul(6364136223846793005).wrapping_add(1); }
        x
    }
}
fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let t0 = cpu_now();
    let (mut s, mut ta, mut tb) = (1u64, 0f64, 0f64);
    while cpu_now() - t0 < secs {
        let a = cpu_now();
        s = work::alpha_spin(s, std::hint::black_box(8_000_000));
        s = work::alpha_spin(s, std::hint::black_box(8_000_000));
        let b = cpu_now();
        s = work::beta_spin(s, std::hint::black_box(8_000_000));
        ta += b - a;
        tb += cpu_now() - b;
    }
    println!("{:.6} {:.6} {}", ta, tb, s);
}
]]

T.case("Rust release build (rustc -O): demangled names, the 2:1 split within 3 points", function()
  if not proc.which("rustc") then T.skip("rustc not installed") end
  need_perf()
  local exe = build("hot", "rs", RUST, "rustc")
  local res = profile({ exe, "1.0" })
  local ta, tb = res.result.stdout:match("^(%S+) (%S+)")
  local truth = tonumber(ta) / (tonumber(ta) + tonumber(tb))
  local alpha, total = under(res.oncpu.folded_text, "hot::work::alpha_spin")
  local beta = under(res.oncpu.folded_text, "hot::work::beta_spin")
  near_share(alpha, total, truth, "alpha_spin's share", res)
  near_share(beta, total, 1 - truth, "beta_spin's share", res)
  T.ok(under(res.oncpu.folded_text, "main") / total >= 0.95)
  T.match(res.oncpu.symbols["hot::work::alpha_spin"].mangled, "^_ZN3hot4work10alpha_spin17h%x+E$")
end)

-- Code run from an anonymous executable mapping (as a JIT's): walks stop there and say so.
local JIT = [[
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(void) {
  static const unsigned char loop[] = {0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3}; /* dec %rdi; jnz .-3; ret */
  void *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) return 1;
  memcpy(code, loop, sizeof loop);
  void (*fn)(long) = (void (*)(long))code;
  double t0 = now();
  while (now() - t0 < 0.5) fn(10000000);
  puts("done");
  return 0;
}
]]

T.case("a JIT-like anonymous code region: the walk stops there, the stack is counted truncated and warned", function()
  need_perf()
  local exe = build("jit", "c", JIT, "gcc")
  local res = profile({ exe })
  local u = res.oncpu.unwind
  T.ok(u.reasons.no_mapping and u.reasons.no_mapping / u.walks >= 0.9,
    "walks stopped in the anonymous region: " .. require("wb.json").encode(u.reasons))
  T.ok(u.truncated_fraction >= 0.9)
  T.ok(u.reach_entry_fraction < 0.1, "no invented callers")
  local warned = false
  for _, w in ipairs(res.warnings) do warned = warned or w:find("truncated", 1, true) ~= nil end
  T.ok(warned, "a truncation warning")
end)

T.case("demangle: C++ and Rust (legacy and v0) names; other names are not mangled", function()
  T.eq(unwind.demangle("_ZN3app6Worker4spinEl"), "app::Worker::spin(long)")
  T.eq(unwind.demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"), "core::ptr::drop_in_place")
  T.eq(unwind.demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo")
  T.eq(unwind.demangle("main"), nil)
  T.eq(unwind.demangle("_Zjunk"), nil)
end)

T.case("object: what a file offers the unwinder; misuse raises", function()
  local exe = build("split0", "c", SPLIT, "gcc")
  local o = unwind.object(exe)
  T.eq({ o.eh_frame, o.debug_info, o.frame_pointers }, { true, true, false })
  T.match(o.build_id, "^%x+$")
  local missing = unwind.object("/nonexistent")
  T.eq({ missing.eh_frame, missing.debug_info }, { false, false })
  local u <close> = unwind.new()
  local pcs, stop = u:walk(1, { ip = 0x1234, sp = 0x1000, bp = 0 }, "")
  T.eq(pcs, { 0x1234 })
  T.eq(stop, "no_mapping")
  T.raises(function() u:walk(1, { ip = 1 }, "") end, "regs.sp")
  T.raises(function() u:walk(1, { ip = 1, sp = 1, bp = 1 }, "", 0) end, "1..1024")
  T.raises(function() capture.run { argv = { "true" }, unwind = "dwarf", method = "bpf", stack_size = 32768 } end,
    "needs method")
  T.raises(function() require("wb.bpf").open { ustack = 100 } end, "ustack")
  T.raises(function() capture.run { argv = { "true" }, unwind = "lbr" } end, "unwind must be")
  T.raises(function() capture.run { argv = { "true" }, unwind = "dwarf", stack_size = 100 } end, "stack_size")
  T.raises(function() perf.sampler(1, { unwind = "dwarf", stack_size = 12 }) end, "stack_size")
  u:close()
  T.raises(function() u:stats() end, "closed")
  T.match(tostring(u), "closed")
end)

T.case("wb profile unwind=dwarf: the figures in the manifest and the summary, symbolization's cost per object", function()
  need_perf()
  local exe = build("split0", "c", SPLIT, "gcc")
  local out = T.tmpdir() .. "/run"
  local res = T.wb({ "run", T.root() .. "/recipes/profile.lua", "unwind=dwarf", "freq=499", "-o", out, "--", exe, "0.5" })
  T.eq(res.code, 0, res.stderr)
  local run = T.manifest(out).runs[1]
  T.eq(run.method, require("wb.bpf").available() and "bpf" or "perf_event")
  local size = run.method == "bpf" and 16376 or 8192 -- the defaults: all eBPF copies, perf's
  T.match(res.stdout, "unwinding: CFI from " .. size .. "%-byte stack copies; +[%d.]+%% of stacks reach main")
  T.ok(run.unwind.reach_entry_fraction >= 0.95 and run.metrics.reach_entry_fraction == run.unwind.reach_entry_fraction)
  T.ok(run.metrics.truncated_fraction <= 0.05)
  T.ok(fs.read(out .. "/profiles/profile.oncpu.folded"):find(";main;outer_alpha;churn ", 1, true))
  -- what naming the frames cost: each object's addresses and seconds, summing to the totals
  local c = run.symbolize
  T.ok(c.seconds > 0 and c.addresses > 0)
  local secs, addrs, by_path = 0, 0, {}
  for i, o in ipairs(c.objects) do
    secs, addrs, by_path[o.path] = secs + o.seconds, addrs + o.addresses, o
    if i > 1 then T.ok(o.seconds <= c.objects[i - 1].seconds, "the most costly object first") end
  end
  T.near(secs, c.seconds, 1e-6)
  T.eq(addrs, c.addresses)
  T.ok(by_path[fs.realpath(exe)] and by_path[fs.realpath(exe)].addresses > 0, "the program's addresses")
  T.ok(by_path["[kernel.kallsyms]"], "the kernel's")
  T.match(res.stdout, "\n  symbolized: [%d,]+ addresses in [^;]+; most: [^\n]+\n")
  -- the report: the quality figures, and per object how it was unwound and what naming it cost
  local html = assert(fs.read(out .. "/report.html"))
  T.match(html, "<h2[^>]*>Profile quality</h2>")
  T.match(html, "on%-CPU stacks reaching main, _start or start_thread</td><td[^>]*>%d+%.%d%%")
  local row = html:match("<tr><td>" .. fs.realpath(exe):gsub("%p", "%%%0") .. "</td>(.-)</tr>")
  T.ok(row and row:find(">cfi<", 1, true) and row:find("addresses, ", 1, true), "the program's row: " .. tostring(row))
end)

-- The 2:1 program, then four functions that block in libc: sleeper in nanosleep (25 x 20 ms),
-- pipe_reader in read() on a pipe that a child writes every 50 ms (5 times), joiner in
-- pthread_join on a thread that spins 0.2 s, reap in waitpid on a child that sleeps 0.2 s. It
-- measures the wall time of those calls itself (a second output line), since a loaded machine
-- stretches them.
local BLOCKING = SPLIT:gsub("int main%(", [[
static double wall(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static double slept, read_wait, join_wait, reap_wait;
__attribute__((noinline)) void sleeper(void) {
  struct timespec t = {0, 20000000};
  double t0 = wall();
  for (int i = 0; i < 25; i++) nanosleep(&t, NULL);
  slept = wall() - t0;
}
__attribute__((noinline)) void pipe_reader(void) {
  int fds[2];
  if (pipe(fds)) return;
  if (fork() == 0) {
    struct timespec t = {0, 50000000};
    for (int i = 0; i < 5; i++) {
      nanosleep(&t, NULL);
      if (write(fds[1], "x", 1) != 1) break;
    }
    _exit(0);
  }
  char c;
  for (int i = 0; i < 5; i++) {
    double t0 = wall();
    if (read(fds[0], &c, 1) != 1) break;
    read_wait += wall() - t0;
  }
  wait(NULL);
}
static void *spinner(void *arg) {
  double t0 = wall();
  while (wall() - t0 < 0.2) sink++;
  return arg;
}
__attribute__((noinline)) void joiner(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, spinner, NULL)) return;
  double t0 = wall();
  pthread_join(t, NULL);
  join_wait = wall() - t0;
}
__attribute__((noinline)) void reap(void) {
  pid_t pid = fork();
  if (pid == 0) {
    struct timespec t = {0, 200000000};
    nanosleep(&t, NULL);
    _exit(0);
  }
  double t0 = wall();
  waitpid(pid, NULL, 0);
  reap_wait = wall() - t0;
}
int main(]], 1)
BLOCKING = BLOCKING:gsub("  printf%(", "  sleeper();\n  pipe_reader();\n  joiner();\n  reap();\n  printf(", 1)
BLOCKING = BLOCKING:gsub("  return 0;\n}\n$",
  "  printf(\"%%.6f %%.6f %%.6f %%.6f\\n\", slept, read_wait, join_wait, reap_wait);\n%0", 1)
BLOCKING = "#include <pthread.h>\n#include <sys/wait.h>\n#include <unistd.h>\n" .. BLOCKING

-- {root frame = folded text of its lines}
local function by_root(folded)
  local t = {}
  for line in folded:gmatch("[^\n]+") do
    local root = line:match("^[^;]*")
    t[root] = (t[root] or "") .. line .. "\n"
  end
  return t
end

-- The seconds under frame `fn` whose next frame (the libc function it called) matches `callee`.
local function under_call(folded, fn, callee)
  local n = 0
  for line in folded:gmatch("[^\n]+") do
    local next_frame = (line:match("^(.*) %d+$") .. ";"):match(";" .. fn:gsub("%p", "%%%0") .. ";([^;]*);")
    if next_frame and next_frame:find(callee) then n = n + tonumber(line:match(" (%d+)$")) end
  end
  return n / 1e9
end

for _, variant in ipairs({ { "-O2 -g", {} }, { "-O2 -g -fno-omit-frame-pointer", { "-fno-omit-frame-pointer" } } }) do
  T.case("eBPF, default unwinding, " .. variant[1] .. ": the 2:1 split on-CPU; off-CPU time under sleeper, "
    .. "pipe_reader, joiner and reap (the callers of nanosleep, read, pthread_join, waitpid) within 10%", function()
    local ok, why = require("wb.bpf").available()
    if not ok then T.skip("eBPF unavailable: " .. why) end
    local exe = build("blocking" .. #variant[2], "c", BLOCKING, "gcc", { "-pthread", table.unpack(variant[2]) })
    local res = assert(capture.run { argv = { exe, "1.0" }, freq = 999, stdout = "capture", method = "bpf" })
    T.ok(res.ok, "the program ran")
    local ta, tb, slept, read_wait, join_wait, reap_wait =
      res.result.stdout:match("^(%S+) (%S+)\n(%S+) (%S+) (%S+) (%S+)\n$")
    local truth = tonumber(ta) / (tonumber(ta) + tonumber(tb))
    slept, read_wait, join_wait, reap_wait = tonumber(slept), tonumber(read_wait), tonumber(join_wait),
      tonumber(reap_wait)
    -- (the spinner and the reaped child start their 0.2 s as soon as they exist, which can be
    -- before the caller reads its clock after pthread_create or fork: a sanitized pthread_create
    -- returned after its thread had spun a while)
    T.ok(slept >= 0.5 and read_wait > 0.1 and join_wait >= 0.15 and reap_wait >= 0.15,
      string.format("the planted waits: slept %.3f, read %.3f, join %.3f, reap %.3f s", slept, read_wait, join_wait,
        reap_wait))
    local on = res.oncpu.folded_text
    local alpha, total = under(on, "outer_alpha")
    local beta = under(on, "outer_beta")
    T.ok(alpha + beta > 500, "samples: " .. alpha + beta)
    near_share(alpha, alpha + beta, truth, "outer_alpha's share of the split (joiner's thread spins too)", res)
    T.ok((under(on, "main") + under(on, "start_thread")) / total >= 0.95, "on-CPU samples reach main or start_thread")
    local off = res.offcpu.folded_text
    local lost = string.format("%s s of it under [stack lost] (%s intervals), %s intervals lost",
      tostring(res.offcpu.stack_lost_seconds), tostring(res.offcpu.stack_lost), tostring(res.offcpu.lost))
    -- within tolerance of the program's own measurement; or, when the ring had no room for some
    -- records (a drain that fell behind beside load), short of it by no more than the time wb kept
    -- under [stack lost], and said
    local function blocked(fn, callee, truth, share, what)
      local got = under_call(off, fn, callee)
      local lines = {}
      for line in off:gmatch("[^\n]+") do
        if line:find(";" .. fn .. ";", 1, true) then lines[#lines + 1] = line end
      end
      local msg = string.format("seconds blocked in %s under %s (within %d%%; %s); its stacks:\n%s", what, fn,
        share * 100, lost, table.concat(lines, "\n"))
      if res.offcpu.stack_lost > 0 and got < truth then
        T.ok(got <= truth * (1 + share) and got + res.offcpu.stack_lost_seconds >= truth * (1 - share), msg)
        T.match(table.concat(res.warnings, "\n"), "off%-CPU intervals %(.-%) are under %[stack lost%]")
      else
        T.near(got, truth, share * truth, msg)
      end
    end
    blocked("sleeper", "nanosleep", slept, 0.05, "nanosleep")
    blocked("pipe_reader", "^read", read_wait, 0.1, "read")
    blocked("joiner", "pthread_%a*join", join_wait, 0.1, "pthread_join")
    blocked("reap", "wait", reap_wait, 0.1, "waitpid")
    local main_pid = tostring(res.processes[1])
    local mine
    for root, text in pairs(by_root(off)) do
      if root:sub(-#main_pid - 1) == "-" .. main_pid then mine = text end
    end
    local named = 0
    for _, fn in ipairs({ "sleeper", "pipe_reader", "joiner", "reap" }) do named = named + under(mine, fn) end
    local blocked = 0
    for line in mine:gmatch("[^\n]+") do
      if not line:find("[run queue]", 1, true) and not line:find("[stack lost]", 1, true) then
        blocked = blocked + tonumber(line:match(" (%d+)$"))
      end
    end
    T.ok(named / blocked >= 0.95, string.format("%.1f%% of the blocked time names the user function", 100 * named / blocked))
    local probe = T.probe_frame(off .. "\n" .. on)
    T.ok(not probe, "no frame of wb's own probes: " .. tostring(probe))
    T.ok(res.offcpu.unwind.reach_entry_fraction >= 0.95, "off-CPU stacks reach main")
    T.ok(res.oncpu.unwind.truncated_fraction <= 0.05)
    if res.oncpu.lost > 0 then -- a drain that fell behind beside load: said
      T.match(table.concat(res.warnings, "\n"), res.oncpu.lost .. " samples lost %(a full map or ring buffer%)")
    end
  end)
end

-- CPU time in a library loaded after the first samples (dlopen), so after the snapshot of the
-- process's mappings that eBPF's records are walked with.
local DLOPEN = [[
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
volatile unsigned long sink;
__attribute__((noinline)) void before(void) { double t0 = cpu(); while (cpu() - t0 < 0.3) sink++; }
int main(void) {
  before();
  void *h = dlopen("libz.so.1", RTLD_NOW);
  if (!h) return 1;
  unsigned long (*crc)(unsigned long, const unsigned char *, unsigned) =
      (unsigned long (*)(unsigned long, const unsigned char *, unsigned))dlsym(h, "crc32");
  static unsigned char buf[1 << 16];
  unsigned long c = 0;
  double t0 = cpu();
  while (cpu() - t0 < 0.5) c = crc(c, buf, sizeof buf);
  printf("%lu\n", c);
  return 0;
}
]]

-- A short process: some 20 ms of CPU under main, then it exits.
local SHORT = [[
volatile unsigned long sink;
__attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; i++) sink += i * i; }
int main(void) { spin(24000000); return 0; }
]]

-- Whether a folded line is a sample taken while the process had no user stack to walk: in exec,
-- after the new image replaced the old one (the registers are the old image's), or in exit,
-- once its memory is being released. No profiler can walk those; wb shows the one frame the
-- registers give.
local function no_user_stack(line)
  return line:find(";do_exit_[k];", 1, true) or line:find(";begin_new_exec_[k];", 1, true)
    or line:find(";load_elf_binary_[k];", 1, true)
end

T.case("eBPF, default unwinding: processes that exit before their records are drained (a loop of short "
  .. "children) still have complete stacks, from the side-band mappings", function()
  local ok, why = require("wb.bpf").available()
  if not ok then T.skip("eBPF unavailable: " .. why) end
  local exe = build("short", "c", SHORT, "gcc")
  local res = assert(capture.run { cmd = "for i in 1 2 3 4 5 6 7 8 9 10; do " .. exe .. "; done", shell = true,
    freq = 999, stdout = "capture", method = "bpf", root = "comm" })
  T.ok(res.ok, "the loop ran")
  local short = {}
  for line in res.oncpu.folded_text:gmatch("[^\n]+") do
    if line:match("^short;") and not no_user_stack(line) then short[#short + 1] = line end
  end
  local text = table.concat(short, "\n")
  local _, total = under(text, "main")
  T.ok(total >= 50, "samples of the short processes: " .. total)
  -- the loader's start-up (under ld.so's _start) and exit (under __libc_start_call_main, after
  -- main returned) are a few percent of a 20 ms process, and complete stacks too; the samples in
  -- the kernel's exec and exit that have no user stack (no_user_stack) were left out above: 2-3%
  -- of these samples, up to 5.7% in one of 8 runs, which a 95% bar cannot absorb
  local cu = require("wb.capture_unwind")
  local reach = cu.reach_entry(text)
  local short_of = {}
  for _, line in ipairs(short) do
    if cu.reach_entry(line) == 0 and #short_of < 5 then short_of[#short_of + 1] = line end
  end
  T.ok(reach >= 0.95, string.format("%.1f%% of %d samples of short reach an entry; walks that do not: %s",
    100 * reach, total, table.concat(short_of, " | ")))
  T.ok(under(text, "spin") / total >= 0.9, "under spin")
  T.ok(not text:find("ld%-linux[^;]*%+0x"), "the loader's frames are named: " .. (text:match("[^\n]*ld%-linux[^\n]*") or ""))
end)

T.case("a walk that returns into ld.so's entry code (_start, which has no CFI) is complete; past that "
  .. "code, the same object stops it as no_cfi; a walk without a stack copy stops as no_stack", function()
  local p <close> = assert(proc.spawn { argv = { "sleep", "10" } })
  -- the path and load address of the object whose path matches `pattern`, once sleep has mapped it
  local function mapped(pattern)
    local file, at
    T.wait_until(pattern .. " mapped in sleep", 10, function()
      for line in (fs.read("/proc/" .. p.pid .. "/maps") or ""):gmatch("[^\n]+") do
        local lo, off, path = line:match("^(%x+)%-%x+ %S+ (%x+) %S+ %d+%s+(/%S*)$")
        if path and path:find(pattern) and tonumber(off, 16) == 0 then file, at = path, tonumber(lo, 16) end
      end
      return file
    end)
    return file, at
  end
  local ld, base = mapped("ld%-linux")
  local entry = tonumber(run({ "readelf", "-h", ld }):match("Entry point address:%s+0x(%x+)"), 16)
  local u <close> = unwind.new()
  local sp = 0x7ff000000000
  local pcs, stop = u:walk(p.pid, { ip = base + entry + 8, sp = sp, bp = 0 }, "")
  T.eq({ #pcs, stop }, { 1, "complete" })
  T.eq(require("wb.sym").lookup(ld, entry + 7), "_start", "the untyped label is the name")
  pcs, stop = u:walk(p.pid, { ip = base + entry + 24, sp = sp, bp = 0 }, "")
  T.eq(stop, "no_cfi")
  -- in a function with CFI: no copy at all is no_stack (an exiting process), a short one off_stack
  local libc, libc_base = mapped("/libc%.so%.6$")
  local fn = tonumber(run({ "nm", "-D", libc }):match("(%x+) [TW] clock_nanosleep"), 16)
  local u2 <close> = unwind.new() -- its snapshot is taken now, with libc mapped
  pcs, stop = u2:walk(p.pid, { ip = libc_base + fn + 4, sp = sp, bp = 0 }, "")
  T.eq({ #pcs, stop }, { 1, "no_stack" })
  pcs, stop = u2:walk(p.pid, { ip = libc_base + fn + 4, sp = sp, bp = 0 }, "1234")
  T.eq({ #pcs, stop }, { 1, "off_stack" })
end)

-- A function whose epilogue pops rbp before its ret, with the CFI GCC writes for it: the save rule
-- for rbp stays in force to the ret, though its slot is below sp by then.
local EPILOGUE = [[
#include <unistd.h>
__asm__(".text\n.globl popper\n.type popper,@function\npopper:\n.cfi_startproc\n"
        "push %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset rbp, -16\n"
        "push %rbx\n.cfi_def_cfa_offset 24\n.cfi_offset rbx, -24\n"
        "pop %rbx\n.cfi_def_cfa_offset 16\npop %rbp\n.cfi_def_cfa_offset 8\n"
        ".globl popper_ret\npopper_ret:\nret\n.cfi_endproc\n.size popper, .-popper\n");
void popper(void);
int main(void) { popper(); pause(); return 0; }
]]

T.case("a sample in an epilogue after rbp was popped (its save slot below sp): rbp is the caller's, the walk goes on", function()
  local exe = build("epilogue", "c", EPILOGUE, "gcc")
  local p <close> = assert(proc.spawn { argv = { exe } })
  local base
  T.wait_until("the program mapped", 10, function()
    for line in (fs.read("/proc/" .. p.pid .. "/maps") or ""):gmatch("[^\n]+") do
      local lo, off, path = line:match("^(%x+)%-%x+ %S+ (%x+) %S+ %d+%s+(%S+)$")
      if path == exe and tonumber(off, 16) == 0 then base = tonumber(lo, 16) end
    end
    return base
  end)
  local ret = tonumber(run({ "nm", exe }):match("(%x+) T popper_ret"), 16)
  local u <close> = unwind.new()
  local sp = 0x7ff000000000
  -- the copy holds only the return address (0: the end of the stack); rbp's slot, at sp - 8, is not in it
  local pcs, stop = u:walk(p.pid, { ip = base + ret, sp = sp, bp = 0x1234 }, string.pack("<I8", 0))
  T.eq({ #pcs, stop }, { 1, "complete" })
end)

T.case("eBPF, unwind=dwarf: code mapped after the first samples (dlopen) is walked too", function()
  local ok, why = require("wb.bpf").available()
  if not ok then T.skip("eBPF unavailable: " .. why) end
  local exe = build("dl", "c", DLOPEN, "gcc")
  local res = profile({ exe }, 999, "bpf")
  local u = res.oncpu.unwind
  local libz = 0
  for _, o in ipairs(u.objects) do
    if o.path:find("libz", 1, true) then libz = o.cfi + o.fp end
  end
  T.ok(libz > 50, "frames walked in libz: " .. libz)
  T.ok(u.reach_entry_fraction >= 0.95, string.format("%.1f%% reach main", 100 * u.reach_entry_fraction))
end)

-- A 300-deep recursion (each frame holds a volatile local, so none is a tail call or a loop)
-- whose leaf spins.
local DEEP = [[
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
volatile unsigned long sink;
__attribute__((noinline)) unsigned long deep_leaf(long n) {
  unsigned long x = sink;
  for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}
__attribute__((noinline)) unsigned long deep(int d, long n) {
  volatile int keep = d;
  unsigned long r = d == 0 ? deep_leaf(n) : deep(d - 1, n);
  return r + keep;
}
int main(int argc, char **argv) {
  int depth = atoi(argv[1]);
  double t0 = cpu();
  while (cpu() - t0 < 0.6) sink += deep(depth, 2000000);
  printf("%lu\n", sink);
  return 0;
}
]]

-- The largest count of frame `fn` in one stack, and the samples of stacks marked truncated.
local function max_run(folded, fn)
  local most, truncated = 0, 0
  for line in folded:gmatch("[^\n]+") do
    local n = 0
    for f in (line:match("^(.*) %d+$") .. ";"):gmatch("([^;]*);") do
      if f == fn then n = n + 1 end
    end
    most = math.max(most, n)
    if line:find("[truncated after ", 1, true) then truncated = truncated + tonumber(line:match(" (%d+)$")) end
  end
  return most, truncated
end

T.case("a 300-deep recursion: with 8 KiB copies (perf's default) its stacks are marked truncated with their "
  .. "depth and the warning names the key; with the default (eBPF: 16376) they reach main", function()
  need_perf()
  local exe = build("deep", "c", DEEP, "gcc")
  local res = assert(capture.run { argv = { exe, "300" }, freq = 499, stdout = "capture", offcpu = false,
    stack_size = 8192 })
  local on = res.oncpu.folded_text
  local _, total = under(on, "deep_leaf")
  local most, truncated = max_run(on, "deep")
  T.ok(truncated / total >= 0.9, string.format("%d of %d samples marked truncated", truncated, total))
  for line in on:gmatch("[^\n]+") do -- the mark gives the count of user frames after it
    local depth, rest = line:match("^[^;]*;%[truncated after (%d+) frames%];(.*) %d+$")
    if depth then
      local n = 0
      for f in (rest .. ";"):gmatch("([^;]*);") do
        if not f:find("_%[k%]$") then n = n + 1 end
      end
      T.eq(n, tonumber(depth), "frames after the mark")
      if rest:find(";deep_leaf", 1, true) then T.ok(n > 100, "walked deep: " .. n) end
    end
  end
  T.ok(most > 100 and most < 301)
  T.ok(res.oncpu.unwind.reasons.off_stack >= 0.9 * res.oncpu.unwind.walks, "stopped at the end of the copy")
  T.ok(not on:find(";main;deep;[^\n]*;deep_leaf"), "no caller invented past the copy")
  local hint
  for _, w in ipairs(res.warnings) do hint = hint or w:match("ran past the end of their 8192%-byte stack copies: raise stack_size %(stack_size=16376, or up to 65528 with method=perf_event%)") end
  T.ok(hint, "the warning says which key to raise: " .. table.concat(res.warnings, " | "))
  local bpf_ok = require("wb.bpf").available()
  res = assert(capture.run { argv = { exe, "300" }, freq = 499, stdout = "capture", offcpu = false,
    stack_size = not bpf_ok and 16376 or nil })
  T.eq(res.oncpu.unwind.stack_size, 16376, bpf_ok and "eBPF's default" or "asked for")
  on = res.oncpu.folded_text
  _, total = under(on, "deep_leaf")
  T.ok(under(on, "main") / total >= 0.95, string.format("%d of %d samples reach main", under(on, "main"), total))
  T.eq((max_run(on, "deep")), 302, "the root frame (the process) and all 301 frames of deep")
  T.ok(not on:find("%[truncated[^\n]*;deep_leaf"), "no stack of the recursion truncated")
  -- frame pointers walked by the kernel stop at its 127 frames: marked too
  local fp_exe = build("deepfp", "c", DEEP, "gcc", { "-fno-omit-frame-pointer" })
  res = assert(capture.run { argv = { fp_exe, "300" }, freq = 499, stdout = "capture", offcpu = false, unwind = "fp" })
  on = res.oncpu.folded_text
  _, total = under(on, "deep_leaf")
  local marked = 0
  for line in on:gmatch("[^\n]+") do
    if line:find(";[truncated after 127 frames];deep;", 1, true) then marked = marked + tonumber(line:match(" (%d+)$")) end
  end
  T.ok(marked / total >= 0.9, string.format("%d of %d samples marked at the kernel's limit", marked, total))
end)

T.case("method perf_cli: perf record --call-graph dwarf by default (the split and main), frame pointers with "
  .. "unwind = \"fp\"", function()
  if not capture.profiler("perf").available then T.skip("perf: " .. capture.profiler("perf").notes) end
  local exe = build("split0", "c", SPLIT, "gcc")
  local res = assert(capture.run { argv = { exe, "0.6" }, freq = 499, method = "perf_cli", stdout = "capture",
    offcpu = false })
  T.eq(res.method, "perf_cli")
  local ta, tb = res.result.stdout:match("^(%S+) (%S+)\n$")
  local truth = tonumber(ta) / (tonumber(ta) + tonumber(tb))
  local alpha, total = under(res.oncpu.folded_text, "outer_alpha")
  T.ok(total > 150, "samples: " .. total)
  T.near(alpha / total, truth, 0.05, "outer_alpha's share")
  T.ok(under(res.oncpu.folded_text, "main") / total >= 0.95, "perf's dwarf stacks reach main")
  res = assert(capture.run { argv = { exe, "0.3" }, freq = 499, method = "perf_cli", stdout = "capture",
    offcpu = false, unwind = "fp" })
  alpha, total = under(res.oncpu.folded_text, "outer_alpha")
  T.ok(alpha / total < 0.1, "frame pointers lose churn's caller in this build")
end)

T.case("Debian's sqlite3 shell reading SQL from stdin (over 8 KiB on the stack above its working frames): "
  .. "eBPF's default copies reach main, perf's 8 KiB reach none", function()
  local ok, why = require("wb.bpf").available()
  if not ok then T.skip("eBPF unavailable: " .. why) end
  local sqlite = "/usr/bin/sqlite3"
  if not fs.exists(sqlite) then T.skip("Debian's sqlite3 not installed (make deps installs it)") end
  local sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 3000000) "
    .. "SELECT count(*), sum(x % 7) FROM c;\n"
  local function reach(stack_size)
    local res = assert(capture.run { argv = { sqlite, ":memory:" }, stdin = { data = sql }, freq = 499,
      stdout = "capture", offcpu = false, python = false, memory = false, stack_size = stack_size })
    T.eq(res.result.stdout, "3000000|8999997\n")
    T.eq(res.method, "bpf")
    T.ok(res.oncpu.samples > 100, "samples: " .. res.oncpu.samples)
    return res.oncpu.unwind.reach_entry_fraction, res.oncpu.unwind.stack_size
  end
  local default, size = reach(nil)
  T.eq(size, 16376)
  T.ok(default >= 0.95, string.format("%.1f%% of stacks reach main", 100 * default))
  local short = reach(8192)
  T.ok(short < 0.5, string.format("with 8 KiB copies %.1f%% reach main (the control)", 100 * short))
end)

T.case("Debian's python3 (no frame pointers), default unwinding: native stacks reach main through "
  .. "_PyEval_EvalFrameDefault", function()
  local py = "/usr/bin/python3"
  if not fs.exists(py) then T.skip("Debian's /usr/bin/python3 not installed") end
  need_perf()
  -- 1 s of loop: the interpreter's start-up (imports, whose C stacks can outgrow the 8 KiB copy)
  -- stays a small share of the samples even on a loaded machine (0.6 s gave 89% there once)
  local loop = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: sum(range(1000))"
  local res = assert(capture.run { argv = { py, "-c", loop }, freq = 499, stdout = "capture", offcpu = false,
    python = false })
  local on = res.oncpu.folded_text
  local _, total = under(on, "_PyEval_EvalFrameDefault")
  local through = 0
  for line in on:gmatch("[^\n]+") do
    if line:find(";__libc_start_call_main;.-Py_BytesMain;.-;_PyEval_EvalFrameDefault;") then
      through = through + tonumber(line:match(" (%d+)$"))
    end
  end
  T.ok(total > 100, "samples: " .. total)
  T.ok(through / total >= 0.9, string.format("%d of %d samples reach libc's start through Py_BytesMain and the "
    .. "eval loop (%s)", through, total, walk_report(res, ";Py_BytesMain;")))
  T.ok(res.oncpu.unwind.reach_entry_fraction >= 0.9)
  for _, w in ipairs(res.warnings) do T.ok(not w:find("frame pointers", 1, true), w) end
end)

local TWO_LINES = [[
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
volatile unsigned long sink;
__attribute__((noinline)) unsigned long two_loops(unsigned long x, long n) {
  for (long i = 0; i < 2 * n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL; // LOOP_A
  for (long i = 0; i < n; i++) x = x * 2862933555777941757UL + 3037000493UL; // LOOP_B
  return x;
}
int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1.0, t0 = cpu();
  while (cpu() - t0 < secs) sink += two_loops(sink, 4000000);
  printf("%lu\n", sink);
  return 0;
}
]]

T.case("speedscope and trace: the leaf's file:line per sampled address (two hot lines of one function, 2:1)", function()
  need_perf()
  local exe, src = build("lines", "c", TWO_LINES, "gcc")
  local out = T.tmpdir()
  local res = assert(capture.run { argv = { exe, "0.8" }, freq = 499, stdout = "capture", offcpu = false, dir = out,
    name = "lines" })
  local doc = assert(require("wb.json").decode(fs.read(res.oncpu.speedscope)))
  local prof = doc.profiles[1]
  local by_line, total = {}, 0
  for i, sample in ipairs(prof.samples) do
    local leaf = doc.shared.frames[sample[#sample] + 1]
    total = total + prof.weights[i]
    if leaf.name == "two_loops" then
      T.eq(leaf.file, src)
      by_line[leaf.line] = (by_line[leaf.line] or 0) + prof.weights[i]
    end
  end
  local a, b = by_line[line_of(TWO_LINES, "// LOOP_A")] or 0, by_line[line_of(TWO_LINES, "// LOOP_B")] or 0
  T.ok(a + b >= 0.9 * total, string.format("%d + %d of %d samples on the two lines", a, b, total))
  T.near(a / (a + b), 2 / 3, 0.05, "LOOP_A's share")
  T.eq(prof.endValue, res.oncpu.samples)
  -- the process's span in the Chrome trace names the same two lines, LOOP_A's first, near 2:1
  local span
  for _, e in ipairs(assert(require("wb.json").decode(fs.read(res.trace))).traceEvents) do
    if e.ph == "X" and e.name:find("^lines") then span = e end
  end
  T.ok(span and span.args and span.args.oncpu, "the workload's span has its hot lines")
  local shares = {}
  for i, entry in ipairs(span.args.oncpu) do
    T.match(entry, "^%S.* [%d.]+%%$", "function [file:line] share") -- a frame without DWARF has no line
    if i <= 2 then
      local name, file, line, share = entry:match("^(%S+) (%S+):(%d+) ([%d.]+)%%$")
      T.eq({ name, file }, { "two_loops", src }, entry)
      shares[tonumber(line)] = tonumber(share)
    end
  end
  local sa, sb = shares[line_of(TWO_LINES, "// LOOP_A")], shares[line_of(TWO_LINES, "// LOOP_B")]
  T.ok(sa and sb and sa > sb, "LOOP_A first, then LOOP_B")
  T.near(sa / (sa + sb), 2 / 3, 0.05, "LOOP_A's share in the trace")
end)

T.case("libc6-dbg: libc's inline chains and lines through its build-id debug file, as addr2line -i -f gives them",
  function()
  local libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
  local o = unwind.object(libc)
  if not o.debug_file then T.skip("libc6-dbg not installed (make deps installs it)") end
  T.eq(o.debug_file, string.format("/usr/lib/debug/.build-id/%s/%s.debug", o.build_id:sub(1, 2), o.build_id:sub(3)))
  T.ok(o.debug_info)
  local base = tonumber(run({ "nm", o.debug_file }):match("(%x+) t __futex_abstimed_wait_common\n"), 16)
  T.ok(base, "__futex_abstimed_wait_common in the debug file")
  local inlined = 0
  for off = 0, 160, 4 do
    local want = {}
    for name, pos in run({ "addr2line", "-i", "-f", "-e", o.debug_file, string.format("0x%x", base + off) })
      :gmatch("([^\n]+)\n([^\n]+)\n") do
      want[#want + 1] = { name = name, line = tonumber(pos:match(":(%d+)")) }
    end
    local got = unwind.symbolize(libc, base + off)
    T.eq(#got, #want, string.format("frames at +0x%x", off))
    for i, f in ipairs(got) do
      T.eq(f.mangled or f.name, want[i].name)
      T.eq(f.line, want[i].line)
    end
    if #got > 1 then inlined = inlined + 1 end
  end
  T.ok(inlined > 0, "some addresses hold inlined frames")
end)

-- Prints the inline chain of each address (hex arguments) of libc as a fresh wb gives it.
local LIBC_CHAINS = [[
local wb = require "wb"
return wb.recipe { run = function(ctx)
  for _, hex in ipairs(ctx.args) do
    for _, f in ipairs(wb.unwind.symbolize("/usr/lib/x86_64-linux-gnu/libc.so.6", tonumber(hex, 16))) do
      io.write(string.format("%s %s %s:%s %s\n", hex, f.name, f.file, f.line, tostring(f.inlined)))
    end
  end
end }
]]

T.case("compressed DWARF (libc6-dbg's) is read from an inflated copy made once per build id and contents, "
  .. "0600, with the same answers; a copy of another build id is not used", function()
  local libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
  local o = unwind.object(libc)
  if not o.debug_file then T.skip("libc6-dbg not installed (make deps installs it)") end
  T.ok(run({ "readelf", "-S", "-W", o.debug_file }):find("%.debug_info +PROGBITS +%x+ +%x+ +%x+ +%x+ +C"),
    "libc6-dbg's .debug_info is compressed")
  local addrs = {}
  for a in run({ "nm", o.debug_file }):gmatch("(%x+) [tT] [%w_]+\n") do
    if #addrs < 400 and tonumber(a, 16) % 7 == 0 then addrs[#addrs + 1] = string.format("%x", tonumber(a, 16) + 20) end
  end
  local dir = T.tmpdir()
  local script = dir .. "/chains.lua"
  assert(fs.write(script, LIBC_CHAINS))
  local function chains(cache_home)
    local res = T.wb({ "run", script, "--", table.unpack(addrs) }, { env = { XDG_CACHE_HOME = cache_home } })
    T.eq(res.code, 0, res.stderr)
    return res.stdout
  end
  local direct = chains("/proc/wb-no-cache") -- no cache can be made: libdw inflates in memory
  T.ok(select(2, direct:gsub(" true\n", "")) > 0, "some addresses hold inlined frames")
  T.eq(chains(dir .. "/cache"), direct) -- made
  local debug_dir = dir .. "/cache/wb/debug/"
  local name = run({ "ls", debug_dir }):match(o.build_id .. "%-%x+%.debug")
  T.ok(name and #name == #o.build_id + 1 + 64 + 6, "named by build id and BLAKE2b-256 of the debug file")
  T.eq(name:match("%-(%x+)%."), run({ "b2sum", "-l", "256", o.debug_file }):match("^%x+"))
  local copy = debug_dir .. name
  local st = assert(fs.stat(copy))
  T.eq(st.mode & 511, 384, "mode 0600")
  T.ok(not run({ "readelf", "-S", "-W", copy }):find("%.debug_info +PROGBITS +%x+ +%x+ +%x+ +%x+ +C"), "inflated")
  T.eq(chains(dir .. "/cache"), direct) -- used
  -- another file at its path (another build id's) is not used, and is replaced
  assert(fs.write(copy, assert(fs.read("/bin/true"))))
  os.execute("chmod 600 " .. copy)
  T.eq(chains(dir .. "/cache"), direct)
  T.eq(assert(fs.stat(copy)).size, st.size)
end)

-- A hot loop calling a tiny function of a shared library through its lazy PLT entry (so a share of
-- the samples is in the PLT stub), and a signal handler that does the work (raise() in a loop).
local TINY_LIB = [[
__attribute__((noinline)) unsigned long tiny(unsigned long x) { return x * 6364136223846793005UL + 1; }
]]
local PLT = [[
#include <stdio.h>
#include <time.h>
unsigned long tiny(unsigned long);
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
__attribute__((noinline)) unsigned long plt_caller(unsigned long x) {
  for (int i = 0; i < 1000000; i++) x = tiny(x);
  return x;
}
int main(void) {
  unsigned long x = 1;
  double t0 = cpu();
  while (cpu() - t0 < 0.6) x = plt_caller(x);
  printf("%lu\n", x);
  return 0;
}
]]
local SIGNAL = [[
#include <signal.h>
#include <stdio.h>
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
volatile unsigned long sink;
__attribute__((noinline)) void handler_spin(void) {
  unsigned long x = sink;
  for (long i = 0; i < 2000000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
  sink = x;
}
static void on_signal(int sig) { (void)sig; handler_spin(); }
__attribute__((noinline)) void signaller(void) { raise(SIGUSR1); __asm__ volatile(""); }
int main(void) {
  signal(SIGUSR1, on_signal);
  double t0 = cpu();
  while (cpu() - t0 < 0.6) signaller();
  printf("%lu\n", sink);
  return 0;
}
]]

T.case("PLT stubs and signal frames are stepped over: stacks reach main", function()
  need_perf()
  dir = dir or T.tmpdir()
  assert(fs.write(dir .. "/tiny.c", TINY_LIB))
  run({ "gcc", "-O2", "-g", "-shared", "-fPIC", "-o", dir .. "/libtiny.so", dir .. "/tiny.c" })
  local exe = build("plt", "c", PLT, "gcc", { "-L" .. dir, "-ltiny", "-Wl,-rpath," .. dir, "-Wl,-z,lazy" })
  local res = assert(capture.run { argv = { exe }, freq = 999, stdout = "capture", offcpu = false })
  local u = res.oncpu.unwind
  local _, total = under(res.oncpu.folded_text, "plt_caller")
  T.ok(total > 150, "samples: " .. total)
  T.ok(under(res.oncpu.folded_text, "main") / total >= 0.95,
    string.format("%d of %d samples reach main (%s)", under(res.oncpu.folded_text, "main"), total,
      walk_report(res, ";main;")))
  -- the PLTs are the program's and libtiny's; ld.so's lazy-binding resolver behind them keeps its
  -- CFA in rbx, which a walk cannot follow (a few microseconds per first call: rarely sampled)
  local checked = 0
  for _, o in ipairs(u.objects) do
    if o.path:match("/plt$") or o.path:find("libtiny", 1, true) then
      T.eq(o.stops.complex_rule, nil, "no walk stopped at a PLT rule in " .. o.path)
      checked = checked + 1
    end
  end
  T.eq(checked, 2, "the program and libtiny are among the objects walked")
  T.ok(under(res.oncpu.folded_text, "plt_caller;tiny@plt") > 0, "samples in the stub are named tiny@plt")
  T.ok(not res.oncpu.folded_text:find(";_init;", 1, true) and not res.oncpu.folded_text:find(";_init ", 1, true),
    "no frame is named _init")
  exe = build("sig", "c", SIGNAL, "gcc")
  res = assert(capture.run { argv = { exe }, freq = 999, stdout = "capture", offcpu = false })
  local on = res.oncpu.folded_text
  local spin
  spin, total = under(on, "handler_spin")
  T.ok(spin / total >= 0.5, "samples in the handler: " .. spin)
  local through = 0
  for line in on:gmatch("[^\n]+") do
    if line:find(";main;signaller;[^\n]*;__restore_rt;[^\n]*handler_spin") then -- on_signal tail-calls it
      through = through + tonumber(line:match(" (%d+)$"))
    end
  end
  T.ok(through / spin >= 0.95, string.format("%d of %d handler samples reach main through the signal frame",
    through, spin))
end)

-- What `wb help profile` says of a key ("default X"), or nil when the recipe has no such key.
local function profile_default(key)
  local res = T.wb({ "help", "profile" })
  return res.stdout:match("\n  " .. key .. " [^\n]- default (%S+)\n")
end

T.case("wb profile -- python3 (Debian's, no frame pointers), no options: native stacks through "
  .. "_PyEval_EvalFrameDefault, no frame-pointer warning", function()
  local py = "/usr/bin/python3"
  if not fs.exists(py) then T.skip("Debian's /usr/bin/python3 not installed") end
  need_perf()
  if (tonumber(os.getenv("WB_TEST_UNDER_LOAD") or "") or 0) > 0 then
    -- a known defect (issue 31): the reader of Python frames attaches when wb drains the first
    -- samples, and beside busy loops that drain can come after half the run (116 of 259 samples
    -- merged in one CI load pass); the quiet pass checks the merge
    T.skip("beside busy loops wb attaches the Python frame reader late (issue 31); checked in the quiet pass")
  end
  if profile_default("unwind") == "fp" then
    T.skip("recipes/profile.lua still defaults to unwind=fp (issue 16: its default becomes auto)")
  end
  local out = T.tmpdir() .. "/run"
  local res = T.wb({ "run", T.root() .. "/recipes/profile.lua", "freq=499", "offcpu=false", "-o", out, "--", py, "-c",
    "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: sum(range(1000))" })
  T.eq(res.code, 0, res.stderr)
  T.ok(not res.stdout:find("frame pointers", 1, true), res.stdout)
  local run = T.manifest(out).runs[1]
  T.ok(run.unwind and run.unwind.reach_entry_fraction >= 0.9, "stacks reach libc's start")
  local folded = fs.read(out .. "/profiles/profile.oncpu.folded")
  -- the eval loop's frame is replaced by the Python frames it ran (docs/capture.md, "Python")
  local n, total = under(folded, "<module> (<string>:3)")
  T.ok(under(folded, "PyEval_EvalCode") / total >= 0.9, "native stacks through libpython's PyEval_EvalCode")
  T.ok(n / total >= 0.9, string.format("%d of %d samples under the eval loop, merged; the heaviest stack outside: %s",
    n, total, heaviest_outside(folded, "<module> (<string>:3)")))
end)

T.case("wb profile unwind=fp stack_entries=64: stacks that did not fit the map are counted and warned, the key "
  .. "named; the default unwinding loses none", function()
  local ok, why = require("wb.bpf").available()
  if not ok then T.skip("eBPF unavailable: " .. why) end
  if not profile_default("stack_entries") then
    T.skip("recipes/profile.lua does not take stack_entries yet (issue 16's recipe change)")
  end
  local out = T.tmpdir() .. "/run"
  local res = T.wb({ "run", T.root() .. "/recipes/profile.lua", "unwind=fp", "stack_entries=64", "freq=999",
    "shell=true", "-o", out, "--", "for i in $(seq 150); do /bin/true; done" })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "counted without their stack: the kernel's stack map was full[^\n]*raise stack_entries")
  local warned = false
  for _, w in ipairs(T.manifest(out).runs[1].warnings) do warned = warned or w:find("raise stack_entries", 1, true) end
  T.ok(warned, "the warning is in the manifest")
  -- walked with CFI (the default), kernel stacks travel with the user stacks: no map to fill
  res = T.wb({ "run", T.root() .. "/recipes/profile.lua", "stack_entries=64", "freq=999", "shell=true", "-o",
    out .. "2", "--", "for i in $(seq 150); do /bin/true; done" })
  T.eq(res.code, 0, res.stderr)
  T.ok(not res.stdout:find("without their stack", 1, true), res.stdout)
  T.match(fs.read(out .. "2/profiles/profile.offcpu.folded"), "_%[k%]")
end)

-- The read-ahead thread reads DWARF at nice 19; a thread of wb's that must wait for that read (the
-- capture's drain, at code without .eh_frame) hurries it first. Without that, a busy machine
-- starves the nice-19 thread: waiting for libc's DWARF took 6.3-7.3 s beside 3 busy loops on 2
-- CPUs (and the drain's ring overflowed meanwhile), 0.1 s with it. Each wait is a fresh wb (a
-- fresh cache: libc's DWARF is inflated again), first beside whatever load the machine has, then
-- beside CPUs + 1 more busy loops; the second may take a few times the first (the thread gets its
-- share of the CPUs), not the ~60x of a starved nice-19 thread.
T.case("a wait for the read-ahead thread's DWARF is not starved by a busy machine (the waiter hurries it)", function()
  local libc
  for _, p in ipairs({ "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6" }) do
    if fs.exists(p) and not libc then libc = p end
  end
  if not libc or not unwind.object(libc).debug_info then T.skip("libc6-dbg: libc has no DWARF here") end
  local d = T.tmpdir()
  local script = d .. "/wait.lua"
  fs.write(script, [[
local wb = require "wb"
return wb.recipe { run = function()
  local u, clock = require "wb.unwind", require "wb.clock"
  u.prefetch("]] .. libc .. [[")
  local t = clock.now()
  while clock.now() - t < 5e6 do end -- the read-ahead thread has begun
  t = clock.now()
  assert(u.object("]] .. libc .. [[").debug_info)
  print((clock.now() - t) / 1e9)
  return 0
end }
]])
  local function wait_seconds(tag)
    local res = T.wb({ "run", script }, { env = { XDG_CACHE_HOME = d .. "/cache-" .. tag }, timeout = 120 })
    T.eq(res.code, 0, res.stderr)
    return tonumber(res.stdout)
  end
  local alone = wait_seconds("alone")
  local hogs = {}
  for i = 1, require("wb.scaling").cpu_count() + 1 do
    hogs[i] = assert(proc.spawn { argv = { "sh", "-c", "while :; do :; done" } })
  end
  local ok, busy = pcall(wait_seconds, "busy")
  for _, h in ipairs(hogs) do h:kill() end
  T.ok(ok, busy)
  T.ok(busy < 20 * alone + 0.5, string.format("%.2f s beside busy loops, %.2f s without them", busy, alone))
end)

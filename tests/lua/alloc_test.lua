-- wb.capture{alloc = true}: sampled allocation stacks (lua/wb/alloc.lua, shim/alloc.c) against
-- programs the test builds, each reporting its own ground truth: the bytes it allocated from two
-- call sites in a 3:1 ratio, 50 MB leaked from one site, a forked child's allocations; and the
-- programs that cannot be interposed (statically linked, their own malloc) skipped with the reason.
local T = require "wb.test"
local wb = require "wb"
local fs, proc = wb.fs, wb.proc

-- Each site touches its block after malloc returns, so that it is no tail call (its frame stays
-- on the stack malloc sees), and differs from the others by a constant, so that the compiler does
-- not fold them into one function.
local PROG = [[
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static volatile char sink;
static void sleep_ms(int ms) { struct timespec t = {ms / 1000, (ms % 1000) * 1000000L}; nanosleep(&t, 0); }
#define SITE(name, id) __attribute__((noinline)) static char *name(size_t n) { \
  char *p = malloc(n); p[0] = id; sink += p[n - 1]; return p; }
SITE(site_three, 1) SITE(site_one, 2) SITE(site_leak, 3) SITE(site_churn, 4) SITE(site_parent, 5) SITE(site_child, 6)
int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ratio";
  unsigned long long three = 0, one = 0;
  if (strcmp(mode, "ratio") == 0) { /* sizes 16..1023 bytes, three times as many bytes from site_three */
    unsigned r = 12345;
    for (int i = 0; i < 100000; i++) {
      for (int k = 0; k < 3; k++) {
        r = r * 1103515245u + 12345u;
        size_t n = 16 + (r >> 8) % 1008;
        free(site_three(n));
        three += n;
      }
      r = r * 1103515245u + 12345u;
      size_t n = 16 + (r >> 8) % 1008;
      free(site_one(n));
      one += n;
    }
    printf("three %llu one %llu\n", three, one);
  } else if (strcmp(mode, "leak") == 0) { /* 50 MiB never freed, 100 MiB freed at once */
    for (int i = 0; i < 50; i++) memset(site_leak(1 << 20), 1, 1 << 20);
    for (int i = 0; i < 100 * 64; i++) free(site_churn(16384));
    sleep_ms(400);
  } else if (strcmp(mode, "fork") == 0) { /* 20 MiB in the parent, 40 MiB in the child */
    for (int i = 0; i < 20 * 64; i++) free(site_parent(16384));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
      for (int i = 0; i < 40 * 64; i++) free(site_child(16384));
      _exit(0);
    }
    waitpid(c, 0, 0);
    printf("child %d\n", (int)c);
  }
  return 0;
}
]]

local function cc(name, src, flags)
  local d = T.tmpdir()
  assert(fs.write(d .. "/" .. name .. ".c", src))
  local argv = { "cc", "-O2", "-g", "-o", d .. "/" .. name, d .. "/" .. name .. ".c" }
  for _, f in ipairs(flags or {}) do argv[#argv + 1] = f end
  local r = assert(proc.run { argv = argv, stderr = "capture" })
  T.eq(r.code, 0, r.stderr)
  return d .. "/" .. name
end

local EXE = cc("allocs", PROG)

-- res = run(argv [, opts]) : wb.capture with only the allocation profile (and the memory timeline)
local function run(argv, opts)
  local spec = { argv = argv, alloc = true, method = "none", oncpu = false, offcpu = false, counters = false,
    stdout = "capture", dir = T.tmpdir(), name = "t" }
  for k, v in pairs(opts or {}) do spec[k] = v end
  return assert(wb.capture(spec))
end

-- The bytes of the folded text whose stack holds the function (also as a clone the compiler made:
-- "site_leak.constprop.0"), and the whole.
local function bytes_under(text, fn)
  local under, total = 0, 0
  for stack, n in text:gmatch("([^\n]*) (%d+)\n") do
    total = total + tonumber(n)
    if (";" .. stack .. ";"):find(";" .. fn .. "[;.]") then under = under + tonumber(n) end
  end
  return under, total
end

T.case("3:1 bytes from two call sites: the allocated view's shares within 5 points", function()
  local res = run({ EXE, "ratio" }, { alloc_interval = 64 * 1024 })
  T.eq(res.result.code, 0)
  local three, one = res.result.stdout:match("three (%d+) one (%d+)")
  local want = tonumber(three) / (tonumber(three) + tonumber(one))
  local a = res.alloc
  T.ok(not a.skipped, a.skipped)
  local t3 = bytes_under(a.alloc.folded_text, "site_three")
  local t1 = bytes_under(a.alloc.folded_text, "site_one")
  T.ok(t1 > 0 and t3 > 0, a.alloc.folded_text)
  local share = t3 / (t3 + t1)
  T.near(share, want, 0.05, string.format("site_three's share %.3f, planted %.3f", share, want))
  -- the estimate of the whole is unbiased too: within 10% of what the program allocated
  local total = tonumber(three) + tonumber(one)
  T.near((t3 + t1) / total, 1, 0.10, string.format("estimated %d of %d bytes", t3 + t1, total))
  T.ok(a.samples > 500 and a.sampled_bytes < a.estimated_bytes, a.samples .. " samples")
  -- outputs: folded, flame graph, summary
  T.match(assert(fs.read(a.alloc.folded)), "site_three")
  T.match(assert(fs.read(a.alloc.svg)), "^<%?xml")
  local doc = assert(wb.json.read(a.json))
  T.eq({ doc.schema_name, doc.schema_version, doc.interval }, { "wb.alloc", 1, 64 * 1024 })
  T.match(doc.alloc_top[1].name, "^site_three", "the top allocation site")
end)

T.case("50 MB leaked from one site: the live and the never-freed views name it", function()
  local res = run({ EXE, "leak" })
  T.eq(res.result.code, 0)
  local a = res.alloc
  T.ok(not a.skipped, a.skipped)
  T.eq(a.live.at, "peak")
  for _, view in ipairs({ "alloc_live", "alloc_leak" }) do
    local leak, total = bytes_under(a[view].folded_text, "site_leak")
    T.ok(leak >= 0.9 * total, string.format("%s: site_leak %d of %d bytes", view, leak, total))
    T.near(leak / (50 * 1048576), 1, 0.25, view .. ": " .. leak .. " bytes under site_leak")
    -- the peak sample may fall while one churned block is live (one sample weighs about 512 KiB)
    local churned = bytes_under(a[view].folded_text, "site_churn")
    if view == "alloc_leak" then T.eq(churned, 0, "nothing of the freed site is never freed") end
    T.ok(churned <= 0.05 * total, view .. ": " .. churned .. " bytes of the freed site")
    T.match(a[view].top[1].name, "^site_leak")
  end
  local churn = bytes_under(a.alloc.folded_text, "site_churn")
  -- about 200 samples at the default interval: 7% standard error
  T.eq(a.interval, 512 * 1024)
  T.near(churn / (100 * 1048576), 1, 0.30, "the freed site in the allocated view: " .. churn)
end)

T.case("the capture report: the allocation summary, top sites and flame graphs", function()
  local res = run({ EXE, "leak" }, { title = "leak" })
  local view = require "wb.capture_report"
  local text = view.text(res)
  T.match(text, "\nallocations: %d+ samples, one per 512%.0 KiB on average: 1%d%d%.%d MiB allocated %(estimated%), "
    .. "[45]%d%.%d MiB live at the RSS peak %([%d.]+ m?s%), [45]%d%.%d MiB never freed\n")
  T.match(text, "\n  never freed: top functions %(self, total share of bytes%)\n +%d+%.%d%% +%d+%.%d%%  site_leak")
  local page = view.html(res, { title = "leak" })
  T.match(page, "<h2>Allocations</h2>")
  T.eq(T.count(page, '<iframe title="Bytes '), 3, "allocated, live at the peak, never freed")
  local static = cc("static", "int main(void) { return 0; }\n", { "-static" })
  T.match(view.text(run({ static })), "\nallocations: skipped: statically linked: [^\n]*static has no dynamic loader")
end)

T.case("a forked child's allocations are under its own pid", function()
  local res = run({ EXE, "fork" }, { alloc_interval = 64 * 1024 })
  T.eq(res.result.code, 0)
  local child = tonumber(res.result.stdout:match("child (%d+)"))
  local a = res.alloc
  local roots = {}
  for stack, n in a.alloc.folded_text:gmatch("([^\n]*) (%d+)\n") do
    local root = stack:match("^[^;]+")
    roots[root] = roots[root] or {}
    for f in stack:gmatch("site_%a+") do roots[root][f] = (roots[root][f] or 0) + tonumber(n) end
  end
  local mine = roots["allocs-" .. child]
  T.ok(mine and mine.site_child, "a root frame allocs-" .. child .. " with site_child: " .. a.alloc.folded_text)
  T.near(mine.site_child / (40 * 1048576), 1, 0.15, "the child's bytes")
  T.eq(mine.site_parent, nil, "none of the parent's allocations under the child")
  for root, sites in pairs(roots) do
    if root ~= "allocs-" .. child then T.eq(sites.site_child, nil, root .. " holds no child allocation") end
  end
  local pids = {}
  for _, p in ipairs(a.processes) do pids[p.pid] = p end
  T.ok(pids[child] and pids[child].estimated_bytes > 30 * 1048576, "the child in the process list")
end)

-- A daemon-like program closes every descriptor (the sampler's record file too), allocates (the
-- sampler opens its file again) and reopens /dev/null and its output expecting descriptors 0 and
-- 1: the record file must not take the low numbers.
local CLOSER = [[
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
  for (int fd = 0; fd < 1024; fd++) close(fd);
  static char *keep[16];
  for (int i = 0; i < 16; i++) { keep[i] = malloc(1 << 20); memset(keep[i], i, 1 << 20); }
  int in = open("/dev/null", O_RDONLY);
  int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dprintf(out, "in=%d out=%d %d\n", in, out, keep[3][5]);
  return 0;
}
]]

T.case("the record file keeps out of the descriptors a program closes and reopens", function()
  local exe = cc("closer", CLOSER)
  local d = T.tmpdir()
  local res = run({ exe, d .. "/fds.txt" }, { alloc_interval = 64 * 1024 })
  T.eq(res.result.code, 0)
  T.eq(fs.read(d .. "/fds.txt"), "in=0 out=1 3\n")
  T.ok(res.alloc.samples > 0, "samples recorded")
end)

-- realloc with every allocation sampled (interval 1 byte; each site touches its block with its own
-- constant, so that the compiler does not fold them into one function): a block that moves and shrinks, one
-- shrunk in place, a realloc that fails (the block lives on), realloc(p, 0) (a free); the program
-- prints which blocks it never freed and whether the in-place one kept its address.
local REALLOC = [[
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
static volatile char sink;
#define TOUCH(p, n, id) (((char *)(p))[0] = id, sink += ((char *)(p))[(n) - 1])
__attribute__((noinline)) static void *site_start(size_t n) { void *p = malloc(n); TOUCH(p, n, 1); return p; }
__attribute__((noinline)) static void *site_grow(void *p, size_t n) { void *q = realloc(p, n); TOUCH(q, n, 2); return q; }
__attribute__((noinline)) static void *site_shrink(void *p, size_t n) { void *q = realloc(p, n); TOUCH(q, n, 3); return q; }
__attribute__((noinline)) static void *site_inplace(void *p, size_t n) { void *q = realloc(p, n); TOUCH(q, n, 4); return q; }
__attribute__((noinline)) static void *site_failed(size_t n) { void *p = malloc(n); TOUCH(p, n, 5); return p; }
__attribute__((noinline)) static void *site_zero(size_t n) { void *p = malloc(n); TOUCH(p, n, 6); return p; }
int main(void) {
  void *moved = site_shrink(site_grow(site_start(1000), 300000), 100); /* kept: 100 bytes */
  void *big = site_start(5000);
  void *same = site_inplace(big, 4000);                                /* kept: 4000 bytes */
  void *kept = site_failed(3000);                                      /* kept: 3000 bytes */
  void *none = realloc(kept, SIZE_MAX / 2);
  void *zero = realloc(site_zero(7000), 0);                            /* freed */
  printf("inplace %d failed %d zero %d %p %p\n", same == big, none == NULL, zero == NULL, moved, kept);
  return 0;
}
]]

T.case("realloc: the block it frees and the one it returns, in that order, keep the live and leak views right", function()
  local exe = cc("realloc", REALLOC)
  local res = run({ exe }, { alloc_interval = 1 })
  T.eq(res.result.code, 0)
  T.match(res.result.stdout, "^inplace 1 failed 1 zero 1 ")
  local a = res.alloc
  T.ok(not a.skipped, a.skipped)
  local leak = a.alloc_leak.folded_text
  -- interval 1: every allocation is sampled and weighs its own size (n / (1 - e^-n))
  T.eq(bytes_under(leak, "site_shrink"), 100, "the moved block's last size, under the realloc that made it")
  T.eq(bytes_under(leak, "site_inplace"), 4000, "shrunk in place: the new size, not the old block")
  T.eq(bytes_under(leak, "site_failed"), 3000, "a failed realloc leaves its block alive")
  for _, gone in ipairs({ "site_start", "site_grow", "site_zero" }) do
    T.eq(bytes_under(leak, gone), 0, gone .. " was freed (by realloc)")
  end
  T.eq(bytes_under(a.alloc.folded_text, "site_grow"), 300000)
end)

-- Two threads on one arena without a thread cache: the mover's realloc frees a 48-byte chunk
-- that the keeper's next malloc gets, so the keeper's record of that block may race the mover's
-- record of its free; the keeper keeps every block.
local RACE = [[
#include <pthread.h>
#include <stdlib.h>
#define N 5000
static void *keep[N];
static volatile char sink;
static pthread_barrier_t go;
__attribute__((noinline)) static char *site_kept(size_t n) { char *p = malloc(n); p[0] = 1; sink += p[n - 1]; return p; }
__attribute__((noinline)) static char *site_mover(size_t n) { char *p = malloc(n); p[0] = 2; sink += p[n - 1]; return p; }
__attribute__((noinline)) static char *site_moved(char *p, size_t n) { char *q = realloc(p, n); q[0] = 2; sink += q[n - 1]; return q; }
static void *mover(void *x) { pthread_barrier_wait(&go); for (int i = 0; i < N; i++) free(site_moved(site_mover(48), 4000)); return x; }
static void *keeper(void *x) { pthread_barrier_wait(&go); for (int i = 0; i < N; i++) keep[i] = site_kept(48); return x; }
int main(void) {
  pthread_barrier_init(&go, 0, 2);
  pthread_t a, b;
  pthread_create(&a, 0, mover, 0), pthread_create(&b, 0, keeper, 0);
  pthread_join(a, 0), pthread_join(b, 0);
  return 0;
}
]]

T.case("realloc racing another thread's malloc of the freed chunk: every kept block stays live", function()
  local exe = cc("race", RACE, { "-pthread" })
  local res = run({ exe }, { alloc_interval = 1, env = { MALLOC_ARENA_MAX = "1", GLIBC_TUNABLES = "glibc.malloc.tcache_count=0" } })
  T.eq(res.result.code, 0)
  local leak = res.alloc.alloc_leak.folded_text
  T.eq(bytes_under(leak, "site_kept"), 5000 * 48, "the keeper's 5000 blocks of 48 bytes")
  T.eq(bytes_under(leak, "site_mover") + bytes_under(leak, "site_moved"), 0, "the mover freed all of its own")
end)

-- A program whose malloc is another allocator's: linked (DT_NEEDED libjemalloc.so.2,
-- libtcmalloc_minimal.so.4) or preloaded. It keeps 50 MiB from one site and frees 100 MiB from
-- another, and prints what that allocator itself says it holds (jemalloc's stats.allocated,
-- tcmalloc's generic.current_allocated_bytes): the blocks must be its, not glibc's.
local OTHER = [[
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static volatile char sink;
__attribute__((noinline)) static char *site_kept(size_t n) { char *p = malloc(n); p[0] = 1; sink += p[n - 1]; return p; }
__attribute__((noinline)) static char *site_freed(size_t n) { char *p = malloc(n); p[0] = 2; sink += p[n - 1]; return p; }
static long long held(void) {
  int (*je)(const char *, void *, size_t *, void *, size_t) = (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
  int (*tc)(const char *, size_t *) = (int (*)(const char *, size_t *))dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
  size_t v = 0, len = sizeof v;
  unsigned long long epoch = 1;
  size_t elen = sizeof epoch;
  if (je && je("epoch", &epoch, &elen, &epoch, elen) == 0 && je("stats.allocated", &v, &len, NULL, 0) == 0) return (long long)v;
  if (tc && tc("generic.current_allocated_bytes", &v)) return (long long)v;
  return -1;
}
int main(void) {
  for (int i = 0; i < 50; i++) memset(site_kept(1 << 20), 1, 1 << 20);
  for (int i = 0; i < 100 * 64; i++) free(site_freed(16384));
  printf("held %lld\n", held());
  return 0;
}
]]

-- The allocator libraries Debian installs (tools/deps.sh), or a skip naming them.
local function allocators()
  local libs = {}
  for _, name in ipairs({ "libjemalloc.so.2", "libtcmalloc_minimal.so.4" }) do
    libs[name] = (fs.glob("/usr/lib/*/" .. name) or {})[1]
    if not libs[name] then T.skip(name .. ": libjemalloc2 / libtcmalloc-minimal4 not installed (tools/deps.sh)") end
  end
  return libs
end

-- Each case's allocation profile: the 50 MiB kept under site_kept, the 100 MiB freed under
-- site_freed, and the allocator's own count of bytes held proving the blocks are its.
local function check_other(cases)
  for _, c in ipairs(cases) do
    local res = run({ c[2] }, { env = c[3] })
    T.eq(res.result.code, 0, c[1])
    local held = tonumber(res.result.stdout:match("held (%-?%d+)"))
    T.ok(held >= 50 * 1048576, string.format("%s: the allocator holds %d bytes: the 50 MiB are its", c[1], held))
    local a = res.alloc
    T.ok(not a.skipped, c[1] .. ": " .. tostring(a.skipped))
    local kept, total = bytes_under(a.alloc_leak.folded_text, "site_kept")
    T.near(kept / (50 * 1048576), 1, 0.25, c[1] .. ": never freed under site_kept: " .. kept)
    T.ok(kept >= 0.9 * total, string.format("%s: site_kept %d of %d bytes never freed", c[1], kept, total))
    T.near(bytes_under(a.alloc.folded_text, "site_freed") / (100 * 1048576), 1, 0.30, c[1] .. ": the freed site")
  end
end

T.case("a program linked with jemalloc or tcmalloc: profiled, its blocks that allocator's", function()
  local libs = allocators()
  check_other({
    { "jemalloc linked", cc("other_je", OTHER, { libs["libjemalloc.so.2"] }) },
    { "tcmalloc linked", cc("other_tc", OTHER, { libs["libtcmalloc_minimal.so.4"] }) },
  })
end)

T.case("a program run with tcmalloc preloaded: profiled, its blocks tcmalloc's", function()
  -- the command's LD_PRELOAD reaches wb's own binary too, which a held start runs first as the
  -- gate: a sanitized wb refuses to start with a library ahead of the ASan runtime
  if os.getenv("WB_TEST_PASS") == "asan" then
    T.skip("ASan pass: a preloaded library in the command's environment stops the sanitized gate")
  end
  local libs = allocators()
  check_other({ { "tcmalloc preloaded", cc("other", OTHER), { LD_PRELOAD = libs["libtcmalloc_minimal.so.4"] } } })
end)

T.case("a statically linked program is skipped with the reason", function()
  local exe = cc("static", "int main(void) { return 0; }\n", { "-static" })
  local res = run({ exe })
  T.eq(res.result.code, 0)
  T.match(res.alloc.skipped or "", "^statically linked: .*static has no dynamic loader")
end)

T.case("a program that defines malloc itself is skipped with the reason", function()
  local exe = cc("own", [[
#include <stddef.h>
#include <string.h>
static char heap[1 << 22];
static size_t used;
void *malloc(size_t n) { n = (n + 15) & ~(size_t)15; if (used + n > sizeof heap) return 0; used += n; return heap + used - n; }
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) { void *p = malloc(a * b); if (p) memset(p, 0, a * b); return p; }
void *realloc(void *p, size_t n) { void *q = malloc(n); if (p && q) memcpy(q, p, n); return q; }
int main(void) { for (int i = 0; i < 1000; i++) free(malloc(1000)); return 0; }
]])
  local res = run({ exe })
  T.eq(res.result.code, 0)
  T.match(res.alloc.skipped or "", "own allocator: malloc is defined by .*own")
end)

T.case("Python: large objects and pymalloc's arenas under the interpreter's native stacks", function()
  local py = "/usr/bin/python3"
  if not fs.exists(py) then T.skip("/usr/bin/python3 is not installed") end
  -- 20,000 objects of 40,000 bytes each (malloc) and 1 M small ones (pymalloc arenas, mmap)
  local res = run({ py, "-c", "x = [bytes(40000) for i in range(20000)]; y = [str(i) * 3 for i in range(1000000)]" })
  T.eq(res.result.code, 0)
  local a = res.alloc
  T.ok(not a.skipped, a.skipped)
  local under = bytes_under(a.alloc.folded_text, "_PyEval_EvalFrameDefault")
  T.ok(under >= 0.8 * 800e6, string.format("%d bytes under the interpreter loop, 800 MB planted", under))
end)

T.case("misuse raises", function()
  T.raises(function() wb.capture { argv = { "/bin/true" }, alloc = true, alloc_interval = 0 } end, "alloc_interval")
  T.raises(function() wb.capture { argv = { "/bin/true" }, alloc = true, alloc_mmap = 1 } end, "alloc_mmap")
end)

-- wb.trend and `wb trend` (docs/history.md): records pooled per commit, the series the page
-- draws, and a real history of a small C program over 12 commits with two planted steps (50%
-- more time at commit 6, 10% more memory at commit 9: peak RSS and the bytes allocated), some
-- commits measured twice, one beside two CPU hogs: the steps found at their commits, and no other.
local T = require "wb.test"
local fs = require "wb.fs"
local json = require "wb.json"
local proc = require "wb.proc"
local trend = require "wb.trend"

local sh = T.sh

T.case("pool: consecutive records of one clean commit are one point; dirty ones and other commits are not", function()
  local pts = trend.pool({
    { commit = "a", dirty = 0, samples = { 1, 2, 3 }, evidence = { runq = { 0, 0, 0 }, scope = "tree" } },
    { commit = "a", dirty = 0, samples = { 4 }, evidence = { runq = { 0.1 }, cpu = { 4 }, scope = "tree" } },
    { commit = "a", dirty = 1, samples = { 5 } },
    { commit = "b", dirty = 0, value = 7 },
    { commit = "a", dirty = 0, samples = { 6 } },
  })
  T.eq(#pts, 4)
  T.eq(pts[1].samples, { 1, 2, 3, 4 })
  T.eq(#pts[1].records, 2)
  T.eq(pts[1].evidence.runq, { 0, 0, 0, 0.1 })
  T.eq(pts[1].evidence.cpu, nil, "a CPU time not known for every sample is not used")
  T.eq(pts[1].median, 2.5)
  T.eq(pts[2].evidence, nil, "a record without evidence")
  T.eq(pts[3].samples, { 7 }, "a metric without samples is its value")
  T.eq(pts[4].commit, "a")
end)

T.case("median_interval: order statistics around the median, none below 6 samples", function()
  T.eq(trend.median_interval({ 1, 2, 3, 4, 5 }), nil)
  local xs = {}
  for i = 1, 20 do xs[i] = 21 - i end
  local lo, hi = trend.median_interval(xs)
  T.ok(lo < 10.5 and hi > 10.5 and lo >= 5 and hi <= 16, string.format("%s..%s", lo, hi))
end)

-- The program's time is slept (a step that CPU hogs beside the test cannot hide: across separate
-- campaigns this VM's CPU time moves by more than 15%, docs/history.md), its memory touched.
local PROGRAM = [[
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define SLEEP_MS 40
#define MIB 20
int main(void) {
  volatile char *p = malloc((size_t)MIB << 20);
  if (!p) return 1;
  for (size_t i = 0; i < ((size_t)MIB << 20); i += 4096) p[i] = 1;
  struct timespec ts = {0, SLEEP_MS * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  printf("%d\n", p[4096]);
  return 0;
}
]]

T.case("a history of 12 commits: the slowdown at commit 6 and the memory step at commit 9, no other", function()
  local repo = T.tmpdir()
  sh("git init -q -b main . && git config user.email t@t && git config user.name t", repo)
  local hogs = {}
  local commits = {}
  for i = 1, 12 do
    local text = PROGRAM:gsub("SLEEP_MS 40", i >= 6 and "SLEEP_MS 60" or "SLEEP_MS 40"):gsub("MIB 20", i >= 9 and "MIB 22" or "MIB 20")
    assert(fs.write(repo .. "/app.c", text .. "// commit " .. i .. "\n"))
    sh("git add app.c && git commit -qm c" .. i .. " && cc -O1 -o app app.c", repo)
    commits[i] = sh("git rev-parse HEAD", repo)
    if i == 4 then -- this commit is measured beside two CPU hogs
      for k = 1, 2 do hogs[k] = assert(proc.spawn { argv = { "sh", "-c", "while :; do :; done" } }) end
    end
    for rep = 1, (i == 3 or i == 10) and 2 or 1 do -- commits 3 and 10 measured twice
      local res = T.wb({ "bench", "-o", string.format("runs/c%02d_%d", i, rep), "runs=5", "warmup=1", "alloc_runs=2", "./app" },
        { cwd = repo, timeout = 300 })
      T.eq(res.code, 0, res.stderr)
    end
    for _, h in ipairs(hogs) do
      h:kill(9)
      h:wait()
    end
    hogs = {}
  end
  local res = T.wb({ "trend" }, { cwd = repo, timeout = 300 })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "trend: %d+ series from 14 records, %d+ steps?: runs/trend/index%.html\n$")
  local steps = {}
  for line in res.stdout:gmatch("[^\n]+") do
    local verdict, pct, metric, at = line:match("^(%a+) ([+-][%d.]+)%% in bench · %./app · ([%w_ ]+) %(.-%) at (%x+)")
    if verdict then steps[#steps + 1] = { verdict = verdict, metric = metric, at = at, pct = tonumber(pct) } end
  end
  local function at(i) return commits[i]:sub(1, 10) end
  -- what each commit's runs measured (ms, net of the wait for a CPU / raw; the waits), for a failure
  local function measured()
    local out = {}
    for _, d in ipairs(fs.list(repo .. "/runs")) do
      local doc = d:match("^c%d%d_%d$") and json.read(repo .. "/runs/" .. d .. "/summary.json")
      local smp = doc and doc.commands[1].samples
      if smp then
        local nets, raws, waits = {}, {}, {}
        for k, w in ipairs(smp.wall) do
          local q = type(smp.runq) == "table" and smp.runq[k]
          nets[k], raws[k] = q and string.format("%.0f", (w - q) * 1000) or "?", string.format("%.0f", w * 1000)
          waits[k] = q and string.format("%.0f", q * 1000) or "?"
        end
        out[#out + 1] = string.format("%s (%s): net %s, raw %s, waits %s", d, tostring(smp.runq_scope),
          table.concat(nets, " "), table.concat(raws, " "), table.concat(waits, " "))
      end
    end
    table.sort(out)
    return "\n" .. table.concat(out, "\n")
  end
  local found = {}
  for _, st in ipairs(steps) do
    found[st.metric] = st
    -- the memory step costs CPU time too (page faults): user or sys may step there
    local expected = st.metric == "wall mean" and at(6)
        or (st.metric == "maxrss_kb mean" or st.metric == "alloc_bytes mean" or st.metric == "sys mean"
          or st.metric == "user mean") and at(9)
    T.eq(st.at, expected, st.metric .. ": " .. res.stdout .. (st.at ~= expected and measured() or ""))
    T.eq(st.verdict, "regression", st.metric)
  end
  T.ok(found["wall mean"], "the slowdown in wall time: " .. res.stdout)
  T.ok(found["maxrss_kb mean"], "the memory step: " .. res.stdout)
  T.ok(found["alloc_bytes mean"], "the memory step in the bytes allocated (alloc_runs): " .. res.stdout)
  T.near(found["alloc_bytes mean"].pct, 10, 0.1, "22 MiB of 20, exactly counted")
  -- the page: one series per metric that is not a repeat of another's samples; commits 3 and 10
  -- pooled (12 points of 14 records); links relative to the page
  local page = assert(fs.read(repo .. "/runs/trend/index.html"))
  local data = json.decode(page:match('<script type="application/json" id="trend%-data">(.-)</script>'))
  local metrics = {}
  for _, s in ipairs(data.series) do
    metrics[#metrics + 1] = s.m
    T.eq(#s.p, 12, s.m)
  end
  table.sort(metrics)
  T.eq(metrics, { "alloc_bytes mean", "maxrss_kb mean", "sys mean", "user mean", "wall mean" })
  T.eq(#data.records, 12)
  T.eq(data.records[1][1], "../c01_1")
  T.eq(data.records[1][2], "../c01_1/report.html")
  T.ok(fs.exists(repo .. "/runs/trend/" .. data.records[1][2]), "the report link resolves")
end)

T.case("bad input: one line, exit 2; an output directory reached through a planted link is refused", function()
  local dir = T.tmpdir()
  assert(fs.mkdir_p(dir .. "/runs"))
  local res = T.wb({ "trend", "--json" }, { cwd = dir })
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: trend: unknown argument '%-%-json'")
  res = T.wb({ "trend", "-o" }, { cwd = dir })
  T.eq(res.code, 2)
  T.match(res.stderr, "^wb: trend: %-o needs a value")
  -- a link another user planted where the page goes: not written through
  local elsewhere = T.tmpdir()
  assert(fs.symlink(elsewhere, dir .. "/runs/trend"))
  sh("chown -h nobody runs/trend", dir)
  res = T.wb({ "trend" }, { cwd = dir })
  T.eq(res.code, 2, res.stdout)
  T.match(res.stderr, "^wb: trend: [^\n]*trend[^\n]*\n$")
  T.eq(fs.exists(elsewhere .. "/index.html"), false, "nothing written through the link")
end)

T.case("the page: no name ends its data element or opens a comment in it; links are relative URLs", function()
  local s = { recipe = "bench", name = "<!--<script>x</script>", metric = "wall mean", machine = "m", unit = "s",
    steps = {}, points = { { commit = "a", samples = { 1, 2 }, median = 1.5, records = { { dir = "/r/javascript:alert(1)" } } } } }
  local html = trend.html({ s }, { out_dir = "/r/trend", roots = { "/r" } })
  local data = html:match('<script type="application/json" id="trend%-data">(.-)</script>')
  T.ok(data and not data:find("[<>&]"), "no < > & inside the data element")
  local doc = json.decode(data)
  T.eq(doc.series[1].n, "<!--<script>x</script>")
  T.eq(doc.records[1][1], "../javascript%3Aalert%281%29")
end)

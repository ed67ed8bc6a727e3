-- wb.perf: counters and the ring-buffer sampler on real processes (perf_event_open).
local T = require "wb.test"
local perf = require "wb.perf"
local proc = require "wb.proc"
local json = require "wb.json"

local SPLIT = T.example("cpu_split")

local HARDWARE = { "cycles", "instructions", "cache-misses", "branch-misses" }

-- Runs argv held, with counters opened before its exec; returns the readings and the result.
local function count(argv, opts)
  local p <close> = assert(proc.spawn { argv = argv, held = true, stdout = "null" })
  local c <close> = assert(perf.counters(p.pid, opts))
  assert(p:release())
  local res = p:wait()
  return c:read(), res
end

T.case("counters of a held child: task-clock matches its CPU time, software events count", function()
  local r, res = count({ SPLIT, "--cpu", "0.3", "--sleep", "0.05" })
  T.eq(r["task-clock"].available, true)
  T.eq(r["task-clock"].unit, "ns")
  local cpu = res.user + res.sys
  T.ok(r["task-clock"].value / 1e9 > 0.25, "task-clock " .. r["task-clock"].value)
  T.near(r["task-clock"].value / 1e9, cpu, 0.05 + cpu * 0.1)
  -- context switches and migrations are counted in the kernel: root always sees them; an
  -- unprivileged user under perf_event_paranoid >= 2 does not (checked as nobody further down)
  local kernel = T.is_root() or r["context-switches"].available
  local names = { "task-clock", "page-faults" }
  if kernel then
    T.ok(r["context-switches"].value >= 1, "the sleep switches out")
    names[#names + 1] = "context-switches"
  end
  T.ok(r["page-faults"].value > 0)
  if kernel then T.eq(r["cpu-migrations"].available, true) end
  for _, name in ipairs(names) do
    T.eq(r[name].scaled, false, name)
    T.eq(r[name].running_fraction, 1.0, name)
    T.eq(math.type(r[name].value), "integer", name)
  end
  T.eq(require("wb.core").ordered_keys(r), { "task-clock", "context-switches", "cpu-migrations", "page-faults",
    "cycles", "instructions", "cache-misses", "branch-misses" })
  if not kernel then
    T.skip("context-switches, cpu-migrations: kernel-side events, unavailable to this unprivileged user")
  end
end)

T.case("counting starts at the exec: the program's start-up page faults are seen", function()
  local held = count({ "true" }, { events = { "page-faults" } })
  T.ok(held["page-faults"].value >= 20, "page faults of /bin/true from its first instruction: " .. held["page-faults"].value)
end)

T.case("inherit: descendants are counted; inherit = false counts the process alone", function()
  local script = string.format("%s --cpu 0.2 --sleep 0 & %s --cpu 0.2 --sleep 0 & wait", SPLIT, SPLIT)
  local all = count({ "sh", "-c", script }, { events = { "task-clock" } })
  T.ok(all["task-clock"].value / 1e9 > 0.35, "both children counted: " .. all["task-clock"].value)
  local alone = count({ "sh", "-c", script }, { events = { "task-clock" }, inherit = false })
  T.ok(alone["task-clock"].value / 1e9 < 0.1, "the shell alone: " .. alone["task-clock"].value)
end)

T.case("hardware events: a value, or unavailable with the reason, never a zero", function()
  local r = count({ SPLIT, "--cpu", "0.1", "--sleep", "0" })
  local ok, why = perf.hardware()
  for _, name in ipairs(HARDWARE) do
    local e = r[name]
    if e.available then
      T.ok(ok, name .. " counted although perf.hardware() says no")
      T.ok(e.value > 0, name .. " counted zero")
    else
      T.eq(e.value, nil, name)
      T.ok(type(e.reason) == "string" and #e.reason > 10, name .. " without a reason")
      T.eq(ok, false)
      T.match(why, "PMU")
    end
  end
end)

T.case("multiplexed hardware counters are scaled and flagged", function()
  if not perf.hardware() then T.skip("no hardware PMU here: " .. select(2, perf.hardware())) end
  local events = {}
  for _ = 1, 3 do
    for _, e in ipairs({ "cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses" }) do
      events[#events + 1] = e
    end
  end
  local r = count({ SPLIT, "--cpu", "0.3", "--sleep", "0" }, { events = events })
  local scaled = 0
  for _, e in pairs(r) do
    if e.available and e.scaled then
      scaled = scaled + 1
      T.between(e.running_fraction, 1e-9, 1 - 1e-12, "running_fraction")
      T.near(e.value, e.raw * e.enabled_ns / e.running_ns, 1e-6 * e.value, "value = raw * enabled / running")
    end
  end
  T.ok(scaled >= 1, "18 hardware events share the PMU's counters")
end)

T.case("unprivileged: kernel-side events unavailable with the reason, the rest user space only", function()
  if not T.is_root() then T.skip("needs root to run a check as nobody") end
  local dir = T.tmpdir()
  os.execute("chmod 777 " .. dir)
  local script = dir .. "/counters.lua"
  local f = assert(io.open(script, "w"))
  f:write(string.format([[
local wb = require "wb"
return wb.recipe { run = function()
  local p = assert(wb.proc.spawn { argv = { %q, "--cpu", "0.1", "--sleep", "0.02" }, held = true, stdout = "null" })
  local c = assert(wb.perf.counters(p.pid))
  local s = assert(wb.perf.sampler(p.pid, { sample = false }))
  p:release()
  p:wait()
  local out = { counters = c:read(), sampler_user_only = s.user_only }
  assert(wb.fs.write(%q, wb.json.encode(out)))
end }
]], SPLIT, dir .. "/out.json"))
  f:close()
  os.execute("chmod 644 " .. script)
  local res = proc.run { argv = { "runuser", "-u", "nobody", "--", T.wb_binary(), "run", script }, cwd = dir,
    stdout = "capture", stderr = "capture" }
  T.ok(res.ok, res.stderr)
  local out = assert(json.read(dir .. "/out.json"))
  local c = out.counters
  T.eq(c["task-clock"].available, true)
  T.eq(c["task-clock"].user_only, true)
  T.ok(c["page-faults"].value > 0)
  for _, name in ipairs({ "context-switches", "cpu-migrations" }) do
    T.eq(c[name].available, false, name)
    T.match(c[name].reason, "exclude_kernel")
    T.match(c[name].reason, "perf_event_paranoid")
  end
  for _, name in ipairs(HARDWARE) do
    if not c[name].available then T.ok(#c[name].reason > 10) end
  end
  T.eq(out.sampler_user_only, perf.paranoid() >= 2)
end)

T.case("sampler: stacks of a held child and its forks, with mappings, execs and forks", function()
  local p <close> = assert(proc.spawn { argv = { SPLIT, "--cpu", "0.3", "--sleep", "0", "--fork", "2" }, held = true,
    stdout = "capture" })
  local s <close> = assert(perf.sampler(p.pid, { freq = 499 }))
  T.match(tostring(s), "^wb%.perf%.sampler %(%d+ CPUs, sampling%)$")
  assert(p:release())
  while not proc.wait_any({ p }, 0.05) do s:drain() end
  local out = p:wait().stdout
  local t = s:read()
  T.ok(t.sample_count > 100, "samples: " .. t.sample_count)
  T.eq(t.lost, 0)
  local workers, pids = {}, {}
  for pid in out:gmatch("pid (%d+)") do workers[tonumber(pid)] = true end
  local counted = 0
  for _, st in ipairs(t.samples) do
    counted = counted + st.count
    pids[st.pid] = true
    T.eq(st.comm, "cpu_split")
    T.ok(#st.user > 0 or #st.kernel > 0)
  end
  T.eq(counted, t.sample_count)
  for pid in pairs(workers) do T.ok(pids[pid], "samples of worker " .. pid) end
  T.eq(#t.execs, 1)
  T.eq({ t.execs[1].pid, t.execs[1].comm }, { p.pid, "cpu_split" })
  T.eq(#t.forks, 2)
  for _, f in ipairs(t.forks) do
    T.ok(workers[f.pid])
    T.eq(f.ppid, p.pid)
  end
  local exe
  for _, m in ipairs(t.mappings) do
    if m.path:find("cpu_split$") then exe = m end
  end
  T.ok(exe, "the executable's mapping")
  T.eq(exe.pid, p.pid)
  T.ok(exe.len > 0 and exe.time > 0)
  T.ok(exe.build_id == nil or exe.build_id:match("^%x+$"))
  s:close()
  T.raises(function() s:read() end, "closed")
  T.eq(tostring(s), "wb.perf.sampler (closed)")
end)

T.case("side-band sampler: no samples, the records only", function()
  local p <close> = assert(proc.spawn { argv = { SPLIT, "--cpu", "0.1", "--sleep", "0" }, held = true, stdout = "null" })
  local s <close> = assert(perf.sampler(p.pid, { sample = false, pages = 8 }))
  assert(p:release())
  p:wait()
  local t = s:read()
  T.eq({ #t.samples, t.sample_count }, { 0, 0 })
  T.ok(#t.mappings >= 3, "executable, loader and libc")
  T.eq(#t.exits, 1)
end)

T.case("misuse raises; a missing process is an error value", function()
  T.raises(function() perf.counters(1, { events = { "no-such-event" } }) end, "unknown event 'no-such-event'")
  T.raises(function() perf.counters(1, { events = "cycles" }) end, "events must be a list")
  T.raises(function() perf.sampler(1, { freq = 0 }) end, "freq must be")
  T.raises(function() perf.sampler(1, { pages = 3 }) end, "power of two")
  local c, err = perf.counters(2 ^ 22 + 12345)
  T.eq(c, nil)
  T.match(err, "No such process")
  local s, serr = perf.sampler(2 ^ 22 + 12345)
  T.eq(s, nil)
  T.match(serr, "^perf sampler")
  local names = {}
  for _, e in ipairs(perf.events()) do names[e.name] = e.kind end
  T.eq({ names["task-clock"], names.cycles, names["branch-misses"] }, { "software", "hardware", "hardware" })
  T.eq(math.type(perf.paranoid()), "integer")
  local q = assert(perf.counters(1, { events = { "task-clock" }, enable_on_exec = false }))
  T.match(tostring(q), "1 events")
  q:close()
  q:close()
  T.raises(function() q:read() end, "closed")
end)

T.case("warm: opens and closes a per-task event on a thread; counters opened after it work as before", function()
  T.eq(perf.warm(), true)
  T.eq(perf.warm(), true) -- again: harmless
  local p <close> = assert(proc.spawn { argv = { "sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done" },
    held = true })
  local c <close> = assert(perf.counters(p.pid))
  assert(p:release())
  p:wait()
  T.ok(c:read()["task-clock"].value > 0, "task-clock counted")
end)

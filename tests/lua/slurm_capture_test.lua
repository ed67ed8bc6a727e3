-- Capture inside Slurm jobs against the test cluster (tests/slurm/start.sh, run by
-- tests/integration/slurm.sh, which sets SLURM_CONF and WB_SLURM_DIR): profile_app_full's trials
-- and capture as jobs against a local run, a 4-task srun step with planted unequal work (per-task
-- and merged profiles, the imbalance; a cancelled task resumed alone), and a job submitted by an
-- unprivileged user (the fallback from eBPF recorded, a user-space profile back).
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

local CLUSTER = os.getenv("WB_SLURM_DIR")
if not CLUSTER or os.getenv("SLURM_CONF") ~= CLUSTER .. "/etc/slurm.conf" then
  T.case("slurm capture", function() T.skip("no test cluster (tests/integration/slurm.sh starts one)") end)
  return
end

local ROOT = T.root()
local SPLIT = T.example("cpu_split")
local SLURM = { "machine=slurm_cpu", "machine.poll.min=0.2", "machine.poll.max=1", "machine.mem=256",
  "machine.controller_timeout=60" }

local function wb_args(...)
  local out = {}
  for _, list in ipairs({ ... }) do table.move(list, 1, #list, #out + 1, out) end
  return out
end

local function files_under(dir)
  local out = {}
  for _, name in ipairs(fs.list(dir) or {}) do out[#out + 1] = name end
  table.sort(out)
  return out
end

local function shares(dir)
  local s = assert(json.read(dir .. "/summary.json"))
  local out = {}
  for _, st in ipairs(s.bottlenecks.stages) do out[st.name] = st.fraction * 100 end
  return out, s
end

-- How far apart one stage's share (in points of each trial's wall time) lies across the trials of
-- the campaign in dir: max - min, from the samples of its "trials" record
local function share_spread(dir, stage)
  for _, r in ipairs(T.manifest(dir).runs) do
    local xs = r.name == "trials" and r.samples and r.samples["stage_" .. stage:gsub("[^%w_]", "_") .. "_seconds"]
    if xs then
      local lo, hi = math.huge, -math.huge
      for i, x in ipairs(xs) do
        local share = 100 * x / r.samples.wall_seconds[i]
        lo, hi = math.min(lo, share), math.max(hi, share)
      end
      return hi - lo
    end
  end
  return 0
end

T.case("profile_app_full machine=slurm_cpu: trials and capture are jobs, the profiles those of a local run", function()
  local base = T.tmpdir()
  local args = { "tool.trials=5", "tool.warmup=1" }
  -- Stage shares are timings, inflated by whatever else the machine runs: the local and the Slurm
  -- campaign run at the same time so that both see the same load, and their medians must agree
  -- within 5 points or within the spread of that share across either campaign's own trials,
  -- whichever is wider (beside busy loops a share moves by more than 5 points from trial to
  -- trial); another pair (at most three) is made before concluding that they differ.
  local worst, why
  for attempt = 1, 3 do
    local ldir, sdir = base .. "/local" .. attempt, base .. "/slurm" .. attempt
    local pl <close> = assert(proc.spawn { argv = wb_args({ T.wb_binary(), "profile_app_full", "-o", ldir }, args),
      cwd = ROOT, stdout = "null", stderr = "capture", timeout = 300 })
    local rs = T.wb(wb_args({ "profile_app_full", "-o", sdir }, SLURM, args), { cwd = ROOT, timeout = 300 })
    local rl = pl:wait()
    T.eq(rl.code, 0, rl.stderr)
    T.eq(rs.code, 0, rs.stderr)
    local sub = T.events(sdir, "slurm_submitted")
    T.eq(#sub, 1, "one array job")
    T.eq(sub[1].fields.cases, 7, "a warm-up, 5 trials and the capture")
    T.eq(T.events(sdir, "slurm_finished")[1].fields.sbatch_calls, 1)
    local ml, ms = T.manifest(ldir), T.manifest(sdir)
    T.eq(#ms.runs, #ml.runs)
    for i, r in ipairs(ms.runs) do
      T.eq(r.name, ml.runs[i].name)
      T.eq(r.status, "success", r.name)
      if r.name ~= "trials" then T.ok(math.type(r.job_id) == "integer", r.name .. " ran in a job") end
    end
    T.match(fs.read(sdir .. "/jobs/batch-001.sbatch"), "#SBATCH %-%-array=0%-6%%1\n")
    T.eq(files_under(sdir .. "/profiles"), files_under(ldir .. "/profiles"))
    local capture = ms.runs[7]
    T.eq(capture.name, "capture")
    T.eq(capture.method, ml.runs[7].method)
    local folded = assert(fs.read(sdir .. "/profiles/app.oncpu.folded"))
    T.match(folded, ";parse[%.%w]*[; ]") -- symbolized on the node
    T.match(fs.read(sdir .. "/report.html"), 'data="profiles/app.oncpu.svg"')
    local a, sa = shares(ldir)
    local b, sb = shares(sdir)
    T.eq(sb.capture.method, sa.capture.method)
    worst, why = 0, nil
    for name, x in pairs(a) do
      local tolerance = math.max(5, share_spread(ldir, name), share_spread(sdir, name))
      local d = math.abs(x - T.ok(b[name], "stage " .. name)) / tolerance
      if d > worst then
        worst, why = d, string.format("%s: local %.1f%%, slurm %.1f%%, allowed %.1f points", name, x, b[name], tolerance)
      end
    end
    io.stderr:write(string.format("# attempt %d: largest stage share difference %.2f of its allowance (%s)\n",
      attempt, worst, why))
    if worst <= 1 then break end
  end
  T.ok(worst <= 1, "stage shares within 5 points or their trials' own spread: " .. tostring(why))
end)

T.case("a 4-task step: per-task and merged profiles, the planted imbalance; a cancelled task is resumed alone", function()
  local d = T.tmpdir()
  local dir, flag = d .. "/run", d .. "/flag"
  -- task r spends (r + 1) x 0.2 s of CPU time; task 3 first waits for the flag (the first run is
  -- cancelled while it waits)
  local cmd = 'if [ "$SLURM_PROCID" = 3 ] && [ ! -e ' .. flag .. ' ]; then sleep 120; fi; exec ' .. SPLIT ..
    ' --cpu 0.$((2 * SLURM_PROCID + 2)) --sleep 0'
  -- 499 Hz: task 0's 0.2 s give ~100 samples, so its top function is spin_a beyond doubt (at 99 Hz,
  -- 20 samples at 2:1 put spin_b first about one run in ten)
  local args = wb_args({ "profile", "-o", dir }, SLURM, { "machine.extra=[--overcommit]", "tasks=4", "shell=true",
    "freq=499", "--", cmd })
  local p <close> = assert(proc.spawn { argv = { T.wb_binary(), table.unpack(args) }, cwd = ROOT, stdout = "capture",
    stderr = "capture", timeout = 300 })
  T.wait_until("tasks 0-2 to end", 90, function()
    return #files_under(dir .. "/jobs/results") >= 3
  end, p)
  local id = T.events(dir, "slurm_submitted")[1].fields.job_id
  assert(proc.run { argv = { "scancel", tostring(id) }, timeout = 30 })
  local res = p:wait()
  T.eq(res.code, 1, res.stderr)
  local r = T.manifest(dir).runs[1]
  T.eq(r.status, "failed")
  T.eq(r.slurm_state, "CANCELLED")
  T.eq(r.missing_tasks, { 3 })
  T.eq(r.tasks[4].status, "missing")
  T.eq(r.tasks[4].slurm_state, "CANCELLED")
  T.match(r.error, "no complete capture of tasks 3")
  local kept = {}
  for rank = 0, 2 do
    T.eq(r.tasks[rank + 1].status, "success")
    kept[rank] = assert(fs.read(dir .. "/profiles/profile.task" .. rank .. ".oncpu.folded"))
  end

  assert(fs.write(flag, ""))
  local r2 = T.wb(wb_args({ "profile" }, SLURM, { "machine.extra=[--overcommit]", "tasks=4", "shell=true",
    "freq=499", "--resume", dir, "--", cmd }), { cwd = ROOT, timeout = 300 })
  T.eq(r2.code, 0, r2.stderr)
  T.eq(T.events(dir, "slurm_resubmit")[1].fields.missing_tasks, { 3 })
  local out = fs.read(dir .. "/jobs/slurm-" .. T.events(dir, "slurm_submitted")[2].fields.job_id .. ".out")
  T.eq(T.count(out, "ran to its end before; its result is kept"), 3, out)
  r = T.manifest(dir).runs[1]
  T.eq(r.status, "success")
  T.eq(r.missing_tasks, {})
  local merged = assert(fs.read(dir .. "/profiles/profile.merged.oncpu.folded"))
  local roots, total = {}, 0
  for rank = 0, 3 do
    local t = r.tasks[rank + 1]
    T.eq(t.rank, rank)
    T.eq(t.status, "success")
    T.eq(t.top, "spin_a")
    local own = assert(fs.read(dir .. "/profiles/profile.task" .. rank .. ".oncpu.folded"))
    if kept[rank] then T.eq(own, kept[rank], "task " .. rank .. "'s profile kept") end
    local n = 0
    for c in own:gmatch(" (%d+)\n") do n = n + tonumber(c) end
    total = total + n
    T.eq(t.samples, n)
    roots[string.format("task %d (%s, pid %d)", rank, t.node, t.pid)] = true
  end
  local merged_total = 0
  for line in merged:gmatch("[^\n]+") do
    local root, c = line:match("^([^;]+);.* (%d+)$")
    T.ok(roots[root], "root frame " .. tostring(root))
    merged_total = merged_total + tonumber(c)
  end
  T.eq(merged_total, total, "the merged profile holds every task's samples")
  -- planted work (r + 1) x 0.2 s: max / mean = 0.8 / 0.5
  T.near(r.imbalance, 0.8 / ((0.2 + 0.4 + 0.6 + 0.8) / 4), 0.16)
  T.ok(fs.exists(dir .. "/" .. r.profiles.tasks_diff), "the differential flame graph")
  local html = fs.read(dir .. "/report.html")
  T.match(html, "Imbalance %(max/mean CPU time of the tasks%): 1%.%d+×")
  T.match(html, 'href="profiles/profile.task3.oncpu.svg"')
  T.match(html, 'data="profiles/profile.merged.oncpu.svg"')
end)

T.case("a job of an unprivileged user falls back from eBPF and records why; a user-space profile comes back", function()
  local d = T.tmpdir()
  assert(proc.run { argv = { "chmod", "755", d }, timeout = 10 })
  local parent = d .. "/nobody"
  assert(fs.mkdir_p(parent))
  assert(proc.run { argv = { "chmod", "777", parent }, timeout = 10 })
  local dir = parent .. "/run"
  local res = assert(proc.run { argv = wb_args({ "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
    T.wb_binary(), "profile", "-o", dir }, SLURM, { "--", SPLIT, "--cpu", "0.4", "--sleep", "0" }), cwd = ROOT,
    env = { HOME = parent }, stdout = "capture", stderr = "capture", timeout = 120 })
  T.eq(res.code, 0, res.stderr)
  local result = dir .. "/jobs/results/profile.json"
  local owner = assert(proc.run { argv = { "stat", "-c", "%U", result }, stdout = "capture", timeout = 10 })
  T.eq(owner.stdout, "nobody\n", "the job ran as nobody")
  local r = T.manifest(dir).runs[1]
  T.ok(math.type(r.job_id) == "integer", "a job")
  T.match(r.fallback, "^bpf: ")
  local paranoid = tonumber(fs.read("/proc/sys/kernel/perf_event_paranoid"))
  if paranoid >= 3 then
    -- no perf_event_open at all for unprivileged users: the reason is recorded, then the skip
    T.ok(r.method ~= "bpf" and r.method ~= "perf_event", r.method)
    T.match(r.fallback, "perf_event")
    T.skip("perf_event_paranoid=" .. paranoid .. " refuses unprivileged perf_event_open: no user-space profile")
  end
  T.eq(r.method, "perf_event")
  T.eq(json.read(result).capture.method, "perf_event", "the node's own choice")
  local folded = assert(fs.read(dir .. "/" .. r.profiles.oncpu.folded))
  T.match(folded, ";spin_a ")
  T.ok(not folded:find("_%[k%]"), "no kernel frames: user space only")
  T.match(r.profiles.offcpu.skipped, "off%-CPU time needs eBPF")
  T.match(res.stdout, "method perf_event")
  T.match(res.stdout, "user space only")
end)

-- `wb tune` on the test cluster (tests/slurm/start.sh, run by tests/integration/slurm.sh, which
-- sets SLURM_CONF and WB_SLURM_DIR): each stage one allocation with a step per trial, the trials
-- one at a time, an allocation lost under a trial and a killed wb resumed, the plan, and the
-- bundled engine's tune_gwas profile.
local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

local CLUSTER = os.getenv("WB_SLURM_DIR")
if not CLUSTER or os.getenv("SLURM_CONF") ~= CLUSTER .. "/etc/slurm.conf" then
  T.case("slurm tune", function() T.skip("no test cluster (tests/integration/slurm.sh starts one)") end)
  return
end

local parent = T.tmpdir()
-- The synthetic program (tests/fixtures/tunable.lua): a (1, 2, 3) x b (1, 2), best a=2 b=1.
local _, PROFILES = dofile(T.root() .. "/tests/fixtures/tunable.lua")(parent)

local ENV = { WB_PROFILE_PATH = PROFILES, WB_NO_PROGRESS = "1" }
local SLURM = { "machine=slurm_cpu", "machine.mem=256" }

local function tune_args(dir, ...)
  local out = { "run", "recipes/tune.lua", "--config-name", "tune_synthetic", "-o", dir }
  for _, a in ipairs(SLURM) do out[#out + 1] = a end
  for _, a in ipairs({ ... }) do out[#out + 1] = a end
  return out
end

local function trials_of(dir)
  local out = {}
  for _, r in ipairs(T.manifest(dir).runs) do
    if r.role == "trial" then out[#out + 1] = r end
  end
  return out
end

-- The state squeue shows for job id (all states), or nil when it lists none.
local function job_state(id)
  local res = proc.run { argv = { "squeue", "-h", "-t", "all", "-j", tostring(id), "-o", "%T" }, stdout = "capture",
    stderr = "capture" }
  return res.ok and res.stdout:match("^%s*(%S+)") or nil
end

-- Checks the campaign in dir ran each stage's trials in that stage's allocations, one at a time;
-- returns the allocations by stage.
local function check_allocations(dir)
  local m = T.manifest(dir)
  local by_stage, stage_of = {}, {}
  for _, a in ipairs(m.tune_allocations) do
    by_stage[a.stage] = by_stage[a.stage] or {}
    table.insert(by_stage[a.stage], a)
    stage_of[a.job_id] = a.stage
    T.eq(a.state, "ended", "allocation " .. a.job_id)
    T.ok(job_state(a.job_id) ~= "RUNNING" and job_state(a.job_id) ~= "PENDING", "job " .. a.job_id .. " is over")
  end
  local spans = {}
  for _, r in ipairs(trials_of(dir)) do
    T.eq(r.status, "success", r.name)
    T.eq(stage_of[r.job_id], r.stage, r.name .. " ran in its stage's allocation")
    T.ok(type(r.node) == "string" and r.node ~= "", r.name .. ": node recorded")
    T.ok(type(r.started_epoch) == "number" and type(r.finished_epoch) == "number", r.name .. ": times on the node")
    spans[#spans + 1] = { r.started_epoch, r.finished_epoch, r.name }
  end
  table.sort(spans, function(a, b) return a[1] < b[1] end)
  for i = 2, #spans do
    T.ok(spans[i][1] >= spans[i - 1][2], spans[i][3] .. " started after " .. spans[i - 1][3] .. " ended")
  end
  return by_stage
end

T.case("machine=slurm_cpu: one allocation per stage, its trials steps run one at a time; the best found", function()
  local dir = parent .. "/plain"
  -- 16 finalist and headline rounds, not the profile's 10 and 12: the node is this machine, which
  -- in a CI run beside two busy loops runs the other suites beside the trials too, and there once
  -- the best (a=2,b=1) was not shown faster than the default (a=1,b=2): the campaign kept it
  local res = T.wb(tune_args(dir, "tune.finalist_rounds=16", "tune.headline_trials=16"), { env = ENV, timeout = 300 })
  T.eq(res.code, 0, res.stderr)
  local s = assert(json.read(dir .. "/summary.json"))
  T.eq(s.winner_name, "a=2,b=1", res.stdout .. json.encode(s.finalists) .. json.encode(s.headline))
  local by_stage = check_allocations(dir)
  local ids = {}
  for _, st in ipairs(s.ledger.stages) do
    T.eq(#by_stage[st.stage], 1, st.stage .. ": one allocation")
    T.eq(st.slurm_jobs, { by_stage[st.stage][1].job_id }, st.stage .. ": the ledger names its job")
    T.ok(not ids[st.slurm_jobs[1]], "a new allocation for " .. st.stage)
    ids[st.slurm_jobs[1]] = true
  end
  T.eq(#s.ledger.stages, 3)
  T.eq(s.headline.node, by_stage.headline[1].node)
  local report = assert(fs.read(dir .. "/report.md"))
  T.match(report, "| Slurm job %(node%) |")
  T.match(report, "| screening +|.-| " .. s.ledger.stages[1].slurm_jobs[1] .. " %(")
  local sbatch = assert(fs.read(dir .. "/jobs/tune-screening.sbatch"))
  T.match(sbatch, "#SBATCH %-%-exclusive")
  T.match(sbatch, "#SBATCH %-%-nodes=1")
  T.match(sbatch, "#SBATCH %-%-time=%d+") -- trials' timeouts x planned runs
end)

-- Runs the campaign in the background until n trials have ended, then act(p, manifest).
local function interrupted(dir, n, act)
  local argv = { T.wb_binary(), table.unpack(tune_args(dir, "tune.params.base=150")) }
  local env = { WB_PROFILE_PATH = PROFILES, WB_NO_PROGRESS = "1", WB_ROOT = T.root(), SLURM_CONF = os.getenv("SLURM_CONF") }
  local p = assert(proc.spawn { argv = argv, env = env, stdout = "null", stderr = { file = dir .. ".stderr" },
    cwd = T.root() })
  local deadline = wb.clock.timer()
  while p:running() and deadline:elapsed() < 120 do
    local m = json.read(dir .. "/manifest.json")
    local done = 0
    for _, r in ipairs(m and m.runs or {}) do done = done + (r.status == "success" and 1 or 0) end
    if done >= n then break end
    wb.clock.sleep(0.05)
  end
  T.ok(p:running(), "the campaign was still running after " .. n .. " trials")
  act(p, T.manifest(dir))
  local r = p:wait()
  p:close()
  return r
end

-- Every trial recorded before the stop kept its record (it was not run again).
local function kept(before, dir)
  local now = {}
  for _, r in ipairs(trials_of(dir)) do now[r.name] = r end
  for _, r in ipairs(before) do
    if r.status == "success" then
      T.eq(now[r.name].started_epoch, r.started_epoch, r.name .. " not run again")
    end
  end
end

T.case("an allocation cancelled under a trial stops the campaign (exit 1, --resume named); --resume goes on in a new one",
  function()
    local dir = parent .. "/cancelled"
    local before
    local r = interrupted(dir, 4, function(_, m)
      before = m.runs
      local a = m.tune_allocations[#m.tune_allocations]
      T.eq(a.state, "running")
      T.ok(proc.run({ argv = { "scancel", tostring(a.job_id) } }).ok, "scancel")
    end)
    T.eq(r.code, 1)
    local err = fs.read(dir .. ".stderr") or ""
    -- (COMPLETING only when the job's end takes over ten seconds: a very busy node)
    local state = err:match("the screening allocation %(Slurm job %d+%) ended (%u+) %(under trial screening%.")
    T.ok(state == "CANCELLED" or state == "COMPLETING", "the cancelled allocation named: " .. err)
    T.match(err, "wb tune %-%-resume " .. dir:gsub("%p", "%%%0") .. " continues the campaign in a new one")
    local res = T.wb({ "run", "recipes/tune.lua", "--resume", dir }, { env = ENV, timeout = 300 })
    T.eq(res.code, 0, res.stderr)
    local by_stage = check_allocations(dir)
    T.eq(#by_stage.screening, 2, "screening: the lost allocation and its successor")
    T.match(by_stage.screening[1].ended_by, "^under trial screening%.")
    kept(before, dir)
    T.eq(json.read(dir .. "/summary.json").winner_name, "a=2,b=1")
  end)

-- The trial ends before `wb job` is told that its allocation was cancelled (the order in which
-- Slurm's signals reach a step's processes, made likely here: the trial exits as soon as it has
-- cancelled its allocation; the other order must end the same way).
T.case("a trial that fails as its allocation is cancelled is the allocation's end, not a failed trial", function()
  local dir, script = parent .. "/self_cancelled", parent .. "/self_cancel.sh"
  assert(fs.write(script, 'scancel "$SLURM_JOB_ID"; exit 3\n'))
  local res = T.wb(tune_args(dir, "tune.command=[/bin/sh, " .. script .. "]"), { env = ENV, timeout = 300 })
  T.eq(res.code, 1, res.stderr)
  T.match(res.stderr, "the screening allocation %(Slurm job %d+%) ended %u+ %(under trial screening%.001%.")
  for _, r in ipairs(trials_of(dir)) do T.ok(r.status ~= "failed", r.name .. " is not a failed trial") end
end)

T.case("wb killed (-9) mid-stage: --resume cancels the allocation it left and goes on", function()
  local dir = parent .. "/killed"
  local before, left
  local r = interrupted(dir, 4, function(p, m)
    before, left = m.runs, m.tune_allocations[#m.tune_allocations].job_id
    p:kill(9)
  end)
  T.eq(r.signal, 9)
  T.eq(job_state(left), "RUNNING", "the killed wb's allocation outlived it")
  local res = T.wb({ "run", "recipes/tune.lua", "--resume", dir }, { env = ENV, timeout = 300 })
  T.eq(res.code, 0, res.stderr)
  local by_stage = check_allocations(dir)
  T.eq(by_stage.screening[1].job_id, left)
  T.eq(by_stage.screening[1].ended_by, "cancelled when the campaign resumed")
  kept(before, dir)
end)

T.case("--dry-run on Slurm: the plan says one allocation per stage, nothing is submitted", function()
  local dir = parent .. "/dry"
  -- the newest job id before, and the jobs above it after (older jobs may leave squeue meanwhile)
  local function jobs_above(id)
    local out = {}
    local res = proc.run { argv = { "squeue", "-h", "-t", "all", "-o", "%i" }, stdout = "capture" }
    for x in res.stdout:gmatch("%d+") do
      if tonumber(x) > id then out[#out + 1] = x end
    end
    return out
  end
  local newest = 0
  for _, x in ipairs(jobs_above(0)) do newest = math.max(newest, tonumber(x)) end
  local res = T.wb(tune_args(dir, "--dry-run", "tune.stage_time=00:20:00"), { env = ENV })
  T.eq(res.code, 0, res.stderr)
  local plan = assert(fs.read(dir .. "/plan.md"))
  T.match(plan, "one Slurm allocation %(one node, %-%-time 00:20:00%), a step per trial")
  T.eq(jobs_above(newest), {}, "no job submitted")
  T.eq(T.manifest(dir).tune_allocations, nil)
end)

T.case("the bundled engine's tune_gwas on the cluster: one job per stage, the report and its ledger", function()
  local dir = parent .. "/gwas"
  -- The default is the serial one (one chunk of 1000 variants, one thread): the workload's own
  -- default (256, 2 threads) is the fastest of the four on a quiet node and screening then
  -- eliminates every other candidate, leaving no finalist to run.
  local args = { "run", "recipes/tune.lua", "--config-name", "tune_gwas", "-o", dir,
    "dataset.variants=1000", "dataset.samples=300", "tune.axes.chunk_size=[256,1024]", "tune.axes.threads=[1,2]",
    "tune.axes.writers=[1]", "tune.default.chunk_size=1024", "tune.default.threads=1", "tune.max_blocks=8",
    "tune.finalists=2", "tune.finalist_rounds=6", "tune.headline_trials=6", "tune.budget_runs=100" }
  table.move(SLURM, 1, #SLURM, #args + 1, args)
  local res = T.wb(args, { timeout = 600 })
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "recommended: workload%.chunk_size=%d+ workload%.threads=%d workload%.writers=1")
  local s = assert(json.read(dir .. "/summary.json"))
  local by_stage = check_allocations(dir)
  local runs = 0
  for _, st in ipairs(s.ledger.stages) do
    -- a stage with nothing to run (no finalist beat the default: no headline) asks for no node
    T.eq(#(by_stage[st.stage] or {}), st.runs > 0 and 1 or 0, st.stage .. ": one job")
    runs = runs + st.runs
  end
  T.eq(runs, s.ledger.spent.runs, "the ledger adds up")
  T.eq(#trials_of(dir), s.ledger.spent.runs, "each trial counted once")
  local report = assert(fs.read(dir .. "/report.md"))
  T.match(report, "## Budget ledger")
  T.match(report, "Recommended: `workload%.chunk_size=")
  T.ok(#(by_stage.screening or {}) == 1 and #(by_stage.finalists or {}) == 1,
    "screening and finalists ran: " .. json.encode(s.ledger.stages))
end)

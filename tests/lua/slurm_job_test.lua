-- `wb job` and the Slurm executor's state handling against fake Slurm commands (shell scripts
-- first on PATH that play a scenario): no cluster needed. The real cluster is slurm_test.lua.
local T = require "wb.test"
local wb = require "wb"
local slurm = require "wb.slurm"
local fs, json = wb.fs, wb.json

local ROOT = T.root()
local CASES = ROOT .. "/tests/fixtures/recipes/slurm_cases.lua"
local EXEC = tonumber("755", 8)

local function stats(dir)
  local e = T.events(dir, "slurm_finished")
  return T.ok(e[1], "no slurm_finished event").fields
end

-- ---- wb job ------------------------------------------------------------------------------

-- Writes a cases file for `wb job` into a fresh run directory; returns its path and the directory.
local function cases_file(cases)
  local dir = T.tmpdir()
  local doc = { schema_name = slurm.CASES_SCHEMA, schema_version = 1, run_dir = dir, batch = 1, cases = cases }
  assert(fs.mkdir_p(dir .. "/jobs"))
  assert(fs.write(dir .. "/jobs/batch-001.json", json.encode(doc)))
  return dir .. "/jobs/batch-001.json", dir
end

local function wb_job(args, env) return T.wb({ "job", table.unpack(args) }, { env = env, timeout = 30 }) end

T.case("wb job runs one case and writes its result like campaign:spawn fills a record", function()
  local path, dir = cases_file({
    { name = "ok case", argv = { "sh", "-c", 'echo "hi $WHO"; echo err >&2' }, env = { WHO = "there" } },
    { name = "fails", argv = { "sh", "-c", "exit 3" } },
    { name = "killed", argv = { "sh", "-c", "kill -9 $$" } },
    { name = "missing", argv = { "/nonexistent/program" } },
    { name = "slow", argv = { "sleep", "10" }, timeout = 0.2 },
    { name = "here", argv = { "pwd" }, cwd = "/tmp" },
  })
  local res = wb_job({ path, "0" })
  T.eq(res.code, 0, res.stderr)
  local r = json.read(dir .. "/jobs/results/ok_case.json")
  T.eq(r.name, "ok case")
  T.eq(r.status, "success")
  T.eq(r.return_code, 0)
  T.eq(r.command_arguments, { "sh", "-c", 'echo "hi $WHO"; echo err >&2' })
  T.eq(r.stdout_log, "logs/ok_case.stdout.log")
  T.ok(r.wall_time_seconds > 0 and r.maxrss_kb > 0 and r.user_seconds >= 0 and r.sys_seconds >= 0)
  T.eq(fs.read(dir .. "/logs/ok_case.stdout.log"), "hi there\n")
  T.eq(fs.read(dir .. "/logs/ok_case.stderr.log"), "err\n")
  T.eq(wb_job({ path, "1" }).code, 3)
  T.eq(json.read(dir .. "/jobs/results/fails.json").return_code, 3)
  T.eq(json.read(dir .. "/jobs/results/fails.json").status, "failed")
  T.eq(wb_job({ path }, { SLURM_ARRAY_TASK_ID = "2" }).code, 128 + 9)
  T.eq(json.read(dir .. "/jobs/results/killed.json").signal, 9)
  T.eq(wb_job({ path, "3" }).code, 127)
  T.match(json.read(dir .. "/jobs/results/missing.json").error, "/nonexistent/program")
  wb_job({ path, "4" })
  T.eq(json.read(dir .. "/jobs/results/slow.json").timed_out, true)
  wb_job({ path, "5" })
  T.eq(fs.read(dir .. "/logs/here.stdout.log"), "/tmp\n")
end)

T.case("wb job: secrets come from the submission environment and are redacted in the logs", function()
  local path, dir = cases_file({ { name = "s", argv = { "sh", "-c", 'echo "token=$API_TOKEN"' }, env = {},
    secret_env = { "API_TOKEN" } } })
  local res = wb_job({ path, "0" }, { [slurm.secret_var(0, "API_TOKEN")] = "tok-123456" })
  T.eq(res.code, 0, res.stderr)
  T.eq(fs.read(dir .. "/logs/s.stdout.log"), "token=[REDACTED]\n")
end)

T.case("wb job: bad usage is exit 2", function()
  local path = cases_file({ { name = "a", argv = { "true" } } })
  T.eq(wb_job({}).code, 2)
  local r = wb_job({ path, "7" })
  T.eq(r.code, 2)
  T.match(r.stderr, "no case 7")
  T.eq(wb_job({ "/nonexistent.json", "0" }).code, 2)
  T.match(wb_job({ ROOT .. "/tests/fixtures/recipes/slurm_cases.lua", "0" }).stderr, "^wb: job: ")
end)

-- ---- state handling, against fake Slurm commands --------------------------------------------

local FAKES = {
  -- Runs each task of the script (SLURM_ARRAY_TASK_ID from its --array line) when F/run exists.
  sbatch = [[
n=$(( $(cat "$F/next" 2>/dev/null || echo 0) + 1 )); echo $n > "$F/next"
for a; do script=$a; done
echo "$n $script" >> "$F/sbatch.log"
if [ -e "$F/run" ]; then
  last=$(sed -n 's/^#SBATCH --array=0-\([0-9]*\)$/\1/p' "$script")
  i=0
  while [ $i -le "${last:-0}" ]; do SLURM_ARRAY_TASK_ID=$i sh "$script" >/dev/null 2>&1; i=$((i + 1)); done
fi
echo $n]],
  squeue = [[
echo "$*" >> "$F/squeue.log"
prev=; for a; do [ "$prev" = -j ] && ids=$a; prev=$a; done
for id in $(echo "$ids" | tr , ' '); do cat "$F/job$id.squeue" 2>/dev/null; done
exit 0]],
  scontrol = [[
[ -e "$F/scontrol.broken" ] && { echo "scontrol: error: broken" >&2; exit 1; }
case "$1 $2" in
"show config") echo "AccountingStorageType   = $(cat "$F/storage" 2>/dev/null || echo accounting_storage/none)" ;;
"show job") cat "$F/job$4.scontrol" 2>/dev/null || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; } ;;
esac]],
  sacct = [[
echo "$*" >> "$F/sacct.log"
[ -e "$F/sacct.disabled" ] && { echo "sacct: error: Slurm accounting storage is disabled" >&2; exit 1; }
prev=; for a; do [ "$prev" = -j ] && ids=$a; prev=$a; done
for id in $(echo "$ids" | tr , ' '); do
  n=$(cat "$F/job$id.lag" 2>/dev/null || echo 0)
  if [ "$n" -gt 0 ]; then echo $((n - 1)) > "$F/job$id.lag"; cat "$F/job$id.sacct.early"; else cat "$F/job$id.sacct"; fi
done]],
  scancel = [[echo "$*" >> "$F/scancel.log"]],
}

-- A directory of fake Slurm commands; files = {name = content} sets up the scenario.
local function fake_cluster(files)
  local f = T.tmpdir()
  for cmd, body in pairs(FAKES) do
    assert(fs.write(f .. "/" .. cmd, "#!/bin/sh\nF=" .. f .. "\n" .. body .. "\n", { mode = EXEC }))
  end
  for name, content in pairs(files or {}) do assert(fs.write(f .. "/" .. name, content)) end
  return f
end

local function run_fake(f, args)
  local dir = T.tmpdir() .. "/run"
  local env = { PATH = f .. ":" .. os.getenv("PATH"), SLURM_CONF = "/nonexistent" }
  return T.wb({ "run", CASES, "-o", dir, "machine=slurm_cpu", "machine.poll.min=0.05", "machine.poll.max=0.2",
    table.unpack(args or {}) }, { cwd = ROOT, env = env }), dir
end

local function scontrol_line(id, array_job, task, state, reason, code)
  return string.format("JobId=%d ArrayJobId=%d ArrayTaskId=%d JobName=wb x JobState=FAKE UserId=root(0) " ..
    "JobState=%s Reason=%s Dependency=(null) ExitCode=%s NodeList=n1\n", id, array_job, task, state, reason, code)
end

T.case("fake cluster: OUT_OF_MEMORY and BOOT_FAIL end failed with Slurm's state and exit code", function()
  local f = fake_cluster {
    ["job1.squeue"] = "2|1|0|OUT_OF_MEMORY|OutOfMemory|n1\n3|1|1|BOOT_FAIL|None|n1\n",
    ["job1.scontrol"] = scontrol_line(2, 1, 0, "OUT_OF_MEMORY", "OutOfMemory", "0:125") ..
        scontrol_line(3, 1, 1, "BOOT_FAIL", "None", "0:0"),
  }
  local res, dir = run_fake(f, { "cases=2" })
  T.eq(res.code, 1, res.stderr)
  local a, b = T.manifest(dir).runs[1], T.manifest(dir).runs[2]
  T.eq({ a.status, a.slurm_state, a.slurm_reason, a.slurm_exit_code, a.node, a.slurm_state_source },
    { "failed", "OUT_OF_MEMORY", "OutOfMemory", "0:125", "n1", "scontrol" })
  T.match(a.error, "^slurm: job OUT_OF_MEMORY %(OutOfMemory%) without a result; see jobs/slurm%-1_0%.out")
  T.eq({ b.status, b.slurm_state, b.slurm_reason, b.array_task_id }, { "failed", "BOOT_FAIL", wb.null, 1 })
  T.eq(stats(dir).squeue_calls, stats(dir).polls)
end)

T.case("fake cluster: NODE_FAIL is resubmitted up to max_retries, then the run fails", function()
  local f = fake_cluster {
    ["job1.squeue"] = "1|1|N/A|NODE_FAIL|NodeDown|n1\n", ["job1.scontrol"] = "JobId=1 JobName=x UserId=0(0) JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0 NodeList=n1\n",
    ["job2.squeue"] = "2|2|N/A|NODE_FAIL|NodeDown|n1\n", ["job2.scontrol"] = "JobId=2 JobName=x UserId=0(0) JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0 NodeList=n1\n",
  }
  local res, dir = run_fake(f, { "cases=1", "machine.max_retries=1" })
  T.eq(res.code, 1, res.stderr)
  local r = T.manifest(dir).runs[1]
  T.eq({ r.status, r.slurm_state, r.slurm_attempts, r.job_id }, { "failed", "NODE_FAIL", 2, 2 })
  T.eq(T.count(fs.read(f .. "/sbatch.log") or "", "\n"), 2)
  T.eq(#T.events(dir, "slurm_retry"), 1)
  T.ok(fs.exists(dir .. "/jobs/batch-002.sbatch"), "the retry is a new batch")
end)

T.case("fake cluster: with accounting, final states wait for sacct to catch up (FAILED 0:0 first)", function()
  local f = fake_cluster {
    storage = "accounting_storage/slurmdbd", run = "",
    ["job1.squeue"] = "1|1|N/A|FAILED|NonZeroExitCode|n1\n",
    ["job1.lag"] = "2\n", ["job1.sacct.early"] = "1|1|FAILED|0:0|None|n1\n", ["job1.sacct"] = "1|1|FAILED|5:0|None|n1\n",
  }
  local res, dir = run_fake(f, { "cases=1", "fail_case=1", "fail_code=5" })
  T.eq(res.code, 1, res.stderr)
  local r = T.manifest(dir).runs[1]
  T.eq({ r.status, r.return_code, r.slurm_state, r.slurm_exit_code, r.slurm_state_source, r.slurm_reason },
    { "failed", 5, "FAILED", "5:0", "sacct", "NonZeroExitCode" })
  T.eq(fs.read(dir .. "/logs/case001.stdout.log"), "out 1\n")
  T.eq(T.count(fs.read(f .. "/sacct.log") or "", "\n"), 3)
  T.eq(stats(dir).polls, 1)
end)

T.case("fake cluster: sacct disabled falls back to scontrol; no scontrol falls back to squeue", function()
  local f = fake_cluster {
    storage = "accounting_storage/slurmdbd", ["sacct.disabled"] = "", run = "",
    ["job1.squeue"] = "2|1|0|COMPLETED|None|n1\n3|1|1|COMPLETED|None|n1\n",
    ["job1.scontrol"] = scontrol_line(2, 1, 0, "COMPLETED", "None", "0:0") .. scontrol_line(3, 1, 1, "COMPLETED", "None", "0:0"),
  }
  local res, dir = run_fake(f, { "cases=2" })
  T.eq(res.code, 0, res.stderr)
  for _, r in ipairs(T.manifest(dir).runs) do T.eq({ r.status, r.slurm_state_source }, { "success", "scontrol" }) end
  local src = T.events(dir, "slurm_state_source")
  T.eq({ src[1].fields.source, src[2].fields.source }, { "sacct", "scontrol" })
  T.match(src[2].fields.detail, "accounting storage is disabled")

  assert(fs.write(f .. "/scontrol.broken", ""))
  assert(fs.remove(f .. "/next"))
  local res2, dir2 = run_fake(f, { "cases=2" })
  T.eq(res2.code, 0, res2.stderr)
  for _, r in ipairs(T.manifest(dir2).runs) do
    T.eq({ r.status, r.slurm_state, r.slurm_exit_code, r.slurm_state_source }, { "success", "COMPLETED", wb.null, "squeue" })
  end
end)

T.case("poll interval: starts at min, grows 1.5x while nothing ends, halves when a task ends, jittered", function()
  local t = require("wb.slurm_poll").new { min = 1, max = 4 }
  local function near(v, base) T.ok(v >= base * 0.8 - 1e-9 and v <= base * 1.2 + 1e-9, v .. " not within 20% of " .. base) end
  near(t:interval(), 1)
  near(t:interval(false), 1.5)
  near(t:interval(false), 2.25)
  for _ = 1, 10 do t:interval(false) end
  near(t:interval(false), 4)
  near(t:interval(true), 2)
  for _ = 1, 10 do t:interval(true) end
  near(t:interval(true), 1)
  local seen = {}
  for _ = 1, 50 do seen[t:interval()] = true end
  T.ok(next(seen, next(seen)) ~= nil, "jittered")
end)

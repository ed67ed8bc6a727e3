-- The Slurm executor against a real cluster: tests/slurm/start.sh, run by
-- tests/integration/slurm.sh (and slurm_accounting.sh), which sets SLURM_CONF and WB_SLURM_DIR.
-- Without that test cluster every case skips (a SLURM_CONF of some other cluster is never used).
local T = require "wb.test"
local wb = require "wb"
local slurm = require "wb.slurm"
local fs, json, proc = wb.fs, wb.json, wb.proc

local CLUSTER = os.getenv("WB_SLURM_DIR")
if not CLUSTER or os.getenv("SLURM_CONF") ~= CLUSTER .. "/etc/slurm.conf" then
  T.case("slurm cluster", function() T.skip("no test cluster (tests/integration/slurm.sh starts one)") end)
  return
end

local ROOT = T.root()
local CASES = ROOT .. "/tests/fixtures/recipes/slurm_cases.lua"
local MATRIX = ROOT .. "/tests/fixtures/recipes/slurm_matrix.lua"
local EXEC = tonumber("755", 8)

local function stats(dir)
  local e = T.events(dir, "slurm_finished")
  return T.ok(e[1], "no slurm_finished event").fields
end

local ACCOUNTING = os.getenv("WB_SLURM_MODE") == "accounting"
local SOURCE = ACCOUNTING and "sacct" or "scontrol"

-- Cases whose outcome does not depend on where final states come from run only on the cluster
-- without accounting, which keeps the accounting variant short.
local function plain_case(name, fn, final)
  if not ACCOUNTING then (final and T.final_case or T.case)(name, fn) end
end
-- Fast polls; a campaign orphaned by an aborted test run gives up a minute after the cluster goes.
local SLURM = { "machine=slurm_cpu", "machine.poll.min=0.2", "machine.poll.max=1", "machine.mem=256",
  "machine.controller_timeout=60" }

-- The arguments of `wb run recipe [-o dir]` on the cluster, then args.
local function run_args(recipe, args, dir)
  local out = dir and { "run", recipe, "-o", dir } or { "run", recipe }
  table.move(SLURM, 1, #SLURM, #out + 1, out)
  table.move(args, 1, #args, #out + 1, out)
  return out
end

-- Runs the fixture recipe on the cluster; returns the result and the run directory.
local function run_cases(args, env, recipe)
  local dir = T.tmpdir() .. "/run"
  return T.wb(run_args(recipe or CASES, args, dir), { env = env, timeout = 300, cwd = ROOT }), dir
end

local function start_cases(args, env)
  local dir = T.tmpdir() .. "/run"
  return assert(proc.spawn { argv = { T.wb_binary(), table.unpack(run_args(CASES, args, dir)) }, stdout = "capture",
    stderr = "capture", env = env, timeout = 300, cwd = ROOT }), dir
end

-- Waits until the single case of the campaign p has written its first output line.
local function wait_started(p, dir)
  T.wait_until("the job to run", 60, function() return (fs.read(dir .. "/logs/case001.stdout.log") or "") ~= "" end, p)
end

local function sh(cmd)
  local res = assert(proc.run { argv = { "sh", "-c", cmd }, stdout = "capture", stderr = "capture", timeout = 60 })
  return res.stdout, res
end

-- state of each task of a job: {"12_0" = "COMPLETED", ...} (squeue -t all)
local function job_states(id)
  local out = {}
  for f, k, s in sh("squeue -h -r -t all -j " .. id .. " -o '%F|%K|%T'"):gmatch("(%d+)|([^|]+)|(%S+)") do
    out[k == "N/A" and f or (f .. "_" .. k)] = s
  end
  return out
end

local function submitted_job(dir, p)
  return T.wait_until("the job submission", 60, function()
    local e = T.events(dir, "slurm_submitted")[1]
    return e and e.fields.job_id
  end, p)
end

local function node_name() return (sh("sinfo -h -N -o %N"):match("(%S+)")) end

-- A job over its time limit takes 60-90 s to end (Slurm's limit is in minutes, checked every
-- 30 s): it is started first and checked after the cases that leave the node alone, those of the
-- other files of the run (tests/integration/slurm.sh) included; the cases that fail the node,
-- preempt or restart the controller are final cases after it.
local timeout_run
local function start_timeout_run()
  if not timeout_run then
    local p, dir = start_cases({ "cases=1", "script=sleep 300", "machine.time=1", "machine.max_retries=0" })
    timeout_run = { p = p, dir = dir }
  end
  return timeout_run
end

plain_case("start a job over its time limit (checked near the end)", function()
  start_timeout_run()
end)

local HOSTILE = {
  "plain", "with space", "  padded  ", "", "single ' quote", 'double " quote', "dollar $HOME ${PATH} $(echo no) `echo no`",
  "back\\slash \\\\ \\n \\", "new\nline\n", "tab\there", "glob * ? [a-z]", "semi; ls & echo | cat", "#hash", "-n",
  "ünïcødé ✓", "%j %A %%", "'", '"', "\\", "\r\n",
}
local PRINT_ALL = 'printf "%s\\0" "$@"; printf "%s\\0" "$H1" "$H2" "$SLURM_JOB_NAME" "$PWD"'

plain_case("hostile arguments, environment, names and paths round-trip through real jobs", function()
  local d = T.tmpdir() .. "/a 'dir' with $x"
  assert(fs.mkdir_p(d))
  local argv = { "/bin/sh", "-c", PRINT_ALL, "sh" }
  for _, v in ipairs(HOSTILE) do argv[#argv + 1] = v end
  local name = [[wb "quoted" 'name' $x \ back # hash]]
  local env = { H1 = HOSTILE[9] .. HOSTILE[7], H2 = "it's \"$HOME\" \\" }
  local id, err = slurm.submit({ name = name, argv = argv, env = env, cwd = d, mem = 256,
    output = d .. "/out %j.txt" }, { script_path = d .. "/job.sbatch" })
  T.ok(id, err)
  local want = table.concat(HOSTILE, "\0") .. "\0" .. env.H1 .. "\0" .. env.H2 .. "\0" .. name .. "\0" .. d .. "\0"
  local out = d .. "/out " .. id .. ".txt"
  T.wait_until("the job", 60, function() return job_states(id)[tostring(id)] == "COMPLETED" end)
  T.eq(fs.read(out), want)

  -- The executor: the same strings through the cases file, `wb job` and the campaign logs.
  local dir = T.tmpdir() .. "/run"
  local ctx = { name = "slurm_quote", cfg = json.object(), opts = { output = dir, overrides = {} } }
  local c = wb.campaign.open(ctx)
  local ex = wb.executor.new(c, { executor = "slurm", mem = 256, poll = { min = 0.2, max = 1 } })
  local cases = {
    { name = "hostile one", argv = argv, env = env, cwd = d },
    { name = "secret", argv = { "sh", "-c", 'printf "%s" "$DB_PASSWORD" > secret.txt; echo "$DB_PASSWORD"' },
      env = { DB_PASSWORD = "pw-" .. HOSTILE[5] }, cwd = d },
  }
  local recs = ex:run_cases(cases)
  c:finish()
  T.eq(ex.kind, "slurm")
  T.eq({ recs[1].status, recs[2].status }, { "success", "success" })
  T.eq(recs[1].array_task_id, 0)
  T.eq(fs.read(dir .. "/" .. recs[1].stdout_log), table.concat(HOSTILE, "\0") .. "\0" .. env.H1 .. "\0" .. env.H2 ..
    "\0wb-slurm_quote\0" .. d .. "\0")
  T.eq(recs[1].command_arguments, argv)
  T.eq(fs.read(d .. "/secret.txt"), "pw-" .. HOSTILE[5])
  T.eq(fs.read(dir .. "/" .. recs[2].stdout_log), "[REDACTED]\n")
  for _, f in ipairs({ "jobs/batch-001.json", "jobs/batch-001.sbatch", "manifest.json" }) do
    T.ok(not fs.read(dir .. "/" .. f):find("pw-", 1, true), f .. " holds no secret")
  end
end)

T.case("a successful job: measured like a local run, Slurm fields recorded", function()
  local res, dir = run_cases({ "cases=1" })
  T.eq(res.code, 0, res.stderr)
  local m = T.manifest(dir)
  T.eq(m.status, "complete")
  local r = m.runs[1]
  T.eq(r.name, "case001")
  T.eq(r.status, "success")
  T.eq(r.return_code, 0)
  T.eq(r.slurm_state, "COMPLETED")
  T.eq(r.slurm_state_source, SOURCE)
  T.eq(r.slurm_exit_code, "0:0")
  T.eq(r.node, node_name())
  T.ok(math.type(r.job_id) == "integer" and r.array_task_id == nil, "a single job, not an array")
  T.ok(r.wall_time_seconds > 0 and r.maxrss_kb > 0 and r.user_seconds >= 0, "measured")
  T.eq(r.command_arguments, { "sh", "-c", 'echo "out $CASE_INDEX"' })
  T.eq(fs.read(dir .. "/" .. r.stdout_log), "out 1\n")
  T.eq(r.metrics.output_lines, 1)
  T.match(fs.read(dir .. "/jobs/batch-001.sbatch"), "\nexec .* job .*/jobs/batch%-001%.json 0\n")
  T.eq(T.events(dir, "slurm_state_source")[1].fields.source, SOURCE)
end)

T.case("a failing job keeps its exit code", function()
  local res, dir = run_cases({ "cases=1", "fail_case=1", "fail_code=3" })
  T.eq(res.code, 1, res.stderr)
  local r = T.manifest(dir).runs[1]
  T.eq(r.status, "failed")
  T.eq(r.return_code, 3)
  T.eq(r.slurm_state, "FAILED")
  T.eq(r.slurm_exit_code, "3:0")
  T.eq(T.manifest(dir).status, "failed")
end)

T.case("a cancelled job ends CANCELLED and failed", function()
  local p <close>, dir = start_cases({ "cases=1", "script=echo started; sleep 120" })
  local id = submitted_job(dir, p)
  wait_started(p, dir)
  sh("scancel " .. id)
  local res = p:wait()
  T.eq(res.code, 1, res.stderr)
  local r = T.manifest(dir).runs[1]
  T.eq(r.status, "failed")
  T.eq(r.slurm_state, "CANCELLED")
  -- scancel signals every process of the job: whichever hears it first, the case was stopped
  T.eq(r.return_code, wb.null)
  T.match(r.error, "^slurm: job CANCELLED")
end)

-- The order that made a stopped case look like one that exited 143, made likely: the command ends
-- itself as soon as its job is cancelled (the other order must give the same record).
T.case("a case ended by Slurm's stop before wb job hears of it is stopped with its job, not a failed command", function()
  local res, dir = run_cases({ "cases=1", "script=scancel $SLURM_JOB_ID; kill -TERM $$" })
  T.eq(res.code, 1, res.stderr)
  local r = T.manifest(dir).runs[1]
  T.eq(r.slurm_state, "CANCELLED")
  T.eq(r.return_code, wb.null)
  T.eq(json.read(dir .. "/jobs/results/case001.json").interrupted, 15, "wb job stopped by SIGTERM")
end)

T.case("an 8-task array sweep: one submission, one manifest", function()
  local res, dir = run_cases({ "cases=8" })
  T.eq(res.code, 0, res.stderr)
  local m = T.manifest(dir)
  T.eq(#m.runs, 8)
  local s = stats(dir)
  T.eq(s.sbatch_calls, 1)
  T.eq(s.submitted_jobs, 1)
  for i, r in ipairs(m.runs) do
    T.eq(r.name, string.format("case%03d", i))
    T.eq(r.status, "success")
    T.eq(r.job_id, m.runs[1].job_id)
    T.eq(r.array_task_id, i - 1)
    T.eq(r.slurm_state, "COMPLETED")
    T.eq(fs.read(dir .. "/logs/" .. r.name .. ".stdout.log"), "out " .. i .. "\n")
  end
  T.match(fs.read(dir .. "/jobs/batch-001.sbatch"), '#SBATCH %-%-array=0%-7\n.*"%$SLURM_ARRAY_TASK_ID"\n$')
end)

T.case("rejected submissions: exit 2 with Slurm's message, nothing submitted", function()
  for _, c in ipairs({
    { "machine.partition=nope", "Invalid partition name specified" },
    { "machine.gres=gpu:1", "Invalid generic resource (gres) specification" },
    { "machine.mem=10T", "Requested node configuration is not available" },
  }) do
    local res, dir = run_cases({ "cases=2", c[1] })
    T.eq(res.code, 2, c[1] .. ": " .. res.stderr)
    T.match(res.stderr, "^wb: sbatch: error: ")
    T.ok(res.stderr:find(c[2] .. "\n", 1, true), res.stderr)
    T.eq(#T.events(dir, "slurm_submitted"), 0)
    T.eq(T.manifest(dir).status, "failed")
    for _, r in ipairs(T.manifest(dir).runs) do T.eq(r.status, "pending") end
  end
end)

T.case("SIGINT cancels every job the campaign submitted; --resume submits the rest", function()
  -- --resume takes the run's own overrides: the script itself says "resumed" once the flag exists
  local flag = T.tmpdir() .. "/resumed"
  local quick = "script='if [ -e " .. flag .. " ]; then echo resumed; elif [ \"$CASE_INDEX\" = 1 ]; " ..
    "then echo quick; else sleep 120; fi'"
  local p <close>, dir = start_cases({ "cases=3", quick })
  local id = submitted_job(dir, p)
  T.wait_until("case001 done and the others running", 60, function()
    local st = job_states(id)
    local m = require("wb.campaign").read_manifest(dir .. "/manifest.json")
    return m and m.runs[1].status == "success" and st[id .. "_1"] == "RUNNING" and st[id .. "_2"] == "RUNNING"
  end, p)
  p:kill(2)
  local res = p:wait()
  T.eq(res.code, 130, res.stderr)
  local m = T.manifest(dir)
  T.eq(m.status, "interrupted")
  T.eq({ m.runs[1].status, m.runs[2].status, m.runs[3].status }, { "success", "running", "running" })
  T.eq(T.events(dir, "slurm_cancelled")[1].fields.job_ids, { id })
  T.wait_until("the running tasks CANCELLED", 30, function()
    local st = job_states(id)
    return st[id .. "_0"] == "COMPLETED" and st[id .. "_1"] == "CANCELLED" and st[id .. "_2"] == "CANCELLED"
  end)

  assert(fs.write(flag, ""))
  local r2 = T.wb(run_args(CASES, { "cases=3", quick, "--resume", dir }), { timeout = 120, cwd = ROOT })
  T.eq(r2.code, 0, r2.stderr)
  m = T.manifest(dir)
  T.eq(m.status, "complete")
  T.eq(fs.read(dir .. "/logs/case001.stdout.log"), "quick\n")
  T.eq(fs.read(dir .. "/logs/case002.stdout.log"), "resumed\n")
  T.eq(fs.read(dir .. "/logs/case003.stdout.log"), "resumed\n")
  T.eq(#T.events(dir, "run_skipped"), 1)
  T.eq(#json.read(dir .. "/jobs/batch-002.json").cases, 2)
  T.eq({ m.runs[2].array_task_id, m.runs[3].array_task_id }, { 0, 1 })
end)

T.case("the same matrix on machine=local and machine=slurm_cpu: same runs and metrics", function()
  local d = T.tmpdir()
  local rl = T.wb({ "run", MATRIX, "-o", d .. "/local" }, { cwd = ROOT })
  T.eq(rl.code, 0, rl.stderr)
  local rs, sdir = run_cases({}, nil, MATRIX)
  T.eq(rs.code, 0, rs.stderr)
  local a, b = T.manifest(d .. "/local"), T.manifest(sdir)
  T.eq(#a.runs, 8)
  T.eq(#b.runs, #a.runs)
  local shared = { "name", "status", "command_arguments", "return_code", "metrics", "stdout_log", "stderr_log" }
  for i, ra in ipairs(a.runs) do
    local rb = b.runs[i]
    for _, k in ipairs(shared) do T.eq(rb[k], ra[k], ra.name .. "." .. k) end
    for _, k in ipairs({ "wall_time_seconds", "user_seconds", "sys_seconds", "maxrss_kb" }) do
      T.eq(type(rb[k]), type(ra[k]), ra.name .. "." .. k)
    end
    T.eq(fs.read(sdir .. "/" .. rb.stdout_log), fs.read(d .. "/local/" .. ra.stdout_log))
  end
  T.eq(b.runs[8].metrics, { value = 64, output_row_count = 4 })
end)

T.case("matrix trials on the cluster: one at a time by default, node and overlap per trial; raised parallelism warns", function()
  local small = { "dataset.variants=2000", "dataset.samples=500", "workload.threads=1", "matrix.trials=3",
    "matrix.only=[binary_cpu]", "machine.cpus=1" }
  local function matrix(name, ...)
    local dir = T.tmpdir() .. "/" .. name
    local args = run_args(ROOT .. "/recipes/matrix.lua", small, dir)
    for _, a in ipairs({ ... }) do args[#args + 1] = a end
    return T.wb(args, { timeout = 300, cwd = ROOT }), dir
  end
  local res, dir = matrix("serial")
  T.eq(res.code, 0, res.stderr)
  T.match(fs.read(dir .. "/jobs/batch-001.sbatch"), "\n#SBATCH %-%-array=0%-2%%1\n")
  local trials = {}
  for _, r in ipairs(T.manifest(dir).runs) do if r.role == "trial" then trials[#trials + 1] = r end end
  T.eq(#trials, 3)
  for _, r in ipairs(trials) do
    T.ok(type(r.node) == "string" and r.finished_epoch > r.started_epoch, r.name .. ": node and times")
    T.eq(r.overlapped_with, nil, r.name .. " ran alone")
  end
  T.ok(not res.stderr:find("ran at the same time", 1, true), res.stderr)
  T.match(fs.read(dir .. "/report.md"), "## Trials on the cluster")
  T.match(fs.read(dir .. "/report.md"), "| binary_cpu%.t1 | [^|]+ | +[%d.]+ %S+ | nothing +|")
  -- three at once on the one node: said on stderr, in the records, the events and the report
  res, dir = matrix("parallel", "machine.array_parallelism=3")
  T.eq(res.code, 0, res.stderr)
  T.match(fs.read(dir .. "/jobs/batch-001.sbatch"), "\n#SBATCH %-%-array=0%-2%%3\n")
  local overlapped = 0
  for _, r in ipairs(T.manifest(dir).runs) do
    if r.role == "trial" and type(r.overlapped_with) == "table" then
      overlapped = overlapped + 1
      T.ok(r.overlap_seconds > 0, r.name)
    end
  end
  T.ok(overlapped >= 2, "trials that ran side by side: " .. overlapped)
  T.match(res.stderr, "wb: warning: %d pairs? of trials ran at the same time on one node %(binary_cpu%.t%d with " ..
    "binary_cpu%.t%d on ")
  T.eq(#T.events(dir, "cases_overlapped"), 1)
  T.match(fs.read(dir .. "/report.md"), "%*%*Warning:%*%* %d pairs? of trials ran at the same time on one node")
end)

plain_case("a 200-task array is tracked with one squeue call per poll", function()
  local d = T.tmpdir()
  local log = d .. "/squeue.log"
  local real = assert(proc.which("squeue"))
  assert(fs.write(d .. "/squeue", '#!/bin/sh\necho "$*" >> ' .. log .. '\nexec ' .. real .. ' "$@"\n',
    { mode = EXEC }))
  local res, dir = run_cases({ "cases=200", "script=true" }, { PATH = d .. ":" .. os.getenv("PATH") })
  T.eq(res.code, 0, res.stderr)
  local m = T.manifest(dir)
  T.eq(#m.runs, 200)
  for _, r in ipairs(m.runs) do T.eq(r.status, "success", r.name) end
  local s = stats(dir)
  local calls = T.count(fs.read(log) or "", "\n")
  T.ok(s.polls >= 1, "polled")
  T.eq(calls, s.polls, "squeue calls seen by the wrapper = polls")
  T.eq(s.squeue_calls, s.polls)
  T.eq(s.sbatch_calls, 1)
  T.ok(s.polls < 200, "far fewer polls than tasks: " .. s.polls)
end)

plain_case("transient failures of sbatch and squeue are retried", function()
  local d = T.tmpdir()
  for _, cmd in ipairs({ "sbatch", "squeue" }) do
    local real = assert(proc.which(cmd))
    assert(fs.write(d .. "/" .. cmd, table.concat({
      "#!/bin/sh",
      "n=$(cat " .. d .. "/" .. cmd .. ".fails)",
      'if [ "$n" -gt 0 ]; then',
      "  echo $((n - 1)) > " .. d .. "/" .. cmd .. ".fails",
      '  echo "' .. cmd .. ': error: Unable to contact slurm controller (connect failure)" >&2',
      "  exit 1",
      "fi",
      "exec " .. real .. ' "$@"', "" }, "\n"), { mode = EXEC }))
  end
  assert(fs.write(d .. "/sbatch.fails", "1\n"))
  assert(fs.write(d .. "/squeue.fails", "3\n"))
  local res, dir = run_cases({ "cases=2" }, { PATH = d .. ":" .. os.getenv("PATH") })
  T.eq(res.code, 0, res.stderr)
  local s = stats(dir)
  T.eq(s.sbatch_calls, 2)
  T.eq(s.poll_failures, 3)
  T.eq(#T.events(dir, "slurm_poll_failed"), 3)
  for _, r in ipairs(T.manifest(dir).runs) do T.eq(r.status, "success") end
end)

plain_case("--dry-run writes the batch scripts and submits nothing", function()
  local d = T.tmpdir()
  local real = assert(proc.which("sbatch"))
  assert(fs.write(d .. "/sbatch", "#!/bin/sh\ntouch " .. d .. "/called\nexec " .. real .. ' "$@"\n', { mode = EXEC }))
  local res, dir = run_cases({ "cases=3", "--dry-run" }, { PATH = d .. ":" .. os.getenv("PATH") })
  T.eq(res.code, 0, res.stderr)
  T.ok(not fs.exists(d .. "/called"), "sbatch was not run")
  local script = fs.read(dir .. "/jobs/batch-001.sbatch")
  T.match(script, "^#!/bin/sh\n#SBATCH %-%-job%-name=wb%-slurm_cases\n")
  T.match(script, "\n#SBATCH %-%-array=0%-2\n")
  T.ok(fs.exists(dir .. "/jobs/batch-001.json"))
  local m = T.manifest(dir)
  T.eq(m.dry_run, true)
  for _, r in ipairs(m.runs) do
    T.eq(r.status, "dry_run")
    T.eq(r.slurm_script, "jobs/batch-001.sbatch")
  end
  -- The script is complete: submitted by hand, it runs the cases.
  local id = sh("sbatch --parsable " .. dir .. "/jobs/batch-001.sbatch"):match("%d+")
  T.wait_until("the hand-submitted array", 60, function()
    local s = job_states(id)
    return s[id .. "_0"] == "COMPLETED" and s[id .. "_1"] == "COMPLETED" and s[id .. "_2"] == "COMPLETED"
  end)
  T.eq(fs.read(dir .. "/logs/case002.stdout.log"), "out 2\n")
  T.eq(json.read(dir .. "/jobs/results/case003.json").status, "success")
end)

plain_case("a job over its time limit ends TIMEOUT", function()
  local run = start_timeout_run()
  local res = run.p:wait()
  run.p:close()
  T.eq(res.code, 1, res.stderr)
  local r = T.manifest(run.dir).runs[1]
  T.eq(r.status, "failed")
  T.eq(r.slurm_state, "TIMEOUT")
  T.eq(r.timed_out, true)
  T.eq(r.return_code, wb.null)
  T.match(r.error, "TIMEOUT")
  T.match(fs.read(run.dir .. "/jobs/batch-001.sbatch"), "\n#SBATCH %-%-time=1\n")
end, true)

-- After the time limit: taking the node down or preempting would end that job too.
-- A case that runs long on its first attempt and succeeds on the next.
local function retry_script(marker)
  return "script='if [ -e " .. marker .. " ]; then echo second; else touch " .. marker .. "; sleep 120; fi'"
end

T.final_case("NODE_FAIL is retried up to max_retries", function()
  local d = T.tmpdir()
  local p <close>, dir = start_cases({ "cases=1", "machine.max_retries=1", retry_script(d .. "/marker") })
  T.wait_until("the first attempt", 60, function() return fs.exists(d .. "/marker") end, p)
  local node = node_name()
  sh("scontrol update nodename=" .. node .. " state=down reason=wbtest")
  sh("scontrol update nodename=" .. node .. " state=resume")
  local res = p:wait()
  T.eq(res.code, 0, res.stderr)
  local r = T.manifest(dir).runs[1]
  T.eq(r.status, "success")
  T.eq(r.slurm_attempts, 2)
  T.eq(fs.read(dir .. "/logs/case001.stdout.log"), "second\n")
  local ev = T.events(dir, "slurm_retry")
  T.eq(#ev, 1)
  T.eq(ev[1].fields.slurm_state, "NODE_FAIL")
  T.eq(stats(dir).submitted_jobs, 2)
end)

T.final_case("PREEMPTED is retried; a second preemption past max_retries fails", function()
  local d = T.tmpdir()
  local p <close>, dir = start_cases({ "cases=1", "machine.max_retries=1", "machine.mem=16G", retry_script(d .. "/marker") })
  T.wait_until("the first attempt", 60, function() return fs.exists(d .. "/marker") end, p)
  local urgent = sh("sbatch --parsable -p urgent --mem=16G -o /dev/null --wrap 'sleep 1'")
  T.match(urgent, "^%d+")
  local res = p:wait()
  T.eq(res.code, 0, res.stderr)
  local r = T.manifest(dir).runs[1]
  T.eq(r.status, "success")
  T.eq(r.slurm_attempts, 2)
  T.eq(T.events(dir, "slurm_retry")[1].fields.slurm_state, "PREEMPTED")

  local p2 <close>, dir2 = start_cases({ "cases=1", "machine.max_retries=0", "machine.mem=16G", "script=echo first; sleep 120" })
  wait_started(p2, dir2)
  sh("sbatch --parsable -p urgent --mem=16G -o /dev/null --wrap 'sleep 1'")
  local res2 = p2:wait()
  T.eq(res2.code, 1, res2.stderr)
  local r2 = T.manifest(dir2).runs[1]
  T.eq(r2.status, "failed")
  T.eq(r2.slurm_state, "PREEMPTED")
  T.eq(#T.events(dir2, "slurm_retry"), 0)
end)

T.final_case("a campaign survives a controller restart", function()
  -- Stopped right after the submission, the controller recovers the jobs from its state files;
  -- wb's squeue calls meanwhile fail or wait for it. (Once it has launched jobs it takes some
  -- 15 s to stop, and a task ending meanwhile is reported only when slurmstepd retries.)
  local p <close>, dir = start_cases({ "cases=2", "script=sleep 3; echo done" })
  submitted_job(dir, p)
  local pid = assert(fs.read(CLUSTER .. "/run/slurmctld.pid")):match("%d+")
  sh("kill " .. pid)
  T.wait_until("slurmctld to exit", 60, function()
    local stat = fs.read("/proc/" .. pid .. "/stat")
    return not stat or stat:match("^%d+ %(.*%) ([ZX])")
  end)
  local _, st = sh("bash " .. ROOT .. "/tests/slurm/start.sh" .. (ACCOUNTING and " --accounting" or ""))
  T.eq(st.code, 0, st.stderr)
  T.ok(fs.read(CLUSTER .. "/run/slurmctld.pid"):match("%d+") ~= pid, "a new slurmctld")
  local res = p:wait()
  T.eq(res.code, 0, res.stderr)
  for _, r in ipairs(T.manifest(dir).runs) do
    T.eq(r.status, "success")
    T.eq(fs.read(dir .. "/" .. r.stdout_log), "done\n")
  end
end)

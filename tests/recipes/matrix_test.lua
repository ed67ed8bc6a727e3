local T = require "wb.test"
local wb = require "wb"
local fs, json, proc = wb.fs, wb.json, wb.proc

-- Small enough to be quick (one thread, about 0.3 s of binary compute per run), with eight trials
-- so that the comparison of two such campaigns tests its rows (8 vs 8 runs reach p = 1.6e-4).
local SMALL = { "dataset.variants=4000", "dataset.samples=1000", "workload.threads=1", "matrix.trials=8" }
local SIX = { "binary_cpu", "binary_gpu", "binary_gpu_cached", "linear_cpu", "linear_gpu", "linear_gpu_cached" }

local function run_wb(args, env, recipe)
  return T.wb({ "run", "recipes/" .. (recipe or "matrix") .. ".lua", table.unpack(args) }, { env = env, timeout = 120 })
end

local function with(list, ...)
  local out = table.move(list, 1, #list, 1, {})
  for _, a in ipairs({ ... }) do out[#out + 1] = a end
  return out
end

local function runs_by_name(m)
  local out = {}
  for _, r in ipairs(m.runs) do out[r.name] = r end
  return out
end

local parent = T.tmpdir()

T.case("the six-run matrix on the bundled engine: runs, stages, rows, cache states", function()
  local dir = parent .. "/m1"
  local res = run_wb(with(SMALL, "-o", dir))
  T.eq(res.code, 0, res.stderr)
  T.match(res.stdout, "report: " .. dir:gsub("%p", "%%%0") .. "/report.md")
  local m = T.manifest(dir)
  T.eq(m.status, "complete")
  T.eq(m.dry_run, false)
  T.eq(m.previous_manifest_path, wb.null)
  local names = {}
  for i = 1, 6 do names[i] = m.runs[i].name end
  T.eq(names, SIX)
  T.eq(#m.runs, 6 + 6 * 8, "six runs, then their trials")
  local by = runs_by_name(m)
  for _, name in ipairs(SIX) do
    local r = by[name]
    T.eq(r.status, "success", name)
    T.eq(r.return_code, 0, name)
    T.eq(r.trials, 8, name)
    T.ok(r.wall_time_seconds > 0, name)
    T.eq(r.command_arguments[2], "--trait")
    T.eq(r.output_run_directory, "runs/" .. name .. "/t1")
    T.eq(r.event_log_path, "runs/" .. name .. "/t1/events.jsonl")
    T.ok(fs.exists(dir .. "/" .. r.event_log_path), name)
    T.eq(r.output_row_count, 4000, name)
    T.eq(r.output_file_count, 3, name)
    T.ok(r.output_total_bytes > 4000 * 40, name)
    T.eq(r.processed_chunk_count, 16, name)
    for _, stage in ipairs({ "load", "compile", "compute", "write" }) do
      T.eq(type(r.stage_seconds[stage]), "number", name .. " " .. stage)
      T.eq(#r.samples["stage_" .. stage .. "_seconds"], 8)
    end
    T.eq(r.metrics.output_row_count, 4000)
    T.eq(r.metrics.stage_compute_seconds, r.stage_seconds.compute)
    T.eq(r.metrics.wall_time_seconds, r.wall_time_seconds)
  end
  for _, trait in ipairs({ "binary", "linear" }) do
    local cpu, gpu, cached = by[trait .. "_cpu"], by[trait .. "_gpu"], by[trait .. "_gpu_cached"]
    T.eq({ cpu.cache_enabled, cpu.cache_state, cpu.cache_before }, { false, "disabled", wb.null })
    T.eq({ gpu.cache_enabled, gpu.cache_state, gpu.cache_before.file_count }, { true, "cold", 0 })
    T.eq({ cached.cache_enabled, cached.cache_state }, { true, "warm" })
    T.eq(cached.cache_directory, gpu.cache_directory)
    T.eq(gpu.cache_after.file_count, 2)
    T.ok(gpu.cache_after.total_size_bytes > 0)
    T.eq(cached.cache_before, gpu.cache_after)
    T.ok(cached.stage_seconds.compile < gpu.stage_seconds.compile / 2,
      string.format("warm compile %.4f s vs cold %.4f s", cached.stage_seconds.compile, gpu.stage_seconds.compile))
  end
  T.eq(by["binary_cpu.t3"].role, "trial")
  T.eq(by["binary_cpu.t3"].metrics, nil)
  T.eq(by["binary_gpu_cached.t3"].cache_directory, "cache/binary_gpu/t3")
  local rows = 0
  for _ in (fs.read(dir .. "/runs/linear_gpu/t2/results.tsv")):gmatch("\n") do rows = rows + 1 end
  T.eq(rows, 4001)
  local report = fs.read(dir .. "/report.md")
  T.match(report, "| binary_gpu_cached | success |")
  T.match(report, "warm")
end)

T.case("the second run carries comparisons against the first", function()
  local dir = parent .. "/m2"
  local res = run_wb(with(SMALL, "-o", dir))
  T.ok(res.code == 0 or res.code == 1, res.stderr)
  local m = T.manifest(dir)
  T.eq(m.status, "complete")
  T.eq(m.previous_manifest_path, parent .. "/m1/manifest.json")
  T.eq(m.compatibility_scope, T.manifest(parent .. "/m1").compatibility_scope)
  local seen = {}
  for _, c in ipairs(m.comparisons) do
    seen[c.run_name .. " " .. c.metric] = c
    T.ok(c.current_value and c.previous_value and c.delta and c.verdict, c.run_name)
  end
  for _, name in ipairs(SIX) do
    T.eq(seen[name .. " output_row_count"].verdict, "unchanged", name)
    T.ok(seen[name .. " stage_compute_seconds"], name)
    T.ok(seen[name .. " wall_time_seconds"], name)
  end
  T.eq(seen["binary_cpu.t1 wall_time_seconds"], nil, "trials are not compared one by one")
  T.match(fs.read(dir .. "/report.md"), "## Comparison with the previous run")
end)

-- A planted ground truth: an engine that reports the stage times the test plants (each with its
-- own ±5% noise, drawn from a hash of a salt, the run and the trial), so the comparison's input is
-- known exactly and does not depend on this machine's load. The second campaign plants a 10%
-- slower compute stage in every run and leaves the other stages' distributions as they were.
local PLANTED_ENGINE = [=[
name=$1 trial=$2 out=$3
mkdir -p "$out"
u() { printf '%s' "$PLANTED_SALT:$name:$trial:$1" | cksum | awk '{ printf "%.6f", ($1 % 20001) / 10000 - 1 }'; }
awk -v f="$PLANTED_FACTOR" -v l="$(u load)" -v c="$(u compile)" -v x="$(u compute)" -v w="$(u write)" 'BEGIN {
  printf "{\"schema_version\": 1, \"stage_totals_seconds\": {\"load\": %.6f, \"compile\": %.6f, \"compute\": %.6f, \"write\": %.6f}}\n",
    0.2 * (1 + 0.05 * l), 0.3 * (1 + 0.05 * c), 1.0 * f * (1 + 0.05 * x), 0.1 * (1 + 0.05 * w) }' > "$out/profile_summary.json"
{ echo variant; seq 10; } > "$out/results.tsv"
]=]

local function planted_stage(dir, run, trial, stage)
  return assert(json.read(string.format("%s/runs/%s/t%d/profile_summary.json", dir, run, trial))).stage_totals_seconds[stage]
end

local function median(xs)
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) / 2] or (xs[n / 2] + xs[n / 2 + 1]) / 2
end

-- A profile directory holding the planted engine and its matrix profile; campaign(dir, salt,
-- factor, ...) runs it with those planted in the environment (and the extra arguments).
local function planted()
  local profiles = T.tmpdir()
  assert(fs.write(profiles .. "/planted.sh", PLANTED_ENGINE))
  assert(fs.write(profiles .. "/matrix_test_planted.yaml", [[
defaults:
  - matrix_chr22
  - _self_
matrix:
  trials: 8
  command: [sh, ]] .. profiles .. [[/planted.sh, "{name}", "{trial}", "{out}"]
  event_log: null
  tools: []
]]))
  return profiles, function(dir, salt, factor, ...)
    return run_wb({ "-o", dir, "--config-name", "matrix_test_planted", ... },
      { WB_PROFILE_PATH = profiles, PLANTED_SALT = salt, PLANTED_FACTOR = factor })
  end
end

T.case("a planted 10% compute slowdown is flagged in every run, and nothing else the engine reports", function()
  local runs = T.tmpdir()
  local _, campaign = planted()
  local base = campaign(runs .. "/p1", "first", "1.0")
  T.eq(base.code, 0, base.stderr)
  local res = campaign(runs .. "/p2", "second", "1.10")
  local m = T.manifest(runs .. "/p2")
  T.eq(m.previous_manifest_path, runs .. "/p1/manifest.json")
  local by = {}
  for _, c in ipairs(m.comparisons) do by[c.run_name .. " " .. c.metric] = c end
  local found = 0
  for _, name in ipairs(SIX) do
    local c = by[name .. " stage_compute_seconds"]
    T.ok(c, "no comparison of " .. name .. " stage_compute_seconds")
    -- found; or, where the load could have made it (one campaign ran beside 0.5 CPU more of other
    -- work than the other, which can make code slower or faster, or both beside other work), no
    -- verdict: across two campaigns on a busy machine only an interleaved re-run can tell
    -- (docs/compare.md, rules 8 and 8b)
    local itf = c.interference
    local b_o, n_o = itf ~= wb.null and itf.base.others_cpu_mean or 0, itf ~= wb.null and itf.new.others_cpu_mean or 0
    local pushed = math.abs(n_o - b_o) >= 0.5 or (b_o >= 0.5 and n_o >= 0.5)
    T.ok(c.verdict == "regression" or (pushed and c.verdict == "confounded"),
      string.format("%s: ratio %.3f, %s", name, c.ratio, c.reason or ""))
    -- the ratio of the medians of what the engine wrote, read here from its own files
    local old, new = {}, {}
    for t = 1, 8 do
      old[t] = planted_stage(runs .. "/p1", name, t, "compute")
      new[t] = planted_stage(runs .. "/p2", name, t, "compute")
    end
    T.near(c.ratio, median(new) / median(old), 1e-4, name)
    T.between(c.ratio, 1.05, 1.15, name .. ": the planted 10%")
    for _, stage in ipairs({ "load", "compile", "write" }) do
      local u = by[name .. " stage_" .. stage .. "_seconds"]
      T.ok(u, "no comparison of " .. name .. " stage_" .. stage .. "_seconds")
      T.ok(u.verdict ~= "regression" and u.verdict ~= "improvement",
        string.format("%s %s unchanged in truth: %s", name, stage, u.reason or u.verdict))
    end
    T.eq(by[name .. " output_row_count"].verdict, "unchanged", name)
    if c.verdict == "regression" then found = found + 1 end
  end
  -- the gate fails on what was found, and only on it
  T.eq(res.code, found > 0 and 1 or 0, res.stderr)
  if found > 0 then
    T.match(res.stdout, "regression%(s%) against")
    T.match(fs.read(runs .. "/p2/report.md"), "%*%*regression%*%*")
  end
end)

T.case("--confirm: the planted slowdown confirmed by a re-run of both sides, the previous one's environment set back",
  function()
    local runs = T.tmpdir()
    local _, campaign = planted()
    T.eq(campaign(runs .. "/p1", "first", "1.0").code, 0)
    -- 48 runs planned and 96 to confirm: within the profile's budget of 250
    local res = campaign(runs .. "/p2", "second", "1.10", "--confirm")
    local m = T.manifest(runs .. "/p2")
    T.eq(m.status, "complete", res.stderr)
    T.eq(m.comparison_summary.confirmed, true)
    T.match(res.stderr, "confirm: .*alternating, 8 trials each; the previous side with PLANTED_FACTOR=1%.0; PLANTED_SALT=first")
    local by, recs = {}, runs_by_name(m)
    for _, c in ipairs(m.comparisons) do by[c.run_name .. " " .. c.metric] = c end
    local confirmed = 0
    for _, name in ipairs(SIX) do
      local c = by[name .. " stage_compute_seconds"]
      -- the previous side ran with PLANTED_SALT=first PLANTED_FACTOR=1.0 again: the engine wrote
      -- exactly what it wrote in p1, trial by trial, and the new side what it wrote in p2, so the
      -- re-run's ratio is the Hodges–Lehmann ratio (sides run interleaved) of the original trials
      T.eq(c.confirmation.verdict, "regression", name .. ": " .. tostring(c.confirmation.reason))
      local before, after = {}, {}
      for t = 1, 8 do
        before[t], after[t] = planted_stage(runs .. "/p1", name, t, "compute"), planted_stage(runs .. "/p2", name, t, "compute")
        T.near(planted_stage(runs .. "/p2/confirm/base", name, t, "compute"), before[t], 1e-9, name .. " trial " .. t)
        T.near(planted_stage(runs .. "/p2/confirm/new", name, t, "compute"), after[t], 1e-9, name .. " trial " .. t)
      end
      T.near(c.confirmation.ratio, (wb.stats.shift_ci(before, after)), 1e-9, name)
      for _, stage in ipairs({ "load", "compile", "write" }) do
        local u = by[name .. " stage_" .. stage .. "_seconds"]
        T.ok(not u.confirmation or u.confirmation.verdict ~= "regression", name .. " " .. stage)
      end
      local side = recs["confirm.base." .. name .. ".t1"]
      T.eq(side.role, "confirmation")
      T.eq({ side.command_arguments[2], side.command_arguments[3], side.command_arguments[4] },
        { "--", "PLANTED_FACTOR=1.0", "PLANTED_SALT=first" })
      local new_side = recs["confirm.new." .. name .. ".t1"].command_arguments
      T.eq({ new_side[1], new_side[2], new_side[3] }, { side.command_arguments[1], "--", "sh" },
        "the new side runs as this campaign did, through env(1) as the previous side does")
      T.eq(recs["confirm.base." .. name].role, "confirmation")
      confirmed = confirmed + 1
    end
    T.eq(m.comparison_summary.regressions, confirmed)
    T.eq(res.code, 1, "the gate counts the confirmed regressions")
    local report = fs.read(runs .. "/p2/report.md")
    T.ok(report:find("| confirmed by an interleaved re-run ", 1, true), "the report's column")
    T.match(report, "The environment differs from the previous run's: PLANTED_FACTOR 1%.0 → 1%.10")
    T.ok(not report:find("| confirm.base", 1, true), "the report's run table leaves the confirmation out")
    -- a third campaign compares with the second's runs, never with its confirmation's
    -- (its planted stages are the second's exactly; what it measures itself, the wall time of a
    -- few milliseconds of sh and awk, may move with the machine, so the gate is only consistent)
    local third = campaign(runs .. "/p3", "second", "1.10")
    local m3 = T.manifest(runs .. "/p3")
    T.eq(m3.status, "complete", third.stderr)
    for _, c in ipairs(m3.comparisons) do
      T.ok(not tostring(c.run_name):find("^confirm"), c.run_name)
      if tostring(c.metric):find("^stage_") then T.eq(c.verdict, "unchanged", c.run_name .. " " .. c.metric) end
    end
    T.eq(third.code, m3.comparison_summary.regressions > 0 and 1 or 0, third.stderr)
    -- within a budget of 100, the re-run is refused and said; the changes count as called (the
    -- planted compute stage's are improvements here; the campaign's own wall times, which the
    -- machine may move, fail the gate only if they were called regressions)
    local held = campaign(runs .. "/p4", "first", "1.0", "--confirm", "--baseline", runs .. "/p2",
      "tool.max_subprocess_runs=100")
    local m4 = T.manifest(runs .. "/p4")
    for _, c in ipairs(m4.comparisons) do
      if c.metric == "stage_compute_seconds" then
        T.ok(c.verdict ~= "regression", c.run_name .. ": 10% faster by construction, " .. c.verdict)
        T.eq(c.confirmation.verdict, "not confirmable")
        T.match(c.confirmation.reason, "the re%-run's 96 runs beside the 48 planned would make 144 subprocess runs > " ..
          "max_subprocess_runs 100")
      end
    end
    T.eq(held.code, m4.comparison_summary.regressions > 0 and 1 or 0, held.stderr)
    T.eq(fs.exists(runs .. "/p4/confirm"), false)
  end)

-- The campaign in dir: its stage_compute rows' confirmations all "not confirmable" with a reason
-- matching pattern, nothing re-run, and the changes counted as called (failing closed).
local function unconfirmable(dir, res, pattern)
  local m = T.manifest(dir)
  local called = { regression = 0, improvement = 0 }
  for _, c in ipairs(m.comparisons) do
    if c.metric == "stage_compute_seconds" then
      T.eq(c.confirmation.verdict, "not confirmable")
      T.match(c.confirmation.reason, pattern)
    end
    if called[c.verdict] then called[c.verdict] = called[c.verdict] + 1 end
  end
  local s = m.comparison_summary
  T.eq({ s.regressions, s.improvements, s.unconfirmed, s.unconfirmable },
    { called.regression, called.improvement, 0, called.regression + called.improvement })
  T.eq(res.code, called.regression > 0 and 1 or 0, "the gate fails on what could not be disproved: " .. res.stderr)
  T.eq(fs.exists(dir .. "/confirm"), false, "nothing re-run")
end

T.case("--confirm: a run whose program changed since the previous run is not confirmable, and still counts", function()
  local runs = T.tmpdir()
  local profiles, campaign = planted()
  T.eq(campaign(runs .. "/p1", "first", "1.0").code, 0)
  assert(fs.write(profiles .. "/planted.sh", PLANTED_ENGINE .. "# rebuilt\n"))
  local res = campaign(runs .. "/p2", "second", "1.10", "confirm=true")
  unconfirmable(runs .. "/p2", res, "code is not there to run: " .. profiles:gsub("%p", "%%%0") .. "/planted%.sh changed since")
end)

T.case("--confirm: no environment is set back from a previous run directory another user owns or can write",
  function()
    if not T.is_root() then T.skip("needs root (to give the previous run directory to another user)") end
    local runs = T.tmpdir()
    local _, campaign = planted()
    T.eq(campaign(runs .. "/p1", "first", "1.0").code, 0)
    T.eq(proc.run({ argv = { "chown", "-R", "65534", runs .. "/p1" } }).code, 0)
    local res = campaign(runs .. "/p2", "second", "1.10", "--confirm")
    unconfirmable(runs .. "/p2", res, "its environment is not set back from a run directory others could have written: " ..
      runs:gsub("%p", "%%%0") .. "/p1 belongs to another user %(uid 65534%)")
    T.eq(proc.run({ argv = { "chown", "-R", "0", runs .. "/p1" } }).code, 0)
    T.eq(proc.run({ argv = { "chmod", "o+w", runs .. "/p1/preflight.json" } }).code, 0)
    res = campaign(runs .. "/p3", "second", "1.10", "--confirm", "--baseline", runs .. "/p1")
    unconfirmable(runs .. "/p3", res, "/p1/preflight%.json can be written by others")
  end)

T.case("--dry-run writes the plan, the commands and the budget, and runs nothing", function()
  local dir = parent .. "/dry"
  local res = run_wb({ "-o", dir, "--dry-run" })
  T.eq(res.code, 0, res.stderr)
  local plan = assert(json.read(dir .. "/plan.json"))
  T.eq(plan.totals.subprocess_runs, 6)
  T.eq(#plan.sections, 2)
  T.eq(plan.sections[2].cases[1].name, "binary_gpu_cached")
  T.match(plan.sections[2].cases[1].command, "%-%-cache%-dir " .. dir:gsub("%p", "%%%0") .. "/cache/binary_gpu ")
  T.ok(not plan.sections[1].cases[1].command:find("--cache-dir", 1, true), "cpu runs have no cache")
  T.match(fs.read(dir .. "/plan.md"), "Within budget")
  local m = T.manifest(dir)
  T.eq(m.dry_run, true)
  for _, r in ipairs(m.runs) do
    T.eq(r.status, "dry_run")
    T.ok(r.cache_state == "enabled" or r.cache_state == "disabled")
  end
  T.ok(not fs.exists(dir .. "/runs"), "nothing ran")
  T.ok(fs.exists(dir .. "/report.md"))
end)

T.case("machine=slurm_cpu --dry-run writes one batch script per wave", function()
  local dir = parent .. "/slurm_dry"
  local res = run_wb({ "-o", dir, "--dry-run", "machine=slurm_cpu" })
  T.eq(res.code, 0, res.stderr)
  T.ok(fs.exists(dir .. "/jobs/batch-001.sbatch"), "wave 1 script")
  T.ok(fs.exists(dir .. "/jobs/batch-002.sbatch"), "wave 2 script")
  T.match(fs.read(dir .. "/jobs/batch-001.sbatch"), "#SBATCH %-%-array=0%-3")
  local by = runs_by_name(T.manifest(dir))
  T.eq(by.binary_gpu_cached.slurm_script, "jobs/batch-002.sbatch")
end)

T.case("explicit runs, a warm-up for a lone warm run, and a failing run", function()
  local profiles = T.tmpdir()
  assert(fs.write(profiles .. "/matrix_test_explicit.yaml", [[
defaults:
  - matrix_chr22
  - _self_
matrix:
  runs:
    - {name: lone_cached, trait: linear, engine_device: gpu, cache: warm}
    - {name: broken, trait: binary, engine_device: cpu, fail_after: 2}
  params: {fail_after: ""}
  command:
    - ${env:WB_BUILD,build}/examples/gwas_engine
    - --trait
    - "{trait}"
    - --device
    - "{engine_device}"
    - [--cache-dir, "{cache_dir}"]
    - [--fail-after-chunks, "{fail_after}"]
    - --out
    - "{out}"
    - --variants
    - "1500"
    - --samples
    - "300"
]]))
  local dir = parent .. "/explicit"
  local res = run_wb({ "-o", dir, "--config-name", "matrix_test_explicit" }, { WB_PROFILE_PATH = profiles })
  T.eq(res.code, 1, res.stderr)
  local m = T.manifest(dir)
  T.eq(m.status, "failed")
  local names = {}
  for i, r in ipairs(m.runs) do names[i] = r.name .. "=" .. r.status end
  T.eq(names, { "lone_cached_warmup=success", "lone_cached=success", "broken=failed" })
  local by = runs_by_name(m)
  T.eq(by.lone_cached_warmup.role, "warmup")
  T.eq(by.lone_cached_warmup.metrics, nil)
  T.eq(by.lone_cached_warmup.cache_state, "cold")
  T.eq(by.lone_cached.cache_state, "warm")
  T.eq(by.broken.return_code, 1)
  T.match(by.broken.error, "simulated failure after 2 chunks")
  T.eq(by.broken.event_counts.run_failed, 1)
  T.eq(by.broken.output_row_count, wb.null)
end)

T.case("matrix.telemetry with two trials: each trial captured, the trials merged under their own root frames",
  function()
  if not wb.capture.profiler("ebpf").available and not wb.capture.profiler("perf_event").available then
    T.skip("no stack sampler: needs eBPF or perf_event_open")
  end
  local dir = parent .. "/tele"
  local res = run_wb({ "-o", dir, "matrix.only=[binary_cpu]", "matrix.trials=2", "matrix.telemetry=true",
    "dataset.variants=4000", "dataset.samples=1000", "workload.threads=1" })
  T.eq(res.code, 0, res.stderr)
  local by = runs_by_name(assert(json.read(dir .. "/manifest.json")))
  for k = 1, 2 do
    local t = by["binary_cpu.t" .. k]
    T.ok(t and t.method and t.capture, "trial " .. k .. " ran under wb.capture")
    T.match(assert(fs.read(dir .. "/profiles/binary_cpu.t" .. k .. ".oncpu.folded")), "gwas_engine")
  end
  local run = by.binary_cpu
  T.eq(run.missing_trials, {})
  -- two trials of the same work: the larger CPU time is at most a little above their mean
  T.between(run.imbalance, 1, 1.25, "max/mean CPU time of the trials")
  local merged = assert(fs.read(dir .. "/profiles/binary_cpu.merged.oncpu.folded"))
  local roots = {}
  for line in merged:gmatch("[^\n]+") do roots[line:match("^(trial %d+) %(") or "?"] = true end
  T.eq(roots, { ["trial 1"] = true, ["trial 2"] = true }, "every stack under its trial's root frame")
  for _, key in ipairs({ "merged_oncpu", "trials_diff" }) do
    T.ok(fs.exists(dir .. "/" .. run.profiles[key]), key .. " written: " .. tostring(run.profiles[key]))
  end
end)

T.case("the progress line shows the child's chunk progress on a TTY", function()
  if not proc.which("script") or not proc.which("tail") then T.skip("needs script(1) and tail(1)") end
  local dir = parent .. "/tty"
  local cmd = string.format("script -qec \"%s run recipes/matrix.lua -o %s " ..
    "matrix.only=[binary_cpu] dataset.variants=8000 dataset.samples=1000 workload.threads=1\" /dev/null 2>&1",
    T.wb_binary(), dir)
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  T.match(out, "binary_cpu: chunk %d+/32")
  local plain = run_wb({ "-o", parent .. "/pipe", "matrix.only=[binary_cpu]", "dataset.variants=500" })
  T.eq(plain.code, 0, plain.stderr)
  T.eq(plain.stderr, "", "nothing on a pipe")
end)

T.case("the plink2 matrix on a dataset made by the data recipe", function()
  if not proc.which("plink2") then T.skip("plink2 is not installed (make deps)") end
  local data = T.tmpdir()
  local env = { WB_DATA_DIR = data }
  local missing = run_wb({ "-o", parent .. "/p0", "--config-name", "matrix_plink2" }, env)
  T.eq(missing.code, 2)
  T.match(missing.stderr, "matrix.inputs: missing .*wb data")
  T.ok(not fs.exists(parent .. "/p0"), "no run directory for a refused run")
  local made = run_wb({ "-o", parent .. "/data1" }, env, "data")
  T.eq(made.code, 0, made.stderr)
  T.match(made.stdout, "binary: made " .. data:gsub("%p", "%%%0") .. "/plink2_dummy_2000x20000/dummy_binary")
  local dir = parent .. "/p1"
  local res = run_wb({ "-o", dir, "-cn", "matrix_plink2" }, env)
  T.eq(res.code, 0, res.stderr)
  local m = T.manifest(dir)
  local names = {}
  for i, r in ipairs(m.runs) do names[i] = r.name end
  T.eq(names, { "binary_t1", "binary_t2", "linear_t1", "linear_t2" })
  for _, r in ipairs(m.runs) do
    T.eq(r.status, "success", r.name)
    T.eq(r.output_row_count, 20000, r.name)
    T.eq(r.event_log_path, wb.null)
    T.eq(r.cache_state, "disabled")
    T.eq(r.metrics.output_row_count, 20000)
  end
  T.match(m.runs[1].command_arguments[3], "dummy_binary$")
  T.eq(m.runs[2].command_arguments[7], "2")
  T.ok(fs.exists(dir .. "/runs/binary_t1/assoc.PHENO1.glm.logistic.hybrid"))
  T.ok(fs.exists(dir .. "/runs/linear_t2/assoc.PHENO1.glm.linear"))
  T.match(assert(json.read(dir .. "/preflight.json")).tools.plink2, "^PLINK v2")
  local again = run_wb({ "-o", parent .. "/data2" }, env, "data")
  T.eq(again.code, 0, again.stderr)
  T.match(again.stdout, "binary: kept")
end)

T.case("profile mistakes are exit 2 before a run directory exists", function()
  local dir = parent .. "/bad"
  local res = run_wb({ "-o", dir, "matrix.name='x_{nope}'" })
  T.eq(res.code, 2)
  T.match(res.stderr, "unknown placeholder {nope}")
  res = run_wb({ "-o", dir, "matrix.only=[binary_tpu]" })
  T.eq(res.code, 2)
  T.match(res.stderr, "no run named 'binary_tpu' %(runs: binary_cpu, ")
  T.ok(not fs.exists(dir))
end)

-- Confirm before alarming, for the matrix (confirm=true, --confirm; docs/compare.md): the runs
-- behind a comparison's changes run again in this campaign, the previous campaign's side and this
-- one's alternating trial by trial through the machine's executor (locally or on Slurm), each side
-- in its own directories with its own caches (confirm/base, confirm/new). Both sides run this
-- campaign's command (the compatibility scope makes it the previous one's too); the previous side
-- with the environment variables that differ set back to the previous run's (wb.environ), only
-- from a previous run directory of this user that no one else can write, and never a variable
-- that chooses what code runs. That is the previous run's code only while the files its command
-- named are unchanged, so each record carries their identities (command_files); a run whose files
-- changed since is not confirmable, and a change that could not be re-run still counts.
local wb = require "wb"
local confirm = require "wb.confirm"
local environ = require "wb.environ"

local fs, json, util = wb.fs, wb.json, wb.util

local M = {}

-- The trials a side of a confirmation gets at least, more when the matrix itself runs more: with
-- 5 a side the engine's planted 10% read 1.10-1.12x in the re-run beside a CI run, p = 0.0079
-- (5 vs 5 can give no less), not significant once corrected; 8 a side can reach p = 1.6e-4.
M.MIN_TRIALS = 8

-- Files larger than this (data, not programs) are identified by size and modification time.
M.HASH_MAX_BYTES = 64 << 20

local hashed = {} -- path -> {size, mtime, id}: a file is hashed once while it is unchanged

local function identity_of(path)
  local st = fs.stat(path)
  if not st or st.type ~= "file" then return nil end
  local seen = hashed[path]
  if seen and seen.size == st.size and seen.mtime == st.mtime then return seen.id end
  local id = json.object()
  id.size, id.mtime = st.size, st.mtime
  id.blake2b = st.size <= M.HASH_MAX_BYTES and fs.hash(path, M.HASH_MAX_BYTES) or json.null
  hashed[path] = { size = st.size, mtime = st.mtime, id = id }
  return id
end

-- files = matrix_confirm.identity(argv) : {path = {size, mtime, blake2b}} for the program (found
-- on PATH when named without a '/') and every argument naming an existing regular file, by the
-- path that was looked at
function M.identity(argv)
  local out = json.object()
  for i, a in ipairs(argv) do
    a = tostring(a)
    local path = (i == 1 and not a:find("/", 1, true)) and require("wb.proc").which(a) or a
    local id = path and identity_of(path)
    if id then out[path] = id end
  end
  return out
end

-- Why the files a previous record names are not the ones there now, or nil.
local function changed(files)
  for _, path in ipairs(util.keys(files)) do
    local was = files[path]
    if type(was) ~= "table" then return "the previous run's record of " .. path .. " is not one this wb wrote" end
    local now = identity_of(path)
    if not now then return path .. " is gone" end
    local same = type(was.blake2b) == "string" and now.blake2b == was.blake2b or
        (was.blake2b == json.null and now.size == was.size and now.mtime == was.mtime)
    if not same then return path .. " changed since (" .. tostring(was.size) .. " → " .. now.size .. " bytes)" end
  end
  return nil
end

-- The previous campaign's run record by name (a run, not a trial), or nil.
local function previous_record(doc, name)
  for _, r in ipairs(type(doc.runs) == "table" and doc.runs or {}) do
    if type(r) == "table" and r.name == name and r.role ~= "trial" and r.role ~= "warmup" then return r end
  end
  return nil
end

-- The side's cases: this matrix's, for the runs named, in root; case names prefixed.
local function side_cases(matrix, s, runs, root, prefix)
  local waves = matrix.cases(s, runs, root)
  for _, wave in ipairs(waves) do
    for _, cs in ipairs(wave) do
      cs.name, cs.capture = prefix .. cs.name, nil
    end
  end
  return waves
end

-- The two sides' waves merged: within a wave, a base case then the new one (the new one first on
-- even trials), so neither side always runs first.
local function interleave(base, new)
  local out = {}
  for w = 1, #base do
    local merged = {}
    for i = 1, #base[w] do
      local b, n = base[w][i], new[w][i]
      if b.trial % 2 == 0 then b, n = n, b end
      merged[#merged + 1] = b
      merged[#merged + 1] = n
    end
    out[w] = merged
  end
  return out
end

-- Why n more runs would break the campaign's budget (tool.max_subprocess_runs, as its plan was
-- held to: plan.check_budget), or nil.
local function over_budget(m, n)
  local plan = require "wb.plan"
  local budget = plan.budget(m.ctx.cfg)
  if budget.allow_over_budget then return nil end
  local planned = 0
  for _, wave in ipairs(m.waves) do planned = planned + #wave end
  local over = plan.check_budget({ subprocess_runs = planned + n, profiler_runs = 0 }, budget)
  return over and string.format("the re-run's %d runs beside the %d planned would make %s " ..
    "(raise it, or tool.allow_over_budget=true)", n, planned, over)
end

-- The comparison of one run's two sides (its aggregated records, named as the run): its rows by
-- name. Each run is judged on its own, as wb.confirm judges each command's re-run.
local function judge(c, name, threshold)
  local compare = require "wb.compare"
  local docs = {}
  for _, side in ipairs({ "base", "new" }) do
    local doc = json.object()
    doc.schema_name, doc.schema_version = "wb.manifest", require("wb.campaign").SCHEMA_VERSION
    local rec = util.deep_copy(c:record("confirm." .. side .. "." .. name))
    rec.name, rec.role = name, "run"
    doc.runs = json.array({ rec })
    docs[side] = compare.from_document(doc, side .. " (re-run)")
  end
  local by = {}
  for _, row in ipairs(compare.compare(docs.base, docs.new, { threshold = threshold, interleaved = true,
    allow_empty = true }).rows) do
    by[row.name] = row
  end
  return by
end

-- The effective user id of this process (/proc/self/status), or nil.
local function euid()
  return tonumber(((fs.read("/proc/self/status") or ""):match("\nUid:%s+%d+%s+(%d+)")))
end

-- Why the files of the run directory dir cannot be trusted to say what to run, or nil: it and
-- its preflight.json must be this user's and writable by no one else.
local function untrusted(dir)
  local me = euid()
  for _, path in ipairs({ dir, dir .. "/preflight.json" }) do
    local st = fs.lstat(path)
    if not st or st.type == "link" then return path .. " is missing or a link" end
    if st.uid ~= me then return path .. " belongs to another user (uid " .. st.uid .. ")" end
    if st.mode & 18 ~= 0 then return path .. " can be written by others" end -- 0022
  end
  return nil
end

-- The environment a campaign recorded (preflight.json in its directory), or nil.
local function environment_of(dir)
  local pre = require("wb.baseline").preflight(dir)
  return pre and type(pre.environment) == "table" and pre.environment or nil
end

-- text = matrix_confirm.environment_text(previous_dir, dir) : how the environment the campaign in
-- dir recorded differs from the previous campaign's (wb.environ.text), or nil (no difference, or
-- not recorded)
function M.environment_text(previous_dir, dir)
  local base, now = environment_of(previous_dir), environment_of(dir)
  return base and now and environ.text(environ.diff(base, now)) or nil
end

-- Why the previous side of run name cannot be re-run, or nil (base_doc: the previous manifest;
-- distrust: why its directory cannot be trusted, taken before it was read).
local function not_runnable(base_doc, distrust, diffs, name)
  local rec = type(base_doc) == "table" and previous_record(base_doc, name)
  if not diffs then
    return "the previous run records no environment (a run of an older wb), so its side cannot be set up again"
  elseif not rec or type(rec.command_files) ~= "table" then
    return "the previous run does not record the files its command named (a run of an older wb)"
  end
  local what = changed(rec.command_files)
  if what then
    return "the previous run's code is not there to run: " .. what ..
        " (keep the previous build beside the new one and compare two builds with wb bench BASE NEW)"
  end
  if #diffs > 0 and distrust then
    return "its environment is not set back from a run directory others could have written: " .. distrust
  end
  return nil
end

-- The reason a side's record failed: its first failed trial's error or exit.
local function failure(c, trials, side)
  for _, name in ipairs(trials) do
    local t = c:record(name)
    if t.status ~= "success" then
      return "the re-run failed (" .. side .. " side, " .. name .. ": " ..
          tostring(util.opt(t.error) or ("exit " .. tostring(util.opt(t.return_code)))) .. ")"
    end
  end
  return "the re-run failed (" .. side .. " side)"
end

-- matrix_confirm.run(m, result) : every run with a row of result (the comparison with the
-- previous campaign) that wb.confirm.needs re-run as the module's header says and judged; each
-- such row gets its confirmation and the summary counts as wb.confirm.apply says.
function M.run(m, result)
  local matrix = require "wb.matrix"
  local c, s = m.c, m.s
  local reasons, wanted = {}, {}
  for _, r in ipairs(result.rows) do
    if confirm.needs(r) and r.record ~= nil and not wanted[r.record] then
      wanted[r.record] = true
      wanted[#wanted + 1] = r.record
    end
  end
  if #wanted == 0 then return confirm.apply(result, reasons) end
  local base_dir = util.dirname(c.previous_path)
  local distrust = untrusted(base_dir) -- before anything in it is read
  local base_doc = require("wb.campaign").read_manifest(c.previous_path)
  local base_env = environment_of(base_dir)
  local diffs = base_env and environ.diff(base_env, environ.capture())
  local runnable = {}
  for _, name in ipairs(wanted) do
    local why = not_runnable(base_doc, distrust, diffs, name)
    if why then reasons[name] = why else runnable[#runnable + 1] = name end
  end
  local function all(why)
    for _, name in ipairs(runnable) do reasons[name] = why end
    return confirm.apply(result, reasons)
  end
  if #runnable == 0 then return confirm.apply(result, reasons) end
  local s2 = {}
  for k, v in pairs(s) do s2[k] = v end
  s2.only, s2.trials, s2.cache_root, s2.telemetry = runnable, math.max(s.trials, M.MIN_TRIALS), nil, false
  local runs = matrix.runs(s2)
  local root = m.root .. "/confirm"
  local base = side_cases(matrix, s2, runs, root .. "/base", "confirm.base.")
  local new = side_cases(matrix, s2, runs, root .. "/new", "confirm.new.")
  local wrapped = false -- the previous side runs through env(1): the new one then does too, so
  for _, side in ipairs({ base, new }) do -- that both pay for the same exec
    for _, wave in ipairs(side) do
      for _, cs in ipairs(wave) do
        local argv, why
        if side == base then
          argv, why = environ.restore(cs.argv, diffs, cs.env)
          wrapped = wrapped or (argv ~= nil and argv ~= cs.argv)
        else
          argv, why = cs.argv, nil
          if wrapped then argv, why = environ.wrap(cs.argv) end
        end
        if not argv then return all(why) end
        cs.argv = argv
      end
    end
  end
  local waves = interleave(base, new)
  local names = {}
  for _, wave in ipairs(waves) do
    for _, cs in ipairs(wave) do names[#names + 1] = cs.name end
  end
  local over = over_budget(m, #names)
  if over then return all(over) end
  local restored = environ.restore_text(diffs, base[1][1].env)
  io.stderr:write(string.format("confirm: %s: the previous side and this one again, alternating, %d trials each%s\n",
    table.concat(runnable, ", "), s2.trials, restored and ("; the previous side with " .. restored) or ""))
  c:declare(names)
  for _, wave in ipairs(waves) do
    for _, cs in ipairs(wave) do
      if not c:is_complete(cs.name) then matrix.planned(c:record(cs.name), cs, m.root, "confirmation") end
    end
  end
  c:save()
  c:event("confirmation_started", { runs = json.array(util.deep_copy(runnable)), trials = s2.trials,
    environment = restored or json.null })
  local ok, err = pcall(matrix.run_waves, c, s2, require("wb.executor").new(c, m.ctx.cfg.machine), waves, m.root,
    false, true)
  if not ok then
    if require("wb.core").is_interrupt(err) then error(err, 0) end
    return all("the re-run failed: " .. tostring(type(err) == "table" and err.msg or err))
  end
  for _, side in ipairs({ { "base", base }, { "new", new } }) do
    for _, r in ipairs(runs) do
      if r.role == "run" then
        local trials = {}
        for _, wave in ipairs(side[2]) do
          for _, cs in ipairs(wave) do
            if cs.run == r then trials[#trials + 1] = cs.name end
          end
        end
        local name = "confirm." .. side[1] .. "." .. r.name
        matrix.aggregate(c, r, trials, s2, m.root, name)
        local rec = c:record(name)
        rec.role = "confirmation"
        if rec.status ~= "success" then reasons[r.name] = reasons[r.name] or failure(c, trials, side[1]) end
      end
    end
  end
  for _, name in ipairs(runnable) do
    if not reasons[name] then reasons[name] = judge(c, name, result.threshold) end
  end
  c:save()
  return confirm.apply(result, reasons)
end

return M

-- Slurm: job specs rendered to batch scripts, submission (sbatch --parsable), cancellation, the
-- Slurm commands' error handling, and `wb job` (the wrapper every job of the executor runs).
-- Tracking jobs is lua/wb/slurm_poll.lua; the executor is lua/wb/executor.lua.
--
--   local script = slurm.render{ name = "x", argv = {"./app", "a b"}, partition = "debug", ... }
--   local id, err, kind = slurm.submit(spec, { script_path = "jobs/x.sbatch" })
--   slurm.cancel({ id })
--
-- A spec: name, argv (a list; the element slurm.TASK_ID stands for $SLURM_ARRAY_TASK_ID), env
-- (NAME = value), cwd, partition, account, qos, cpus (per task), mem (MB, or "4G"), time
-- (minutes, or "HH:MM:SS", "D-HH:MM:SS"), gres, nodes, ntasks (tasks of the job's step), array (a
-- count or "0-7%2"), output, error (paths, Slurm's %j/%A/%a patterns allowed), requeue
-- (true|false), extra (a list of "--option=value"/"--flag" strings, or a mapping option =
-- value|true). Environment variables
-- whose names look secret (util.is_secret_name) are not written: they reach the job through
-- sbatch's environment, as does spec.submit_env.
local core = require "wb.core"
local errors = require "wb.errors"
local fs = require "wb.fs"
local json = require "wb.json"
local util = require "wb.util"

local M = {}

-- The argv element rendered as "$SLURM_ARRAY_TASK_ID".
M.TASK_ID = setmetatable({}, { __tostring = function() return "$SLURM_ARRAY_TASK_ID" end })

-- States after which a job never runs again, and those worth a new attempt.
M.TERMINAL = {
  COMPLETED = true, FAILED = true, TIMEOUT = true, CANCELLED = true, OUT_OF_MEMORY = true,
  NODE_FAIL = true, PREEMPTED = true, BOOT_FAIL = true, DEADLINE = true, REVOKED = true,
  SPECIAL_EXIT = true,
}
M.RETRYABLE = { NODE_FAIL = true, PREEMPTED = true }

local function bad(msg) errors.raise(2, "slurm: " .. msg, 0) end

-- ---- quoting and rendering --------------------------------------------------------------

-- s = slurm.shell_quote(word) : a word /bin/sh reads back unchanged (spaces, quotes, $, \, newlines)
-- (a carriage return is written as "$(printf '\r')": sbatch refuses scripts with CR LF in them)
function M.shell_quote(s)
  if s == M.TASK_ID then return '"$SLURM_ARRAY_TASK_ID"' end
  s = tostring(s)
  if not s:find("\r", 1, true) then return util.shell_quote(s) end
  local parts = {}
  for piece in (s .. "\r"):gmatch("([^\r]*)\r") do parts[#parts + 1] = piece == "" and "" or util.shell_quote(piece) end
  return table.concat(parts, [["$(printf '\r')"]])
end

-- s, err = slurm.directive_quote(value) : the value of an `#SBATCH --opt=value` line as sbatch
-- reads it back: bare when plain, else in double quotes with \ before " and \. A value with a
-- line break cannot be written: nil, err.
function M.directive_quote(v)
  v = tostring(v)
  if v:find("[\r\n]") then return nil, "a line break cannot be written in an #SBATCH line" end
  if v ~= "" and not v:find("[^%w%-%+%./_=:,@%%]") then return v end
  return '"' .. v:gsub('[\\"]', "\\%0") .. '"'
end

local function text_field(spec, key)
  local v = spec[key]
  if v == nil or v == core.null then return nil end
  if type(v) ~= "string" and type(v) ~= "number" then bad(key .. " must be a string, not a " .. type(v)) end
  v = tostring(v)
  if v == "" then bad(key .. " must not be empty") end
  return v
end

local function positive_int(spec, key)
  local v = spec[key]
  if v == nil or v == core.null then return nil end
  if math.type(v) ~= "integer" or v < 1 then bad(key .. " must be a positive integer, got " .. tostring(v)) end
  return tostring(v)
end

local CHECKS = {
  mem = { "^%d+[KMGTkmgt]?[Bb]?$", "a number of MB or a size like 4G" },
  time = { "^[%d:%-]+$", "minutes or [D-]HH:MM:SS" },
  nodes = { "^%d+%-?%d*$", "a node count or range" },
  array = { "^[%d,%-%%:]+$", "an index list like 0-7 or 0-99%10" },
}

local function checked(spec, key)
  local v = text_field(spec, key)
  local c = CHECKS[key]
  if v and c and not v:match(c[1]) and not (key == "time" and (v == "UNLIMITED" or v == "INFINITE")) then
    bad(key .. " must be " .. c[2] .. ", got '" .. v .. "'")
  end
  return v
end

local function extra_directives(extra, out)
  if extra == nil or extra == core.null then return end
  if type(extra) ~= "table" then bad("extra must be a list of \"--option=value\" strings or a mapping") end
  if #extra > 0 or util.is_list(extra) then
    for _, item in ipairs(extra) do
      local opt, value = tostring(item):match("^(%-%-[%w][%w%-]*)=(.*)$")
      if opt then
        out[#out + 1] = { opt, value }
      elseif tostring(item):match("^%-%-[%w][%w%-]*$") then
        out[#out + 1] = { item }
      else
        bad("extra directive '" .. tostring(item) .. "' is not --option or --option=value")
      end
    end
    return
  end
  for _, k in ipairs(util.sorted_keys(extra)) do
    if type(k) ~= "string" or not k:match("^%-?%-?[%w][%w%-]*$") then bad("extra: bad option name '" .. tostring(k) .. "'") end
    local opt = k:match("^%-%-") and k or "--" .. k:gsub("^%-", "")
    local v = extra[k]
    if v == true then
      out[#out + 1] = { opt }
    elseif v ~= false and v ~= core.null then
      out[#out + 1] = { opt, tostring(v) }
    end
  end
end

-- list = slurm.directives(spec) : the spec's sbatch options, {{"--opt", value|nil}, ...}
function M.directives(spec)
  local d = {}
  local function add(opt, v) if v then d[#d + 1] = { opt, v } end end
  add("--job-name", text_field(spec, "name"))
  add("--partition", text_field(spec, "partition"))
  add("--account", text_field(spec, "account"))
  add("--qos", text_field(spec, "qos"))
  add("--nodes", checked(spec, "nodes"))
  add("--ntasks", positive_int(spec, "ntasks"))
  add("--cpus-per-task", positive_int(spec, "cpus"))
  local mem = checked(spec, "mem")
  add("--mem", mem and (mem:gsub("[Bb]$", "")))
  add("--time", checked(spec, "time"))
  add("--gres", text_field(spec, "gres"))
  local array = spec.array
  if math.type(array) == "integer" then
    if array < 1 then bad("array must be a positive count, got " .. array) end
    add("--array", "0-" .. (array - 1))
  else
    add("--array", checked(spec, "array"))
  end
  add("--output", text_field(spec, "output"))
  add("--error", text_field(spec, "error"))
  if spec.requeue == false then d[#d + 1] = { "--no-requeue" } elseif spec.requeue == true then d[#d + 1] = { "--requeue" } end
  extra_directives(spec.extra, d)
  return d
end

local function env_names(env)
  local keys = core.ordered_keys(env) or util.sorted_keys(env)
  for _, k in ipairs(keys) do
    if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then bad("env: '" .. tostring(k) .. "' is not a variable name") end
  end
  return keys
end

-- written, secret = slurm.split_env(env) : variables written into the script (a list of names)
-- and the secret-named ones (name -> value) that must travel through sbatch's environment
function M.split_env(env)
  local written, secret = {}, {}
  if env == nil or env == core.null then return written, secret end
  if type(env) ~= "table" then bad("env must be a table of NAME = value") end
  for _, k in ipairs(env_names(env)) do
    if util.is_secret_name(k) then secret[k] = tostring(env[k]) else written[#written + 1] = k end
  end
  return written, secret
end

-- text = slurm.render(spec) : the batch script (raises exit 2 on a bad spec)
function M.render(spec)
  if type(spec.argv) ~= "table" or #spec.argv == 0 then bad("argv must be a non-empty list") end
  if type(spec.argv[1]) == "string" and spec.argv[1]:sub(1, 1) == "-" then
    bad("argv[1] '" .. spec.argv[1] .. "' starts with '-', which a shell's exec may take for an option")
  end
  local lines = { "#!/bin/sh" }
  for _, d in ipairs(M.directives(spec)) do
    if d[2] == nil then
      lines[#lines + 1] = "#SBATCH " .. d[1]
    else
      local q, err = M.directive_quote(d[2])
      if not q then bad(d[1] .. ": " .. err) end
      lines[#lines + 1] = "#SBATCH " .. d[1] .. "=" .. q
    end
  end
  lines[#lines + 1] = "# Generated by wb " .. core.version .. "."
  local written, secret = M.split_env(spec.env)
  local hidden = util.sorted_keys(secret)
  for _, k in ipairs(util.sorted_keys(spec.submit_env or {})) do hidden[#hidden + 1] = k end
  if #hidden > 0 then
    lines[#lines + 1] = "# From the submitting environment (not written here): " .. table.concat(hidden, " ")
  end
  if spec.cwd then lines[#lines + 1] = "cd -- " .. M.shell_quote(spec.cwd) .. " || exit 1" end
  for _, k in ipairs(written) do lines[#lines + 1] = "export " .. k .. "=" .. M.shell_quote(tostring(spec.env[k])) end
  local words = {}
  for i, a in ipairs(spec.argv) do
    if a ~= M.TASK_ID and type(a) ~= "string" and type(a) ~= "number" then bad("argv[" .. i .. "] must be a string") end
    words[i] = M.shell_quote(a)
  end
  lines[#lines + 1] = "exec " .. table.concat(words, " ")
  return table.concat(lines, "\n") .. "\n"
end

-- ---- running the Slurm commands ---------------------------------------------------------------

local TRANSIENT = {
  "Unable to contact slurm controller", "Socket timed out", "Zero Bytes were transmitted",
  "Connection refused", "Communication connection failure", "temporarily unavailable",
  "temporarily unable", "Transport endpoint is not connected", "Connection reset by peer",
  "backup controller in standby", "Problem talking to the database", "Unable to connect to database",
  "timed out after",
}

-- yes = slurm.is_transient(message) : a failure worth retrying (controller restarting, timeouts)
function M.is_transient(msg)
  for _, p in ipairs(TRANSIENT) do
    if msg:find(p, 1, true) then return true end
  end
  return false
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- res, err, kind = slurm.command(argv [, opts]) : runs a Slurm command, capturing its output.
-- opts: stats (counts calls as stats[<cmd>_calls]), retry_for (seconds to keep retrying
-- transient failures, default 0), timeout (per call, default 60), cwd, env, stdin.
-- On failure: nil, the command's message (stderr, verbatim but trimmed), and kind
-- "transient" | "rejected" | "missing".
function M.command(argv, opts)
  opts = opts or {}
  local proc, clock = require "wb.proc", require "wb.clock"
  local deadline = clock.now() + math.floor((opts.retry_for or 0) * 1e9)
  local delay = 0.5
  while true do
    if opts.stats then
      local key = util.basename(argv[1]) .. "_calls"
      opts.stats[key] = (opts.stats[key] or 0) + 1
    end
    local res, err = proc.run { argv = argv, stdout = "capture", stderr = "capture", timeout = opts.timeout or 60,
      cwd = opts.cwd, env = opts.env, stdin = opts.stdin }
    if not res then return nil, err, "missing" end
    if res.ok then return res end
    local msg = trim(res.stderr ~= "" and res.stderr or res.stdout)
    if res.timed_out then msg = argv[1] .. ": timed out after " .. (opts.timeout or 60) .. " s" end
    if msg == "" then msg = argv[1] .. ": exit status " .. tostring(res.code or res.signal) end
    local transient = M.is_transient(msg)
    if not transient or clock.now() >= deadline then return nil, msg, transient and "transient" or "rejected" end
    clock.sleep(delay)
    delay = math.min(delay * 2, 10)
  end
end

-- id, err, kind = slurm.submit(spec [, opts]) : renders and submits with sbatch --parsable.
-- opts: script_path (the script is written there and submitted from it; else fed on stdin),
-- stats, retry_for (default 120 s of transient failures). id is an integer; on failure nil,
-- sbatch's message verbatim and the kind (see slurm.command).
function M.submit(spec, opts)
  opts = opts or {}
  local script = M.render(spec)
  local argv = { "sbatch", "--parsable" }
  local run = { stats = opts.stats, retry_for = opts.retry_for or 120, cwd = spec.cwd }
  if opts.script_path then
    local ok, err = fs.write(opts.script_path, script, { mode = tonumber("755", 8) })
    if not ok then return nil, err, "missing" end
    argv[3] = opts.script_path
  else
    run.stdin = { data = script }
  end
  local _, secret = M.split_env(spec.env)
  for k, v in pairs(spec.submit_env or {}) do secret[k] = v end
  if next(secret) then run.env = secret end
  local res, err, kind = M.command(argv, run)
  if not res then return nil, err, kind end
  local id = res.stdout:match("^%s*(%d+)")
  if not id then return nil, "sbatch: unexpected output '" .. trim(res.stdout) .. "'", "rejected" end
  return math.tointeger(tonumber(id)), trim(res.stderr)
end

-- ok, err = slurm.cancel(ids [, opts]) : scancel of every id (integers or "12_3" strings) in one
-- call; works while an interrupt is pending (it then bypasses wb.proc). opts.stats counts it.
function M.cancel(ids, opts)
  opts = opts or {}
  if #ids == 0 then return true end
  local argv = { "scancel" }
  for _, id in ipairs(ids) do argv[#argv + 1] = tostring(id) end
  if core.interrupted() then
    if opts.stats then opts.stats.scancel_calls = (opts.stats.scancel_calls or 0) + 1 end
    local ok = os.execute(util.shell_join(argv) .. " >/dev/null 2>&1")
    return ok == true, ok ~= true and "scancel failed" or nil
  end
  local res, err = M.command(argv, { stats = opts.stats, retry_for = 30 })
  return res ~= nil, err
end

-- code, signal = slurm.exit_code("3:0") : Slurm's ExitCode field
function M.exit_code(s)
  local code, sig = tostring(s or ""):match("^(%d+):(%d+)$")
  return math.tointeger(tonumber(code)), math.tointeger(tonumber(sig))
end

-- n = slurm.minutes(text) : the minutes of a Slurm time ("M", "MM:SS", "HH:MM:SS", "D-HH",
-- "D-HH:MM", "D-HH:MM:SS"; seconds rounded up); nil for "infinite"/"UNLIMITED" and anything else
function M.minutes(text)
  local d, rest = tostring(text):match("^(%d+)%-(.+)$")
  local parts = {}
  for x in (rest or tostring(text)):gmatch("[^:]+") do parts[#parts + 1] = tonumber(x) end
  if #parts == 0 or #parts > 3 then return nil end
  for _, x in ipairs(parts) do if not x then return nil end end
  local h, m, sec = 0, 0, 0
  if #parts == 3 then h, m, sec = parts[1], parts[2], parts[3]
  elseif d then h, m = parts[1], parts[2] or 0
  elseif #parts == 2 then m, sec = parts[1], parts[2]
  else m = parts[1] end
  return (tonumber(d) or 0) * 1440 + h * 60 + m + math.ceil(sec / 60)
end

-- STATE = slurm.state("CANCELLED by 0") : the bare state name (sacct adds "by UID")
function M.state(s) return (tostring(s or ""):match("^([%u_]+)")) end

-- ---- `wb job`: the wrapper a job runs ---------------------------------------------------------

M.CASES_SCHEMA = "wb.slurm_cases"

-- name = slurm.secret_var(index, NAME) : the sbatch environment variable carrying the secret
-- NAME of case index (0-based) of a cases file
function M.secret_var(index, name) return "WB_SECRET_" .. index .. "_" .. name end

-- ok, err = slurm.protect(fn, ...) : pcall that also catches the interrupt which the signal
-- hook raises again right after a wb.proc/wb.clock call was interrupted; the raw pcall, not the
-- one recipes get (which passes interrupts on), since catching one to clean up is the point
function M.protect(fn, ...)
  local pcall = require("wb.recipe").raw_pcall
  local ok, inner_ok, err = pcall(pcall, fn, ...)
  if not ok then return false, inner_ok end
  return inner_ok, err
end

-- How long wb job waits for its own stop after its command ended as Slurm's stop ends one
-- (seconds; Slurm sends SIGKILL only KillWait, 30 s by default, after SIGTERM).
local STOP_GRACE = 3

-- await_own_stop(res) : after a wb.proc result res ended by SIGTERM or SIGKILL (Slurm's stop
-- signals), itself or as its shell reports a child's (exit 143, 137), and not by its own timeout,
-- sleeps STOP_GRACE seconds: Slurm stops a job (scancel, its time limit, preemption) by signalling
-- every process of the step at about the same time, so the command may have ended by it before
-- wb job was told; a stop arriving meanwhile raises the interrupt from the sleep.
local function await_own_stop(res)
  if res.timed_out then return end
  if res.signal == 15 or res.signal == 9 or res.code == 143 or res.code == 137 then
    require("wb.clock").sleep(STOP_GRACE)
  end
end

local function write_result(path, r)
  local ok, err = fs.write(path, json.encode(r, { pretty = true }) .. "\n")
  if not ok then errors.raise(1, "job: " .. err, 0) end
end

-- done = slurm.task_done(result) : a result file's task ran to its end (its command exited or
-- was killed by its own timeout), rather than being stopped with its job (cancelled, over the
-- time limit, preempted): such a task is not run again by --resume or a retry
function M.task_done(r)
  return type(r) == "table" and not r.interrupted
end

-- The case's command under wb.capture (lua/wb/slurm_capture.lua): r gets the record fields and
-- the capture; returns the wb.proc result, or nil when the command did not start.
local function run_capture(case, doc, rank, r, rel, t)
  local sc = require "wb.slurm_capture"
  local ok, out = M.protect(function()
    local res, cdoc = sc.run(case, doc.run_dir, rank)
    if res and not res.stopped then await_own_stop(res.result) end
    return { res, cdoc }
  end)
  local res, cdoc = ok and out[1], ok and out[2]
  if not ok then
    res = out
    r.status, r.return_code = "failed", json.null
    r.interrupted = type(res) == "table" and res.interrupted or true
    r.wall_time_seconds = t:elapsed()
    return nil, res
  end
  if not res then
    r.status, r.error, r.return_code = "failed", cdoc, json.null
    return nil
  end
  r.capture = cdoc
  r.pid = cdoc.pid
  if res.stopped then r.interrupted = true end -- the job was told to stop (SIGINT)
  return res.result
end

-- status = slurm.job_main(args) : `wb job CASES.json [INDEX]` runs case INDEX (0-based, default
-- $SLURM_ARRAY_TASK_ID) of a cases file written by the Slurm executor, measured as
-- campaign:spawn measures a local run: output in <run_dir>/logs/<name>.std{out,err}.log, and
-- <run_dir>/jobs/results/<name>.json with the record fields (command_arguments, return_code,
-- signal, timed_out, wall_time_seconds, user_seconds, sys_seconds, maxrss_kb, logs, status) and
-- where it ran (node, job_id).
-- A case with `capture` options runs under wb.capture (result field `capture`: its method,
-- fallback, counters, profiles); one with `tasks` is a task of an srun step: <name> is
-- <case>.task<SLURM_PROCID>, and a task whose result says it ran to its end is not run again.
-- Returns the case's exit status (128 + signal when it was killed); when the job itself is
-- cancelled or over its time limit, the result records `interrupted` and the error is re-raised
-- (a command that ended by Slurm's stop signals, or exited 143 or 137, first gives wb job's own
-- stop STOP_GRACE seconds to arrive).
function M.job_main(args)
  local campaign, clock, proc = require "wb.campaign", require "wb.clock", require "wb.proc"
  local path, index = args[1], args[2] or os.getenv("SLURM_ARRAY_TASK_ID")
  if not path or #args > 2 then errors.raise(2, "job: usage: wb job CASES.json [INDEX]", 0) end
  local doc, err = json.read(path)
  if not doc then errors.raise(2, "job: " .. err, 0) end
  if type(doc) ~= "table" or doc.schema_name ~= M.CASES_SCHEMA or type(doc.cases) ~= "table" then
    errors.raise(2, "job: " .. path .. ": not a wb cases file", 0)
  end
  local i = math.tointeger(tonumber(index or ""))
  local case = i and doc.cases[i + 1]
  if not case then errors.raise(2, "job: " .. path .. ": no case " .. tostring(index), 0) end
  local rank = (util.opt(case.tasks) or 1) > 1 and math.tointeger(tonumber(os.getenv("SLURM_PROCID") or "0")) or nil
  local name = require("wb.slurm_capture").task_name(case.name, rank)
  local env = {}
  for k, v in pairs(case.env or {}) do env[k] = v end
  for _, s in ipairs(case.secret_env or {}) do env[s] = os.getenv(M.secret_var(i, s)) end
  local secrets = campaign.merge_secrets(env, util.secret_forms(util.secret_values()))
  local logs, rel = campaign.log_paths(doc.run_dir, name)
  local result_path = doc.run_dir .. "/jobs/results/" .. util.safe_name(name) .. ".json"
  if rank and fs.exists(result_path) and M.task_done(json.read(result_path)) then
    io.stdout:write("wb job: ", name, " ran to its end before; its result is kept\n")
    return 0
  end
  fs.mkdir_p(doc.run_dir .. "/logs")
  fs.mkdir_p(doc.run_dir .. "/jobs/results")
  local r = json.object()
  r.name = name
  r.command_arguments = json.array(util.deep_copy(case.argv))
  r.node = os.getenv("SLURMD_NODENAME") or json.null
  r.job_id = math.tointeger(tonumber(os.getenv("SLURM_JOB_ID") or ""))
  r.rank = rank
  r.started_at_utc = clock.utc()
  r.started_epoch = clock.wall() -- the node's real time, to the microsecond: which cases overlapped (executor)
  local t = clock.timer()
  local res
  if util.opt(case.capture) then
    case.env = env
    local raised
    res, raised = run_capture(case, doc, rank, r, rel, t)
    if raised then
      campaign.redact_files(logs, secrets)
      write_result(result_path, r)
      error(raised, 0)
    end
    if not res then
      write_result(result_path, r)
      return 127
    end
  else
    local p, perr = proc.spawn { argv = case.argv, env = env, cwd = case.cwd, timeout = case.timeout,
      stdout = { file = logs[1] }, stderr = { file = logs[2] } }
    if not p then
      r.status, r.error, r.return_code = "failed", perr, json.null
      write_result(result_path, r)
      return 127
    end
    r.stdout_log, r.stderr_log = rel[1], rel[2]
    local ok
    ok, res = M.protect(function()
      local ended = p:wait()
      await_own_stop(ended)
      return ended
    end)
    p:close()
    if not ok then
      r.status, r.return_code = "failed", json.null
      r.interrupted = type(res) == "table" and res.interrupted or true
      r.wall_time_seconds = t:elapsed()
      campaign.redact_files(logs, secrets)
      write_result(result_path, r)
      error(res, 0)
    end
  end
  campaign.redact_files(logs, secrets)
  campaign.fill_result(r, res, rel)
  r.status = res.ok and not r.interrupted and "success" or "failed"
  r.finished_at_utc = clock.utc()
  r.finished_epoch = clock.wall()
  write_result(result_path, r)
  if res.code then return res.code end
  return 128 + (res.signal or 0)
end

return M

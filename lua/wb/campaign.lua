-- Campaigns: the run directory of one recipe run, its manifest, events, logs, resume and the
-- previous-run baseline (DESIGN §5).
--
--   local c = wb.campaign.open(ctx, { inputs = {paths}, tools = {names}, profilers = {...} })
--   c:declare{ "case1", "case2" }           -- runs in plan order (pending until they run)
--   if c:plan(plan) then return 0 end       -- plan.json/plan.md + budget; true on --dry-run
--   c:run("case1", function(rec) ... end)   -- skipped when complete in a resumed directory
--   local res = c:spawn("case1", {argv = ...})  -- wb.proc.run with logs/<run>.std{out,err}.log
--   c:finish()                              -- final status, baseline comparisons, manifest
--
-- The manifest (manifest.json and its journal, M.JOURNAL) records every change as it happens, each
-- write atomic, so a run killed at any moment leaves a valid one; `--resume DIR` re-runs only the
-- runs that did not end (status pending/running).
local clock = require "wb.clock"
local core = require "wb.core"
local errors = require "wb.errors"
local fs = require "wb.fs"
local json = require "wb.json"
local util = require "wb.util"

local M = {}
M.SCHEMA_NAME = "wb.manifest"
M.SCHEMA_VERSION = 1

local Campaign = {}
Campaign.__index = Campaign

local current -- the open campaign, for M.abort

local ENDED = { success = true, failed = true, skipped = true, dry_run = true }

local function check(ok, err)
  if not ok then errors.raise(1, tostring(err), 0) end
  return ok
end

-- manifest, err = campaign.read_manifest(path) : refuses other schemas and unknown major versions
function M.read_manifest(path)
  local m, err = json.read(path)
  if not m then return nil, err end
  if type(m) == "table" and util.is_list(m.runs) then
    local ok, jerr = M.apply_journal(m, util.dirname(path) .. "/" .. M.JOURNAL)
    if not ok then return nil, jerr end
  end
  if type(m) ~= "table" or m.schema_name ~= M.SCHEMA_NAME then
    return nil, path .. ": not a wb manifest (schema_name is not " .. M.SCHEMA_NAME .. ")"
  end
  if math.type(m.schema_version) ~= "integer" or m.schema_version > M.SCHEMA_VERSION then
    return nil, string.format("%s: unsupported %s schema_version %s (this wb reads up to %d)",
      path, M.SCHEMA_NAME, tostring(m.schema_version), M.SCHEMA_VERSION)
  end
  return m
end

-- ok, err = campaign.apply_journal(m, path) : folds into the manifest m the run records of the
-- journal at path written since m (lines of m's journal_epoch; by name, the last line of each
-- winning; a torn or foreign line is passed over); nil, err when a journal is there but cannot be
-- read (its records would be lost to the reader)
function M.apply_journal(m, path)
  local text, err, errno = fs.read(path)
  if not text then
    if errno == 2 then return true end -- ENOENT: none
    return nil, tostring(err)
  end
  local at = {}
  for i, r in ipairs(m.runs) do
    if type(r) == "table" and r.name ~= nil then at[r.name] = i end
  end
  local epoch = m.journal_epoch
  for line in text:gmatch("[^\n]+") do
    local ok, e = pcall(json.decode, line)
    local r = ok and type(e) == "table" and epoch ~= nil and e.epoch == epoch and e.run
    if type(r) == "table" and type(r.name) == "string" then
      if not at[r.name] then at[r.name] = #m.runs + 1 end
      m.runs[at[r.name]] = r
      if type(e.updated_at_utc) == "string" then m.updated_at_utc = e.updated_at_utc end
    end
  end
  return true
end

-- What --resume reads and rewrites of a manifest, and the shape each must have.
local function shape_problem(m)
  local function kind(v)
    if v == nil or v == json.null then return "null" end
    if type(v) == "table" then return util.is_list(v) and "a list" or "a mapping" end
    return "a " .. (type(v) == "number" and "number" or type(v))
  end
  local function list_of(field, want)
    local k = kind(m[field])
    if k == "null" then return nil end
    if k ~= "a list" then return field .. " is " .. k .. ", not a list" end
    for i, v in ipairs(m[field]) do
      if want and kind(v) ~= want then return string.format("%s[%d] is %s, not %s", field, i, kind(v), want) end
    end
  end
  if kind(m.recipe) ~= "a string" then return "recipe is " .. kind(m.recipe) .. ", not a string" end
  if kind(m.status) ~= "a string" then return "status is " .. kind(m.status) .. ", not a string" end
  for _, f in ipairs({ "configuration", "load_average" }) do
    if kind(m[f]) ~= "null" and kind(m[f]) ~= "a mapping" then return f .. " is " .. kind(m[f]) .. ", not a mapping" end
  end
  local p = list_of("overrides", "a string") or list_of("arguments", "a string") or list_of("comparisons")
      or list_of("runs", "a mapping")
  if p then return p end
  if kind(m.runs) ~= "a list" then return "runs is missing" end
  local names = {}
  for i, r in ipairs(m.runs) do
    for _, f in ipairs({ "name", "status" }) do
      if kind(r[f]) ~= "a string" then return string.format("runs[%d].%s is %s, not a string", i, f, kind(r[f])) end
    end
    if names[r.name] then return string.format("runs[%d]: a second run named '%s'", i, r.name) end
    names[r.name] = true
    for _, f in ipairs({ "metrics", "samples" }) do
      if kind(r[f]) ~= "null" and kind(r[f]) ~= "a mapping" then
        return string.format("runs[%d].%s is %s, not a mapping", i, f, kind(r[f]))
      end
    end
  end
end

-- manifest, err = campaign.read_resumable(path) : read_manifest, and a shape --resume can take
-- up (one line naming the field that is not; the file is not touched)
function M.read_resumable(path)
  local m, err = M.read_manifest(path)
  if not m then return nil, err end
  local p = shape_problem(m)
  if p then return nil, path .. ": " .. p .. " (not a manifest wb wrote; left as it is)" end
  return m
end

local function first_line(argv)
  local ok, res = pcall(require("wb.proc").run, { argv = argv, stdout = "capture", stderr = "capture", timeout = 10 })
  if not ok or not res or not res.ok then return nil end
  local text = res.stdout ~= "" and res.stdout or res.stderr
  return text:match("^%s*([^\n]-)%s*\n") or text:match("^%s*(.-)%s*$")
end

-- The 1-minute load average (/proc/loadavg), or nil.
local function load_average()
  return tonumber((fs.read("/proc/loadavg") or ""):match("^(%S+)"))
end

-- The machine, the code and the tools this run used.
local function preflight(spec)
  local p = json.object()
  p.schema_name = "wb.preflight"
  p.schema_version = 1
  p.created_at_utc = clock.utc()
  p.wb_version = core.version
  p.host = (fs.read("/proc/sys/kernel/hostname") or ""):match("[^\n]+") or first_line({ "uname", "-n" })
  p.kernel = (fs.read("/proc/sys/kernel/osrelease") or ""):match("[^\n]+") or first_line({ "uname", "-r" })
  local cpuinfo = fs.read("/proc/cpuinfo") or ""
  p.cpu_model = cpuinfo:match("model name%s*:%s*([^\n]+)")
  local cpus = 0
  for _ in cpuinfo:gmatch("processor%s*:") do cpus = cpus + 1 end
  p.cpu_count = cpus
  local mem_kb = tonumber((fs.read("/proc/meminfo") or ""):match("MemTotal:%s*(%d+)"))
  p.memory_bytes = mem_kb and mem_kb * 1024
  local commit = first_line({ "git", "rev-parse", "HEAD" })
  local git = json.object()
  git.commit = commit
  if commit then
    local ok, res = pcall(require("wb.proc").run,
      { argv = { "git", "status", "--porcelain", "--untracked-files=no" }, stdout = "capture", stderr = "null" })
    git.dirty = ok and res and res.ok and res.stdout ~= "" or false
    local branch = first_line({ "git", "symbolic-ref", "--quiet", "--short", "HEAD" })
    git.branch = branch ~= "" and branch or nil -- none on a detached HEAD
  end
  p.git = git
  -- the CPU frequency governor (absent in most VMs) and the Slurm allocation: the machine class
  -- of a history record (wb.history)
  p.governor = (fs.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or ""):match("[^\n]+")
  local partition, node = os.getenv("SLURM_JOB_PARTITION"), os.getenv("SLURMD_NODENAME")
  if partition or node then p.slurm = { partition = partition, node = node } end
  local tools = json.object()
  for _, t in ipairs(spec.tools or {}) do
    local argv = type(t) == "table" and t or { t, "--version" }
    tools[argv[1]] = first_line(argv) or json.null
  end
  p.tools = tools
  local inputs = json.array()
  for _, path in ipairs(spec.inputs or {}) do
    local st = fs.stat(path)
    inputs[#inputs + 1] = { path = path, size = st and st.size or json.null, mtime = st and st.mtime or json.null }
  end
  p.inputs = inputs
  p.environment = require("wb.environ").capture() -- what a confirmation sets back (wb.matrix_confirm)
  return p
end

-- Top-level config keys that change what is reported, not what is measured: runs that differ
-- only in them stay comparable.
local SCOPE_EXEMPT = { confirm = true }

local function scope_hash(cfg, pre)
  local measured = json.object() -- in cfg's key order, as before there were exempt keys
  for _, k in ipairs(util.keys(cfg)) do
    if not SCOPE_EXEMPT[k] then measured[k] = cfg[k] end
  end
  cfg = measured
  local tools = {}
  for k, v in pairs(pre.tools) do tools[k] = v end
  local inputs = {}
  for i, inp in ipairs(pre.inputs) do inputs[i] = { inp.path, inp.size } end
  return util.hash(json.encode({ configuration = cfg, tools = tools, inputs = inputs }))
end

-- The run directory: -o DIR, else <runs root>/<recipe>_<UTC time> where the root is runs/ or the
-- recipe's ctx.runs_root (regress keeps its runs out of the repository it measures).
local function new_run_dir(ctx)
  local base = (ctx.runs_root or "runs") .. "/" .. util.safe_name(ctx.name) .. "_" .. clock.utc(nil, "%Y%m%dT%H%M%SZ")
  return require("wb.rundir").create(ctx.opts, base)
end

local last_secrets -- of the last campaign opened, for the writers that run after its finish

-- secrets = campaign.secrets([cfg]) : what every file of a run directory must not contain: the
-- values of secret-named environment variables and of secret-named config keys of cfg
-- (util.is_secret_name, util.is_secret_key); without cfg, those of the last campaign opened
-- (or of the environment alone)
function M.secrets(cfg)
  if cfg == nil and last_secrets then return last_secrets end
  local values = util.secret_values()
  for _, v in ipairs(cfg and util.config_secret_values(cfg) or {}) do values[#values + 1] = v end
  local out = util.secret_forms(values)
  if cfg ~= nil then last_secrets = out end
  return out
end

-- The largest file the last redaction pass reads: bigger ones are a workload's own data (caches,
-- outputs), not what wb's writers made (those redact as they write; logs are redacted when their
-- process ends).
M.REDACT_TREE_MAX_BYTES = 64 << 20

-- ok, err = campaign.redact_tree(dir [, secrets]) : every regular file under dir (up to
-- REDACT_TREE_MAX_BYTES) rewritten with the secrets redacted (those without them are left
-- untouched); the last pass over a run directory, so that no writer can leak one
function M.redact_tree(dir, secrets)
  secrets = secrets or M.secrets()
  if #secrets == 0 then return true end
  local paths = {}
  local function walk(d)
    for _, name in ipairs(fs.list(d) or {}) do
      local path = d .. "/" .. name
      local st = fs.lstat(path)
      if st and st.type == "dir" then
        walk(path)
      elseif st and st.type == "file" and st.size <= M.REDACT_TREE_MAX_BYTES then
        paths[#paths + 1] = path
      end
    end
  end
  walk(dir)
  return M.redact_files(paths, secrets)
end

-- campaign.point_latest(dir) : runs/latest -> dir, for run directories wb named itself under
-- runs/ (never for -o DIR); an existing `latest` that is not a symlink is left alone
function M.point_latest(dir)
  local parent = util.dirname(dir)
  local link = parent .. "/latest"
  local st = fs.lstat(link)
  if st and st.type ~= "link" then return end
  fs.symlink(util.basename(dir), link)
end

-- Makes the run directory and its logs/: a directory wb cannot make is the environment refusing
-- before any work, exit 2 naming the directory asked for.
local function make_run_dir(dir)
  local ok, err = fs.mkdir_p(dir)
  if ok then ok, err = fs.mkdir_p(dir .. "/logs") end
  if not ok then
    errors.raise(2, "run directory " .. dir .. ": " .. tostring(err):gsub("^.-: ([^:]+)$", "%1"), 0)
  end
end

-- c = campaign.open(ctx [, spec]) : creates (or, with --resume, reopens) the run directory
function M.open(ctx, spec)
  spec = spec or {}
  local self = setmetatable({ ctx = ctx, spec = spec, index = {} }, Campaign)
  self.secrets = M.secrets(ctx.cfg)
  if ctx.opts.resume then
    self.dir = ctx.opts.resume:gsub("/+$", "")
    require("wb.rundir").confine_existing(self.dir)
    local m, err = M.read_resumable(self.dir .. "/manifest.json")
    if not m then errors.raise(2, "--resume: " .. err, 0) end
    self.manifest = m
    for i, r in ipairs(m.runs) do self.index[r.name] = i end
    require("wb.rundir").lock(self.dir, true, false, function(name) return self:is_complete(name) end)
    if m.recipe ~= ctx.name then
      errors.raise(2, string.format("--resume: %s is a run of '%s', not '%s'", self.dir, tostring(m.recipe), ctx.name), 0)
    end
    m.status = "running"
    m.error = nil -- the previous attempt's, kept in events.jsonl
    m.resumed_at_utc = clock.utc()
  else
    self.dir = new_run_dir(ctx)
    make_run_dir(self.dir)
    local pre = preflight(spec)
    self:write_json("preflight.json", pre)
    self:write("config.yaml", require("wb.yaml").dump(ctx.cfg))
    self:write("overrides.txt", table.concat(util.redact_overrides(ctx.opts.overrides or {}), "\n") .. "\n")
    local m = json.object()
    m.schema_name = M.SCHEMA_NAME
    m.schema_version = M.SCHEMA_VERSION
    m.tool = "wb"
    m.wb_version = core.version
    m.recipe = ctx.name
    m.created_at_utc = clock.utc()
    m.status = "running"
    m.dry_run = ctx.opts.dry_run and true or false
    m.run_directory = self.dir
    m.configuration = ctx.cfg
    m.overrides = json.array(util.redact_overrides(ctx.opts.overrides or {}))
    m.arguments = json.array(util.deep_copy(ctx.args or {})) -- the positional ones (commands)
    m.config_name = ctx.config_name or json.null -- the profile composed (--config-name or the recipe's): what --resume composes again
    m.compatibility_scope = scope_hash(ctx.cfg, pre)
    m.previous_manifest_path = json.null
    m.runs = json.array()
    m.comparisons = json.array()
    m.profilers = json.array(spec.profilers or {})
    m.load_average = json.object()
    m.load_average.cpus = pre.cpu_count
    m.load_average.start = load_average()
    self.manifest = m
    if not ctx.opts.output then M.point_latest(self.dir) end
  end
  current = self
  self.journal_bytes = 0
  self.journal_stale = fs.exists(self.dir .. "/" .. M.JOURNAL) -- a resumed run's, folded into m: removed below
  self:save()
  self:event(ctx.opts.resume and "campaign_resumed" or "campaign_started", { dir = self.dir })
  return self
end

-- Writes a file in the run directory atomically, with secrets redacted.
function Campaign:write(relpath, text)
  local path = self.dir .. "/" .. relpath
  local dir = util.dirname(path)
  if not fs.exists(dir) then check(fs.mkdir_p(dir)) end
  check(fs.write(path, util.redact(text, self.secrets)))
  return path
end

function Campaign:write_json(relpath, value)
  return self:write(relpath, json.encode(value, { pretty = true }) .. "\n")
end

-- Disk space held while the campaign runs (a hidden file of at least RESERVE_MIN bytes and four
-- times the manifest), given back when a write fails so that the manifest can still say how the
-- run ended: a disk that fills mid-run leaves it `failed`, not `running`.
M.RESERVE = ".wb.reserve"
local RESERVE_MIN = 256 * 1024

-- The records of runs that changed since manifest.json was last written, appended as JSON lines
-- ({"epoch", "updated_at_utc", "run"}: a whole record, the latest for its name wins) and folded
-- into the manifest by campaign.read_manifest. manifest.json is rewritten once the journal holds a
-- quarter of its size, so that writing a campaign of n runs costs O(n), not O(n^2). Each rewrite
-- takes a new journal_epoch, and only lines of the manifest's epoch are folded: a journal whose
-- removal a kill or a crash undid can never roll a record back. A reader that meets a rewrite
-- between its two reads sees the previous manifest without the newest records: an older state,
-- never a wrong one.
M.JOURNAL = "manifest.journal"

-- c:save([names]) : records the manifest: with names (runs whose records changed, nothing else
-- having changed), by appending their records to the journal when it is small enough; else by
-- rewriting manifest.json atomically (and emptying the journal). Both are fsynced.
function Campaign:save(names)
  self.manifest.updated_at_utc = clock.utc()
  if names and self.manifest_bytes then
    local lines = {}
    for i, name in ipairs(names) do
      local e = json.object()
      e.epoch = self.manifest.journal_epoch
      e.updated_at_utc = self.manifest.updated_at_utc
      e.run = self:record(name)
      lines[i] = json.encode(e) .. "\n"
    end
    local text = util.redact(table.concat(lines), self.secrets)
    if (self.journal_bytes + #text) * 4 <= self.manifest_bytes then
      check(fs.write(self.dir .. "/" .. M.JOURNAL, text, { append = true }))
      self.journal_bytes = self.journal_bytes + #text
      return
    end
  end
  self.manifest.journal_epoch = (math.type(self.manifest.journal_epoch) == "integer" and self.manifest.journal_epoch or 0) + 1
  local text = json.encode(self.manifest, { pretty = true }) .. "\n"
  self:write("manifest.json", text)
  if self.journal_bytes ~= 0 or self.journal_stale then
    local ok, err, errno = fs.remove(self.dir .. "/" .. M.JOURNAL)
    if not ok and errno ~= 2 then check(ok, err) end
  end
  self.manifest_bytes, self.journal_bytes, self.journal_stale = #text, 0, false
  if not self.released and (not self.reserved or #text * 2 > self.reserved) then
    local size = math.max(RESERVE_MIN, #text * 4)
    if fs.reserve(self.dir .. "/" .. M.RESERVE, size) then self.reserved = size end
  end
end

-- Gives the reserved space back (at the end of the campaign, or to record a failure).
function Campaign:release()
  if self.reserved or fs.exists(self.dir .. "/" .. M.RESERVE) then fs.remove(self.dir .. "/" .. M.RESERVE) end
  self.reserved, self.released = nil, true
end

-- c:event(name [, fields [, level = "INFO"]]) : one JSON line in events.jsonl
function Campaign:event(name, fields, level)
  local e = json.object()
  e.ts = clock.utc(nil, "%Y-%m-%dT%H:%M:%S") .. string.format(".%03dZ", math.floor(clock.wall() % 1 * 1000))
  e.level = level or "INFO"
  e.event = name
  e.run = fields and fields.run or json.null
  e.fields = fields or json.object()
  local line = util.redact(json.encode(e), self.secrets) .. "\n"
  check(fs.write(self.dir .. "/events.jsonl", line, { append = true, sync = false }))
end

local function new_record(name)
  local r = json.object()
  r.name = name
  r.status = "pending"
  return r
end

-- c:declare(names) : the runs of this campaign in plan order (kept on resume)
function Campaign:declare(names)
  for _, name in ipairs(names) do
    if not self.index[name] then
      self.manifest.runs[#self.manifest.runs + 1] = new_record(name)
      self.index[name] = #self.manifest.runs
    end
  end
  self:save()
end

-- rec = c:record(name) : the manifest record of a run (declared on first use)
function Campaign:record(name)
  if not self.index[name] then self:declare({ name }) end
  return self.manifest.runs[self.index[name]]
end

-- rec = c:find(name) : the manifest record of a run, or nil when it was never declared
function Campaign:find(name)
  local i = self.index[name]
  return i and self.manifest.runs[i]
end

function Campaign:is_complete(name)
  local i = self.index[name]
  return i ~= nil and ENDED[self.manifest.runs[i].status] == true
end

local function term_shown()
  return require("wb.term").isatty("stderr") and not os.getenv("WB_NO_PROGRESS")
end

-- Progress on a TTY: done/total, the current run and an ETA from the mean run time so far.
function Campaign:progress(name)
  if not term_shown() then return end
  -- the counts of a campaign over 200 runs are taken at most ten times a second (each counts
  -- every run); the line is drawn every time
  local now, total = clock.now() / 1e9, #self.manifest.runs
  if total <= 200 or not self.progress_at or now - self.progress_at >= 0.1 then
    local done, spent = 0, 0
    for _, r in ipairs(self.manifest.runs) do
      if ENDED[r.status] then
        done = done + 1
        spent = spent + (r.wall_time_seconds or 0)
      end
    end
    self.progress_at, self.progress_counts = now, { done, spent }
  end
  local done, spent = self.progress_counts[1], self.progress_counts[2]
  local eta = done > 0 and (spent / done) * (total - done) or nil
  require("wb.term").progress(string.format("[%d/%d] %s%s", done, total, name,
    eta and ("  ETA " .. util.format_seconds(eta)) or ""))
end

-- ended = c:skip_ended(name) : true, with a run_skipped event, when the run already ended (in a
-- resumed directory)
function Campaign:skip_ended(name)
  if not self:is_complete(name) then return false end
  self:event("run_skipped", { run = name, reason = "complete in resumed directory" })
  return true
end

local function event_fields(name, extra)
  local fields = { run = name }
  for k, v in pairs(extra or {}) do fields[k] = v end
  return fields
end

-- rec = c:start_run(name [, fields]) : the run's record marked running, started now, and a
-- run_started event with the fields; the caller saves the manifest
function Campaign:start_run(name, extra)
  local rec = self:record(name)
  rec.status = "running"
  rec.started_at_utc = clock.utc()
  self:event("run_started", event_fields(name, extra))
  return rec
end

-- c:end_run(name [, fields]) : the run's record stamped finished now and saved, then a
-- run_finished event with its status and the fields (level ERROR when it failed). In that order:
-- an event never reports an end the manifest does not hold (a kill between the two leaves the
-- run ended without its event; the other order re-ran, on --resume, a run whose end the events
-- had reported)
function Campaign:end_run(name, extra)
  local rec = self:record(name)
  rec.finished_at_utc = clock.utc()
  self:save({ name })
  local fields = event_fields(name, extra)
  fields.status = rec.status
  self:event("run_finished", fields, rec.status == "failed" and "ERROR" or "INFO")
end

-- A dry run runs nothing before its plan is written (lua/wb/plan.lua), and nothing for real after.
local function check_not_dry(self, what)
  if self.ctx.opts.dry_run and not self.planned then
    errors.raise(2, "--dry-run: recipe '" .. tostring(self.ctx.name) .. "' started " .. what ..
      " before writing its plan", 0)
  end
end

-- rec = c:run(name, fn) : runs fn(rec) unless the run already ended (resume). fn fills rec
-- (metrics, samples, fields) and returns false (or sets rec.status = "failed") on failure.
function Campaign:run(name, fn)
  if self:skip_ended(name) then return self:record(name) end
  check_not_dry(self, "run '" .. name .. "'")
  self:progress(name)
  local rec = self:start_run(name)
  self:save({ name })
  local t = clock.timer()
  local result = fn(rec)
  rec.wall_time_seconds = rec.wall_time_seconds or t:elapsed()
  if rec.status == "running" then rec.status = (result == false) and "failed" or "success" end
  self:end_run(name)
  require("wb.term").progress_done()
  return rec
end

-- paths, rel = campaign.log_paths(dir, name) : a run's stdout and stderr logs {out, err}, under
-- the run directory dir and relative to it (logs/<safe name>.std{out,err}.log)
function M.log_paths(dir, name)
  local safe = util.safe_name(name)
  local rel = { "logs/" .. safe .. ".stdout.log", "logs/" .. safe .. ".stderr.log" }
  return { dir .. "/" .. rel[1], dir .. "/" .. rel[2] }, rel
end

-- secrets = campaign.merge_secrets(env, base) : the forms (util.secret_forms) of the secret
-- values of env (a table) and the list base, longest first; base itself when env is nil
function M.merge_secrets(env, base)
  if not env then return base end
  local secrets = util.secret_forms(util.secret_values(env))
  for _, v in ipairs(base) do secrets[#secrets + 1] = v end
  table.sort(secrets, function(a, b) return #a > #b end)
  return secrets
end

-- ok, err = campaign.redact_files(paths, secrets) : rewrites each existing file with the secret
-- values redacted (a file without them is left untouched); stops at the first failed write
function M.redact_files(paths, secrets)
  if #secrets == 0 then return true end
  for _, path in ipairs(paths) do
    local text = fs.exists(path) and fs.read(path)
    local clean = text and util.redact(text, secrets)
    if clean and clean ~= text then
      local ok, err = fs.write(path, clean)
      if not ok then return nil, err end
    end
  end
  return true
end

-- The record fields fill_result sets.
M.RESULT_FIELDS = { "return_code", "signal", "timed_out", "wall_time_seconds", "user_seconds",
  "sys_seconds", "maxrss_kb", "stdout_log", "stderr_log", "runq_seconds", "runq_scope", "wall_own_seconds",
  "nivcsw", "others_cpu", "others_runnable", "cpu_pressure_seconds", "steal_seconds", "cpus" }

-- campaign.fill_result(rec, res, rel) : the exit status, times, peak RSS and interference
-- evidence (wb.interference.record) of a finished wb.proc result res, and the log paths rel
-- (from log_paths), in the record rec
function M.fill_result(rec, res, rel)
  rec.return_code = res.code or json.null
  rec.signal = res.signal
  rec.timed_out = res.timed_out or nil
  rec.wall_time_seconds = res.wall
  rec.user_seconds = res.user
  rec.sys_seconds = res.sys
  rec.maxrss_kb = res.maxrss_kb
  require("wb.interference").record(rec, res)
  rec.stdout_log, rec.stderr_log = rel[1], rel[2]
end

-- res = c:spawn(name, spec) : wb.proc.run with stdout/stderr written to logs/<name>.std*.log
-- (unless the spec routes them elsewhere); fills the run's record with the command, exit status,
-- wall/user/sys and peak RSS. Secrets in the logs are redacted once the process ends.
function Campaign:spawn(name, spec)
  check_not_dry(self, "run '" .. name .. "'")
  local proc = require "wb.proc"
  local logs, rel = M.log_paths(self.dir, name)
  local s = {}
  for k, v in pairs(spec) do s[k] = v end
  s.stdout = s.stdout or { file = logs[1] }
  s.stderr = s.stderr or { file = logs[2] }
  local secrets = M.merge_secrets(spec.env, self.secrets)
  local rec = self:record(name)
  rec.command_arguments = json.array(util.deep_copy(spec.argv or { "/bin/sh", "-c", spec.cmd }))
  local rundir = require "wb.rundir"
  -- resumed after kill -9: a child that had finished with its output in the logs is not run again
  local res = self.ctx.opts.resume and not spec.stdout and not spec.stderr and rundir.finished(self.dir, name)
  if res then
    -- its end line is in this owner's part of the journal already (rundir.lock carried it)
    self:event("run_reused", { run = name, reason = "finished before the previous wb died", pid = res.pid })
  else
    -- journaled before the spawn too: a kill -9 of wb before its "child" line is announced on resume
    rundir.child_starting(self.dir, name)
    local spawned, p, err = pcall(proc.spawn, s)
    if not spawned then
      rundir.child_unstarted(self.dir, name)
      error(p, 0)
    end
    local pid = p and p.pid
    if p then rundir.child_started(self.dir, pid, name) else rundir.child_unstarted(self.dir, name) end
    if not p then
      rec.status = "failed"
      rec.error = err
      rec.return_code = json.null
      return nil, err
    end
    res = p:wait()
    rundir.child_ended(self.dir, pid, name, res) -- first: the journal is what a kill -9 leaves
    p:close()
  end
  check(M.redact_files(logs, secrets))
  M.fill_result(rec, res, rel)
  if not res.ok then rec.status = "failed" end
  return res
end

-- hooks = c:child_hooks(name) : {started = fn(pid), ended = fn(pid, res)} journaling a child that
-- wb starts itself (wb.capture.run's on_started/on_ended) as c:spawn journals its own, so that a
-- --resume after kill -9 ends it or announces it. On --resume, a child of that name that the
-- previous wb saw end is announced as run again: what wb recorded of it (a profile) died with wb.
function Campaign:child_hooks(name)
  local rundir = require "wb.rundir"
  local before = self.ctx.opts.resume and rundir.finished(self.dir, name)
  if before then
    io.stderr:write(string.format("wb: %s: %s had ended before the previous wb died, which lost what it " ..
      "recorded of it: run again\n", self.dir, name))
    self:event("run_repeated", { run = name, pid = before.pid,
      reason = "ended before the previous wb died, which lost what it recorded" }, "WARN")
  end
  return {
    started = function(pid) rundir.child_started(self.dir, pid, name) end,
    ended = function(pid, res) rundir.child_ended(self.dir, pid, name, res) end,
  }
end

-- Writes plan.json and plan.md and checks the budget. plan = {sections = {{name, cases = {{name,
-- argv}}, subprocess_runs, profiler_runs}}}; the budget comes from cfg.tool (max_subprocess_runs,
-- max_major_profiler_runs, allow_over_budget). Returns true when the run should stop (--dry-run);
-- raises (exit 1) when over budget.
function Campaign:plan(plan)
  return require("wb.plan").write(self, plan)
end

-- The comparison of this campaign's runs with the baseline's (wb.compare's engine, exactly as
-- `wb compare PREVIOUS/manifest.json THIS/manifest.json` gives it), or nil without a baseline.
local function compare_with(self, base, base_path)
  local compare = require "wb.compare"
  return compare.compare(compare.from_document(base, base_path),
    compare.from_document(self.manifest, self.dir .. "/manifest.json"),
    { threshold = self.spec.threshold, allow_empty = true })
end

-- The manifest's comparisons[]: one row a metric of a run both runs have (run_name, metric,
-- previous_value, current_value, and the wb.compare row's ratio, test, verdict and reason).
local function comparison_rows(result)
  local compare = require "wb.compare"
  local rows = json.array()
  for _, r in ipairs(result.rows) do
    local row = compare.row_object(r)
    row.run_name = r.record or json.null
    row.metric = r.metric
    row.previous_value, row.current_value = r.base, r.new
    row.base, row.new, row.record, row.quantity = nil, nil, nil, nil
    rows[#rows + 1] = row
  end
  return rows
end

-- result = c:compare_previous() : the wb.compare result against the latest compatible complete
-- run (nil when there is none, or in a dry run); computed once, and what c:finish() records.
-- Recipes call it before finish to put the comparison in their reports.
function Campaign:compare_previous()
  if self.previous == nil then
    self.previous = false
    if not self.manifest.dry_run then
      local base, path, why = require("wb.baseline").find(self.dir, self.manifest, self.ctx.opts.baseline, M.read_manifest)
      if not base and self.ctx.opts.baseline then errors.raise(2, "--baseline: " .. why, 0) end
      if base then
        self.previous = compare_with(self, base, path)
        self.previous_path = path
      else
        self.previous_none = why
      end
    end
  end
  return self.previous or nil
end

-- text = c:previous_text() : "Previous compatible run: DIR." or "Previous compatible run: none
-- (why; how to force one)." (c:compare_previous() decides which)
function Campaign:previous_text()
  self:compare_previous()
  if self.previous_path then
    return "Previous compatible run: " .. self.previous_path:gsub("/manifest%.json$", "") .. "."
  end
  return "Previous compatible run: none (" .. (self.previous_none or "a dry run compares with none") .. ")."
end

-- summary = c:finish([status]) : final status ("complete", or "failed" when a run failed),
-- comparisons against the baseline (c:compare_previous()), manifest written.
-- summary = {status, regressions, dir, comparison (the wb.compare result, or nil)}.
function Campaign:finish(status)
  local m = self.manifest
  local failed = false
  for _, r in ipairs(m.runs) do
    if r.status == "failed" and r.role ~= "confirmation" then failed = true end -- a failed re-run is said in its row
  end
  m.status = status or (failed and "failed" or "complete")
  local regressions = 0
  local previous = self:compare_previous()
  if previous then
    m.previous_manifest_path = self.previous_path
    m.comparisons = comparison_rows(previous)
    m.comparison_summary = require("wb.compare").summary_object(previous)
    regressions = previous.summary.regressions
  elseif self.previous_none then
    m.previous_missing_reason = self.previous_none
  end
  m.finished_at_utc = clock.utc()
  if type(m.load_average) == "table" then m.load_average.finish = load_average() end
  self:release() -- first: a kill between the two leaves no reserve in a finished run
  self:save()
  self:event("campaign_finished", { status = m.status, regressions = regressions })
  check(M.redact_tree(self.dir, self.secrets))
  current = nil
  return { status = m.status, regressions = regressions, dir = self.dir, comparison = previous }
end

-- Called by the recipe runner when a recipe raised: marks the open campaign interrupted (SIGINT,
-- SIGTERM) or failed and saves its manifest, so the directory stays resumable.
function M.abort(err)
  local self = current
  if not self then return end
  current = nil
  local interrupted = core.is_interrupt(err)
  if interrupted and err.interrupted == 0 and err.exit == 0 then
    err.exit = 1 -- os.exit(0) with the campaign unfinished is not a success
    io.stderr:write("wb: os.exit(0) before the campaign finished: exit 1, the manifest says interrupted\n")
  end
  local ok, text = pcall(tostring, type(err) == "table" and (err.msg or err) or err)
  text = ok and type(text) == "string" and text or ("a " .. type(err) .. " error value")
  self.manifest.status = interrupted and "interrupted" or "failed"
  if not interrupted then self.manifest.error = text end
  pcall(self.release, self)
  pcall(self.save, self)
  pcall(self.event, self, interrupted and "campaign_interrupted" or "campaign_failed", { error = text }, "ERROR")
  pcall(M.redact_tree, self.dir, self.secrets)
  require("wb.term").progress_done()
end

function M.current() return current end

return M

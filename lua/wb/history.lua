-- wb.history: the results history (docs/history.md).
--
-- The run directories are the truth: each one is a self-contained record (history.record: its
-- manifest, preflight and summaries give the commit, the machine, the configuration's hash, every
-- metric with its raw samples and its interference evidence). The index is a SQLite file built
-- from them (index:update) in the rollback-journal mode, never WAL: it can be deleted and built
-- again at any time with the same answers, which is what makes it safe beside NFS and Lustre
-- run roots. Updates are idempotent and go in short transactions: a killed update loses nothing
-- the records hold, and the next one finishes the work.
local fs = require "wb.fs"
local json = require "wb.json"
local util = require "wb.util"

local M = {}
M.SCHEMA_VERSION = 3
M.DEFAULT_DB = "history.sqlite"
-- Records written per transaction: a kill loses at most one batch of index work, never a record.
M.BATCH = 200

---- records ---------------------------------------------------------------------------------

local function str(v) return type(v) == "string" and v ~= "" and v or nil end

-- A JSON file of a record, read only when it is a regular file (not a link another user made to
-- their private file), or nil.
local function read_json(path)
  local st = fs.lstat(path)
  if not st or st.type ~= "file" then return nil end
  local v = json.read(path)
  return type(v) == "table" and v or nil
end
local function num(v) return type(v) == "number" and v == v and v or nil end

-- Unix seconds of an ISO-8601 UTC time "YYYY-MM-DDTHH:MM:SSZ", or nil.
function M.epoch_of(utc)
  local y, mo, d, h, mi, s = tostring(utc or ""):match("^(%d%d%d%d)-(%d%d)-(%d%d)T(%d%d):(%d%d):(%d%d)")
  if not y then return nil end
  y, mo = tonumber(y), tonumber(mo)
  if mo <= 2 then y, mo = y - 1, mo + 12 end -- days from the civil date, March-based year
  local days = 365 * y + y // 4 - y // 100 + y // 400 + (153 * (mo - 3) + 2) // 5 + tonumber(d) - 719469
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
end

-- "AMD EPYC, 2 CPUs, 24 GiB" (+ ", slurm partition P"): the machines whose results are one
-- series. The host is not part of it: a cluster's nodes of one partition are one class.
function M.machine_class(m)
  local parts = { m.cpu_model or "unknown CPU" }
  if m.cpu_count then parts[#parts + 1] = string.format("%d CPU%s", m.cpu_count, m.cpu_count == 1 and "" or "s") end
  if m.memory_bytes then parts[#parts + 1] = string.format("%d GiB", math.floor(m.memory_bytes / 2 ^ 30 + 0.5)) end
  if m.slurm_partition then parts[#parts + 1] = "slurm partition " .. m.slurm_partition end
  return table.concat(parts, ", ")
end

-- The files of DIR a reader opens from a record: the report and the profiles (flame graphs,
-- speedscope and trace files), relative to DIR.
local function links_of(dir)
  local report = fs.lstat(util.join(dir, "report.html"))
  local profiles = {}
  local names = fs.list(util.join(dir, "profiles")) or {}
  for _, name in ipairs(names) do
    if name:match("%.svg$") or name:match("%.html$") or name:match("%.json$") or name:match("%.folded$") then
      profiles[#profiles + 1] = "profiles/" .. name
    end
  end
  return report and report.type == "file" and "report.html" or nil, profiles
end

local function mean(xs)
  if type(xs) ~= "table" or #xs == 0 then return nil end
  local sum = 0
  for _, x in ipairs(xs) do sum = sum + (tonumber(x) or 0) end
  return sum / #xs
end

-- The metrics of a manifest as wb compare reads them (wb.compare.from_document: one reader), each
-- {name (the run or command), metric, kind, unit, stat, value, samples, evidence (the wall
-- samples' interference evidence, wb.interference), runq_mean, others_cpu}; nil, err when the
-- manifest holds a value that is no measurement.
local function metrics_of(doc, path)
  local ok, set = pcall(require("wb.compare").from_document, doc, path)
  if not ok then return nil, tostring(type(set) == "table" and set.message or set) end
  local out = {}
  for _, name in ipairs(util.sorted_keys(set.metrics)) do
    local m = set.metrics[name]
    local ev = m.evidence
    out[#out + 1] = { name = m.record or "", metric = m.metric, kind = m.kind, unit = m.unit, stat = m.stat,
      value = m.value, samples = m.samples, evidence = ev, runq_mean = ev and mean(ev.runq),
      others_cpu = ev and mean(ev.others) }
  end
  return out
end

M.REGRESS_RESULT = "wb.regress.result"

-- The record of one commit's result of `wb regress` (results_dir/<machine>/<sha>.json, beside the
-- machine's machine.json): recipe "regress", its commit, one metric "wall mean" of the bench
-- command with its samples and interference evidence.
local function regress_record(path)
  local st = fs.lstat(path)
  if not st or st.type ~= "file" then return nil, path .. ": not a regular file" end
  local r, err = json.read(path)
  if type(r) ~= "table" then return nil, err or (path .. ": not a JSON object") end
  if r.schema_name ~= M.REGRESS_RESULT then return nil, path .. ": not a wb regress result" end
  local mi = read_json(util.join(util.dirname(path), "machine.json")) or {}
  local machine = { host = str(mi.machine) or str(r.machine), cpu_model = str(mi.cpu_model),
    cpu_count = math.tointeger(mi.cpu_count), memory_bytes = math.tointeger(mi.memory_kb) and mi.memory_kb * 1024,
    kernel = str(mi.kernel) }
  machine.class = M.machine_class(machine)
  local rec = { dir = path, recipe = "regress", status = r.status == "success" and "complete" or str(r.status),
    created_at = str(r.measured_at_utc), finished_at = str(r.measured_at_utc), commit = str(r.commit), dirty = false,
    machine = machine, profiles = {}, metrics = {} }
  rec.epoch = M.epoch_of(rec.created_at)
  local st = fs.lstat(path)
  rec.mtime = st and st.mtime -- orders records of the same second
  local argv = {}
  for i, a in ipairs(type(r.bench_command) == "table" and r.bench_command or {}) do argv[i] = tostring(a) end
  rec.bench_command = argv
  local xs = type(r.samples) == "table" and #r.samples > 0 and r.samples or nil
  if rec.status == "complete" and xs then
    local ev = type(r.evidence) == "table" and type(r.evidence.runq) == "table" and r.evidence or nil
    local evidence
    if ev then
      local cpu = {}
      for k in ipairs(ev.runq) do cpu[k] = ev.user and ev.sys and ev.user[k] and ev.sys[k] and ev.user[k] + ev.sys[k] or false end
      evidence = require("wb.interference").evidence(xs, ev.runq, cpu, ev.wall_own, ev.others_cpu, ev.runq_scope)
    end
    rec.metrics[1] = { name = util.shell_join(argv), metric = "wall mean", kind = "time", unit = "s", stat = "mean",
      value = num(r.mean) or mean(xs), samples = xs, evidence = evidence, runq_mean = evidence and mean(evidence.runq),
      others_cpu = evidence and mean(evidence.others) }
  end
  return rec
end

-- rec, err = history.record(path) : the history record of run directory PATH (its manifest.json,
-- with the journal of an unfinished run applied, and preflight.json), or of a `wb regress` result
-- file; nil, err when PATH holds no record wb wrote
function M.record(dir)
  if dir:match("%.json$") then return regress_record(dir) end
  local campaign = require "wb.campaign"
  local path = util.join(dir, "manifest.json")
  local m, err = campaign.read_manifest(path)
  if not m then return nil, err end
  if m.schema_name ~= campaign.SCHEMA_NAME then return nil, path .. ": not a wb manifest" end
  local pre = read_json(util.join(dir, "preflight.json")) or {}
  local git = type(pre.git) == "table" and pre.git or {}
  local machine = {
    host = str(pre.host), cpu_model = str(pre.cpu_model), cpu_count = math.tointeger(pre.cpu_count),
    memory_bytes = math.tointeger(pre.memory_bytes), kernel = str(pre.kernel), governor = str(pre.governor),
    slurm_partition = str(pre.slurm and pre.slurm.partition), slurm_node = str(pre.slurm and pre.slurm.node),
  }
  machine.class = M.machine_class(machine)
  local load = type(m.load_average) == "table" and m.load_average or {}
  local report, profiles = links_of(dir)
  local rec = {
    dir = dir, recipe = str(m.recipe), status = str(m.status), created_at = str(m.created_at_utc),
    finished_at = str(m.finished_at_utc), commit = str(git.commit), dirty = git.dirty == true,
    branch = str(git.branch), machine = machine, config_hash = str(m.compatibility_scope),
    config_name = str(m.config_name), load_start = num(load.start), load_finish = num(load.finish),
    report = report, profiles = profiles,
  }
  rec.epoch = M.epoch_of(rec.created_at)
  local st = fs.lstat(path)
  rec.mtime = st and st.mtime -- the manifest's last write: orders records of the same second
  rec.metrics, rec.error = metrics_of(m, path)
  -- a `wb regress` run's runs are its commits, each a record of its own (its result file): the
  -- run itself adds no series
  if rec.recipe == "regress" then rec.metrics = {} end
  rec.metrics = rec.metrics or {}
  return rec
end

---- the index -------------------------------------------------------------------------------

local SCHEMA = [[
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS records(
  id INTEGER PRIMARY KEY, dir TEXT NOT NULL UNIQUE, root TEXT NOT NULL, stamp TEXT NOT NULL,
  recipe TEXT, status TEXT, created_at TEXT, finished_at TEXT, epoch INTEGER, mtime REAL,
  git_commit TEXT, dirty INTEGER, branch TEXT,
  host TEXT, machine_class TEXT, cpu_model TEXT, cpu_count INTEGER, memory_bytes INTEGER,
  kernel TEXT, governor TEXT, slurm_partition TEXT, slurm_node TEXT,
  config_hash TEXT, config_name TEXT, load_start REAL, load_finish REAL,
  report TEXT, profiles TEXT, error TEXT);
CREATE TABLE IF NOT EXISTS metrics(
  record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE,
  name TEXT NOT NULL, metric TEXT NOT NULL, kind TEXT, unit TEXT, stat TEXT, value REAL NOT NULL,
  n INTEGER NOT NULL, samples TEXT, evidence TEXT, runq_mean REAL, others_cpu REAL,
  PRIMARY KEY(record_id, name, metric));
CREATE INDEX IF NOT EXISTS metrics_series ON metrics(metric, name);
CREATE INDEX IF NOT EXISTS records_recipe ON records(recipe, machine_class, epoch);
CREATE VIEW IF NOT EXISTS points AS
  SELECT r.recipe, m.name, m.metric, r.machine_class, r.root, r.epoch, r.mtime, r.created_at, r.git_commit, r.dirty,
         r.branch, r.host, m.value, m.unit, m.stat, m.n, m.samples, m.evidence, m.runq_mean, m.others_cpu,
         r.dir, r.report, r.id AS record_id
  FROM metrics m JOIN records r ON r.id = m.record_id
  WHERE r.status = 'complete';
]]

local Index = {}
Index.__index = Index

local function check(ok, err)
  if not ok then error(err, 0) end
  return ok
end

-- index, err = history.open(path) : the index at PATH, created when missing; one whose schema
-- this wb does not write is emptied (it is rebuilt from the records by the next update)
function M.open(path)
  local st = fs.lstat(path)
  if st and st.type ~= "file" then return nil, path .. ": not a regular file (" .. st.type .. "); not opened" end
  -- the index's directory: not another user's, not writable by others, not reached through their
  -- link (SQLite creates its journal there); a journal planted there could only damage the index,
  -- which is rebuilt from the records
  local ok, err = fs.confine(util.dirname(path))
  if not ok then return nil, err end
  local db
  db, err = require("wb.sqlite").open(path)
  if not db then return nil, err end
  local e
  ok, e = pcall(function()
    check(db:exec("PRAGMA journal_mode = DELETE; PRAGMA foreign_keys = ON"))
    check(db:exec("BEGIN IMMEDIATE"))
    local have = db:query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
    local version = have and have[1] and check(db:query("SELECT value FROM meta WHERE key = 'schema_version'"))[1]
    if version and tonumber(version.value) ~= M.SCHEMA_VERSION then
      check(db:exec("DROP VIEW IF EXISTS points; DROP TABLE IF EXISTS metrics; DROP TABLE IF EXISTS records; DROP TABLE meta"))
      version = nil
    end
    check(db:exec(SCHEMA))
    if not version then
      check(db:query("INSERT OR REPLACE INTO meta VALUES('schema_version', ?)", tostring(M.SCHEMA_VERSION)))
    end
    check(db:exec("COMMIT"))
  end)
  if not ok then
    pcall(db.exec, db, "ROLLBACK")
    db:close()
    return nil, path .. ": " .. tostring(e)
  end
  return setmetatable({ db = db, path = path }, Index)
end

function Index:close()
  for _, k in ipairs({ "insert_record", "insert_metric", "stamp_of" }) do
    if self[k] then self[k]:finalize() end
    self[k] = nil
  end
  self.db:close()
end
Index.__close = Index.close
Index.__gc = Index.close

-- A record's identity in the index: its manifest (and journal) as the file system sees them.
local function stamp_of(dir)
  if dir:match("%.json$") then
    local st = fs.lstat(dir)
    return st and string.format("%s:%d:%.9f:%d", st.type, st.size, st.mtime, st.ino) or "-"
  end
  local parts = {}
  for _, name in ipairs({ "manifest.json", require("wb.campaign").JOURNAL, "preflight.json" }) do
    local st = fs.lstat(util.join(dir, name))
    parts[#parts + 1] = st and string.format("%s:%d:%.9f:%d", st.type, st.size, st.mtime, st.ino) or "-"
  end
  return table.concat(parts, " ")
end

local function is_file(path)
  local st = fs.lstat(path)
  return st and st.type == "file"
end

-- The `wb regress` result files under dir (a results_dir: <machine>/<sha>.json beside
-- <machine>/machine.json), into out.
local function regress_results(dir, out)
  for _, machine in ipairs(fs.list(dir) or {}) do
    local mdir = util.join(dir, machine)
    local st = fs.lstat(mdir)
    if st and st.type == "dir" and is_file(util.join(mdir, "machine.json")) then
      for _, name in ipairs(fs.list(mdir) or {}) do
        if name:match("^%x+%.json$") and is_file(util.join(mdir, name)) then out[#out + 1] = util.join(mdir, name) end
      end
    end
  end
end

-- The records directly under root: run directories, and the result files of a `wb regress`
-- results directory (no symlinks followed: runs/latest is one).
local function run_dirs(root)
  local names, err = fs.list(root)
  if not names then return nil, err end
  local out = {}
  for _, name in ipairs(names) do
    local dir = util.join(root, name)
    local st = fs.lstat(dir)
    if st and st.type == "dir" then
      if is_file(util.join(dir, "manifest.json")) then
        out[#out + 1] = dir
      else
        regress_results(dir, out)
      end
    end
  end
  return out
end

local function array_of(xs)
  local arr = json.array()
  for i, x in ipairs(xs) do arr[i] = x end
  return arr
end

local function samples_text(xs) return xs and json.encode(array_of(xs)) or nil end

local INSERT_RECORD = [[INSERT INTO records(dir, root, stamp, recipe, status, created_at, finished_at, epoch, mtime,
  git_commit, dirty, branch, host, machine_class, cpu_model, cpu_count, memory_bytes, kernel, governor,
  slurm_partition, slurm_node, config_hash, config_name, load_start, load_finish, report, profiles, error)
  VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)]]
local INSERT_METRIC = [[INSERT OR REPLACE INTO metrics(record_id, name, metric, kind, unit, stat, value, n, samples,
  evidence, runq_mean, others_cpu) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)]]

local function evidence_text(ev)
  if not ev then return nil end
  local o = json.object()
  for _, k in ipairs({ "runq", "cpu", "wall_own", "others" }) do
    if ev[k] then o[k] = array_of(ev[k]) end
  end
  o.scope, o.cpus = ev.scope, ev.cpus
  return json.encode(o)
end

local function write_record(self, root, stamp, rec)
  local db = self.db
  check(db:query("DELETE FROM records WHERE dir = ?", rec.dir))
  local m = rec.machine
  check(self.insert_record:run(rec.dir, root, stamp, rec.recipe, rec.status, rec.created_at, rec.finished_at,
    rec.epoch, rec.mtime, rec.commit, rec.dirty, rec.branch, m.host, m.class, m.cpu_model, m.cpu_count, m.memory_bytes,
    m.kernel, m.governor, m.slurm_partition, m.slurm_node, rec.config_hash, rec.config_name, rec.load_start,
    rec.load_finish, rec.report, json.encode(array_of(rec.profiles)), rec.error))
  local id = db:last_insert_rowid()
  for _, x in ipairs(rec.metrics) do
    check(self.insert_metric:run(id, x.name, x.metric, x.kind, x.unit, x.stat, x.value,
      x.samples and #x.samples or 1, samples_text(x.samples), evidence_text(x.evidence), x.runq_mean, x.others_cpu))
  end
end

local function unreadable_record(dir, err)
  return { dir = dir, machine = { class = "" }, profiles = {}, metrics = {}, error = err }
end

-- Writes the changed records of one batch in one transaction, checking each stamp again inside
-- it (another update may have written it meanwhile). Returns added, changed.
local function write_batch(self, root, batch)
  local added, changed = 0, 0
  check(self.db:exec("BEGIN IMMEDIATE"))
  local ok, err = pcall(function()
    for _, b in ipairs(batch) do
      local row = check(self.stamp_of:run(b.dir))[1]
      if not row or row.stamp ~= b.stamp then
        write_record(self, root, b.stamp, b.rec)
        if row then changed = changed + 1 else added = added + 1 end
      end
    end
    check(self.db:exec("COMMIT"))
  end)
  if not ok then
    pcall(self.db.exec, self.db, "ROLLBACK")
    error(err, 0)
  end
  return added, changed
end

-- summary, err = index:update(roots) : indexes the run directories under each root (a list of
-- paths): new and changed records written, records whose directory is gone removed. summary =
-- {records, added, changed, removed, unchanged, unreadable = {{dir, error}...}}; nil, err for a
-- root that cannot be listed or an index that cannot be written (what was committed stays)
function Index:update(roots)
  local sum = { records = 0, added = 0, changed = 0, removed = 0, unchanged = 0, unreadable = {} }
  self.insert_record = self.insert_record or self.db:prepare(INSERT_RECORD)
  self.insert_metric = self.insert_metric or self.db:prepare(INSERT_METRIC)
  self.stamp_of = self.stamp_of or self.db:prepare("SELECT stamp FROM records WHERE dir = ?")
  local ok, err = pcall(function()
    for _, given in ipairs(roots) do
      local root = check(fs.realpath(given))
      local dirs = check(run_dirs(root))
      local present, batch = {}, {}
      for _, dir in ipairs(dirs) do
        present[dir] = true
        local stamp = stamp_of(dir)
        local row = check(self.stamp_of:run(dir))[1]
        if row and row.stamp == stamp then
          sum.unchanged = sum.unchanged + 1
        else
          local rok, rec, rerr = pcall(M.record, dir) -- a record of any shape is no reason to stop
          if not rok then rec, rerr = nil, tostring(type(rec) == "table" and rec.msg or rec) end
          rec = rec or unreadable_record(dir, rerr)
          batch[#batch + 1] = { dir = dir, stamp = stamp, rec = rec }
          if #batch >= M.BATCH then
            local a, c = write_batch(self, root, batch)
            sum.added, sum.changed, batch = sum.added + a, sum.changed + c, {}
          end
        end
      end
      local a, c = write_batch(self, root, batch)
      sum.added, sum.changed = sum.added + a, sum.changed + c
      check(self.db:exec("BEGIN IMMEDIATE"))
      for _, row in ipairs(check(self.db:query("SELECT dir FROM records WHERE root = ?", root))) do
        if not present[row.dir] and not fs.lstat(row.dir) then -- gone, not added since the listing
          check(self.db:query("DELETE FROM records WHERE dir = ?", row.dir))
          sum.removed = sum.removed + 1
        end
      end
      check(self.db:exec("COMMIT"))
      for _, row in ipairs(check(self.db:query(
          "SELECT dir, error FROM records WHERE root = ? AND error IS NOT NULL ORDER BY dir", root))) do
        sum.unreadable[#sum.unreadable + 1] = { dir = row.dir, error = row.error }
      end
      sum.records = sum.records + check(self.db:query("SELECT count(*) AS n FROM records WHERE root = ?", root))[1].n
    end
  end)
  if not ok then
    pcall(self.db.exec, self.db, "ROLLBACK")
    return nil, tostring(err)
  end
  return sum
end

-- The WHERE clause and values of a filter {recipe, name, metric, machine, roots}: roots (a list
-- of real paths) keeps the records of those roots only (an index shared by several).
local function where(filter, alias)
  local cond, vals = {}, {}
  local cols = { recipe = "recipe", name = "name", metric = "metric", machine = "machine_class" }
  for _, key in ipairs({ "recipe", "name", "metric", "machine" }) do
    if filter[key] ~= nil then
      cond[#cond + 1] = (alias and alias .. "." or "") .. cols[key] .. " = ?"
      vals[#vals + 1] = filter[key]
    end
  end
  if filter.roots and #filter.roots > 0 then
    cond[#cond + 1] = (alias and alias .. "." or "") .. "root IN (" .. string.rep("?", #filter.roots, ",") .. ")"
    for _, r in ipairs(filter.roots) do vals[#vals + 1] = r end
  end
  return #cond > 0 and (" WHERE " .. table.concat(cond, " AND ")) or "", vals
end


-- roots = history.real_roots(list) : the real paths of the given roots (those that resolve)
function M.real_roots(list)
  local out = {}
  for _, r in ipairs(list or {}) do out[#out + 1] = fs.realpath(r) or r end
  return out
end

-- rows = index:records([filter]) : the indexed records (filter: recipe, machine), oldest first
function Index:records(filter)
  filter = filter or {}
  local w, vals = where({ recipe = filter.recipe, machine = filter.machine, roots = filter.roots })
  return check(self.db:query("SELECT * FROM records" .. w .. " ORDER BY epoch, mtime, dir", table.unpack(vals)))
end

-- list = index:series([filter]) : every series (one metric of one record name of one recipe on
-- one machine class) of complete runs matching filter {recipe, name, metric, machine}, each
-- {recipe, name, metric, machine, unit, points = {{epoch, commit, value, samples, dir, ...}}}
-- with its points oldest first
function Index:series(filter)
  local w, vals = where(filter or {})
  local rows = check(self.db:query("SELECT * FROM points" .. w ..
    " ORDER BY recipe, name, metric, machine_class, epoch, mtime, dir", table.unpack(vals)))
  local out, last = {}, nil
  for _, r in ipairs(rows) do
    local key = table.concat({ r.recipe or "", r.name, r.metric, r.machine_class or "" }, "\0")
    if not last or last.key ~= key then
      last = { key = key, recipe = r.recipe, name = r.name, metric = r.metric, machine = r.machine_class,
        unit = r.unit, points = {} }
      out[#out + 1] = last
    end
    r.samples = r.samples and json.decode(r.samples) or nil
    r.evidence = r.evidence and json.decode(r.evidence) or nil
    r.commit, r.git_commit = r.git_commit, nil
    last.points[#last.points + 1] = r
  end
  for _, s in ipairs(out) do s.key = nil end
  return out
end

---- the command: wb history ------------------------------------------------------------------

M.USAGE = [[usage: wb history [update|records|series|alerts] [--root DIR]... [--db FILE] [--rebuild]
                  [--recipe R] [--name N] [--metric M] [--machine CLASS] [--json]
  update (the default)  index the run directories under each root (default: $WB_HISTORY, a
                        colon-separated list, else runs/) into the index (default ROOT/history.sqlite)
  records               the indexed records (after an update)
  series                the series: one metric of one record name of one recipe on one machine class
  alerts                every alert of `wb gate` with its fate, and the gate's false-alarm rate]]

local function fail(command, msg) require("wb.errors").raise(2, command .. ": " .. msg, 0) end

-- o = history.parse_args(args, command) : the arguments of `wb history` (command "history") or
-- `wb trend` ("trend": -o DIR, no actions, --json or --rebuild): {action, roots, db, filter,
-- rebuild, json, out, help}; raises exit 2 naming the argument
function M.parse_args(args, command, shown)
  local usage = command == "history" and M.USAGE or require("wb." .. command).USAGE
  local own_name = command
  command = shown or command
  local o = { roots = {}, filter = {}, action = "update", command = shown or command }
  local VALUED = { ["--root"] = "root", ["--db"] = "db", ["--recipe"] = "recipe", ["--name"] = "name",
    ["--metric"] = "metric", ["--machine"] = "machine" }
  if own_name == "trend" then VALUED["-o"] = "out" end
  local own = own_name == "history"
  local i = 1
  while i <= #args do
    local a = args[i]
    local key, value = a:match("^(%-%-[%w-]+)=(.*)$")
    key = key or a
    if a == "-h" or a == "--help" then
      o.help = true
    elseif VALUED[key] then
      if not value then
        i = i + 1
        value = args[i]
      end
      if value == nil or value == "" then fail(command, key .. " needs a value\n" .. usage) end
      local field = VALUED[key]
      if field == "root" then o.roots[#o.roots + 1] = value
      elseif field == "db" or field == "out" then o[field] = value
      else o.filter[field] = value end
    elseif own and a == "--rebuild" then
      o.rebuild = true
    elseif own and a == "--json" then
      o.json = true
    elseif own and i == 1 and (a == "update" or a == "records" or a == "series" or a == "alerts") then
      o.action = a
    else
      fail(command, "unknown argument '" .. a .. "'\n" .. usage)
    end
    i = i + 1
  end
  if #o.roots == 0 then
    for root in (os.getenv("WB_HISTORY") or "runs"):gmatch("[^:]+") do o.roots[#o.roots + 1] = root end
  end
  if o.help then return o end
  if #o.roots == 0 then fail(command, "no root: WB_HISTORY names none (a colon-separated list of directories)") end
  for _, root in ipairs(o.roots) do
    local st, err = fs.stat(root)
    if not st then fail(command, "root " .. err) end
    if st.type ~= "dir" then fail(command, "root " .. root .. ": not a directory") end
  end
  o.db = o.db or util.join(o.roots[1], M.DEFAULT_DB)
  o.filter.roots = M.real_roots(o.roots)
  return o
end

-- index, summary = history.updated(o) : the index of parse_args' o, (re)built (o.rebuild) and
-- updated from its roots, each unreadable record named on stderr; raises exit 2 when it cannot
-- be opened or written
function M.updated(o)
  if o.rebuild then
    local ok, cerr = fs.confine(util.dirname(o.db))
    if not ok then fail(o.command, cerr) end
    local st = fs.lstat(o.db)
    if st and st.type == "file" and st.size > 0 then -- a regular file: no FIFO is opened here
      local f = io.open(o.db, "rb")
      local head = f and f:read(16)
      if f then f:close() end
      if head ~= "SQLite format 3\0" then
        fail(o.command, o.db .. ": not an SQLite database; --rebuild deletes only an index")
      end
    end
    for _, path in ipairs({ o.db, o.db .. "-journal" }) do
      local st = fs.lstat(path)
      if st and st.type ~= "file" then fail(o.command, path .. ": not a regular file (" .. st.type .. "); left as it is") end
      if st then
        local ok, err = fs.remove(path)
        if not ok then fail(o.command, err) end
      end
    end
  end
  local index, err = M.open(o.db)
  if not index then fail(o.command, err) end
  local sum, uerr = index:update(o.roots)
  if not sum then
    index:close()
    fail(o.command, uerr)
  end
  for _, u in ipairs(sum.unreadable) do
    io.stderr:write(o.command, ": unreadable, left out: ", u.dir, ": ", u.error, "\n")
  end
  return index, sum
end

local function update_line(o, sum)
  return string.format("history: %d record%s from %s in %s (%d new, %d changed, %d removed, %d unchanged)\n",
    sum.records, sum.records == 1 and "" or "s", table.concat(o.roots, ", "), o.db, sum.added, sum.changed,
    sum.removed, sum.unchanged)
end

local function print_records(rows)
  local t = { { "created (UTC)", "recipe", "status", "commit", "machine", "run directory" } }
  for _, r in ipairs(rows) do
    t[#t + 1] = { r.created_at or "", r.recipe or "", r.status or (r.error and "unreadable") or "",
      r.git_commit and (r.git_commit:sub(1, 10) .. (r.dirty == 1 and "+" or "")) or "", r.machine_class or "", r.dir }
  end
  io.write(require("wb.page").md_table(t, { "l", "l", "l", "l", "l", "l" }))
end

local function print_series(list)
  local t = { { "recipe", "name", "metric", "machine", "points", "first", "last", "last value" } }
  for _, s in ipairs(list) do
    local first, last = s.points[1], s.points[#s.points]
    t[#t + 1] = { s.recipe or "", s.name, s.metric, s.machine or "", #s.points, first.created_at or "",
      last.created_at or "", require("wb.compare").format_value(last.value, s.unit) }
  end
  io.write(require("wb.page").md_table(t, { "l", "l", "l", "l", "r", "l", "l", "r" }))
end

-- alerts = index:alerts() : every alert of the gate records (their gate.json, wb.gate), oldest
-- first, each with its gate's directory and time: {gate_dir, gate_at, name, metric, detected,
-- fate = "confirmed"|"dismissed"|"unconfirmed", reason, ...} as the gate wrote them (wb.gate.settle
-- adds the fixes found later)
function Index:alerts(filter)
  local out = {}
  for _, r in ipairs(self:records({ recipe = "gate", roots = filter and filter.roots })) do
    local doc = read_json(util.join(r.dir, "gate.json"))
    for _, a in ipairs(type(doc) == "table" and type(doc.alerts) == "table" and doc.alerts or {}) do
      if type(a) == "table" then -- (a gate.json is read as it is found: one planted or damaged is not trusted)
        a.gate_dir, a.gate_at = r.dir, r.created_at
        a.fate = type(a.fate) == "string" and a.fate or "unknown"
        a.gate_fate = type(a.gate_fate) == "string" and a.gate_fate or nil
        out[#out + 1] = a
      end
    end
  end
  return out
end

-- "12 alerts: 3 confirmed, 8 dismissed by their re-run, 1 unconfirmed, 2 of them since fixed;
-- false alarms: 8 of 11 confirmable (73%)" (a fixed alert counts under the gate's own fate)
function M.alerts_summary(alerts)
  local n = { confirmed = 0, dismissed = 0, unconfirmed = 0 }
  local fixed = 0
  for _, a in ipairs(alerts) do
    local fate = a.gate_fate or a.fate
    n[fate] = (n[fate] or 0) + 1
    if a.fate == "fixed" then fixed = fixed + 1 end
  end
  local checked = n.confirmed + n.dismissed
  return string.format("%d alert%s: %d confirmed, %d dismissed by their re-run, %d unconfirmed%s; false alarms: %s",
    #alerts, #alerts == 1 and "" or "s", n.confirmed, n.dismissed, n.unconfirmed,
    fixed > 0 and string.format(", %d of them since fixed", fixed) or "",
    checked > 0 and string.format("%d of %d confirmable (%.0f%%)", n.dismissed, checked, 100 * n.dismissed / checked)
      or "none confirmable yet")
end

-- The fate column: the gate's, and a fix found later ("fixed at 1a2b3c4d5e (confirmed)").
local function fate_text(a)
  if a.fate ~= "fixed" then return a.fate or "" end
  return string.format("fixed at %s (%s)", type(a.fixed_commit) == "string" and a.fixed_commit:sub(1, 10) or "?",
    tostring(a.gate_fate))
end

local function print_alerts(alerts)
  local t = { { "gate (UTC)", "series", "detected", "head", "fate", "why" } }
  for _, a in ipairs(alerts) do
    t[#t + 1] = { a.gate_at or "", tostring(a.name) .. " · " .. tostring(a.metric), a.detected or "",
      type(a.head_commit) == "string" and a.head_commit:sub(1, 10) or "", fate_text(a), a.reason or "" }
  end
  io.write(require("wb.page").md_table(t, { "l", "l", "l", "l", "l", "l" }), "\n", M.alerts_summary(alerts), "\n")
end

-- status = history.main(args) : `wb history ...` (exit 0; 2 for bad arguments, a root that is
-- not a directory, or an index that cannot be opened or written)
function M.main(args)
  local o = M.parse_args(args, "history")
  if o.help then
    io.write(M.USAGE, "\n")
    return 0
  end
  local index, sum = M.updated(o)
  if o.action == "update" then
    io.write(update_line(o, sum))
  else
    local rows = o.action == "records" and index:records(o.filter)
      or o.action == "alerts" and require("wb.gate").settle(index, index:alerts(o.filter), { roots = o.filter.roots })
      or index:series(o.filter)
    if o.json then
      io.write(json.encode(array_of(rows)), "\n")
    elseif o.action == "records" then
      print_records(rows)
    elseif o.action == "alerts" then
      print_alerts(rows)
    else
      print_series(rows)
    end
  end
  index:close()
  return 0
end

return M

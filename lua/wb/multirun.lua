-- --multirun: one run of the recipe per combination of override values, each in its own
-- sub-directory of one parent directory. The parent's multirun.json lists every combination
-- from the start (status pending, then the run's exit status), so that `--resume PARENT`
-- after an interrupt or kill -9 skips the completed runs, resumes the unfinished one and starts
-- the rest.
--
--   status = multirun.run(recipe, opts, combos)   -- combos: lists of override texts
--   status = multirun.resume(recipe, opts)        -- opts.resume names a parent directory
--   yes = multirun.is_parent(dir)
local clock = require "wb.clock"
local errors = require "wb.errors"
local fs = require "wb.fs"
local json = require "wb.json"
local util = require "wb.util"

local M = {}

M.FILE = "multirun.json"

-- Writes the listing, secret values (the environment's, util.secret_values) redacted wherever they
-- appear; the overrides of secret keys are redacted already (util.redact_overrides).
local function save(parent, doc)
  local text = util.redact(json.encode(doc, { pretty = true }) .. "\n", require("wb.campaign").secrets())
  local ok, err = fs.write(parent .. "/" .. M.FILE, text)
  if not ok then errors.raise(1, tostring(err), 0) end
end

local function run_dir_status(dir)
  local m = fs.exists(dir .. "/manifest.json") and require("wb.campaign").read_manifest(dir .. "/manifest.json")
  return type(m) == "table" and m.status or nil
end

-- Runs the listed combinations that are not complete yet (combos[i]: the overrides of doc.runs[i]
-- as given, which the listing keeps with secret values redacted); returns the worst exit status.
local function run_listed(recipe, opts, parent, doc, combos)
  local runner = require "wb.recipe"
  local worst = 0
  for i, entry in ipairs(doc.runs) do
    local st = run_dir_status(entry.dir)
    if st == "complete" and math.type(entry.exit_status) == "integer" then
      worst = math.max(worst, entry.exit_status)
    else
      local o = {}
      for k, v in pairs(opts) do o[k] = v end
      o.overrides, o.multirun, o.output, o.resume = util.deep_copy(combos[i]), false, nil, nil
      if st then o.resume = entry.dir else o.output, o.overwrite = entry.dir, nil end
      io.write(string.format("[multirun %d/%d] %s  (%s)%s\n", i, #doc.runs, entry.label, entry.dir,
        st and (" resumed, was " .. st) or ""))
      io.stdout:flush()
      local status = runner.run(recipe, o)
      entry.exit_status = status
      save(parent, doc)
      worst = math.max(worst, status)
    end
  end
  doc.status = "complete"
  doc.finished_at_utc = clock.utc()
  save(parent, doc)
  return worst
end

-- multirun.run(recipe, opts, combos) : makes the parent (-o DIR, or runs/<recipe>_<UTC>_multirun),
-- lists every combination in it, then runs them in order
function M.run(recipe, opts, combos)
  local rundir = require "wb.rundir"
  local base = "runs/" .. util.safe_name(recipe.name) .. "_" .. clock.utc(nil, "%Y%m%dT%H%M%SZ") .. "_multirun"
  local given = opts.output and opts.output:gsub("(.)/+$", "%1")
  if given and M.is_parent(given) and not opts.overwrite then
    errors.raise(2, string.format("-o %s: holds a multirun: --resume %s finishes it, --overwrite replaces it",
      given, given), 0)
  end
  local parent = rundir.create(opts, base)
  if not opts.output then require("wb.campaign").point_latest(parent) end
  local varying = {} -- name sub-directories by the overrides that differ between combinations
  for i, o in ipairs(combos[1]) do
    for _, other in ipairs(combos) do
      if other[i] ~= o then varying[i] = true end
    end
  end
  local doc = json.object()
  doc.schema_name = "wb.multirun"
  doc.schema_version = 1
  doc.recipe = recipe.name
  doc.status = "running"
  doc.created_at_utc = clock.utc()
  doc.overrides = json.array(util.redact_overrides(opts.overrides or {}))
  doc.runs = json.array()
  local secrets = require("wb.campaign").secrets()
  local ordinal = {} -- [j][value]: a redacted value's place among those of override j, for labels
  for i, overrides in ipairs(combos) do
    local label, shown = {}, util.redact_overrides(overrides)
    for j, o in ipairs(shown) do shown[j] = util.redact(o, secrets) end
    for j, o in ipairs(shown) do
      if varying[j] and o ~= overrides[j] then
        ordinal[j] = ordinal[j] or { n = 0 }
        local seen = ordinal[j]
        if not seen[overrides[j]] then seen.n = seen.n + 1; seen[overrides[j]] = seen.n end
        label[#label + 1] = o:gsub("%[REDACTED%]$", "[REDACTED " .. seen[overrides[j]] .. "]")
      elseif varying[j] then
        label[#label + 1] = o
      end
    end
    local entry = json.object()
    entry.index = i
    entry.label = table.concat(label, " ")
    entry.overrides = json.array(shown)
    entry.dir = string.format("%s/%d_%s", parent, i, util.safe_name(table.concat(label, ",")))
    entry.exit_status = json.null
    doc.runs[i] = entry
  end
  save(parent, doc)
  return run_listed(recipe, opts, parent, doc, combos)
end

-- yes = multirun.is_parent(dir) : dir holds a multirun's listing
function M.is_parent(dir) return fs.exists(dir .. "/" .. M.FILE) end

-- multirun.resume(recipe, opts) : finishes the multirun in opts.resume (the same overrides or
-- none; another -o refused, as for one run)
function M.resume(recipe, opts)
  local parent = opts.resume:gsub("(.)/+$", "%1")
  local path = parent .. "/" .. M.FILE
  require("wb.rundir").confine_existing(parent)
  local doc, err = json.read(path)
  if not doc then errors.raise(2, "--resume: " .. tostring(err), 0) end
  local ok = type(doc) == "table" and doc.schema_name == "wb.multirun" and util.is_list(doc.runs)
  for _, e in ipairs(ok and doc.runs or {}) do
    ok = ok and type(e) == "table" and type(e.dir) == "string" and util.is_list(e.overrides)
        and type(e.label) == "string"
  end
  if not ok then errors.raise(2, "--resume: " .. path .. ": not a multirun listing wb wrote (left as it is)", 0) end
  if doc.recipe ~= recipe.name then
    errors.raise(2, string.format("--resume: %s is a multirun of '%s', not '%s'", parent, tostring(doc.recipe),
      recipe.name), 0)
  end
  if opts.output and opts.output:gsub("(.)/+$", "%1") ~= parent then
    errors.raise(2, string.format("--resume %s -o %s: a resumed run stays in its directory", parent, opts.output), 0)
  end
  local given, stored = opts.overrides or {}, doc.overrides or {}
  if #given > 0 and table.concat(util.redact_overrides(given), "\0") ~= table.concat(stored, "\0") then
    errors.raise(2, string.format("--resume: %s ran with the overrides %s, not %s (resume without them, or start " ..
      "a new run)", parent, table.concat(stored, " "), table.concat(util.redact_overrides(given), " ")), 0)
  end
  local combos = {}
  for i, e in ipairs(doc.runs) do combos[i] = e.overrides end
  local secret = util.redacted_keys(stored)
  if #secret > 0 then -- the listing lacks their values: the same combinations again, from the overrides given
    if #given == 0 then
      errors.raise(2, string.format("--resume: %s ran with overrides of secret keys (%s), whose values wb does not " ..
        "keep: give the multirun's overrides again", parent, table.concat(secret, ", ")), 0)
    end
    combos = require("wb.config").multirun_overrides(given, recipe.open) or { given }
    if #combos ~= #doc.runs then
      errors.raise(2, "--resume: " .. path .. ": its combinations are not those of the overrides given (left as it is)", 0)
    end
    for i, e in ipairs(doc.runs) do
      if not combos[i] or table.concat(util.redact_overrides(combos[i]), "\0") ~= table.concat(e.overrides, "\0") then
        errors.raise(2, "--resume: " .. path .. ": its combinations are not those of the overrides given (left as it is)", 0)
      end
    end
  end
  require("wb.rundir").lock(parent)
  doc.status, doc.resumed_at_utc = "running", clock.utc()
  save(parent, doc)
  return run_listed(recipe, opts, parent, doc, combos)
end

return M

-- VEP profile breakdown: pipeline, Lance lookups, engine and transcript-engine stages, and what they mean.
--
--   wb vep_breakdown                                   run the bundled emitter with the profile knobs
--   wb vep_breakdown -- uv run python run_annotation_fast.py chr1 --cache merged ...
--   wb vep_breakdown log=/tmp/prof.profile             parse a capture (plain or gzip)
--   wb vep_breakdown log=a.profile compare=b.profile   two cache layouts side by side
-- Writes breakdown.md, summary.md, breakdown.json (+ compare.md, compare.json) in the run directory
-- and prints the breakdown. The log formats and the rules: docs/vep_breakdown.md; the reader: lua/wb/vep.lua.
local wb = require "wb"
local json, vep, opt = wb.json, wb.vep, wb.util.opt

-- The command when none is given: the bundled emitter, with the config's emit.* knobs.
local function emitter_argv(cfg)
  local dir, err = require("wb.paths").examples_dir()
  if not dir then wb.usage("no command given and " .. err, 0) end
  local path = dir .. "/vep_emit"
  if not wb.fs.exists(path) then wb.usage("no command given and the bundled emitter is missing: " .. path, 0) end
  return { path, "--bytes", tostring(cfg.emit.bytes), "--seed", tostring(cfg.emit.seed),
    "--contigs", tostring(cfg.emit.contigs), "--work-us", tostring(cfg.emit.work_us) }
end

-- ok = complete(b, path, prefix, hint) : false, each reason on stderr, when the breakdown of the
-- capture at path is empty or covers only part of it (neither is a success)
local function complete(b, path, prefix, hint)
  local ok = true
  if b.profile_lines == 0 then
    io.stderr:write("wb: vep_breakdown: ", prefix, "no VEP profile lines in ", path, hint, "\n")
    ok = false
  end
  for _, w in ipairs(vep.incomplete(b)) do
    io.stderr:write("wb: vep_breakdown: ", prefix, path, ": ", w, "\n")
    ok = false
  end
  return ok
end

return wb.recipe {
  config = "vep_breakdown",
  types = {
    log = "string|null", compare = "string|null", command = "list|string|null", timeout = "number>0|null",
    ["emit.seed"] = "integer", ["emit.contigs"] = "integer>=1", ["emit.work_us"] = "integer>=0",
    bound_ratio = "number>=0", top = "integer>=1", wall = "annotate|command|auto", threads = "integer>=0",
  },
  run = function(ctx)
    local cfg = ctx.cfg
    local log, other = opt(cfg.log), opt(cfg.compare)
    for key, path in pairs({ log = log, compare = other }) do
      local st, err = wb.fs.stat(path)
      if path and not st then wb.usage(key .. ": " .. err, 0) end
      if st and st.type ~= "file" then wb.usage(key .. ": " .. path .. " is not a file", 0) end
    end
    local c = wb.campaign.open(ctx, { inputs = { log, other } })
    local command
    if not log then
      local argv, env = {}, {}
      for i, a in ipairs(#ctx.args > 0 and ctx.args or opt(cfg.command) or emitter_argv(cfg)) do argv[i] = tostring(a) end
      for k, v in pairs(cfg.env) do env[k] = tostring(v) end
      command, log = vep.run_command(c, argv, env, opt(cfg.timeout))
    end
    local a
    c:run("breakdown", function(rec)
      local err
      a, err = vep.analyse(log, cfg.threads)
      if not a then
        rec.error = err
        return false
      end
      a.mode = command and "run" or "log"
      a.command = command or json.null
      vep.read(a, cfg, command and command.wall_seconds)
      rec.metrics = vep.metrics(a)
    end)
    if not a then -- a capture that cannot be read (missing, corrupt or cut gzip) is bad input
      c:finish()
      wb.usage(tostring(c:record("breakdown").error), 0)
    end
    local md = vep.markdown(a, "VEP profile breakdown")
    c:write("breakdown.md", md)
    c:write("summary.md", vep.summary(a, command))
    c:write_json("breakdown.json", a)
    io.write(md)
    local status = 0
    if other then
      local b, err = vep.analyse(other, cfg.threads)
      if not b then
        c:finish()
        wb.usage("compare: " .. err, 0)
      end
      if not complete(b, other, "compare: ", "") then status = 1 end
      vep.read(b, cfg, nil)
      local cj, cmd = vep.compare(a, b)
      c:write_json("compare.json", cj)
      c:write("compare.md", cmd)
      io.write("\n", cmd)
    end
    if not complete(a, log, "", " (were the VEP_*_PROFILE variables set?)") then status = 1 end
    if command and command.exit_code ~= 0 then
      local why = command.timed_out and "timed out" or command.signal ~= json.null
        and "was killed by signal " .. command.signal or "exited " .. tostring(command.exit_code)
      io.stderr:write("wb: vep_breakdown: the command ", why, "\n")
      status = 1
    end
    c:finish()
    io.write("\nreport: ", c.dir, "/breakdown.md\n")
    return status
  end,
}

-- Make the plink2 --dummy datasets (one per phenotype kind) the plink2 benchmark matrix reads.
--
--   wb data [dataset.samples=N] [dataset.variants=N] [tool.force=true] [--dry-run]
--
-- Writes <dataset.dir>/<prefix>_<phenotype>.{pgen,pvar,psam} with
-- `plink2 --dummy SAMPLES VARIANTS FREQ ALLELES [modifiers] --seed S --out ...`; a dataset whose
-- three files exist is kept unless tool.force=true. The campaign directory records the commands.
local wb = require "wb"
local executor = require "wb.executor"

local EXTENSIONS = { "pgen", "pvar", "psam" }

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  config = "data_plink2",
  executors = { "local", "slurm" }, -- the machine profile's executor runs the cases
  types = {
    ["dataset.samples"] = "integer>=1", ["dataset.variants"] = "integer>=1",
    ["dataset.missing_dosage_freq"] = "number>=0", ["dataset.seed"] = "integer", ["dataset.phenotypes"] = "mapping",
    ["tool.force"] = "boolean",
  },
  run = function(ctx)
    local d = ctx.cfg.dataset
    local force = ctx.cfg.tool.force == true
    if type(d) ~= "table" or type(d.phenotypes) ~= "table" then
      wb.usage("data: the profile has no dataset.phenotypes", 0)
    end
    local c = wb.campaign.open(ctx, { tools = { { "plink2", "--version" } } })
    local cases, kept = {}, {}
    for name, modifiers in pairs(d.phenotypes) do
      local prefix = d.dir .. "/" .. d.prefix .. "_" .. name
      local argv = { "plink2", "--dummy", tostring(d.samples), tostring(d.variants), tostring(d.missing_dosage_freq),
        tostring(d.alleles) }
      for _, m in ipairs(modifiers) do argv[#argv + 1] = tostring(m) end
      for _, a in ipairs({ "--seed", tostring(d.seed), "--out", prefix }) do argv[#argv + 1] = a end
      local present = true
      for _, ext in ipairs(EXTENSIONS) do present = present and wb.fs.exists(prefix .. "." .. ext) end
      if present and not force then
        kept[#kept + 1] = name
        local rec = c:record(name)
        rec.status = "skipped"
        rec.reason = "files exist (tool.force=true remakes them)"
        rec.command_arguments = wb.json.array(argv)
      else
        cases[#cases + 1] = { name = name, argv = argv, prefix = prefix }
      end
    end
    local dry = c:plan { sections = { { name = "datasets", cases = cases } } }
    if not dry and #cases > 0 then wb.check(wb.fs.mkdir_p(d.dir)) end
    executor.new(c, ctx.cfg.machine):run_cases(cases, {
      collect = function(rec, cs)
        local files = wb.json.array()
        for _, ext in ipairs(EXTENSIONS) do
          local st = wb.fs.stat(cs.prefix .. "." .. ext)
          if not st then return false end
          files[#files + 1] = { path = cs.prefix .. "." .. ext, size = st.size }
        end
        rec.files = files
      end,
    })
    if dry then return 0 end
    local result = c:finish()
    for _, name in ipairs(kept) do io.write(name, ": kept ", d.dir, "/", d.prefix, "_", name, ".*\n") end
    for _, cs in ipairs(cases) do
      io.write(cs.name, ": ", c:record(cs.name).status == "success" and "made " or "FAILED ", cs.prefix, ".*\n")
    end
    return result.status == "complete" and 0 or 1
  end,
}

-- Measure the bundled example workload over several trials and print a summary table.
local wb = require "wb"

return wb.recipe {
  defaults = {
    trials = 5,
    warmup = 1,
    command = { "${wb:examples}/phases", "--scale", "4", "--sleep-ms", "50" },
  },
  types = { trials = "integer>=1", warmup = "integer>=0", command = "list" },
  run = function(ctx)
    local cfg = ctx.cfg
    local argv = {}
    for i, a in ipairs(cfg.command) do argv[i] = tostring(a) end
    local stages, order = {}, {}
    local wall, user, sys, rss = {}, {}, {}, {}
    for trial = 1, cfg.warmup + cfg.trials do
      local measured = trial > cfg.warmup
      local res = wb.check(wb.proc.run {
        argv = argv,
        stdout = "null",
        stderr = function(line)
          local name, secs = line:match("^%[phases%] stage=(%S+) seconds=([%d.]+)")
          if measured and name then
            if not stages[name] then stages[name], order[#order + 1] = {}, name end
            table.insert(stages[name], tonumber(secs))
          end
        end,
      })
      if not res.ok then
        wb.fail(string.format("%s failed (exit %s)", argv[1], tostring(res.code or res.signal)))
      end
      if measured then
        wall[#wall + 1], user[#user + 1], sys[#sys + 1] = res.wall, res.user, res.sys
        rss[#rss + 1] = res.maxrss_kb / 1024
      end
    end
    local rows = { { "metric", "mean", "stddev", "min", "max", "unit" } }
    local function add(name, xs, unit, scale)
      local s = wb.stats.summary(xs)
      local f = function(v) return string.format("%.2f", v * scale) end
      rows[#rows + 1] = { name, f(s.mean), f(s.stddev), f(s.min), f(s.max), unit }
    end
    add("wall", wall, "ms", 1000)
    add("user", user, "ms", 1000)
    add("sys", sys, "ms", 1000)
    add("peak rss", rss, "MiB", 1)
    for _, name in ipairs(order) do add("stage " .. name, stages[name], "ms", 1000) end
    print(string.format("%s: %d trials (+%d warmup)", table.concat(argv, " "), cfg.trials, cfg.warmup))
    io.write(wb.report.table(rows, { align = { "l", "r", "r", "r", "r", "l" } }))
  end,
}

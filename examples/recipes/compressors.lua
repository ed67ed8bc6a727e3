-- Three compressors over two inputs (a sweep over the inputs): report.html with a table of the
-- times and a chart, summary.json with every run. Written from docs/recipes.md.
--   wb run examples/recipes/compressors.lua [runs=5] ['inputs=[a.bin, b.txt]']
local wb = require "wb"
local page = require "wb.page"

return wb.recipe {
  defaults = { runs = 5, inputs = { "${wb:examples}/gwas_engine", "/usr/share/common-licenses/GPL-3" },
    compressors = { "gzip -6 -c {input}", "xz -6 -c {input}", "zstd -6 -c {input}" } },
  types = { runs = "integer>=1", inputs = "list", compressors = "list" },
  run = function(ctx)
    local spec = { commands = ctx.cfg.compressors, scan = { input = ctx.cfg.inputs }, runs = ctx.cfg.runs }
    local plan = wb.bench.plan(spec)
    local c = wb.campaign.open(ctx)
    wb.bench.declare(c, plan)
    local summary = wb.bench.run(spec)
    wb.bench.record(c, summary)
    local rows, bars = { { "compressor", "input", "mean [ms]", "σ [ms]", "runs" } }, {}
    for _, cmd in ipairs(summary.commands) do
      local w, input = cmd.stats.wall, cmd.parameters.input:match("[^/]*$")
      rows[#rows + 1] = { cmd.argv[1], input, ("%.3f"):format(w.mean * 1e3), ("%.3f"):format(w.stddev * 1e3), w.n }
      bars[#bars + 1] = { label = cmd.argv[1] .. " · " .. input, value = w.mean * 1e3 }
    end
    page.document { title = "Compressors", blocks = {
      page.section("Mean wall time", page.table(rows, { align = { "l", "l", "r", "r", "r" } })),
      page.section("Chart", page.figure(wb.svg.bar_chart { bars = bars, x_label = "Mean wall time [ms]",
        title = "Mean wall time per compressor and input" }, "Lower is faster.")),
    } }:write(c, "report")
    c:write("summary.json", wb.report.json(summary))
    c:finish()
    io.write(page.md_table(rows, {}), "report: ", c.dir, "/report.html\n")
  end,
}

-- wb.matrix, the engine of recipes/matrix.lua (whose runs on the bundled engine are
-- tests/recipes/matrix_test.lua): settings, run expansion and waves, cases, report helpers.
local T = require "wb.test"
local wb = require "wb"
local matrix = require "wb.matrix"

local function cfg(m, tool)
  local block = { command = { "/bin/echo", "{trait}", "{device}", { "--cache", "{cache_dir}" }, "--out", "{out}" },
    axes = wb.ordered(), name = "{trait}_{device}", event_log = "events.jsonl" }
  block.axes.trait = { "binary", "linear" }
  block.axes.device = { "cpu", "gpu" }
  block.values = { device = { gpu = { cache = "warm" } } }
  for k, v in pairs(m or {}) do block[k] = v end
  return { matrix = block, tool = tool or {} }
end

local function names(list) return T.pluck(list, "name") end

T.case("settings: defaults, tool keys, and each mistake a one-line exit-2 error", function()
  local s = matrix.settings(cfg())
  T.eq(s.trials, 1)
  T.eq(s.cache_group, "{name}")
  T.eq(s.fail_on_regression, true)
  T.eq(matrix.settings(cfg(nil, { threshold = 0.05, fail_on_regression = false })).threshold, 0.05)
  T.raises(function() matrix.settings({}) end, "matrix: the profile has no matrix block")
  T.raises(function() matrix.settings(cfg { command = {} }) end, "matrix.command must be a non-empty list")
  T.raises(function() matrix.settings(cfg { trials = 0 }) end, "matrix.trials must be a positive integer")
  T.raises(function() matrix.settings(cfg { name = wb.null }) end, "matrix.name")
  T.raises(function() matrix.settings(cfg { rows = { header_lines = 1 } }) end, "matrix.rows must be")
  T.raises(function() matrix.settings(cfg { inputs = 3 }) end, "matrix.inputs must be a list")
  T.eq(matrix.settings(cfg { inputs = "one" }).inputs, { "one" })
end)

T.case("runs: the product of the axes, first axis slowest; value mappings; warm runs after their cold fill", function()
  local s = matrix.settings(cfg())
  local runs = matrix.runs(s)
  T.eq(names(runs), { "binary_cpu", "binary_gpu_warmup", "binary_gpu", "linear_cpu", "linear_gpu_warmup", "linear_gpu" })
  T.eq(runs[2].role, "warmup")
  T.eq(runs[2].cache, "cold")
  T.eq({ runs[1].wave, runs[2].wave, runs[3].wave }, { 1, 1, 2 }, "the warm run waits for its warm-up")
  T.eq(runs[3].params.cache, "warm")
  T.eq(runs[1].group, nil, "no cache, no group")
  T.eq(names(matrix.runs(matrix.settings(cfg { only = { "linear_cpu" } }))), { "linear_cpu" })
  T.raises(function() matrix.runs(matrix.settings(cfg { only = { "nope" } })) end, "matrix.only: no run named 'nope'")
  T.raises(function() matrix.runs(matrix.settings(cfg { name = "{trait}" })) end, "duplicate run name 'binary'")
  T.raises(function() matrix.runs(matrix.settings(cfg { name = "{nope}" })) end, "unknown placeholder {nope}")
  T.raises(function() matrix.runs(matrix.settings(cfg { params = { out = "x" } })) end, "'out' is set by the recipe")
  T.raises(function() matrix.runs(matrix.settings(cfg { params = { cache = "hot" } })) end,
    "cache must be disabled, cold or warm")
  local explicit = matrix.runs(matrix.settings(cfg { runs = { { name = "one", trait = "t", device = "d" } } }))
  T.eq(names(explicit), { "one" })
  T.eq(explicit[1].params.trait, "t")
end)

T.case("cases: templates filled per trial, an option group dropped when its placeholder is empty", function()
  local s = matrix.settings(cfg { trials = 2, env = { RUN = "{name}-{trial}" }, timeout = 9 })
  local waves = matrix.cases(s, matrix.runs(s), "/r")
  T.eq(#waves, 2)
  T.eq(names(waves[1]), { "binary_cpu.t1", "binary_gpu_warmup.t1", "linear_cpu.t1", "linear_gpu_warmup.t1",
    "binary_cpu.t2", "binary_gpu_warmup.t2", "linear_cpu.t2", "linear_gpu_warmup.t2" }, "trials interleaved")
  local cpu, gpu = waves[1][1], waves[2][1]
  local echo = assert(wb.fs.realpath("/bin/echo")) -- a program given by path runs by its real path
  T.eq(cpu.argv, { echo, "binary", "cpu", "--out", "/r/runs/binary_cpu/t1" })
  T.eq(gpu.argv, { echo, "binary", "gpu", "--cache", "/r/cache/binary_gpu/t1", "--out", "/r/runs/binary_gpu/t1" })
  T.eq(cpu.env, { RUN = "binary_cpu-1" })
  T.eq(cpu.timeout, 9)
  T.eq(cpu.event_log, "/r/runs/binary_cpu/t1/events.jsonl")
  T.eq(cpu.cache_dir, nil)
  local one = matrix.settings(cfg())
  T.eq(matrix.cases(one, matrix.runs(one), "/r")[1][1].out, "/r/runs/binary_cpu", "one trial: no t1")
  T.raises(function()
    local bad = matrix.settings(cfg { command = { "{name}", "{what}" } })
    matrix.cases(bad, matrix.runs(bad), "/r")
  end, "matrix.command: unknown placeholder {what}")
  T.raises(function()
    local bad = matrix.settings(cfg { command = { "{cache_dir}" } })
    matrix.cases(bad, matrix.runs(bad), "/r")
  end, "the template gives an empty command")
end)

T.case("status_text and top_stages: why a run failed, its longest stages", function()
  T.eq(matrix.status_text({ status = "success" }, {}), "success")
  T.eq(matrix.status_text({ status = "failed", return_code = 3 }, {}), "failed: exit 3")
  T.eq(matrix.status_text({ status = "failed", signal = "SIGKILL" }, {}), "failed: signal SIGKILL")
  T.eq(matrix.status_text({ status = "failed", error = "spawn: x|y\nz" }, {}), "failed: spawn: x y z")
  local trials = { { role = "trial", name = "r.t1", status = "success" }, { role = "trial", name = "r.t2", status = "failed",
    return_code = 4 } }
  T.eq(matrix.status_text({ name = "r", status = "failed", return_code = 0 }, trials), "failed: exit 4")
  T.eq(matrix.top_stages({ load = 0.5, compute = 2, write = 0.25 }, 2),
    "compute " .. wb.util.format_seconds(2) .. ", load " .. wb.util.format_seconds(0.5))
  T.eq(matrix.top_stages(wb.null, 3), "")
end)

-- Slurm polling: a 200-task job array on a private single-node cluster (tests/slurm/start.sh),
-- counting squeue calls through a wrapper on PATH against the executor's poll count.
local wb = require "wb"
local lib = dofile("bench/lib.lua")

local function sh(cmd)
  local res = wb.check(wb.proc.run { argv = { "bash", "-c", cmd }, stdout = "capture", stderr = "capture", timeout = 300 })
  return res
end

return {
  title = "Slurm polling (target: one squeue call per poll interval for a 200-task array)",
  run = function(opts)
    if not wb.proc.which("slurmctld") then return { skipped = "Slurm is not installed (make deps)" } end
    local tasks = opts.smoke and 20 or 200
    local tmp = wb.fs.tmpdir("wbbench")
    local cluster = tmp .. "/cluster"
    local env = string.format("WB_SLURM_DIR=%s WB_SLURM_PORT=%d", cluster, 17917)
    local up = sh(env .. " bash tests/slurm/start.sh")
    if not up.ok then
      sh(env .. " bash tests/slurm/stop.sh")
      return { skipped = "the test cluster did not start: " .. up.stderr:sub(-300) }
    end
    local log = tmp .. "/squeue.log"
    wb.fs.write(tmp .. "/squeue", '#!/bin/sh\necho "$*" >> ' .. log .. '\nexec ' .. wb.proc.which("squeue") .. ' "$@"\n',
      { mode = tonumber("755", 8) })
    local t = wb.clock.timer()
    local run = sh(string.format(". %s/env && PATH=%s:$PATH %s run tests/fixtures/recipes/slurm_cases.lua -o %s/run " ..
      "machine=slurm_cpu machine.mem=256 cases=%d script=true", cluster, tmp, lib.wb, tmp, tasks))
    local elapsed = t:elapsed()
    sh(env .. " bash tests/slurm/stop.sh")
    if not run.ok then
      wb.fs.remove_tree(tmp)
      wb.fail("the array campaign failed: " .. run.stderr)
    end
    local calls = select(2, (wb.fs.read(log) or ""):gsub("\n", ""))
    local polls
    for line in (wb.fs.read(tmp .. "/run/events.jsonl") or ""):gmatch("[^\n]+") do
      local e = wb.json.decode(line)
      if e and e.event == "slurm_finished" then polls = e.fields.polls end
    end
    wb.fs.remove_tree(tmp)
    local per_poll = polls and polls > 0 and calls / polls or nil
    return {
      command = "build/wb run bench/run.lua only=slurm",
      figures = {
        { name = "array tasks", value = tostring(tasks) },
        { name = "submission to all results collected", value = string.format("%.1f s", elapsed) },
        { name = "poll intervals", value = tostring(polls or "?") },
        { name = "squeue calls (wrapper on PATH)", value = tostring(calls) },
        { name = "squeue calls per poll", value = per_poll and string.format("%.2f", per_poll) or "?",
          target = "1", met = per_poll == 1 },
      },
      notes = "One sbatch --array submission; states for all tasks from one `squeue` per interval, final states from scontrol.",
    }
  end,
}

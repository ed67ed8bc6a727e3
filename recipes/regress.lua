-- Regression hunt over git commits in the manner of airspeed velocity: build, benchmark, find steps.
--
--   wb regress 'bench=[./build/app, --n, "1000"]' build='[make, -s]' range=HEAD~20..HEAD
--   wb regress repo=../proj 'range=[v1.2, v1.3, main]' 'bench=[./app]' runs=20
--
-- Each commit of the range (git rev-list --reverse [--first-parent]) is checked out in a
-- temporary worktree (git worktree add --detach; removed with git worktree remove --force even
-- when the run fails or is interrupted), built with `build` (an argv run in the worktree; [] for
-- none) and measured by wb.bench running `bench` in the worktree. One result per commit is kept
-- in results_dir/<machine>/<sha>.json, so runs accumulate: a commit already measured on this
-- machine with the same build and bench commands is reused unless force=true. Build failures are
-- recorded (status build_failed) and left out of the series. Step detection (wb.stats.steps)
-- over the per-commit means names the first commit of each new level; a Mann–Whitney test
-- between the samples of the segments either side says whether it is significant. With
-- confirm=true (or --confirm) each step called a change, or confounded by load, is confirmed: its
-- two commits built again side by side and benchmarked interleaved in one run; the confirmed
-- verdict stands beside the original, and only confirmed regressions count. Writes
-- regress.json (wb.regress v1), regress.md, regress.svg and report.html. See docs/regress.md; the
-- engine: lua/wb/regress.lua.
local wb = require "wb"
local regress = wb.regress
local util, opt, null = wb.util, wb.util.opt, wb.null

-- The significance rule of a step and the per-commit CI (docs/regress.md).
local ALPHA, CI_LEVEL, RESAMPLES = 0.05, 0.95, 2000

return wb.recipe {
  plans = true, -- run writes its plan (c:plan) before it runs anything
  defaults = {
    repo = ".", range = null, first_parent = true,
    build = { "make", "-s" }, bench = null, runs = 10, warmup = 1, timeout = null, build_timeout = null,
    results_dir = "runs/regress-results", machine_name = null, skip_existing = true, force = false,
    threshold = 0.05, min_size = 2, seed = 1, fail_on_regression = false, confirm = false,
  },
  types = {
    repo = "string", range = "string|list|null", first_parent = "boolean", build = "list", bench = "list|null",
    runs = "integer>=1", warmup = "integer>=0", timeout = "number>0|null", build_timeout = "number>0|null",
    results_dir = "string", machine_name = "string|null", skip_existing = "boolean", force = "boolean",
    threshold = "number>=0", min_size = "integer>=1", seed = "integer", fail_on_regression = "boolean",
    confirm = "boolean",
  },
  run = function(ctx)
    local cfg = ctx.cfg
    if type(cfg.bench) ~= "table" or #cfg.bench == 0 then
      wb.usage("regress: which benchmark? e.g. 'bench=[./build/app, --n, \"1000\"]'", 0)
    end
    local path, err = wb.fs.realpath(tostring(cfg.repo))
    if not path then wb.usage("regress: repo: " .. err, 0) end
    local repo = regress.git(path, "rev-parse", "--show-toplevel"):gsub("%s+$", "")
    local machine = opt(cfg.machine_name) or ((wb.fs.read("/proc/sys/kernel/hostname") or "localhost"):gsub("%s+$", ""))
    local range = opt(cfg.range) or regress.default_range(repo)
    local commits = regress.commits(repo, range, cfg.first_parent)
    local root = regress.runs_root(repo)
    local results_dir = tostring(cfg.results_dir)
    if root and results_dir:sub(1, 1) ~= "/" then results_dir = util.join(root, results_dir) end
    if root and not ctx.opts.output and not ctx.opts.resume then
      ctx.runs_root = root .. "/runs"
      io.stderr:write("regress: inside the repository under test, so the run directory is under ", root, "/runs\n")
    end
    local h = regress.hunt { repo = repo, machine = machine, dir = util.join(results_dir, util.safe_name(machine)),
      build = cfg.build, bench = cfg.bench, runs = cfg.runs, warmup = cfg.warmup, seed = cfg.seed,
      timeout = opt(cfg.timeout), build_timeout = opt(cfg.build_timeout), ci_level = CI_LEVEL, resamples = RESAMPLES,
      threshold = cfg.threshold, alpha = ALPHA, min_size = cfg.min_size, first_parent = cfg.first_parent,
      skip_existing = cfg.skip_existing, force = cfg.force }
    wb.check(wb.fs.mkdir_p(h.dir))
    regress.machine_info(h.dir .. "/machine.json", machine)
    local c = wb.campaign.open(ctx)
    local names, todo = regress.plan(commits, h)
    c:declare(names)
    if c:plan { sections = { { name = "regress", cases = todo,
      subprocess_runs = #todo * (cfg.runs + cfg.warmup + (#cfg.build > 0 and 1 or 0)) } } } then
      return 0
    end
    local doc = regress.document(commits, h, range, regress.run(c, commits, h))
    if cfg.confirm then regress.confirm(c, h, doc) end
    local md, chart_svg = regress.markdown(doc), regress.chart(doc)
    c:write_json("regress.json", doc)
    c:write("regress.md", md)
    c:write("regress.svg", chart_svg .. "\n")
    c:write("report.html", regress.html(doc, chart_svg))
    c:finish()
    io.write(md, "\nreport: ", c.dir, "/report.html\n")
    return (cfg.fail_on_regression and doc.regressions > 0) and 1 or 0
  end,
}

---@meta
-- LuaLS annotations for recipe authors (not compiled into wb). Point the Lua language server at
-- this directory (`Lua.workspace.library = { "<wb>/lua" }`) for completion and signatures.

---@class wb.Context
---@field cfg table composed, interpolated config
---@field args string[] positional arguments
---@field opts wb.RunOptions
---@field name string recipe name
---@field path string recipe file
---@field config_info table[] where each part of cfg came from (config.compose's info)
---@field runs_root string? set before wb.campaign.open: where a new run directory goes (default "runs")

---@class wb.RunOptions
---@field dry_run boolean?
---@field output string? -o DIR
---@field resume string? --resume DIR
---@field baseline string? --baseline PATH
---@field overrides string[]
---@field config_name string?
---@field multirun boolean?

---@class wb.RecipeSpec
---@field run fun(ctx: wb.Context): (integer|boolean|nil)
---@field config string? profile name (profiles/NAME.yaml)
---@field defaults table? inline default config
---@field open string[]? dotted paths of config mappings whose keys the user chooses (path.key=v adds one)
---@field description string?

---@class wb
---@field version string
---@field null lightuserdata JSON/YAML null
---@field proc wb.proc
---@field bench wb.bench
---@field stats wb.stats
---@field campaign wb.campaign
---@field capture wb.capture
---@field report wb.report
---@field flame wb.flame
---@field fs wb.fs
---@field json wb.json
---@field yaml wb.yaml
---@field clock wb.clock
---@field term wb.term
---@field util wb.util
---@field sweep wb.sweep
---@field config wb.config
---@field verdict wb.verdict
---@field interference wb.interference
---@field compare wb.compare
---@field python wb.python
---@field memory wb.memory
---@field bpf wb.bpf
---@field html wb.html
---@field markdown wb.markdown
---@field perf wb.perf
---@field scan wb.scan
---@field slurm wb.slurm
---@field tune_race wb.tune_race
---@field tune wb.tune
---@field history wb.history
---@field trend wb.trend
---@field gate wb.gate
---@field sqlite wb.sqlite
---@field svg wb.svg
---@field sym wb.sym
---@field trace wb.trace
---@field unwind wb.unwind
---@field cprofile wb.cprofile
---@field files wb.files
---@field page wb.page
---@field profile wb.profile
---@field appprofile wb.appprofile
---@field matrix wb.matrix
---@field regress wb.regress
---@field baseline wb.baseline
---@field confirm wb.confirm
---@field environ wb.environ
---@field matrix_confirm wb.matrix_confirm
---@field scaling wb.scaling
---@field vep wb.vep
local wb = {}

---@param spec wb.RecipeSpec
---@return table recipe
function wb.recipe(spec) end

---Bad usage or input: exit 2. level 0 = no position.
---@param msg string
---@param level integer?
function wb.usage(msg, level) end

---The work ran but failed: exit 1.
---@param msg string
---@param level integer?
function wb.fail(msg, level) end

---Turns `nil, err` into an exit-1 error at the caller's line.
---@generic T
---@param value T|nil
---@param err any
---@return T
function wb.check(value, err, ...) end

---@param t table?
---@return table ordered table (keeps insertion order)
function wb.ordered(t) end

---@param t table?
---@return table array (encodes as [] when empty)
function wb.array(t) end
---wb.check_interrupt() : raises the interrupt error when a signal is pending.
function wb.check_interrupt() end
---signo = wb.interrupted() : the pending SIGINT/SIGTERM number, or nil.
function wb.interrupted() end
---keys = wb.ordered_keys(t) : keys of an ordered table in insertion order, or nil.
function wb.ordered_keys(t) end

-- wb.proc -------------------------------------------------------------------------------------

---@alias wb.Sink "inherit"|"null"|"capture"|"stdout"|{file: string, append: boolean?}|{tee: string, append: boolean?}|fun(line: string, piece: boolean) a line over 1 MiB comes in 1 MiB pieces, piece true on all but its last

---@class wb.ProcSpec
---@field argv string[]?
---@field cmd string? with shell = true
---@field shell boolean?
---@field env table<string, string>?
---@field env_mode "add"|"replace"|nil
---@field cwd string?
---@field stdin "null"|"inherit"|{file: string}|{data: string}|nil
---@field stdout wb.Sink?
---@field stderr wb.Sink?
---@field timeout number? seconds
---@field grace number? seconds between SIGTERM and SIGKILL (default 2)
---@field held boolean? created but held before exec until p:release()

---@class wb.ProcResult
---@field pid integer
---@field ok boolean
---@field exited boolean
---@field code integer?
---@field signal integer?
---@field timed_out boolean
---@field wall number seconds
---@field wall_ns integer
---@field user number seconds
---@field sys number seconds
---@field maxrss_kb integer the largest own peak RSS of the child and the descendants it waited for
---@field maxrss_bound boolean maxrss_kb is only an upper bound (wait4's figure, below wb's own peak)
---@field own_peak_rss_kb integer? the child's own peak RSS, from its exit message (root)
---@field runq number? seconds the tree's threads waited for a CPU (see runq_scope)
---@field runq_scope "tree"|"leader"|"none" whose wait runq is: every thread's (exit messages, root), the leader's, or unknown
---@field wall_own number? the child's own wall, fork to exit, by the kernel's clock (root)
---@field nivcsw integer involuntary context switches of the tree
---@field nvcsw integer voluntary context switches of the tree
---@field others_cpu number? CPUs' worth of other tasks' CPU use while the child ran
---@field others_runnable integer? runnable tasks other than wb at the start or end, the larger
---@field cpu_pressure number? seconds of the machine's PSI "some" CPU stall while the child ran
---@field steal number? seconds of hypervisor steal while the child ran
---@field cpus integer? the CPUs the child could use (affinity)
---@field stdout string?
---@field stderr string?

---@class wb.Proc
---@field pid integer
local Proc = {}
---@return wb.ProcResult
function Proc:wait() end
---@return wb.ProcResult?
function Proc:poll() end
---@param signo integer?
function Proc:kill(signo) end
---@return boolean
function Proc:running() end
function Proc:release() end
function Proc:close() end

---@class wb.proc
local proc = {}
---@param spec wb.ProcSpec
---@return wb.Proc?, string? err, integer? errno
function proc.spawn(spec) end
---@param spec wb.ProcSpec
---@return wb.ProcResult?, string? err, integer? errno
function proc.run(spec) end

---A spec parsed once, run many times (no line callbacks, not held).
---@class wb.ProcRunner
local Runner = {}
---The result table is reused: the next run overwrites it.
---@return wb.ProcResult?, string? err, integer? errno
function Runner:run() end
function Runner:close() end
---@param spec wb.ProcSpec
---@return wb.ProcRunner
function proc.runner(spec) end
---@param list wb.Proc[]
---@param timeout number?
---@return wb.Proc?, wb.ProcResult?
function proc.wait_any(list, timeout) end
---@param list wb.Proc[]
---@return wb.ProcResult[]
function proc.wait_all(list) end
---@param name string
---@param path string?
---@return string?
function proc.which(name, path) end
---The CPUs a child could use: the affinity count, and the tightest cgroup CPU quota (nil: none).
---@return integer?, number?
function proc.cpus() end
---Inside a line callback: the wb.clock.now() at which wb read the line from the pipe; else nil.
---@return integer?
function proc.line_time() end
---@param pgid integer a process group wb did not start in this process
---@param signo integer? default SIGTERM; 0 tests that the group exists
---@return boolean? ok, string? err, integer? errno
function proc.signal_group(pgid, signo) end

-- wb.bench / wb.stats -------------------------------------------------------------------------

---@class wb.BenchSpec
---@field commands (string|{name: string, argv: string[]})[]
---@field runs integer?
---@field min_runs integer?
---@field min_time number?
---@field max_runs integer?
---@field warmup integer?
---@field setup string?
---@field prepare string?
---@field conclude string?
---@field cleanup string?
---@field ignore_failure boolean?
---@field shell boolean?
---@field order "interleaved"|"random"|nil
---@field seed integer?
---@field scan table<string, any>?
---@field reference string|integer|nil
---@field timeout number?
---@field cwd string?
---@field alloc_runs integer? untimed runs more that count the bytes the command's tree allocates (wb.alloc.counter)

---@class wb.bench
local bench = {}
---@param spec wb.BenchSpec
---@return table summary wb.bench summary (schema_name "wb.bench")
function bench.run(spec) end
---values = bench.parse_scan(v) : a list from a list, "1,2,4", "1..8" (doubling when it starts at 1:
---1,2,4,8) or "1:8:2" (start:stop:step)
function bench.parse_scan(v) end
---section = bench.plan(spec) : the plan section of bench.run(spec) (lua/wb/plan.lua) without
---running anything: its commands as cases and the subprocess runs (automatic counts as min_runs)
function bench.plan(spec) end
---The cases of a bench.plan section declared as the records of the campaign c, in order.
---@param c wb.Campaign
---@param plan {name: string, cases: {name: string, argv: string[]}[], subprocess_runs: integer} bench.plan(spec)
function bench.declare(c, plan) end
---Each command's record in the campaign c: status "success", arguments, wall mean/median/min/max,
---mean user/sys time and peak RSS as metrics, and the samples the compared metrics need.
---@param c wb.Campaign
---@param summary table bench.run's summary
function bench.record(c, summary) end

---@class wb.stats
local stats = {}
---@param capacity integer?
---@param kind "float"|"integer"|nil
---@return userdata samples with :add(x), #s, s[i], :totable(), :summary(), :kind(), :scaled(k)
function stats.samples(capacity, kind) end
---@return {n: integer, min: number, max: number, mean: number, stddev: number, median: number, mad: number, q1: number, q3: number, p5: number, p95: number, sum: number}
function stats.summary(xs) end
---@return number
function stats.quantile(xs, p) end
---@return number
function stats.mean(xs) end
---@return number
function stats.stddev(xs) end
---@return number
function stats.median(xs) end
---@return number
function stats.mad(xs) end
---@return number[]
function stats.modified_z(xs) end
---@return integer[]
function stats.outliers(xs, threshold) end
---@return number lo, number hi, number estimate
function stats.bootstrap_ci(xs, ys, opts) end
---@return {u: number, p: number, z: number, exact: boolean}
function stats.mann_whitney(xs, ys) end
---@return {index: integer, before: number, after: number, ratio: number}[]
function stats.steps(series, opts) end
---A confidence sequence for the mean of xs, each in [opts.lo or 0, opts.hi or 1]: valid at every
---length of xs at once (predictable-mixture empirical Bernstein; core/stats_seq.c).
---@return number lower, number upper
function stats.confseq(xs, alpha, opts) end
---The capital of betting that the mean of xs is above m (an e-process while it is not): its
---largest value reached and its last.
---@return number best, number last
function stats.eprocess(xs, m, opts) end
---The Wilcoxon signed-rank test of paired differences ds (zeros dropped; exact up to 50) and the
---Hodges-Lehmann estimate with its distribution-free interval at opts.level (default 0.95;
---absent above 2000 differences).
---@param ds number[]|wb.Samples
---@param opts {level: number?}?
---@return {n: number, w_plus: number, p_less: number, p_greater: number, estimate: number, lower: number?, upper: number?, exact: boolean}
function stats.signed_rank(ds, opts) end
---The Hodges-Lehmann ratio ys/xs (the median over every pair) and its distribution-free interval
---at opts.level (default 0.95), the Mann-Whitney test's own; lo and hi nil when too few values
---can reach level; nil and the reason when a value of xs is not positive or #xs * #ys > 2^24.
---@param xs number[]|wb.Samples
---@param ys number[]|wb.Samples
---@param opts {level: number?}?
---@return number? estimate, number|string|nil lo, number? hi
function stats.shift_ci(xs, ys, opts) end

-- wb.tune_race ---------------------------------------------------------------------------------

---@class wb.tune_race
local tune_race = {}
---A screening race of tuning candidates (lua/wb/tune_race.lua): race:order(rand), race:add(block),
---race:alive(), race:leader(), race:cap_seconds(), race:interval(a, b), race:eliminated().
---@param spec {candidates: string[], alpha: number?, delta: number?, cap: number?}
---@return table race
function tune_race.new(spec) end
---A copy of list in a random order (Fisher-Yates with rand() in [0, 1)).
---@param list any[]
---@param rand fun(): number
---@return any[]
function tune_race.shuffled(list, rand) end

-- wb.tune: the engine of recipes/tune.lua (docs/tune.md) ----------------------------------------

---@class wb.tune
---@field DEFAULTS table the tune keys' defaults
---@field TYPES table<string, string> override types of the keys the engine reads
local tune = {}
---The keys every tune profile has, as wb.recipe's `defaults`.
---@return table
function tune.config_defaults() end
---A generator of numbers in [0, 1) that depends only on its three integers (splitmix64).
---@param seed integer
---@param stage integer
---@param index integer
---@return fun(): number
function tune.rng(seed, stage, index) end
---The profile's tune block checked (exit 2 naming the key), with defaults.
---@param cfg table
---@return table s
function tune.settings(cfg) end
---The candidates of the axes in grid order (or a seeded sample, the default always in).
---@param s table tune.settings'
---@return {name: string, params: table, axes: table, default: boolean?}[]
function tune.candidates(s) end
---The fewest blocks after which the race can eliminate one of k candidates at alpha.
---@param k integer
---@param alpha number
---@return integer
function tune.blocks_to_eliminate(k, alpha) end
---Planned runs per stage, the least screening can do, and why the plan is over budget.
---@param s table
---@param cands table[]
---@return {stages: {stage: string, runs: integer, least: integer?, note: string}[], runs: integer, over: string?, too_few_blocks: string?}
function tune.plan(s, cands) end
---The campaign: screening, finalists, headline, each block or round run by run_block(stage,
---index, order, cap) -> {[name] = {seconds, capped} | {failed}}.
---@param s table
---@param cands table[]
---@param run_block fun(stage: string, index: integer, order: string[], cap: number?): table
---@return {race: table, plan: table, winner: table, chosen: table, default: table, finalists: table[], headline: table?, ledger: table}
function tune.run(s, cands, run_block) end
---A trial record's time: its wall time net of its wait for a CPU when the record has that evidence.
---@param rec table
---@return number?
function tune.trial_seconds(rec) end
---The recommended configuration as overrides (tune.override filled, else axis=value ...).
---@param s table
---@param cand table
---@return string
function tune.override_line(s, cand) end

-- wb.sqlite: SQLite for wb's results index (core/sqlite.c) --------------------------------------

---@class wb.sqlite
---@field version string the library's version
local sqlite = {}
---Opens (creating unless readonly) a database; symlinks are refused, never written through.
---SQL errors raise; busy, I/O and permission failures return nil, message, code.
---@param path string
---@param opts {readonly: boolean?, timeout_ms: integer?}?
---@return wb.SqliteDb? db
---@return string? err
---@return integer? code
function sqlite.open(path, opts) end

---@class wb.SqliteDb
local SqliteDb = {}
---@param sql string statements without parameters or results
---@return boolean? ok
---@return string? err
function SqliteDb:exec(sql) end
---@param sql string one statement
---@return wb.SqliteStmt
function SqliteDb:prepare(sql) end
---@param sql string one statement
---@param ... any its parameters (nil and wb.null bind NULL)
---@return table[]? rows tables keyed by column name (NULL columns absent)
---@return string? err
function SqliteDb:query(sql, ...) end
---@return integer
function SqliteDb:changes() end
---@return integer
function SqliteDb:last_insert_rowid() end
function SqliteDb:close() end

---@class wb.SqliteStmt
local SqliteStmt = {}
---@param ... any the parameters
---@return table[]? rows
---@return string? err
function SqliteStmt:run(...) end
function SqliteStmt:finalize() end

-- wb.history: the results history (docs/history.md) ---------------------------------------------

---@class wb.history
---@field SCHEMA_VERSION integer
---@field DEFAULT_DB string the index's file name in the first root
---@field BATCH integer records written per transaction
local history = {}
---The history record of a run directory: commit, dirty, branch, machine {class, ...},
---config_hash, report, profiles, metrics {name, metric, unit, value, samples, evidence, ...}.
---@param dir string
---@return table? rec
---@return string? err
function history.record(dir) end
---The index at path (created when missing; one of another schema emptied).
---@param path string
---@return table? index index:update(roots), index:records(filter), index:series(filter), index:close()
---@return string? err
function history.open(path) end
---Unix seconds of "YYYY-MM-DDTHH:MM:SSZ".
---@param utc string
---@return integer?
function history.epoch_of(utc) end
---"AMD EPYC, 2 CPUs, 24 GiB[, slurm partition P]" of a record's machine.
---@param machine table
---@return string
function history.machine_class(machine) end
---The arguments of `wb history` (command "history") or `wb trend` ("trend"); exit 2 on bad ones.
---@param args string[]
---@param command string
---@return table o
function history.parse_args(args, command) end
---The real paths of the given roots (those that resolve).
---@param list string[]
---@return string[]
function history.real_roots(list) end
---The index of parse_args' o, rebuilt when asked and updated; unreadable records named on stderr.
---@param o table
---@return table index
---@return table summary
function history.updated(o) end
---"12 alerts: 3 confirmed, 8 dismissed by their re-run, ...; false alarms: ..."
---@param alerts table[]
---@return string
function history.alerts_summary(alerts) end
---`wb history ...`: the exit status.
---@param args string[]
---@return integer
function history.main(args) end

-- wb.trend: the trend dashboard (docs/history.md) ----------------------------------------------

---@class wb.trend
---@field QUANT integer the page's quantization steps per series range
---@field USAGE string
local trend = {}
---A series' history points with consecutive records of one clean commit pooled.
---@param hpoints table[] index:series points, oldest first
---@return {commit: string?, samples: number[], evidence: table?, records: table[], median: number, lo: number?, hi: number?}[]
function trend.pool(hpoints) end
---A distribution-free ~95% interval of the median (nil below 6 samples).
---@param xs number[]
---@return number? lo
---@return number? hi
function trend.median_interval(xs) end
---The dashboard's series with pooled points and their significant steps.
---@param index table wb.history.open's
---@param filter table? {recipe, name, metric, machine}
---@param opts table? {threshold, alpha, min_size, seed}
---@return table[]
function trend.series(index, filter, opts) end
---The dashboard page of trend.series' list.
---@param list table[]
---@param o {out_dir: string, title: string?, roots: string[]?, records: integer?}
---@return string html
function trend.html(list, o) end
---One step as a line of text.
---@param s table a series
---@param st table one of its steps
---@return string
function trend.step_text(s, st) end
---`wb trend ...`: the exit status.
---@param args string[]
---@return integer
function trend.main(args) end

-- wb.gate: the regression gate (recipes/gate.lua, docs/history.md) -------------------------------

---@class wb.gate
---@field BENCH_SAMPLES table<string, string> a bench record's metric -> its samples in a wb.bench summary command
local gate = {}
---The head record: the newest complete one of the filter (or the record of dir).
---@return table?
function gate.head(index, filter, dir) end
---The head against each series' current level (the comparison engine, all series together).
---@return {series: table, head: table, baseline: table?, row: wb.VerdictRow?, alert: boolean}[]
function gate.detect(list, head, opts) end
---The later fate of the alerts that stood: "fixed" (gate_fate, fixed_commit, fixed_ratio) when a
---later level of the series is back to the level before the alert.
---@param alerts table[]
---@return table[]
function gate.settle(index, alerts, opts) end
---The references file (ReFrame-style: class -> recipe -> name -> metric -> [value, lower, upper, unit]).
---@param path string
---@return table
function gate.read_references(path) end
---The reference of a series, or nil.
function gate.reference_of(refs, s) end
---Sets item.reference on each detected item; a head above it is an alert.
function gate.check_references(items, refs) end
---The samples of a wb.bench summary command that a bench record's metric is made of.
---@return number[]?
function gate.bench_samples(cmd, metric) end
---The verdict of one metric of two interleaved wb.bench commands.
---@return wb.VerdictRow?
function gate.confirm_metric(metric, base_cmd, new_cmd, opts) end
---"regression, confirmed" and the like.
---@return string
function gate.alert_text(item) end
---The gate's result as Markdown (a CI or pull-request comment).
---@return string
function gate.markdown(doc) end

-- wb.campaign ---------------------------------------------------------------------------------

---@class wb.Campaign
---@field dir string
---@field manifest table
local Campaign = {}
---@param names string[]
function Campaign:declare(names) end
---@return boolean stop true on --dry-run
function Campaign:plan(plan) end
---@param fn fun(rec: table): boolean?
---@return table record
function Campaign:run(name, fn) end
---@param spec wb.ProcSpec
---@return wb.ProcResult?, string? err
function Campaign:spawn(name, spec) end
---@return table record
function Campaign:record(name) end
---The record of a run, or nil when it was never declared (c:record declares it).
---@return table?
function Campaign:find(name) end
---@return boolean
function Campaign:is_complete(name) end
---True, with a run_skipped event, when the run already ended (resume).
---@return boolean
function Campaign:skip_ended(name) end
---Marks the run running and logs run_started (with the extra fields); the caller saves.
---@return table record
function Campaign:start_run(name, extra) end
---Stamps the run finished, saves it, then logs run_finished with its status (and the extra fields).
function Campaign:end_run(name, extra) end
function Campaign:event(name, fields, level) end
---@return string path
function Campaign:write(relpath, text) end
---@return string path
function Campaign:write_json(relpath, value) end
---The wb.compare result against the latest compatible complete run (nil when there is none, or in
---a dry run); computed once, and what c:finish() records.
---@return {rows: wb.VerdictRow[], summary: table}?
function Campaign:compare_previous() end
---"Previous compatible run: DIR." or "Previous compatible run: none (why; how to force one)."
---@return string
function Campaign:previous_text() end
---Final status ("complete", or "failed" when a run failed), the comparison with the baseline, the
---manifest written.
---@param status string?
---@return {status: string, regressions: integer, dir: string, comparison: {rows: wb.VerdictRow[], summary: table}?}
function Campaign:finish(status) end
---Gives back the disk space the campaign holds (.wb.reserve), at its end or to record a failure.
function Campaign:release() end
---{started = fn(pid), ended = fn(pid, res)} journaling a child wb starts itself (wb.capture.run's
---on_started/on_ended) as c:spawn journals its own; on --resume, a child of that name the previous
---wb saw end is announced as run again (what wb recorded of it died with wb).
---@param name string
---@return {started: fun(pid: integer), ended: fun(pid: integer, res: table)}
function Campaign:child_hooks(name) end
---Records the manifest: with names (the runs whose records alone changed), by appending them to
---manifest.journal while it is under a quarter of the manifest's size; else by rewriting
---manifest.json atomically. Both fsynced.
---@param names string[]?
function Campaign:save(names) end

---@class wb.campaign
local campaign = {}
---@param ctx wb.Context
---@param spec {inputs: string[]?, tools: string[]?, profilers: table[]?, threshold: number?}?
---@return wb.Campaign
function campaign.open(ctx, spec) end
---@return table? manifest, string? err
function campaign.read_manifest(path) end
---Folds the run records of the journal at path (manifest.journal beside the manifest, if any) into
---the manifest m: by name, the last line of each winning; a torn or foreign line is passed over.
---@param m table
---@param path string
function campaign.apply_journal(m, path) end
---campaign.read_manifest, and a shape --resume can take up; else nil and one line naming the field
---that is not (the file is not touched).
---@param path string
---@return table? manifest, string? err
function campaign.read_resumable(path) end
---A run's stdout and stderr log paths {out, err} under dir, and relative to it.
---@return string[] paths, string[] rel
function campaign.log_paths(dir, name) end
---@return string[] secrets the secret values of env followed by base (base when env is nil)
function campaign.merge_secrets(env, base) end
---@return boolean? ok, string? err
function campaign.redact_files(paths, secrets) end
---Exit status, times, peak RSS of a wb.proc result and the log paths rel into rec.
function campaign.fill_result(rec, res, rel) end
---Called by the recipe runner when a recipe raised: marks the open campaign interrupted (SIGINT,
---SIGTERM) or failed and saves its manifest, so the directory stays resumable.
function campaign.abort(err) end
---The campaign opened last in this process (wb.campaign.open), or nil.
function campaign.current() end
---campaign.point_latest(dir) : runs/latest -> dir, for run directories wb named itself under runs/
---(never for -o DIR); an existing `latest` that is not a symlink is left alone.
function campaign.point_latest(dir) end
---ok, err = campaign.redact_tree(dir [, secrets]) : every regular file under dir (up to
---REDACT_TREE_MAX_BYTES) rewritten with the secrets redacted (those without them are left
---untouched); the last pass over a run directory, so that no writer can leak one.
function campaign.redact_tree(dir, secrets) end
---secrets = campaign.secrets([cfg]) : what every file of a run directory must not contain: the
---values of secret-named environment variables and of secret-named config keys of cfg
---(util.is_secret_name, util.is_secret_key); without cfg, those of the last campaign opened (or of
---the environment alone)
function campaign.secrets(cfg) end

-- wb.capture / outputs ------------------------------------------------------------------------

---@class wb.capture
local capture = {}
---@param spec table argv, env, cwd, counters, oncpu, offcpu, freq, dir, name, method, timeout
---@return table? result, string? err
function capture.run(spec) end
---@param names string[]?
---@return {name: string, available: boolean, path: string?, version: string?, notes: string?, skipped: string?}[]
function capture.profilers(names) end
---entry = capture.profiler(name) : {name, available, path?, version?, notes}, probed once per
---process; an unknown name is an error.
function capture.profiler(name) end
---result = capture.with(name, fn) : fn(entry) when the profiler is available, else the skipped
---record {name, available = false, skipped = reason}.
function capture.with(name, fn) end

---@class wb.report
local report = {}
---@return string
function report.markdown(summary, opts) end
---@return string
function report.csv(summary) end
---@return string
function report.hyperfine_json(summary) end
---A self-contained HTML page (html.page).
---@param opts {title: string?, blocks: wb.PageFragment[]?, previous: table?}?
---@return string
function report.html(summary, opts) end
---@return string[]? paths, string? err
function report.write_all(dir, summary, opts) end
---@param rows string[][]
---@return string
function report.table(rows, opts) end
---parts = report.comparison_parts(c) : the pieces of a comparison sentence: {name, reference, kind
---= "faster"|"slower"|"same", factor = "1.85×" | nil, details = "95% CI 1.84–1.86, p = 2.1e-08"};
---for "faster" the factor and interval are reference/name so that both read as "N× faster".
function report.comparison_parts(c) end
---s = report.comparison_sentence(c, code, strong) : the comparison as one sentence; code(s) and
---strong(s) format a command name and the verdict (plain text when omitted)
function report.comparison_sentence(c, code, strong) end
---s = report.csv_field(v) : v as an RFC 4180 field (quoted when it holds , " CR or LF)
function report.csv_field(v) end
---text = report.csv_runs(summary) : one row per run: command (the command's name), run (1-based),
---wall, user, sys, maxrss_kb, exit_code.
function report.csv_runs(summary) end
---next_piece = report.csv_runs_pieces(summary) : a function returning runs.csv (see csv_runs) a few
---hundred rows at a time, then nil; what wb.fs.write takes to stream a file.
function report.csv_runs_pieces(summary) end
---t[k1][k2]... or nil when a step is missing or null.
function report.get(t, ...) end
---text = report.json(summary) : the summary as pretty JSON, keys in schema order.
function report.json(summary) end
---s = report.md_code(s) : s as a Markdown code span (fence longer than any backtick run in s)
function report.md_code(s) end
---s = report.md_text(s) : plain text with Markdown's inline markup characters escaped.
function report.md_text(s) end
---unit = report.memory_unit(kib_list) : {name = "KiB"|"MiB"|"GiB", factor}.
function report.memory_unit(values) end
---model = report.model(summary) : the summary table shared by Markdown and HTML: {columns = {{key,
---title, align}}, rows = {{name, command, cells = {key = text}, reference = bool, warnings, index,
---mean = seconds}}, unit, memory_unit, decimals, reference}.
function report.model(summary) end
---s = report.number(x) : x exactly (shortest text that reads back as x); "" for nil.
function report.number(x) end
---The names of the scan parameters of a summary's commands, in first-seen order.
function report.parameter_names(commands) end
---s = report.previous_title(result) : the heading of a comparison with the previous run.
function report.previous_title(result) end
---unit = report.time_unit(seconds_list) : {name = "µs"|"ms"|"s", factor} suited to the smallest
---positive value (the unit in which it is at least 1)
function report.time_unit(values) end

---@class wb.flame
local flame = {}
---@return string svg
function flame.svg(folded, opts) end
---@return string svg
function flame.diff_svg(base_folded, new_folded, opts) end
---The frames whose time changed beyond run-to-run noise between repeated profiles (folded texts,
---one per run): Mann–Whitney per frame, Benjamini–Hochberg; inclusive, or with self their own time.
---@param base_texts string[]
---@param new_texts string[]
---@param opts {scale: number?, alpha: number?, min: number?, self: boolean?}?
---@return {name: string, base: number, new: number, delta: number, p: number, q: number, significant: boolean, everywhere: boolean}[]
function flame.changed_frames(base_texts, new_texts, opts) end
---The frame names holding at least share (flame.SPINE, 0.95) of every run's time, a run being a
---list of {folded text, scale} (its on- and off-CPU profiles in seconds): _start, main.
---@param runs {[1]: string, [2]: number}[][]
---@param share number?
---@return table<string, boolean>
function flame.spine(runs, share) end
---Where a change between repeated profiles concentrates (on- and off-CPU as one tree): the path,
---its change and its two means, in seconds.
---@return string? path
---@return number? delta
---@return number? base
---@return number? new
function flame.culprit(base_runs, new_runs) end
---@return string json
function flame.speedscope(folded, opts) end
---@return string json
function flame.trace(events, opts) end
---@return table[]
function flame.top(folded, n) end
---stacks, total = flame.parse(folded_text) : {{frames = {root, ..., leaf}, count = N}, ...} in
---input order and the sum of the counts. Tolerant: CRLF, a UTF-8 BOM and blank lines are accepted;
---the count is the last whitespace-separated field (frame names may hold spaces); empty frames
---(";;") are dropped; lines without a non-negative integer count, without frames or with a zero
---count are skipped.
function flame.parse(text) end
---wb.trace.from_runs: a campaign's runs as complete trace events, one track per run.
function flame.trace_from_runs(runs) end
---wb.trace.from_stages: wb.clock.stages() as complete trace events.
function flame.trace_from_stages(stages, opts) end

-- files, data, time -----------------------------------------------------------------------------

---@class wb.fs
local fs = {}
---@return string? data, string? err, integer? errno
function fs.read(path) end
---@param data string|fun(): string? a string, or a function returning the next piece (nil at the end)
---@param opts {append: boolean?, atomic: boolean?, mode: integer?, sync: boolean?}?
---@return boolean? ok, string? err, integer? errno
function fs.write(path, data, opts) end
---@return boolean? ok, string? err
function fs.mkdir_p(path, mode) end
---@return boolean? ok, string? err, integer? errno EEXIST when it exists
function fs.mkdir(path, mode) end
---Makes dir a confined directory: no later write below it follows a symlink or writes in place
---a file that is not the acting user's own; refused when dir is another user's or others may
---write in it.
---@return boolean? ok, string? err "dir: why"
function fs.confine(dir) end
---@class wb.fs.Lock
---@field append fun(self: wb.fs.Lock, text: string): boolean?, string?, integer?
---@field close fun(self: wb.fs.Lock)
---@param text string what the file holds while this process has the lock
---@return wb.fs.Lock? lock, string? previous_or_err, integer? errno, string? holder
function fs.lock(path, text) end
---@return {type: string, size: integer, mtime: number, mode: integer, ino: integer, uid: integer}?, string? err
function fs.stat(path) end
---@return boolean
function fs.exists(path) end
---@return string[]
function fs.glob(pattern) end
---BLAKE2b-256 of a regular file's contents (read in pieces; no FIFO waited on, no device opened);
---nil, err, errno for anything else, and with EFBIG for a file over max_bytes (default 1 GiB)
---@param max_bytes integer?
---@return string? hex, integer|string size_or_err, integer? errno
function fs.hash(path, max_bytes) end
---@return string[]?, string? err
function fs.list(dir) end
---@param prefix string?
---@param dir string? default $TMPDIR or /tmp
---@return string?, string? err
function fs.tmpdir(prefix, dir) end
---@return boolean?, string? err
function fs.remove_tree(path) end
---The current working directory.
function fs.cwd() end
---Like wb.fs.stat, not following a final symlink.
function fs.lstat(path) end
---The target of the symlink at path; nil, err, errno when it is none.
function fs.readlink(path) end
---The absolute path with every symlink, "." and ".." resolved (realpath(3)); nil, err, errno when a
---part is missing.
function fs.realpath(path) end
---ok, err = wb.fs.remove(path) : removes a file, a symlink or an empty directory.
function fs.remove(path) end
---ok, err, errno = wb.fs.reserve(path, bytes) : path (a new or regular file of ours) holds at least
---bytes of allocated disk space (posix_fallocate), freed when it is removed.
---@param path string
---@param bytes integer
---@return boolean?, string?, integer?
function fs.reserve(path, bytes) end
---rename(2): replaces `to` atomically; nil, err, errno on failure.
function fs.rename(from, to) end
---ok, err = wb.fs.symlink(target, link) : creates or atomically replaces the symlink `link`.
function fs.symlink(target, link) end

-- wb.files: walking trees, counting lines, following growing files ------------------------------

---@class wb.files
local files = {}
---Calls fn(path, info) for every entry under dir, depth first, directories before their contents
---(info from wb.fs.lstat: symbolic links are not followed); a missing or unreadable directory is
---skipped.
---@param dir string
---@param fn fun(path: string, info: {type: string, size: integer, mtime: number, mode: integer, ino: integer})
function files.walk(dir, fn) end
---The file count and total size of the regular files under dir (0, 0 when it does not exist), as a
---JSON object.
---@param dir string
---@return {file_count: integer, total_size_bytes: integer}
function files.tree_stats(dir) end
---The number of lines of the file (a last line without its newline counts).
---@param path string
---@return integer? n, string? err
function files.count_lines(path) end
---The data lines of the files matching each glob under dir, header_lines (default 0) less per
---file; nil when no file matches.
---@param dir string
---@param globs string|string[]
---@param header_lines integer?
---@return integer?
function files.count_rows(dir, globs, header_lines) end
---Follows the files (`tail -F`: each may not exist yet, grow, or be replaced), calling
---on_line(path, line) for every line, from their beginnings, as wb.proc's loop reads them (while
---wb waits on another process), one tail per file. Returns the follower (close it to stop), or nil
---when there is nothing to follow or no `tail` (or, with the error, when a tail cannot be started).
---@param paths string[]
---@param on_line fun(path: string, line: string)
---@return {close: fun(self)}? follower one tail per file; close it (or let a <close> variable) to stop
---@return string? err
---@return integer? errno
function files.follow(paths, on_line) end

---@class wb.json
---@field null lightuserdata
local json = {}
---@return any value, string? err
function json.decode(text) end
---@param opts {pretty: boolean?, indent: integer?}?
---@return string
function json.encode(value, opts) end
---@return any value, string? err
function json.read(path) end
---Writes the encoding and a newline atomically, streaming (bounded memory).
---@param opts {pretty: boolean?, indent: integer?, sync: boolean?}?
---@return boolean? ok, string? err, integer? errno
function json.write(path, value, opts) end
---wb.array: marks t (or a new table) as an array; an empty one encodes as [].
function json.array(t) end
---t = wb.json.object([t]) : an ordered table; t's existing keys are ordered as encode sorts them,
---keys added later follow in insertion order.
function json.object(t) end

---@class wb.yaml
local yaml = {}
---@return any value, string? err
function yaml.load(text, filename) end
---@return any value, string? err
function yaml.load_file(path) end
---@return string
function yaml.dump(value) end
---@return string? file, integer? line
function yaml.location(t, key) end
---docs, err = wb.yaml.load_all(text [, filename]) : every document, as an array.
function yaml.load_all(text, filename) end

---@class wb.clock
local clock = {}
---@return integer ns
function clock.now() end
---@return number seconds since the epoch
function clock.wall() end
---@return string
function clock.utc(t, fmt) end
function clock.sleep(seconds) end
---@return {elapsed: fun(self): number, elapsed_ns: fun(self): integer, restart: fun(self): number}
function clock.timer() end
---@return any ...
function clock.stage(name, fn, ...) end
---@return table[]
function clock.stages() end
---wb.clock.reset_stages() : forgets all stages (open ones too)
function clock.reset_stages() end
---index = wb.clock.stage_begin(name) : opens a stage nested in the innermost open one.
function clock.stage_begin(name) end
---seconds = wb.clock.stage_end([name]) : closes the innermost open stage (its name must match when
---given) and returns its duration.
function clock.stage_end(name) end

---@class wb.term
local term = {}
---@return boolean
function term.isatty(stream) end
---@return string
function term.color(text, name, stream) end
---@return boolean shown
function term.progress(text) end
function term.progress_done() end
---yes = wb.term.color_enabled([stream = "stdout"]) : a TTY, TERM not dumb, NO_COLOR unset
---(WB_COLOR=always forces colour)
function term.color_enabled(stream) end
---columns = wb.term.width([stream = "stderr"]) : terminal width, 80 when not a terminal.
function term.width(stream) end

---@class wb.util
local util = {}
---@return string
function util.shell_quote(word) end
---@return string
function util.shell_join(argv) end
---@return string[]?, string? err
function util.split_words(s) end
---@return string
function util.format_seconds(x) end
---An integer with thousands separators ("1,234"); other numbers as tostring shows them.
---@return string
function util.thousands(n) end
---A byte count with its binary unit: "812 B", "12.4 KiB", "201.3 MiB", "2.10 GiB".
---@return string
function util.format_bytes(n) end
---nil for wb.null (an optional config value left unset), else v.
function util.opt(v) end
---The keys of a mapping: an ordered table's in their order, a plain table's sorted by tostring.
---@return any[]
function util.keys(t) end
---@return boolean
function util.is_list(v) end
---Up to 3 candidates close to word: those starting with it first, then by edit distance.
---@param candidates string[]
---@return string[]
function util.suggest(word, candidates) end
---The last component of path.
function util.basename(path) end
---values = util.config_secret_values(cfg) : the values (4 bytes or longer, as strings) of the
---secret-named keys anywhere in the config tree cfg, and every string inside them.
function util.config_secret_values(cfg) end
---copy = util.deep_copy(v) : tables copied recursively (metatables kept: ordered/array marks)
function util.deep_copy(v, seen) end
---yes = util.deep_equal(a, b) : same values, recursively (metatables ignored)
function util.deep_equal(a, b) end
---path without its last component ("." when there is none).
function util.dirname(path) end
---hex = util.hash(s) : FNV-1a 64-bit of s as 16 hex digits (identity, not security)
function util.hash(s) end
---yes = util.is_secret_key(name) : config keys (the last part of a dotted key) whose values must
---not reach disk.
function util.is_secret_key(name) end
---yes = util.is_secret_name(name) : environment variable names whose values must not reach disk.
function util.is_secret_name(name) end
---The path components joined with "/".
function util.join(...) end
---text = util.redact(text, values) : every occurrence of each value replaced by "[REDACTED]".
function util.redact(text, values) end
---forms = util.secret_forms(values) : each value as wb's writers may spell it (JSON, YAML, HTML,
---CSV, Markdown, shell), distinct, longest first: what redaction looks for
---@param values string[]
---@return string[]
function util.secret_forms(values) end
---list = util.redact_overrides(overrides) : a copy with the value of each override of a
---secret-named key replaced by [REDACTED], as typed
---@param overrides string[]
---@return string[]
function util.redact_overrides(overrides) end
---keys = util.redacted_keys(overrides) : the keys of the overrides util.redact_overrides left
---without their value, in order.
---@param overrides string[]
---@return string[]
function util.redacted_keys(overrides) end
---s = util.safe_name(s) : a string usable as one path component.
function util.safe_name(s) end
---values = util.secret_values([env]) : the values of secret-named variables in env (a table) or in
---wb's environment; values shorter than 4 bytes are ignored (they would redact noise)
function util.secret_values(env) end
---keys = util.sorted_keys(t)
function util.sorted_keys(t) end

---@class wb.sweep
local sweep = {}
---@return {name: string, params: table}[]
function sweep.expand(axes, opts) end
---cases = wb.sweep.from_config(sweep) : expand for a config's `sweep:` block: non-empty lists are
---axes, everything else (scalars, mappings, empty lists) is fixed. A nil or null block gives one
---case named "default".
function sweep.from_config(sweep) end

---@class wb.config
local config = {}
---@return table cfg, table info
function config.compose(args) end
---config.check_multirun(overrides [, open]) : raises (exit 2) when the product of the sweeps is
---over the limit, before any combination is made; announces a large one on stderr.
function config.check_multirun(overrides, open) end
---text = config.format_info(info) : one line per entry, "machine: local
---(profiles/machine/local.yaml)".
function config.format_info(info) end
---list = config.multirun_overrides(overrides [, open]) : nil when no override has several values
---(those in the open mappings are lists, not sweeps) (top-level commas); else the override lists of
---every combination, the first sweeping override varying slowest.
function config.multirun_overrides(overrides, open) end
---./profiles, the entries of $WB_PROFILE_PATH (or env), the profiles beside a recipe file, then
---those of the source tree or the installed set.
function config.search_path(env, recipe_path) end
---text = config.to_yaml(cfg) : the config as block YAML, keys in composition order.
function config.to_yaml(cfg) end
---where = config.where(tbl, key) : "FILE:LINE" where tbl[key] of a composed config was defined (or
---"override '...'"), or nil.
function config.where(t, k) end
---cfg2 = config.with_wb_settings(cfg, opts) : a copy of cfg with a `wb:` block (version, the
---profile search path, the run options), for `--cfg all`.
function config.with_wb_settings(cfg, opts) end

---@class wb.VerdictRow
---@field metric string
---@field kind "count"|"rate"|"time"|"memory"|"other"
---@field stat string "mean", "median" or an information-only statistic
---@field base number
---@field new number
---@field ratio number?
---@field tested boolean
---@field p number?
---@field q number? Benjamini–Hochberg adjusted, when judged with others
---@field ci_lo number?
---@field ci_hi number?
---@field verdict "regression"|"improvement"|"unchanged"|"not tested"|"changed"|"inconclusive"
---@field reason string why the row got its verdict

---@class wb.verdict
local verdict = {}
---@return "count"|"rate"|"time"|"memory"|"other"
function verdict.classify(name) end
---@return string?
function verdict.stat_of(name) end
---@return number
function verdict.min_p(na, nb) end
---@return {p: number, ci_lo: number, ci_hi: number, n_base: integer, n_new: integer, underpowered: string?}?, string?
function verdict.test(base_samples, new_samples, opts) end
---The Wilcoxon signed-rank test of the paired log ratios of two equally long lists measured side by side.
---@return {p: number, ci_lo: number?, ci_hi: number?, estimate: number, n_base: integer, n_new: integer, paired: true, underpowered: string?}?
function verdict.paired_test(base, new, alpha) end
---@return wb.VerdictRow
function verdict.compare(metric, base, new, opts) end
---@return number[]
function verdict.bh(ps) end
---@return {tested: integer, tests: integer, correction: string?, alpha: number, counts: table}
function verdict.judge(rows, opts) end
---@return string
function verdict.summary_text(info) end
---@return string
function verdict.describe(row) end
---The interference evidence of points first..last together (as verdict.steps takes them).
---@return table?
function verdict.segment_evidence(points, first, last, walls) end
---The samples of points first..last, pooled in order.
---@return number[]
function verdict.segment_samples(points, first, last) end
---Those samples net of the runs' wait for a CPU where every point carries the evidence (net true).
---@return number[], boolean
function verdict.segment_net(points, first, last) end
---The steps of a series (wb.stats.steps over the points' means, net where evidence allows), each
---judged by the engine on the samples before against those after (Benjamini–Hochberg).
---@param points {samples: number[], evidence: table?}[]
---@param opts {metric: string?, kind: string?, stat: string?, min_size: integer?, threshold: number?, alpha: number?, seed: integer?}?
---@return {index: integer, before: number, after: number, ratio: number, kind: string, row: wb.VerdictRow, significant: boolean}[]
function verdict.steps(points, opts) end
---The threshold a row is judged with: opts.threshold, or BUSY_THRESHOLD beside material other load.
---@return number
function verdict.threshold_of(row, opts) end
---The values of s (a list of numbers or wb.stats samples) as a list of finite numbers, or nil.
function verdict.values_of(s) end

---@class wb.InterferenceSide
---@field runq number mean run-queue delay per run, seconds
---@field wall number mean wall per run, seconds
---@field share number runq / wall
---@field k number mean threads runnable at once (>= 1)
---@field others number? mean CPUs' worth of other tasks' CPU use during a run
---@field scope string "tree" | "leader"
---@field cpus integer? the CPUs a run could use

---@class wb.interference
local interference = {}
---The record fields of a run's evidence: {record_field, wb.proc_result_field} pairs.
interference.RECORD_FIELDS = {}
---Writes wb.proc result res's evidence into record rec.
function interference.record(rec, res) end
---Adds a wb.bench command's per-run evidence s to a run record's samples (runq_seconds, ...).
---@return table samples
function interference.record_samples(samples, s) end
---Adds an accumulator's complete lists to a run record's samples (runq_seconds, ...).
---@return table? evidence
function interference.record_lists(samples, lists) end
---@return table lists
function interference.new_lists() end
---Appends res's evidence to lists (shift: a fixed cost subtracted from the wall samples).
function interference.add(lists, res, shift) end
---@return table? evidence
function interference.complete_lists(lists) end
---@return table? evidence
function interference.evidence(walls, runq, cpu, wall_own, others, scope, cpus) end
---@return table? evidence
function interference.from_samples(samples, wall_key) end
---@return number
function interference.parallelism(wall, cpu, runq) end
---@return number[] net wall per sample
function interference.net(walls, ev) end
---A run record's wall time net of its wait for a CPU, or its wall time without that evidence.
---@param rec table
---@return number?
function interference.record_net(rec) end
---@return wb.InterferenceSide
function interference.side(walls, ev) end
---@return {base: wb.InterferenceSide, new: wb.InterferenceSide, text: string, heavier: string?, busy: boolean, max_share: number, estimate: boolean}
function interference.load(base_side, new_side) end
---@return table
function interference.summary(walls, ev) end
---@return string
function interference.text(base_side, new_side) end

---@class wb.compare
local compare = {}
---A row's interference column text: the load each side ran under, as far as wb knows it.
---@return string
function compare.interference_text(row) end
---A row's interference evidence as the JSON object of wb.compare rows (json.null when none).
function compare.interference_object(row) end
---@return table set
function compare.load(path) end
---@return table set
function compare.from_document(doc, path) end
---The smallest change a metric resolves (a user or system time: the scheduler tick; a peak RSS:
---the kernel's per-CPU counters), its text and what it is the resolution of; nil when none.
---@param metric string
---@return number?, string?, string?
function compare.resolution(metric) end
---@return {rows: wb.VerdictRow[], summary: table}
function compare.compare(base_set, new_set, opts) end
---@param write? fun(piece: string) given: the text goes to it piece by piece and nil is returned
---@return string?
function compare.markdown(result, write) end
---@return string
function compare.html(result) end
---@return table
function compare.document(result) end
---s = compare.format_value(v, unit) : times auto-scaled (µs, ms, s), memory in B/KiB/MiB/GiB,
---anything without a unit as a plain number.
function compare.format_value(v, unit) end
---status = compare.main(args) : 0; 1 with --fail-on-regression when a metric regressed; raises exit
---2 on bad usage or input.
function compare.main(args) end
---o = compare.row_object(r) : a row as the JSON object of wb.compare documents and manifests.
function compare.row_object(r) end
---o = compare.summary_object(result) : the summary as a JSON object.
function compare.summary_object(result) end
---compare.write_document(result, write) : the document's pretty JSON (exactly
---json.encode(compare.document(result), {pretty = true})), passed to write(piece) a row at a time,
---so that a large comparison is never one string.
function compare.write_document(result, write) end

---@class wb.PythonSampler
local PythonSampler = {}
---@return {oncpu: table<string, integer>, offcpu: table<string, number>, ticks: integer, thread_samples: integer, truncated: integer, processes: table[], skipped: table[]}
function PythonSampler:stop() end

---@class wb.python
local python = {}
---@return {version: string, binary: string}?, string?
function python.probe(pid) end
---@return {tid: integer, frames: string[], truncated: boolean}[]?, string?
function python.stacks(pid) end
---@return wb.PythonSampler?, string?
function python.sampler(pid, opts) end
---@return table?
function python.layout(minor) end

---@class wb.cprofile
local cprofile = {}
---@return string?, string[]|string, string[]?
function cprofile.python_of(argv) end
---@return table
function cprofile.run(c, argv, opts) end
---@return string
function cprofile.table_text(cp, n) end

---@class wb.MemorySampler
local MemorySampler = {}
---@return {hz: number, t0: number, ticks: integer, timeline: table, peak: table, pss_partial: boolean, processes: table[]}
function MemorySampler:stop() end

---@class wb.memory
local memory = {}
---@return wb.MemorySampler?, string?
function memory.sampler(pid, opts) end
---kb = wb.memory.rss_error_kb([cpus]) : how far apart two reads of one process's RSS or peak RSS
---can be, in KiB (the kernel's per-CPU RSS counters), for a process that ran on `cpus` CPUs
---(default: all)
---@param cpus integer?
---@return integer
function memory.rss_error_kb(cpus) end

-- wb.bpf: eBPF on-CPU and off-CPU stacks -------------------------------------------------------

---@class wb.bpf
local bpf = {}
---ok, reason = wb.bpf.available() : whether a BPF capture can be tried (kernel BTF present, root or
---CAP_BPF+CAP_PERFMON), else false and why. Loading can still fail; open() says why.
function bpf.available() end
---s, err, errno = wb.bpf.open([opts]) : loads and attaches the programs. opts: freq = 99 (on-CPU
---samples per second per CPU), oncpu = true, offcpu = true, stack_entries = 16384 (stack map size),
---count_entries = 16384 (distinct stacks kept per kind), ring_mib = 0 (unwind mode: the ring buffer's
---size in MiB, a power of two; 0: sized for the sample rate), verbose = false (libbpf's messages on
---stderr), ustack = 0 (unwind mode: > 0 sends the user registers and this many bytes of user stack,
---a multiple of 8 in 512..16376, of each on-CPU sample and switch-out through a ring buffer, walked
---with CFI as s:drain() reads them), python = true (unwind mode: the Python frames of CPython 3.11+
---processes read with each record: s:read()'s records get python, gil_wait), async = false (the
---load runs on a thread: s:ready() waits for it and says whether it worked, and must say true
---before any other method is called), btf = true (the kernel types to relocate the programs against:
---true, this boot's file of wb.bpf.btf() when there is one, else the kernel's BTF; false, the
---kernel's; a path, that file; s:btf() says which served), timeline_mib = 128 (unwind mode with
---off-CPU time: the scheduling timeline kept for s:critical_path(), in MiB; 0: none). nil, "bpf:
---...", errno when BTF, privilege or the kernel refuses. s:critical_path(root [, to_ns]), after
---s:read(): the run's critical path walked back from thread root (core/critpath.h): {from, to,
---segments, segment_count, parts = {{pid, tid, kind, stack, woken_by, ns}}, oncpu = {{tid, pid,
---stack, ns}}, dropped}.
function bpf.open(opts) end
---path, why = wb.bpf.btf() : this boot's file of the kernel types the programs need (made by
---wb.bpf.make_btf()), which open() relocates them against instead of parsing all of
---/sys/kernel/btf/vmlinux; else nil and why not.
---@return string?, string?
function bpf.btf() end
---path, err = wb.bpf.make_btf() : makes that file (bpftool gen min_core_btf, once per boot; a
---failure is remembered for the boot), unless there is one; its path, or nil and why not.
---@return string?, string?
function bpf.make_btf() end

-- wb.html: HTML pages of wb.report -------------------------------------------------------------

---@class wb.html
local html = {}
---The bench report of a wb.bench summary as a page.document (write it with doc:write, or
---page.html / page.md); `blocks` (page kit fragments, e.g. page.section) come first, after the
---header; `previous` (a wb.compare result) adds the comparison with the previous run.
---@param summary table wb.bench summary
---@param opts {title: string?, blocks: wb.PageFragment[]?, previous: table?}?
---@return wb.PageDocument
function html.document(summary, opts) end
---The whole HTML document of html.document(summary, opts).
---@param summary table wb.bench summary
---@param opts {title: string?, blocks: wb.PageFragment[]?, previous: table?}?
---@return string
function html.page(summary, opts) end
---The header items of a timing's settings, for page.document's meta.
---@param settings {runs: integer?, min_runs: integer?, min_time: number?, warmup: integer?, order: string?, seed: integer?, reference: string?, shell: boolean?}
---@return wb.PageInline[] items
function html.settings_meta(settings) end
---The header items naming the host (a name or a table of facts), the time and wb's version, for
---page.document's meta; any may be nil.
---@param host string|table|nil
---@param created string? created_at_utc
---@param version string? wb's version
---@return wb.PageInline[] items
function html.host_meta(host, created, version) end
---The summary table and the wall-time distribution of timed runs, as page sections for any page;
---their statistics are computed here.
---@param runs {name: string, command: string?, samples: {wall: number[]}}[]
---@return wb.PageFragment[] blocks
function html.timings(runs) end
---groups, numeric, values = html.scan_groups(summary) : the commands of a scan grouped into series:
---commands whose command line (with the scan value replaced by {parameter}) and other parameters
---agree form one series {label, points = {{value, index}}}; numeric tells whether every value is a
---number; values are the scan's values in order.
function html.scan_groups(summary) end

-- wb.page: the page kit (one document as self-contained HTML and as Markdown) --------------------

---A piece of a page made by the page kit, placed as it is (tostring gives its HTML).
---@class wb.PageFragment
---@field html string
---@field md string

---Text (a string or number: escaped for HTML and Markdown) or a fragment.
---@alias wb.PageInline string|number|wb.PageFragment

---@class wb.PageDocument
---@field title wb.PageInline
---@field meta wb.PageInline[][]
---@field lead wb.PageInline?
---@field blocks wb.PageFragment[]
---@field footer wb.PageInline?
---@field css string?
---@field generator string?
local PageDocument = {}
---Appends a block (a fragment, or text as a paragraph); nil is ignored.
---@param block wb.PageInline?
---@return wb.PageDocument self
function PageDocument:add(block) end
---@return string html page.html(doc)
function PageDocument:html() end
---@return string markdown page.md(doc)
function PageDocument:md() end
---Writes base.html (with opts.md: base.md too) into the campaign c's run directory (c:write:
---atomic, redacted).
---@param c wb.Campaign
---@param base string path relative to the run directory, without extension
---@param opts {md: boolean?}?
---@return string[] paths
function PageDocument:write(c, base, opts) end

---@class wb.page
---@field CSS string the kit's style sheet
local page = {}
---@param v any
---@return boolean
function page.is_fragment(v) end
---tostring(v) safe in HTML/XML text and quoted attributes (& < > " ').
---@param v any
---@return string
function page.escape(v) end
---Text with Markdown's inline markup characters escaped, newlines as spaces.
---@param v any
---@return string
function page.md_text(v) end
---v as a Markdown code span (a fence longer than any backtick run in v).
---@param v any
---@return string
function page.md_code(v) end
---The Markdown table of rows of strings (rows[1] the header), columns padded and aligned.
---@param rows any[][]
---@param align ("l"|"r"|"c")[] one per column (nil entries: "l")
---@param write? fun(line: string) given: each line (with its "\n") goes to it and nil is returned
---@return string? markdown ending in "\n"
function page.md_table(rows, align, write) end
---s in a code span.
---@param s any
---@return wb.PageFragment
function page.code(s) end
---x in bold.
---@param x wb.PageInline
---@return wb.PageFragment
function page.strong(x) end
---x (default: href) linking to href.
---@param href string
---@param x wb.PageInline?
---@return wb.PageFragment
function page.link(href, x) end
---The items one after another, sep between.
---@param list wb.PageInline[]
---@param sep wb.PageInline?
---@return wb.PageFragment
function page.join(list, sep) end
---A paragraph of one or more lines; a last argument that is a plain table is the options.
---@param ... wb.PageInline|{class: string?}
---@return wb.PageFragment
function page.p(...) end
---A list of items (text or fragments).
---@param items wb.PageInline[]
---@param opts {ordered: boolean?}?
---@return wb.PageFragment
function page.list(items, opts) end
---A table, rows[1] the header; cells text or fragments; right-aligned columns get class "r".
---@param rows wb.PageInline[][]
---@param opts {align: ("l"|"r"|"c")[]?, class: string?, row_class: table<integer, string>?}?
---@return wb.PageFragment
function page.table(rows, opts) end
---A chart (wb.svg) with its caption; in Markdown the caption, linking to opts.file when given (the
---SVG written beside it).
---@param chart string SVG text
---@param caption wb.PageInline
---@param opts {file: string?, class: string?}?
---@return wb.PageFragment
function page.figure(chart, caption, opts) end
---An interactive SVG (a flame graph, with its script) embedded whole in an iframe's srcdoc, sized
---to its height; Markdown links to opts.file.
---@param doc string SVG text
---@param title string
---@param opts {file: string?}?
---@return wb.PageFragment
function page.frame(doc, title, opts) end
---Preformatted text (a log, a command's output).
---@param text any
---@return wb.PageFragment
function page.pre(text) end
---Markdown of the kind wb writes (wb.markdown), as a block.
---@param text string
---@param opts {shift: integer?}?
---@return wb.PageFragment
function page.markdown(text, opts) end
---Markup a library module made itself (for wb's own reports; a recipe builds its page from the
---other blocks).
---@param html string
---@param md string? default ""
---@return wb.PageFragment
function page.raw(html, md) end
---A titled section of blocks (fragments, or text as paragraphs).
---@param title wb.PageInline
---@param blocks wb.PageFragment|wb.PageInline[]
---@param opts {class: string?}?
---@return wb.PageFragment
function page.section(title, blocks, opts) end
---A page; each meta line is a list of items shown separated by dots; lead a paragraph under the
---title; blocks sections (page.section) or other blocks; css added to the kit's style sheet;
---generator the <meta name="generator"> content. Raises without a title.
---@param o {title: wb.PageInline, meta: wb.PageInline[][]?, lead: wb.PageInline?, blocks: wb.PageInline[]?, footer: wb.PageInline?, css: string?, generator: string?}
---@return wb.PageDocument
function page.document(o) end
---The whole HTML document.
---@param doc wb.PageDocument
---@return string
function page.html(doc) end
---The document as Markdown (title, meta lines, lead, blocks), ending in "\n".
---@param doc wb.PageDocument
---@return string
function page.md(doc) end

-- wb.markdown: the Markdown wb writes, as HTML -------------------------------------------------

---@class wb.markdown
local markdown = {}
---The Markdown wb itself writes (headings, paragraphs, lists, pipe tables, `code`, **bold**,
---escapes) as HTML; opts.shift moves headings down that many levels (default 1: # -> h2). Anything
---else is kept as escaped text.
function markdown.html(text, opts) end

-- wb.perf: perf_event counters and samplers ----------------------------------------------------

---@class wb.perf
local perf = {}
---c, err, errno = wb.perf.counters(pid [, opts]) : opens counting events on pid (and, with inherit,
---every thread and process it creates afterwards). opts: events = {names} (default task-clock,
---context-switches, cpu-migrations, page-faults, cycles, instructions, cache-misses, branch-misses;
---wb.perf.events() lists the names), enable_on_exec = true (count from pid's next exec: spawn it
---held), inherit = true. An event that cannot be opened is kept with its reason; nil, err, errno
---only when pid does not exist.
function perf.counters(pid, opts) end
---list = wb.perf.events() : {name, kind = "software"|"hardware", unit} for every known event.
function perf.events() end
---ok, reason = wb.perf.hardware() : whether hardware events can be opened here, else why.
function perf.hardware() end
---n = wb.perf.paranoid() : kernel.perf_event_paranoid (2 when unreadable)
function perf.paranoid() end
---ok = wb.perf.warm() : opens and closes a per-task event on a thread of its own, at once: the
---first per-task event of the machine waits out an RCU grace period (~10 ms); counters opened soon
---after then do not. false when no thread could be started.
---@return boolean
function perf.warm() end
---s, err, errno = wb.perf.sampler(pid [, opts]) : one event + ring per online CPU on pid and its
---descendants, enabled at pid's next exec (spawn it held). opts: freq = 99 (cpu-clock samples per
---second with user and kernel call chains), sample = true (false: only the side-band records, for
---symbolizing another sampler's stacks), pages = 64 (ring size per CPU, a power of two), unwind =
---"fp" (the kernel's frame-pointer user call chains) | "dwarf" (each sample carries the user
---registers and the top stack_size = 8192 bytes of the user stack, walked with each object's CFI as
---the rings are drained; x86-64). Without the privilege to see kernel stacks (perf_event_paranoid)
---it falls back to user space only: s.user_only. nil, "perf sampler: ...", errno when
---perf_event_open or mmap fails.
function perf.sampler(pid, opts) end

-- wb.scan: streaming scans of large logs -------------------------------------------------------

---@class wb.scan
local scan = {}
---fields = wb.scan.fields(line) : the key=value tokens of line as an ordered table {key = value (a
---string)}; a repeated key keeps its last value.
function scan.fields(line) end
---res, err, errno = wb.scan.file(path, {rules = {rule, ...} [, threads = 0] [, max_line = 64 MiB]})
---Scans the file once (gzip-compressed when it is a regular file starting with the gzip magic;
---pipes and FIFOs are read as they come). A rule: {tag = "[TAG]", name = s, word = "bare_token",
---group = "event"|"label", sum = "time"|"count"|"number"|"all", value = key | {key, ...}, collect =
---true | {group, ...}, keep = "first"|"last"} res = {bytes, lines, truncated, threads, gzip, rules
---= {[i] = r, [name] = r}} where r = {name, tag, n, keys = ordered{key = agg}, value = agg, dist =
---{n, min, median, mean, max}, line = kept segment, groups = ordered{group = {n, keys, value, dist,
---line}}, dropped_keys, dropped_groups}; agg = {sum, count, min, max}. Grouped rules carry their
---aggregates per group; group = "label" reads `[TAG] label.... 123.4ms` lines (value = the trailing
---number of the kinds `sum` selects, default "number"). nil, "path: strerror", errno when
---unreadable.
function scan.file(path, opts) end
---x, unit = wb.scan.number(s) : s parsed as a number (see core/scan.h): unit "s" with x in seconds
---for durations, "" for plain numbers (an integer when s is one), "bool" for true/false (1/0); nil
---when s is not a number.
function scan.number(s) end
---tokens = wb.scan.tokens(line) : the key=value tokens of line in order, as {{key, value}, ...};
---tokens without '=' (bare words, tags) and with an empty key are skipped; a value may hold '='.
function scan.tokens(line) end

-- wb.slurm: Slurm batch jobs -------------------------------------------------------------------

---@class wb.slurm
local slurm = {}
---ok, err = slurm.cancel(ids [, opts]) : scancel of every id (integers or "12_3" strings) in one
---call; works while an interrupt is pending (it then bypasses wb.proc). opts.stats counts it.
function slurm.cancel(ids, opts) end
---res, err, kind = slurm.command(argv [, opts]) : runs a Slurm command, capturing its output. opts:
---stats (counts calls as stats[<cmd>_calls]), retry_for (seconds to keep retrying transient
---failures, default 0), timeout (per call, default 60), cwd, env, stdin. On failure: nil, the
---command's message (stderr, verbatim but trimmed), and kind "transient" | "rejected" | "missing".
function slurm.command(argv, opts) end
---s, err = slurm.directive_quote(value) : the value of an `#SBATCH --opt=value` line as sbatch
---reads it back: bare when plain, else in double quotes with \ before " and \. A value with a line
---break cannot be written: nil, err.
function slurm.directive_quote(v) end
---list = slurm.directives(spec) : the spec's sbatch options, {{"--opt", value|nil}, ...}.
function slurm.directives(spec) end
---code, signal = slurm.exit_code("3:0") : Slurm's ExitCode field.
function slurm.exit_code(s) end
---yes = slurm.is_transient(message) : a failure worth retrying (controller restarting, timeouts)
function slurm.is_transient(msg) end
---status = slurm.job_main(args) : `wb job CASES.json [INDEX]` runs case INDEX (0-based, default
---$SLURM_ARRAY_TASK_ID) of a cases file written by the Slurm executor, measured as campaign:spawn
---measures a local run: output in <run_dir>/logs/<name>.std{out,err}.log, and
---<run_dir>/jobs/results/<name>.json with the record fields (command_arguments, return_code,
---signal, timed_out, wall_time_seconds, user_seconds, sys_seconds, maxrss_kb, logs, status).
---A case with `capture` options runs under wb.capture (result field `capture`); one with `tasks`
---is a task of an srun step (<name> is <case>.task<SLURM_PROCID>; a task that ran to its end
---before is not run again). Returns the case's exit status (128 + signal when it was killed); when the job itself is
---cancelled or over its time limit, the result records `interrupted` and the error is re-raised.
function slurm.job_main(args) end
---ok, err = slurm.protect(fn, ...) : pcall that also catches the interrupt which the signal hook
---raises again right after a wb.proc/wb.clock call was interrupted; the raw pcall, not the one
---recipes get (which passes interrupts on), since catching one to clean up is the point.
function slurm.protect(fn, ...) end
---text = slurm.render(spec) : the batch script (raises exit 2 on a bad spec)
function slurm.render(spec) end
---name = slurm.secret_var(index, NAME) : the sbatch environment variable carrying the secret NAME
---of case index (0-based) of a cases file.
function slurm.secret_var(index, name) end
---A result file's task ran to its end (its command exited or hit its own timeout) rather than
---being stopped with its job: a retry or --resume does not run it again.
---@param result table?
---@return boolean
function slurm.task_done(result) end
---s = slurm.shell_quote(word) : a word /bin/sh reads back unchanged (spaces, quotes, $, \,
---newlines) (a carriage return is written as "$(printf '\r')": sbatch refuses scripts with CR LF in
---them)
function slurm.shell_quote(s) end
---written, secret = slurm.split_env(env) : variables written into the script (a list of names) and
---the secret-named ones (name -> value) that must travel through sbatch's environment.
function slurm.split_env(env) end
---n = slurm.minutes(text) : the minutes of a Slurm time ("M", "MM:SS", "HH:MM:SS", "D-HH",
---"D-HH:MM", "D-HH:MM:SS"; seconds rounded up); nil for "infinite"/"UNLIMITED" and anything else.
---@param text string|number
---@return integer?
function slurm.minutes(text) end
---STATE = slurm.state("CANCELLED by 0") : the bare state name (sacct adds "by UID")
function slurm.state(s) end
---id, err, kind = slurm.submit(spec [, opts]) : renders and submits with sbatch --parsable. opts:
---script_path (the script is written there and submitted from it; else fed on stdin), stats,
---retry_for (default 120 s of transient failures). id is an integer; on failure nil, sbatch's
---message verbatim and the kind (see slurm.command).
function slurm.submit(spec, opts) end

-- wb.svg: SVG charts ---------------------------------------------------------------------------

---@class wb.svg
local svg = {}
---s = svg.attrs(t) : ` k="v"` pairs sorted by key; nil and false values are left out.
function svg.attrs(t) end
---s = svg.axis{orient = "bottom"|"left", scale, ticks, at, from, to [, format] [, label] [, grid]}
---: an axis line at `at` (y for bottom, x for left) spanning from..to in range coordinates, with
---ticks, labels and an optional title; grid = length of light grid lines drawn across the plot.
function svg.axis(o) end
---s = svg.bar_chart{bars, x_label [, reference] [, left_note, right_note] [, width] [, title]} :
---one horizontal bar per {label, value [, lo, hi] [, color] [, note] [, tip]}, drawn from the
---reference value (default 0) to value, with [lo, hi] as an error bar, a dashed vertical line at
---the reference, and left/right notes (e.g. "faster"/"slower") beside it.
function svg.bar_chart(o) end
---s = svg.box_plot{rows, x_label [, format] [, width] [, title] [, outlier_note]} : horizontal box
---plots on a shared axis, one row per {label, values [, color] [, q1, median, q3, mean] [, outliers
---= {[i] = true}] [, runs = {[i] = run number}] [, tip]}. Box = quartiles, thick line = median,
---diamond = mean, whiskers = the furthest values within 1.5 IQR of the box; every value is drawn as
---a vertically jittered point, the rows' `outliers` in the outlier colour.
function svg.box_plot(o) end
---b = svg.box_stats(values [, q1, median, q3]) : {q1, med, q3, wlo, whi, min, max} of a box plot;
---quartiles (R type 7) computed unless given; whiskers wlo/whi are the furthest values within 1.5
---IQR of the box (the box edge when there is none).
function svg.box_stats(values, q1, med, q3) end
---A <circle> element with the attributes of a (see svg.el).
function svg.circle(a) end
---s = svg.document{width, height, title, desc, content} : a standalone <svg> with a viewBox (scales
---to its container), an accessible <title> and optional <desc>.
function svg.document(o) end
---s = svg.el(name, attrs [, content]) : an element; content is raw markup (a string or a list of
---strings). attrs.title becomes an escaped <title> child (a hover tooltip), attrs.text escaped text
---content.
function svg.el(name, attrs, content) end
---s = svg.escape(v) : text safe inside XML content and double- or single-quoted attributes.
function svg.escape(v) end
---A <g> group of the children (markup strings) with the attributes of a.
function svg.g(a, children) end
---A <line> element with the attributes of a (see svg.el).
function svg.line(a) end
---s = svg.line_chart{series, x_label, y_label [, x_ticks] [, x_log] [, x_format, y_format] [,
---band_label] [, width, height] [, title]} : one line per {label, points = {{x, y [, lo, hi] [,
---tip]}} [, color]} with a shaded lo–hi band, markers, a y axis from 0 and a legend below. x_ticks
---defaults to the distinct x values when there are at most 12; x_log uses a log scale. A single
---series of at most twelve points has each point labelled with y_format(y) (default: four
---significant digits).
function svg.line_chart(o) end
---f = svg.linear(d0, d1, r0, r1) : maps the domain [d0, d1] linearly onto the range [r0, r1].
function svg.linear(d0, d1, r0, r1) end
---f = svg.log(d0, d1, r0, r1) : logarithmic mapping of [d0, d1] (both > 0) onto [r0, r1].
function svg.log(d0, d1, r0, r1) end
---ticks, step = svg.nice_ticks(lo, hi [, count = 5]) : evenly spaced ticks covering [lo, hi] with a
---step of 1, 2 or 5 × 10^k giving about `count` intervals; the first and last ticks bound the data
---(use them as the axis domain).
function svg.nice_ticks(lo, hi, count) end
---s = svg.num(x) : a coordinate with at most two decimals, trailing zeros dropped.
function svg.num(x) end
---A <path> element with the attributes of a (see svg.el).
function svg.path(a) end
---A <rect> element with the attributes of a (see svg.el).
function svg.rect(a) end
---label = svg.shorten(s, max) : s cut to max characters (UTF-8) with an ellipsis.
function svg.shorten(s, max) end
---s = svg.sig(v [, digits = 4]) : v with about `digits` significant digits, never in exponent form.
function svg.sig(v, digits) end
---A <text> element: a.text is its escaped content (see svg.el).
function svg.text(a) end
---s = svg.tick_format(v, step) : v with as many decimals as the tick step needs.
function svg.tick_format(v, step) end

-- wb.sym: symbols of ELF files and the kernel --------------------------------------------------

---@class wb.sym
local sym = {}
---info = wb.sym.file(path) : {build_id, symbols (functions known), symtab (true when not only
---.dynsym), debug_file?, minidebug? (the .symtab came from .gnu_debugdata), error?, unreadable?
---(true when the file could not be read, a FIFO or not ELF: error says why), frame_pointers
---= {functions, with}} — frame_pointers counts the functions (of a file with a .symtab) whose code
---starts by setting up %rbp.
function sym.file(path) end
---name, offset = wb.sym.kernel(addr) : the kernel function at addr from /proc/kallsyms, or nil
---(always nil for a reader to whom kallsyms shows zero addresses). The kernel image's symbols are
---cached per boot in ~/.cache/wb (or $XDG_CACHE_HOME/wb); other addresses are read from kallsyms.
function sym.kernel(addr) end
---n = wb.sym.load_kernel() : reads /proc/kallsyms now rather than at the first kernel lookup; the
---number of kernel functions, 0 when kallsyms shows zero addresses to this user.
function sym.load_kernel() end
---ok = wb.sym.prefetch_kernel() : starts reading /proc/kallsyms on a thread of wb's, so that the
---first kernel lookup after a run finds it read (a capture calls it as it starts); false
---when no thread could be started (the first lookup then reads it).
---@return boolean
function sym.prefetch_kernel() end
---name, offset = wb.sym.lookup(path, vaddr) : the function of an ELF file at a virtual address (as
---nm prints them), or nil.
function sym.lookup(path, vaddr) end
---s = wb.sym.new([{dwarf = false}]) : an empty symbolizer (ELF files are cached across
---symbolizers). dwarf: frames expand to their inline chains where the object has DWARF (its own or
---a separate debug file), and C++/Rust names are demangled.
function sym.new(opts) end

-- wb.trace: Chrome trace-event and speedscope files --------------------------------------------

---@class wb.trace
local trace = {}
---json_text = trace.encode(events [, {process_name}]) : a Chrome trace-event file in object form,
---{"traceEvents": [...], "displayTimeUnit": "ms"}. Each event is {name, ts, dur, pid = 1, tid = 1,
---cat = "wb", args, ph = "X"}: a complete event, ts and dur in microseconds; other ph values (e.g.
---"M" metadata) pass through with their name, pid, tid, ts and args. process_name names every pid
---the events use.
function trace.encode(events, opts) end
---events = trace.from_runs(runs) : a campaign's runs (manifest.runs, or the manifest) as complete
---events on one track per run (tid = its position; thread_name and thread_sort_index metadata name
---and order the tracks): the run from started_at_utc for wall_time_seconds (else until
---finished_at_utc), and its stage_seconds{} (or metrics.stage_seconds{}) laid end to end from the
---run's start, scaled down to fit the run when they add up to more. Times are relative to the
---earliest start; runs without a start or a duration are left out.
function trace.from_runs(runs) end
---events = trace.from_stages(stages [, {pid = 1, tid = 1, cat = "stage"}]) : wb.clock.stages() as
---complete events, times relative to the first stage's start; a stage still open lasts until now
---and has args.open = true. Nesting is kept by timing (children lie inside their parent).
function trace.from_stages(stages, opts) end
---json_text = trace.speedscope(stacks [, {name = "profile", unit = "none"}]) : a speedscope file
---(https://www.speedscope.app/file-format-schema.json) with one "sampled" profile: every frame name
---once in shared.frames, one sample per stack (frame indices root-first) weighted by its count;
---startValue 0, endValue the total. stacks = {{frames = {...}, count = N [, leaf = i, file = path,
---line = n]}, ...}: with leaf, frame i of that stack carries the source position (a frame per name
---and position).
function trace.speedscope(stacks, opts) end

-- wb.unwind: unwinding user stacks with CFI, inline chains, demangling -------------------------

---@class wb.unwind
local unwind = {}
---list = wb.unwind.cache_warnings() : the warnings about wb's cache of inflated DWARF not given yet
---({} when none): a file whose build id has a copy made from other contents.
---@return string[]
function unwind.cache_warnings() end
---name = wb.unwind.demangle(symbol) : the demangled C++ or Rust name, or nil.
function unwind.demangle(symbol) end
---u = wb.unwind.new() : an unwinder with no address spaces (objects are shared by all)
function unwind.new() end
---info = wb.unwind.object(path) : {build_id, eh_frame, debug_frame, debug_info, debug_file?,
---frame_pointers} — what the unwinder and symbolizer can use in a file.
function unwind.object(path) end
---ok = wb.unwind.prefetch(path) : starts reading the file's DWARF (inline chains, lines,
---.debug_frame) on wb's worker thread, ahead of the frames that will need it; false when the file
---cannot be loaded. Compressed debug sections are inflated once per build id into ~/.cache/wb.
---@return boolean
function unwind.prefetch(path) end
---frames = wb.unwind.symbolize(path, vaddr) : the inline chain at an ELF virtual address of the
---file, innermost first: {{name, mangled?, file?, line?, inlined}} (the last one is the function
---holding the others, inlined = false); {} without DWARF for it.
function unwind.symbolize(path, vaddr) end

-- Engines of the shipped recipes (recipes/*.lua are their policy) -------------------------------

-- wb.profile: the engine of `wb profile`

---@class wb.profile
local profile = {}
---The profiled command's streams for wb.capture.run. stdout is "tee" (the terminal and
---logs/profile.stdout.log, line by line), "inherit", "null" (or wb.null), or a file path written as
---it comes (binary-safe); stderr is teed to logs/profile.stderr.log. stdout_log is relative to the
---run directory (nil when not kept); close() closes the logs.
---@param c wb.Campaign
---@param stdout "tee"|"inherit"|"null"|lightuserdata|string
---@return {stdout: wb.Sink, stderr: fun(line: string), stdout_log: string?, close: fun()}
function profile.output(c, stdout) end
---Fills the manifest record r from the wb.capture result res: arguments, method, exit, metrics
---(times, task-clock, samples, off-CPU time, unwinding reach), the profiles written (paths relative
---to the run directory dir) or why each was skipped, warnings.
---@param r table the run's record
---@param res table wb.capture.run's result
---@param argv string[]
---@param out table profile.output's
---@param dir string the run directory
function profile.record(r, res, argv, out, dir) end
---Differential flame graphs against the baseline run the campaign found (call after c:finish),
---written as profiles/profile.<kind>.diff.svg; href is relative to the run directory.
---@param c wb.Campaign
---@param res table wb.capture.run's result
---@return {title: string, path: string, href: string}[]
function profile.differential(c, res) end
---The executor's case of the profile: the command under wb.capture with the recipe's options
---(profiles/profile.*), as cfg.tasks tasks of one srun step.
---@param cfg table
---@param argv string[]
---@param command string
---@return table case
function profile.case(cfg, argv, command) end
---What the report shows of the merged profile m of a step's tasks: a wb.capture-like result with
---the merged stacks, the first task's method and the record's exit status.
---@param m table wb.slurm_capture.merge's result
---@param rec table the run's record
---@param freq integer
---@return table res
function profile.tasks_result(m, rec, freq) end

-- wb.appprofile: the engine of recipes/profile_app_full.lua

---Timing trials of appprofile.trials: samples of the measured runs, per-stage samples in the order
---first seen.
---@class wb.AppTrials
---@field wall userdata wb.stats samples (seconds)
---@field cpu userdata wb.stats samples (seconds)
---@field rss userdata wb.stats samples (KiB)
---@field stages table<string, userdata>
---@field order string[] stage names
---@field warmup integer
---@field stage_source string? "profile_summary.json" or "stderr stage lines"

---A profile the recipe fills pass by pass.
---@class wb.AppProfile
---@field argv string[]
---@field trials wb.AppTrials
---@field capture table? wb.capture.run's result
---@field callgrind table? appprofile.callgrind's
---@field cprofile table? wb.cprofile.run's
---@field bottlenecks table? appprofile.bottlenecks'

---@class wb.appprofile
---@field SCHEMA string "wb.profile_app"
local appprofile = {}
---The command's words as strings, {run_dir} replaced.
---@param list any[]
---@param run_dir string
---@return string[]
function appprofile.argv(list, run_dir) end
---valgrind's path when both valgrind and callgrind_annotate are on PATH, else nil and what is
---missing.
---@return string? path, string? reason
function appprofile.callgrind_tools() end
---Declares the runs of campaign c (warmups, trials, then the passes chosen) and writes the plan.
---@param c wb.Campaign
---@param tool {warmup: integer, trials: integer}
---@param argv string[]
---@param passes {capture: boolean?, callgrind: boolean?, cprofile: boolean?}
---@return boolean planned true when that is all this run does (--dry-run)
function appprofile.plan(c, tool, argv, passes) end
---tool.warmup + tool.trials runs of argv (cwd, env, timeout from tool), the measured ones' wall,
---CPU, peak RSS and stages, and their summary as campaign c's record "trials". Stages come from the
---file at summary_path when the application wrote it, else from tool.stage_pattern in stderr. A
---failed run fails the campaign (exit 1).
---@param c wb.Campaign
---@param tool {warmup: integer, trials: integer, stage_pattern: string, cwd: string?, env: table<string, string>?, timeout: number?}
---@param argv string[]
---@param summary_path string?
---@return wb.AppTrials
function appprofile.trials(c, tool, argv, summary_path) end
---Campaign c's run "capture": the counters and on/off-CPU stacks tool asks for (wb.capture.run
---into profiles/app.*).
---@param c wb.Campaign
---@param tool table cwd, env, timeout, counters, oncpu, offcpu, freq
---@param argv string[]
---@param summary_path string? removed after the run
---@return table cap wb.capture.run's result
function appprofile.capture(c, tool, argv, summary_path) end
---The warm-ups, trials and (with passes.capture) the capture pass as executor cases, each run
---writing its own summary file (summary_path with the run's name before its extension).
---@param tool table
---@param argv string[]
---@param summary_path string?
---@param passes {capture: boolean?}
---@return table[] cases
function appprofile.cases(tool, argv, summary_path, passes) end
---The trials and the capture pass through executor ex (on Slurm one array job, one task at a
---time): the records and results appprofile.trials and appprofile.capture give locally.
---@param c wb.Campaign
---@param ex table wb.executor.new's
---@param tool table
---@param argv string[]
---@param summary_path string?
---@param passes {capture: boolean?}
---@return wb.AppTrials trials, table? cap
function appprofile.run_cases(c, ex, tool, argv, summary_path, passes) end
---The trials as campaign c's record "trials" (medians and samples), returned.
---@param c wb.Campaign
---@param trials wb.AppTrials
---@return wb.AppTrials
function appprofile.headline(c, trials) end
---callgrind_annotate's output: the program's total instructions (Ir) and its first limit functions.
---@param text string
---@param limit integer
---@return integer total, {name: string, instructions: integer, fraction: number}[] top
function appprofile.parse_callgrind(text, limit) end
---Campaign c's run "callgrind" (argv under valgrind --tool=callgrind, timeout opts.timeout_factor ×
---tool.timeout), read by callgrind_annotate --threshold=opts.threshold; {skipped = why} when a tool
---is missing or a step fails.
---@param c wb.Campaign
---@param tool {cwd: string?, env: table<string, string>?, timeout: number}
---@param argv string[]
---@param opts {timeout_factor: number, threshold: number, top: integer}
---@return {file: string?, total_instructions: integer?, top: table[]?, skipped: string?}
function appprofile.callgrind(c, tool, argv, opts) end
---Blocked (not run-queue) off-CPU time by the innermost user-space frame, largest first.
---@param folded_text string? folded stacks with nanosecond counts
---@return {name: string, seconds: number}[]
function appprofile.blocked_waits(folded_text) end
---The bottleneck model: stages (of the median trial) and functions and waits (of the capture, at
---most model.functions and model.waits) as fractions of the run with their Amdahl bounds; kind
---"cpu-bound" when the CPU time is at least model.cpu_bound of the wall time, else "waiting" or
---"cpu-contention"; `first`: the model.top places to look.
---@param trials wb.AppTrials
---@param cap table? wb.capture.run's result
---@param model {functions: integer, waits: integer, cpu_bound: number, top: integer}
---@return table b {wall_seconds, cpu_seconds, utilisation, stages, functions, waits, kind, verdict, first, ...}
function appprofile.bottlenecks(trials, cap, model) end
---The profile r as Markdown (summary.md): timing, the bottlenecks, then a section per pass that
---found something, and notes of what was skipped.
---@param r wb.AppProfile
---@param limits {python: integer, cprofile: integer}
---@return string
function appprofile.markdown(r, limits) end
---report.html: the summary's Markdown md, the flame graphs, and the trials' timing table.
---@param md string appprofile.markdown's
---@param r wb.AppProfile
---@return string
function appprofile.html(md, r) end
---summary.json (schema wb.profile_app v1), the folded stacks left out.
---@param r wb.AppProfile
---@return table doc
function appprofile.summary(r) end

-- wb.matrix: the engine of recipes/matrix.lua (docs/matrix.md)

---A matrix run opened by matrix.open.
---@class wb.Matrix
---@field c wb.Campaign
---@field s table matrix.settings'
---@field runs table[] matrix.runs'
---@field waves table[][] matrix.cases'
---@field root string the run directory (real path)
---@field profile string the primary config profile's name
---@field dry_run boolean? set by m:plan()
local Matrix = {}
---Writes the plan (a section per wave).
---@return boolean dry true on --dry-run
function Matrix:plan() end
---Runs the waves through the machine profile's executor (on a dry run: only what the executor
---renders, e.g. Slurm batch scripts) and, with trials, aggregates each run's trials.
function Matrix:run() end

---@class wb.matrix
---@field TYPES table<string, string> override types of the profile keys the engine reads (wb.recipe's `types`)
local matrix = {}
---The profile's matrix block (and tool.threshold, fail_on_regression), checked (bad input: exit
---2), with defaults.
---@param cfg table
---@return table s
function matrix.settings(cfg) end
---The runs in matrix order (explicit runs or the product of the axes, matrix.only applied,
---warm-ups added).
---@param s table matrix.settings'
---@return {name: string, params: table, cache: "disabled"|"cold"|"warm", group: string?, role: "run"|"warmup", wave: integer}[]
function matrix.runs(s) end
---The executor's cases, wave by wave, trials interleaved within a wave, with their outputs under
---root (template mistakes: exit 2).
---@param s table matrix.settings'
---@param runs table[] matrix.runs'
---@param root string
---@return {name: string, argv: string[], env: table<string, string>, timeout: number?, run: table, trial: integer, out: string, params: table, cache_dir: string?, event_log: string?}[][] waves
function matrix.cases(s, runs, root) end
---A run's status with the reason it failed: its error, its exit status or signal, or the first of
---its trials (in records, the manifest's runs) that failed.
---@param record table
---@param records table[]
---@return string
function matrix.status_text(record, records) end
---The n longest stages, "compute 1.20 s, load 0.31 s".
---@param stage_seconds table<string, number>?
---@param n integer
---@return string
function matrix.top_stages(stage_seconds, n) end
---A command template filled with params (nested lists dropped when one of their placeholders is
---empty); exit 2 on a mistake.
---@param template table
---@param params table
---@return string[]
function matrix.argv(template, params) end
---The recipe context's matrix checked (bad input, missing inputs: exit 2 before a run directory
---exists; with --dry-run missing inputs are only reported), the campaign opened and the records
---declared.
---@param ctx wb.Context
---@return wb.Matrix
function matrix.open(ctx) end
---Fills a record's planned fields (parameters, command and its files, directories) for case cs.
---@param rec table
---@param cs table a case of matrix.cases
---@param root string the run directory (paths are recorded relative to it)
---@param role string
function matrix.planned(rec, cs, root, role) end
---Runs the waves of cases one after another through the executor, each finished case measured.
---@param c wb.Campaign
---@param s table matrix.settings'
---@param executor table wb.executor.new's
---@param waves table[][]
---@param root string
---@param dry boolean
---@param one_at_a_time boolean? each wave's cases one after another, whatever machine.array_parallelism says
function matrix.run_waves(c, s, executor, waves, root, dry, one_at_a_time) end
---Folds a run's trial records into one record (medians; samples for comparison).
---@param c wb.Campaign
---@param run table a run of matrix.runs
---@param trial_names string[]
---@param s table matrix.settings'
---@param root string
---@param rec_name string? default the run's name
function matrix.aggregate(c, run, trial_names, s, root, rec_name) end

-- wb.matrix_confirm: --confirm for the matrix (docs/compare.md)

---@class wb.matrix_confirm
---@field MIN_TRIALS integer
---@field HASH_MAX_BYTES integer
local matrix_confirm = {}
---{argument = {size, mtime, blake2b}} for the program (on PATH) and each argument naming a regular file.
---@param argv string[]
---@return table
function matrix_confirm.identity(argv) end
---How the environment the campaign in dir recorded differs from the previous campaign's (their
---preflight.json), or nil.
---@param previous_dir string
---@param dir string
---@return string?
function matrix_confirm.environment_text(previous_dir, dir) end
---Every run behind a row wb.confirm.needs re-run, the previous side (its environment set back) and
---this one alternating in this campaign, and judged; rows get their confirmation (wb.confirm.apply).
---@param m wb.Matrix
---@param result table the comparison with the previous campaign
---@return table result
function matrix_confirm.run(m, result) end

-- wb.environ: the environment a run saw (preflight.json `environment`)

---@class wb.environ
---@field REDACTED string
local environ = {}
---{NAME = value} of this process's environment (or of text in /proc/PID/environ's form), secret
---values redacted, session variables left out.
---@param text string?
---@return table
function environ.capture(text) end
---The variables whose values differ, sorted: {name, base, now} (nil: not set).
---@param base table
---@param now table
---@return {name: string, base: string?, now: string?}[]
function environ.diff(base, now) end
---"NAME=value (not set before); OTHER a → b", or nil without a difference.
---@param diffs table[]
---@return string?
function environ.text(diffs) end
---argv run by env(1), the names in unset unset and the NAME=VALUE words of set set; nil, why
---when the program's name holds '='.
---@param argv string[]
---@param unset string[]?
---@param set string[]?
---@return string[]? argv, string? why
function environ.wrap(argv, unset, set) end
---What environ.restore sets back, "NAME unset; OTHER=value", or nil when nothing.
---@param diffs table[]
---@param keep table?
---@return string?
function environ.restore_text(diffs, keep) end
---Whether a variable can choose what code runs (PATH, LD_*, PYTHON*, ...): never set back.
---@param name string
---@return boolean
function environ.chooses_code(name) end
---argv run by env(1) with the base's values set back (names in keep left alone); nil, why when a
---base value is redacted or the program's name holds '='.
---@param argv string[]
---@param diffs table[]
---@param keep table?
---@return string[]? argv, string? why
function environ.restore(argv, diffs, keep) end

-- wb.regress: the engine of recipes/regress.lua (docs/regress.md)

---A regression hunt (regress.hunt): build and bench are argv lists of strings (build {} for none).
---@class wb.RegressHunt
---@field repo string
---@field machine string
---@field dir string the machine's results directory
---@field build string[]
---@field bench string[]
---@field runs integer
---@field warmup integer
---@field seed integer
---@field timeout number?
---@field build_timeout number?
---@field ci_level number
---@field resamples integer
---@field threshold number
---@field alpha number
---@field min_size number
---@field first_parent boolean
---@field skip_existing boolean
---@field force boolean

---A commit of regress.commits (regress.plan adds path and reuse).
---@class wb.RegressCommit
---@field sha string
---@field short string
---@field date string
---@field subject string
---@field path string? its stored result
---@field reuse table? the stored result, when it can be reused

---@class wb.regress
local regress = {}
---Each step doc calls a regression, an improvement or confounded, confirmed by its two commits built
---again side by side and benchmarked interleaved: st.confirmation and st.confirmed; doc.regressions
---then counts the confirmed regressions, doc.unconfirmed the steps not borne out.
---@param c wb.Campaign
---@param h wb.RegressHunt
---@param doc table
---@return table doc
function regress.confirm(c, h, doc) end
---Commits base and new ({sha, short}) built afresh and benchmarked interleaved: the wall-time
---confirmation, and the two wb.bench summary commands (nil when a build or the benchmark failed).
---@return table conf
---@return table? base_cmd
---@return table? new_cmd
function regress.confirm_commits(c, h, base, new) end
---The hunt o with its build and bench words as strings.
---@param o table
---@return wb.RegressHunt
function regress.hunt(o) end
---git -C repo args...: its stdout; a failing git command fails the run (exit 1) with its message.
---@param repo string
---@param ... string
---@return string
function regress.git(repo, ...) end
---The commits in commit order (rev-list --reverse of a range string, or the listed commits in their
---order); a range that selects nothing or names no commit is a usage error (exit 2).
---@param repo string
---@param range string|string[]
---@param first_parent boolean?
---@return wb.RegressCommit[]
function regress.commits(repo, range, first_parent) end
---Writes the machine's description (kernel, CPU, memory) to path unless it exists.
---@param path string
---@param name string
function regress.machine_info(path, name) end
---The run names (short shas) and the cases to measure; sets each commit's result path and, when its
---stored result can be reused, its reuse.
---@param commits wb.RegressCommit[]
---@param h wb.RegressHunt
---@return string[] names, {name: string, argv: string[]}[] todo
function regress.plan(commits, h) end
---Each planned commit as campaign c's run named by its short sha: its stored result reused, or
---measured and stored; progress on stderr.
---@param c wb.Campaign
---@param commits wb.RegressCommit[]
---@param h wb.RegressHunt
---@return integer measured, integer reused
function regress.run(c, commits, h) end
---The wb.regress v1 document of the planned commits, whose results are stored.
---@param commits wb.RegressCommit[]
---@param h wb.RegressHunt
---@param range string|string[]
---@param measured integer
---@param reused integer
---@return table doc
function regress.document(commits, h, range, measured, reused) end
---The document as Markdown: the steps, then the commits.
---@param doc table
---@return string
function regress.markdown(doc) end
---The series against commit index: means with CI error bars, fitted levels, steps, failures.
---@param doc table
---@return string svg
function regress.chart(doc) end
---The report page: steps, the chart, the commits.
---@param doc table
---@param chart_svg string
---@return string html
function regress.html(doc, chart_svg) end
---The last 10 commits (HEAD~10..HEAD), or all of them ("HEAD") in a shorter history.
---@param repo string
---@return string range
function regress.default_range(repo) end
---Where runs/ goes: run from inside the repository under test, <git dir>/wb (which no commit and
---no `git status` sees); elsewhere nil.
---@param repo string
---@return string?
function regress.runs_root(repo) end

-- wb.scaling: the engine of recipes/scaling.lua (docs/scaling.md)

---@class wb.scaling
local scaling = {}
---The CPUs this process may use: nproc (CPU affinity), capped by a cgroup v2 CPU quota.
---@return integer
function scaling.cpu_count() end
---The 1-minute load average, or nil.
---@return number?
function scaling.load_average() end
---The configuration checked (bad input: exit 2); the worker counts sorted.
---@param cfg {mode: "strong"|"weak", workers: integer[], size: integer, runs: integer, command: string[]}
---@return integer[] workers
function scaling.check(cfg) end
---One wb.bench command per worker count and its problem size (weak: size × p / p0).
---@param cfg table
---@param workers integer[]
---@return {name: string, argv: string[]}[] commands, integer[] sizes
function scaling.commands(cfg, workers) end
---The wb.scaling v1 document of the measured points.
---@param cfg table
---@param workers integer[]
---@param sizes integer[]
---@param summary table wb.bench summary
---@param opts {ci_level: number?, resamples: integer?}? defaults 0.95, 2000
---@return table doc
function scaling.document(cfg, workers, sizes, summary, opts) end
---The reports: md the scaling.md text, html the bench report of summary with the scaling sections
---first, and the two charts.
---@param cfg table
---@param doc table scaling.document's
---@param summary table wb.bench summary
---@return {md: string, html: string, speedup_svg: string, efficiency_svg: string}
function scaling.report(cfg, doc, summary) end

-- wb.vep: the VEP profile reader of recipes/vep_breakdown.lua (docs/vep_breakdown.md)

---@class wb.vep
---@field RULES table[] the wb.scan rules of a capture
local vep = {}
---The breakdown of one capture (json-ready, schema wb.vep_breakdown v1).
---@param path string
---@param threads integer? wb.scan.file's threads
---@return table? b, string? err
function vep.analyse(path, threads) end
---Fills b.reading: the interpretation rules as sentences with the numbers in.
---@param b table vep.analyse's
---@param cfg {bound_ratio: number, top: integer, wall: "auto"|"annotate"|"command"}
---@param command_wall number? the measured command's wall seconds
function vep.read(b, cfg, command_wall) end
---What of a capture could not be read, one sentence each ({} when all of it was).
---@param b table
---@return string[]
function vep.incomplete(b) end
---The breakdown as Markdown.
---@param b table
---@param title string
---@return string
function vep.markdown(b, title) end
---The reading as Markdown, after the command line, exit and wall time.
---@param b table read (vep.read)
---@param command table? vep.run_command's record
---@return string
function vep.summary(b, command) end
---Two read breakdowns side by side (wb.vep_compare v1) and as Markdown.
---@param a table
---@param b table
---@return table c, string md
function vep.compare(a, b) end
---Runs argv as campaign c's run "command" with env set, its stderr to logs/command.stderr.log (the
---capture, at path log); command is its json-ready record. A command that cannot start fails the
---run (exit 1).
---@param c wb.Campaign
---@param argv string[]
---@param env table<string, string>?
---@param timeout number?
---@return {argv: string[], exit_code: integer|lightuserdata, signal: integer|lightuserdata, timed_out: boolean, wall_seconds: number, stderr_log: string} command, string log
function vep.run_command(c, argv, env, timeout) end
---A breakdown's headline figures, for its manifest record.
---@param b table
---@return table metrics
function vep.metrics(b) end


-- wb.baseline: a campaign's previous-run baseline, or why there is none

---@class wb.baseline
local baseline = {}
---The baseline of the run in dir: explicit (--baseline: a manifest or a run directory) or the latest
---complete, non-dry run of the same recipe and compatibility scope beside dir; without one nil, nil,
---why (a sentence) and the nearest run passed over.
---@param dir string
---@param manifest table
---@param explicit string?
---@param read_manifest fun(path: string): table?, string?
---@return table? base, string? path, string? why, string? nearest
function baseline.find(dir, manifest, explicit, read_manifest) end
---What made run other_dir (its manifest other) incompatible with this run, in words.
---@param other table
---@param other_dir string
---@param manifest table
---@param dir string
---@return string
function baseline.incompatibility(other, other_dir, manifest, dir) end
---The run directory's preflight.json, or nil.
---@param dir string
---@return table?
function baseline.preflight(dir) end

-- wb.confirm: a comparison's changes confirmed by an interleaved re-run

---@class wb.confirm
local confirm = {}
---Every row of the wb.compare result whose verdict is in confirm.TO_CONFIRM, confirmed by a re-run of
---its record's two commands (from the wb.bench summaries base_doc and new_doc), base and new
---interleaved in one wb.bench run: row.confirmation {verdict, reason, ratio}; result.confirmed, and
---the summary's regressions and improvements count the confirmed ones (unconfirmed: the others).
---@param result table
---@param base_doc table
---@param new_doc table
---@param opts {runs: integer?, warmup: integer?, seed: integer?, timeout: number?}?
---@return table result
function confirm.run(result, base_doc, new_doc, opts) end
---Whether a comparison row is re-run: its verdict is in TO_CONFIRM, or it is a time whose sides
---ran under materially different load.
---@param row table
---@return boolean
function confirm.needs(row) end
---Each row that needs it confirmed by reruns[its record]: the re-run's rows by name, or why there
---is none (as confirm.run).
---@param result table
---@param reruns table<string, table|string>
---@return table result
function confirm.apply(result, reruns) end
---A row's confirmation as the report's column shows it ("" without one).
---@param r table
---@return string
function confirm.text(r) end

return wb

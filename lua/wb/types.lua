---@meta
-- LuaLS annotations for recipe authors (not compiled into wb). Point the Lua language server at
-- this directory (`Lua.workspace.library = { "<wb>/lua" }`) for completion and signatures.

---@class wb.Context
---@field cfg table composed, interpolated config
---@field args string[] positional arguments
---@field opts wb.RunOptions
---@field name string recipe name
---@field path string recipe file

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
---@field compare wb.compare
---@field python wb.python
---@field memory wb.memory
---@field cprofile wb.cprofile
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

-- wb.proc -------------------------------------------------------------------------------------

---@alias wb.Sink "inherit"|"null"|"capture"|"stdout"|{file: string, append: boolean?}|{tee: string, append: boolean?}|fun(line: string)

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
---@field maxrss_kb integer
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

---@class wb.bench
local bench = {}
---@param spec wb.BenchSpec
---@return table summary wb.bench summary (schema_name "wb.bench")
function bench.run(spec) end

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
---@return boolean
function Campaign:is_complete(name) end
---True, with a run_skipped event, when the run already ended (resume).
---@return boolean
function Campaign:skip_ended(name) end
---Marks the run running and logs run_started (with the extra fields); the caller saves.
---@return table record
function Campaign:start_run(name, extra) end
---Stamps the run finished and logs run_finished with its status (and the extra fields); the caller saves.
function Campaign:end_run(name, extra) end
function Campaign:event(name, fields, level) end
---@return string path
function Campaign:write(relpath, text) end
---@return string path
function Campaign:write_json(relpath, value) end
---@return {status: string, regressions: integer, dir: string}
function Campaign:finish(status) end

---@class wb.campaign
local campaign = {}
---@param ctx wb.Context
---@param spec {inputs: string[]?, tools: string[]?, profilers: table[]?, threshold: number?}?
---@return wb.Campaign
function campaign.open(ctx, spec) end
---@return table? manifest, string? err
function campaign.read_manifest(path) end
---A run's stdout and stderr log paths {out, err} under dir, and relative to it.
---@return string[] paths, string[] rel
function campaign.log_paths(dir, name) end
---@return string[] secrets the secret values of env followed by base (base when env is nil)
function campaign.merge_secrets(env, base) end
---@return boolean? ok, string? err
function campaign.redact_files(paths, secrets) end
---Exit status, times, peak RSS of a wb.proc result and the log paths rel into rec.
function campaign.fill_result(rec, res, rel) end

-- wb.capture / outputs ------------------------------------------------------------------------

---@class wb.capture
local capture = {}
---@param spec table argv, env, cwd, counters, oncpu, offcpu, freq, dir, name, method, timeout
---@return table? result, string? err
function capture.run(spec) end
---@param names string[]?
---@return {name: string, available: boolean, path: string?, version: string?, notes: string?, skipped: string?}[]
function capture.profilers(names) end

---@class wb.report
local report = {}
---@return string
function report.markdown(summary, opts) end
---@return string
function report.csv(summary) end
---@return string
function report.hyperfine_json(summary) end
---@param opts {title: string?, sections: string[]?}?
---@return string
function report.html(summary, opts) end
---@return string[]? paths, string? err
function report.write_all(dir, summary, opts) end
---@param rows string[][]
---@return string
function report.table(rows, opts) end

---@class wb.flame
local flame = {}
---@return string svg
function flame.svg(folded, opts) end
---@return string svg
function flame.diff_svg(base_folded, new_folded, opts) end
---@return string json
function flame.speedscope(folded, opts) end
---@return string json
function flame.trace(events, opts) end
---@return table[]
function flame.top(folded, n) end

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
---@class wb.fs.Lock
---@field append fun(self: wb.fs.Lock, text: string): boolean?, string?, integer?
---@field close fun(self: wb.fs.Lock)
---@param text string what the file holds while this process has the lock
---@return wb.fs.Lock? lock, string? previous_or_err, integer? errno, string? holder
function fs.lock(path, text) end
---@return {type: string, size: integer, mtime: number, mode: integer, ino: integer}?, string? err
function fs.stat(path) end
---@return boolean
function fs.exists(path) end
---@return string[]
function fs.glob(pattern) end
---@return string[]?, string? err
function fs.list(dir) end
---@param prefix string?
---@param dir string? default $TMPDIR or /tmp
---@return string?, string? err
function fs.tmpdir(prefix, dir) end
---@return boolean?, string? err
function fs.remove_tree(path) end

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

---@class wb.term
local term = {}
---@return boolean
function term.isatty(stream) end
---@return string
function term.color(text, name, stream) end
---@return boolean shown
function term.progress(text) end
function term.progress_done() end

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

---@class wb.sweep
local sweep = {}
---@return {name: string, params: table}[]
function sweep.expand(axes, opts) end

---@class wb.config
local config = {}
---@return table cfg, table info
function config.compose(args) end

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

---@class wb.compare
local compare = {}
---@return table set
function compare.load(path) end
---@return table set
function compare.from_document(doc, path) end
---@return {rows: wb.VerdictRow[], summary: table}
function compare.compare(base_set, new_set, opts) end
---@return string
function compare.markdown(result) end
---@return string
function compare.html(result) end
---@return table
function compare.document(result) end

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

return wb

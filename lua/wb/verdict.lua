-- The comparison engine: one rule for every "did it get faster?" answer wb gives (a campaign's
-- previous-run comparison, `wb compare` on any pair of inputs, wb bench's reference comparison,
-- wb regress's steps).
--
-- Metrics are classed by name (verdict.classify): exact metrics (row counts, sizes in bytes: any
-- change is flagged), time (seconds, wall, user, sys, ...), rates (throughput, mb_s, qps, ...:
-- higher is better), memory (rss, heap, allocations) and other numbers (reported, never a
-- verdict).
--
-- A time, rate or memory metric gets a verdict only when it is *tested*: both sides carry
-- repeated samples, enough of them that the rank test can reach the significance level. A tested
-- change is a regression or an improvement only when the ratio is beyond the threshold (default
-- 2%), the Mann–Whitney p-value (after the Benjamini–Hochberg correction when several metrics
-- are judged together) is below alpha (0.05), and the 95% bootstrap CI of the ratio lies wholly
-- beyond the threshold on the same side (a minimum-effect test: two runs of the same work differ
-- by small systematic amounts, machine load and caches, that no within-run test can see). Every other row is shown with its ratio and marked "not tested": no
-- verdict, not counted. Summary statistics (min, max, stddev) are information only.
--
-- A wall-time row whose two sides carry interference evidence (wb.interference: each sample's
-- run-queue delay, CPU time and own wall) is tested on its *net* wall samples, the wall time
-- less the wait for a CPU, and its raw wall test is kept beside: a raw change that the net
-- samples do not show is "interference" (not code: shown with the evidence, never counted as a
-- regression or an improvement); a net change under a different load on the two sides, where the
-- net figure is only an estimate (several threads runnable at once, or only the leader's delay
-- known) and the CPU time does not agree, is "confounded" (not counted; --confirm or a quieter
-- machine gives the answer).
local M = {}

M.DEFAULT_THRESHOLD = 0.02
-- How much co-running work can inflate a run's CPU time (shared caches, memory bandwidth, SMT
-- siblings), as a share of it: a change of CPU time or net wall in the direction of the load
-- difference no larger than this is no verdict. Measured here beside two CPU hogs on 2 CPUs: 0–1% for a
-- register-bound loop, 4–12% for CPython's start-up, 41% for xz -6 with other jobs running too.
M.LOAD_INFLATION = 0.5
M.ALPHA = 0.05
M.CI_LEVEL = 0.95
M.RESAMPLES = 2000
M.CORRECTION = "Benjamini–Hochberg"
-- The resolution of a process's user and system times: the kernel samples which of the two a
-- process is in at the scheduler tick (1/HZ: 4 ms at HZ=250, the usual distribution kernels'
-- setting; only their sum is exact), so a change of either smaller than one tick is no verdict.
M.CPU_SPLIT_RESOLUTION = 0.004

-- Statistics that describe a distribution but are no estimate to test.
local INFO_STATS = { min = true, max = true, stddev = true, std = true, mad = true }
M.INFO_STATS = INFO_STATS

-- kind = verdict.classify(metric_name) : "count" | "rate" | "time" | "memory" | "other"
-- ("count" is every exact metric: row and file counts, sizes in bytes of outputs, files and
-- binaries; "memory" is what a process holds: RSS, heap, allocations, swap)
function M.classify(name)
  local n = name:lower()
  if n:find("row_count") or n:find("rows$") or n:find("_count$") or n:find("^count") or
      n:find("file_count") then
    return "count"
  end
  if n:find("throughput") or n:find("bandwidth") or n:find("per_s") or n:find("_ps$") or
      n:find("[kmgt]i?b_s$") or n:find("speed") or n:find("[iqr]ps$") then
    return "rate"
  end
  if n:find("rss") or n:find("memory") or n:find("heap") or n:find("alloc") or n:find("resident") or
      n:find("swap") or n:find("_kb$") or n:find("_mb$") then
    return "memory"
  end
  if n:find("bytes") then return "count" end
  if n:find("second") or n:find("_s$") or n:find("_ms$") or n:find("_ns$") or n:find("time") or
      n:find("wall") or n:find("^user") or n:find("^sys") or n:find("latency") or
      n:find("duration") or n:find("mean") or n:find("median") then
    return "time"
  end
  return "other"
end

-- stat = verdict.stat_of(metric_name) : "median", "mean", or the information-only statistic
-- ("min", "max", "stddev", ...) a name's last word states; nil when it states none
function M.stat_of(name)
  local last
  for word in name:lower():gmatch("[%a%d]+") do
    if word == "mean" or word == "median" or INFO_STATS[word] then last = word end
  end
  return last
end

-- The values of s (a list of numbers or wb.stats samples) as a list of finite numbers, or nil.
local function values_of(s)
  if type(s) == "userdata" and s.totable then s = s:totable() end
  if type(s) ~= "table" or #s == 0 then return nil end
  for _, x in ipairs(s) do
    if type(x) ~= "number" or x ~= x or x == math.huge or x == -math.huge then return nil end
  end
  return s
end
M.values_of = values_of

-- p = verdict.min_p(na, nb) : the smallest two-sided p the exact rank test can give with na and
-- nb samples, 2 / C(na + nb, na)
function M.min_p(na, nb)
  local ways = 1
  for i = 1, na do ways = ways * (nb + i) / i end
  return math.min(1, 2 / ways)
end

-- The metrics that are exact counts: the same work gives the same number, run after run.
M.EXACT = { ["alloc_bytes mean"] = true, alloc_bytes = true }

-- From this many pairs up, the signed-rank test's 95% interval is bounded by Walsh averages
-- beyond the n that one odd pair (a run an outside job held up) takes part in; below it, the
-- unpaired rank test is the more robust.
M.PAIRED_MIN = 12

-- t = verdict.paired_test(b, n, alpha) : the Wilcoxon signed-rank test of the paired log ratios
-- log(n[k] / b[k]) of two equally long lists whose k-th values were measured side by side (one
-- round of an interleaved run): {p (two-sided), ci_lo, ci_hi (the interval of the Hodges–Lehmann
-- ratio, exp of the Walsh averages' bounds), estimate, n_base, n_new, paired = true,
-- underpowered}; nil where a value is not positive (no log ratio). A load that comes and goes
-- during the run moves both values of a pair alike, so it cancels here, where it widens the
-- unpaired rank test's interval (a planted 10% beside busy loops for half of 20 rounds).
-- Also nil below PAIRED_MIN pairs, or where more than a tenth of the pairs are equal (a quantized
-- measure such as a CPU time in clock ticks: the test drops them, and its ratio would be that of
-- the pairs that differ).
function M.paired_test(b, n, alpha)
  if #b < M.PAIRED_MIN or #b ~= #n then return nil end
  local ds, zeros = {}, 0
  for k = 1, #b do
    if not (b[k] > 0 and n[k] > 0) then return nil end
    ds[k] = math.log(n[k] / b[k])
    if ds[k] == 0 then zeros = zeros + 1 end
  end
  if zeros > #b / 10 then return nil end
  local r = require("wb.stats").signed_rank(ds, { level = M.CI_LEVEL })
  local t = { p = math.min(1, 2 * math.min(r.p_less, r.p_greater)), estimate = math.exp(r.estimate),
    ci_lo = r.lower and math.exp(r.lower), ci_hi = r.upper and math.exp(r.upper), n_base = #b, n_new = #n,
    paired = true }
  if r.n == 0 then -- every pair the same: no change, and nothing for an interval to span
    t.ci_lo, t.ci_hi = 1, 1
  elseif 2 * 0.5 ^ r.n >= alpha then
    t.underpowered = string.format("%d paired runs cannot reach p < %g", r.n, alpha)
  elseif not t.ci_lo then
    t.underpowered = string.format("%d paired runs give the signed-rank test no %g%% interval", r.n, M.CI_LEVEL * 100)
  end
  return t
end

-- t, why = verdict.test(base_samples, new_samples [, {stat, shift, paired, seed, resamples, alpha, exact}]) :
-- {p, ci_lo, ci_hi, n_base, n_new, underpowered, estimate} (the CI is of new/base of stat, "mean"
-- or "median" (bootstrap); with shift, of the Hodges–Lehmann ratio, estimate, the interval of the
-- rank test itself (wb.stats.shift_ci: it excludes 1 when the test rejects at the 5% level, no
-- ties), or, where it has no ratio (a base value not positive), stat's bootstrap; underpowered: the reason when so few samples cannot reach p < alpha, whatever the
-- change; exact (with opts.exact, an exact count): every sample of each side the same, p = 0 when
-- the sides differ (1 when not) and the CI the ratio itself); with paired (the k-th samples of the
-- two sides measured side by side) and equal counts, verdict.paired_test's instead; nil and the
-- reason when there is nothing to test
function M.test(base_samples, new_samples, opts)
  opts = opts or {}
  local alpha = opts.alpha or M.ALPHA
  local b, n = values_of(base_samples), values_of(new_samples)
  if not b or not n or #b < 2 or #n < 2 then
    local side = (not b or #b < 2) and ((not n or #n < 2) and "either side" or "the base") or "the new side"
    return nil, "no repeated samples on " .. side
  end
  -- an exact count (opts.exact: bytes allocated) with no run-to-run variation on either side: a
  -- difference is no sampling accident, whatever the runs' number (a quantized measurement that
  -- repeats by chance, such as a CPU time in 4 ms ticks, is not one)
  local function constant(xs)
    for i = 2, #xs do
      if xs[i] ~= xs[1] then return false end
    end
    return true
  end
  if opts.exact and constant(b) and constant(n) and b[1] ~= 0 then
    local r = n[1] / b[1]
    return { p = b[1] == n[1] and 1 or 0, ci_lo = r, ci_hi = r, n_base = #b, n_new = #n, exact = true }
  end
  local stats = require "wb.stats"
  local paired = opts.paired and M.paired_test(b, n, alpha)
  if paired then return paired end
  local mw = stats.mann_whitney(b, n)
  local lo, hi, estimate
  if opts.shift then
    estimate, lo, hi = stats.shift_ci(b, n, { level = M.CI_LEVEL }) -- no lo, hi: underpowered below
  end
  if not estimate then
    lo, hi = stats.bootstrap_ci(b, n, { stat = opts.stat == "median" and "ratio_median" or "ratio_mean",
      level = M.CI_LEVEL, resamples = opts.resamples or M.RESAMPLES, seed = opts.seed or 1 })
  end
  local t = { p = mw.p, ci_lo = lo, ci_hi = hi, n_base = #b, n_new = #n, estimate = estimate }
  if M.min_p(#b, #n) >= alpha then
    t.underpowered = string.format("%d vs %d runs cannot reach p < %g", #b, #n, alpha)
  elseif estimate and not lo then -- an alpha above 1 - CI_LEVEL: the test can reject, its interval not
    t.underpowered = string.format("%d vs %d runs give the rank test no %g%% interval", #b, #n, M.CI_LEVEL * 100)
  end
  return t
end

local ESTIMATE_TEXT = { hodges_lehmann = " (Hodges–Lehmann)", paired = " (paired runs, Hodges–Lehmann)" }

local function ratio_text(row)
  if row.ratio == nil then return nil end
  return M.describe(row) .. (ESTIMATE_TEXT[row.estimate] or "")
end

local function g2(x) return string.format("%.2g", x) end

local function ci_text(row)
  local lo, hi = row.ci_lo, row.ci_hi
  if lo == nil or lo ~= lo or hi ~= hi or math.abs(lo) == math.huge or math.abs(hi) == math.huge then return nil end
  if row.ratio and row.ratio < 1 and lo > 0 then lo, hi = 1 / hi, 1 / lo end
  return string.format("CI %.2f–%.2f×", lo, hi)
end

-- The smallest estimated change a time row calls a verdict when a side ran beside material other
-- load (its CI must still clear the plain threshold): after the wait for a CPU is taken out, runs
-- of the same work on a busy machine still differ between campaigns by more than on a quiet one
-- (the same `sleep 0.02` beside two hogs: 1.02×, CI 1.02–1.03×, net of its wait, campaign to
-- campaign), while a planted 10% measured beside them read 1.06×, CI 1.02–1.12×.
M.BUSY_THRESHOLD = 0.05

-- threshold = verdict.threshold_of(row, opts) : the threshold a row's estimate must clear:
-- opts.threshold (default 2%), or BUSY_THRESHOLD when larger and the row's sides ran beside
-- material other load (row.load.busy)
function M.threshold_of(row, opts)
  local threshold = opts.threshold or M.DEFAULT_THRESHOLD
  if row.load and row.load.busy and row.kind == "time" then threshold = math.max(threshold, M.BUSY_THRESHOLD) end
  return threshold
end

local weigh_interference -- below

-- " of a busy machine" when the busy threshold applies, else ""
local function busy_words(row, opts)
  local base = opts.threshold or M.DEFAULT_THRESHOLD
  return M.threshold_of(row, opts) > base and " of a busy machine" or ""
end

-- Sets row.verdict, row.reason (and row.significant) from the row's ratio, test and q-value.
local function decide(row, opts)
  -- the estimate must clear the (busy) threshold, its CI the plain one
  local threshold, ci_threshold = M.threshold_of(row, opts), opts.threshold or M.DEFAULT_THRESHOLD
  local alpha = opts.alpha or M.ALPHA
  local change = ratio_text(row)
  local function say(verdict, why, whole) -- whole: why is the whole reason
    row.verdict = verdict
    row.reason = (not whole and change) and (change .. (why and (": " .. why) or "")) or why or verdict
  end
  if row.verdict == "inconclusive" then return end
  if row.kind == "count" then
    if row.new == row.base then say("unchanged", "exact metric") else say("regression", "exact metric changed") end
    return
  end
  if row.kind == "other" then
    say(row.new == row.base and "unchanged" or "changed", "no verdict for this kind of metric")
    return
  end
  if row.info then
    say("not tested", row.info .. ": information only")
    return
  end
  if not row.tested then
    say("not tested", (row.p and ("p = " .. g2(row.p) .. ", but ") or "") .. (row.untested or "no samples"))
    return
  end
  local q = row.q or row.p
  local ptext = row.exact and string.format("exact: each side's %d and %d runs measured the same", row.n_base, row.n_new)
    or "p = " .. g2(row.p) .. ((row.q and row.q ~= row.p) and (", q = " .. g2(row.q)) or "")
  local ci = ci_text(row)
  local stated = ptext .. (ci and (", " .. ci) or "")
  row.reason_core = stated
  local up, down = row.ratio >= 1 + threshold, row.ratio <= 1 - threshold
  if (up or down) and row.resolution and math.abs(row.delta) < row.resolution then
    row.significant = nil
    say("unchanged", string.format("%s, but the change is below the %s resolution of %s", ptext,
      row.resolution_text or require("wb.util").format_seconds(row.resolution), row.resolution_of or "this measurement"))
    return
  end
  local worse, better = up, down
  if row.kind == "rate" then worse, better = down, up end
  -- a minimum-effect test: the whole CI must lie beyond the threshold, not only beyond 1, so
  -- that a change is a verdict only when it is, with 95% confidence, larger than the threshold
  local clear = (up and row.ci_lo >= 1 + ci_threshold) or (down and row.ci_hi <= 1 - ci_threshold)
  row.significant = q < alpha and clear
  if not worse and not better then
    row.significant = nil
    say("unchanged", string.format("%s, within the %g%% threshold%s", ptext, threshold * 100, busy_words(row, opts)))
  elseif not row.significant then
    local why
    if q >= alpha then
      why = row.q and row.q ~= row.p and string.format("%s after %s: not significant", ptext, M.CORRECTION)
          or ptext .. ": not significant"
    elseif (up and row.ci_lo <= 1) or (down and row.ci_hi >= 1) then
      why = string.format("%s, but %s includes 1: not significant", ptext, ci or "the CI")
    else
      why = string.format("%s, but %s is not wholly beyond the %g%% threshold: not significant", ptext,
        ci or "the CI", ci_threshold * 100)
    end
    say("unchanged", why)
  else
    say(worse and "regression" or "improvement", stated .. ": " .. (worse and "regression" or "improvement")
      .. (row.share and ("; " .. row.share) or ""))
  end
  -- sides whose runs alternated in one run ran under the same load: nothing to weigh
  if row.load and row.kind == "time" and not opts.interleaved then weigh_interference(row, opts, say) end
end

local function stat_value(xs, stat)
  local stats = require "wb.stats"
  return stat == "median" and stats.median(xs) or stats.mean(xs)
end

-- Prepares row for a test on net wall samples when both sides carry evidence for every sample
-- (opts.base_evidence, opts.new_evidence: wb.interference.evidence); returns {net_base,
-- net_new} or nil. row.raw gets the raw wall test, row.load the sides' evidence in brief.
local function with_evidence(row, opts)
  local itf = require "wb.interference"
  local bs, ns = values_of(opts.base_samples), values_of(opts.new_samples)
  local be, ne = opts.base_evidence, opts.new_evidence
  if not bs or not ns or not be or not ne or #be.runq ~= #bs or #ne.runq ~= #ns then return nil end
  local raw = M.test(bs, ns, { stat = row.stat, seed = opts.seed, resamples = opts.resamples, alpha = opts.alpha })
  if not raw then return nil end
  local net_b, net_n = itf.net(bs, be), itf.net(ns, ne)
  raw.ratio = row.ratio
  row.raw = raw
  row.load = itf.load(itf.side(bs, be), itf.side(ns, ne))
  local nb, nn = stat_value(net_b, row.stat), stat_value(net_n, row.stat)
  row.net_base, row.net_new = nb, nn
  row.ratio = nb ~= 0 and nn / nb or row.ratio
  return { net_base = net_b, net_new = net_n }
end

-- Whether test t (with ratio) shows a change beyond the threshold at level alpha: "up", "down"
-- or nil.
local function clear_change(t, threshold, alpha)
  if not t or not t.ratio or t.underpowered or t.p >= alpha then return nil end
  if t.ratio >= 1 + threshold and t.ci_lo >= 1 + threshold then return "up" end
  if t.ratio <= 1 - threshold and t.ci_hi <= 1 - threshold then return "down" end
  return nil
end

-- After a time row was decided, with the load its two sides ran under (row.load,
-- wb.interference.load): a net-wall row whose raw wall alone changed is "interference"; a
-- regression or improvement in the direction the load difference pushes, no larger than that
-- difference can account for, is "confounded"; one against it stands (the load hid part of it).
function weigh_interference(row, opts, say)
  local load = row.load
  local threshold = M.threshold_of(row, opts)
  local alpha = opts.alpha or M.ALPHA
  if row.raw and row.verdict == "unchanged" then
    if clear_change(row.raw, threshold, alpha) then
      row.significant = nil
      say("interference", string.format("wall %s (p = %s), but net of run-queue delay %s (%s): interference, " ..
        "not code: %s", M.describe({ kind = "time", ratio = row.raw.ratio }), g2(row.raw.p),
        M.describe(row), row.reason_core, load.text), true)
    end
    return
  end
  if row.verdict ~= "regression" and row.verdict ~= "improvement" then return end
  local util = require "wb.util"
  local net = row.raw ~= nil
  local slower = row.ratio > 1 and "new" or "base"
  local b_val, n_val = row.net_base or row.base, row.net_new or row.new
  -- what the load can account for (seconds): co-running work changes the CPU time (so the net
  -- wall too: the CPU time in it, per thread; a net wall spent mostly asleep grows by little more
  -- than its wait, which is taken out) by up to LOAD_INFLATION of the faster side's, either way
  -- wherever the sides' load differed materially or both ran beside other work: shared caches
  -- and memory bandwidth slow it, while a virtual CPU kept busy can run it faster than one that
  -- idles between runs (xz -6 -T1 here: 68-95 ms of CPU a run quiet, 62-65 ms beside two busy
  -- loops; an A/A pair whose sides both ran beside other jobs read 1.15x apart net of their
  -- waits); a time from which the wait for a CPU was not taken out (a stage's), or only in part
  -- (an estimate), can also hold all of the slower side's extra wait
  local faster, faster_val = slower == "new" and load.base or load.new, slower == "new" and b_val or n_val
  local inflatable = (net and faster.cpu) and math.min(faster_val, faster.cpu / faster.k) or faster_val
  local differs = load.heavier ~= nil or load.both_busy
  local explained = differs and M.LOAD_INFLATION * inflatable or 0
  -- a user or system time alone: preemption moves the kernel's tick-sampled split either way, by
  -- more than the sum changes (the same python: 65 ms of system time quiet, 40 ms beside two hogs)
  if row.cpu_time == "split" and load.heavier then
    row.significant = nil
    say("confounded", string.format("%s (%s), but the sides ran under different load (%s), and preemption moves " ..
      "the kernel's tick-sampled user/system split: confounded; the wall net of run-queue delay is the witness",
      M.describe(row), row.reason_core, load.text), true)
    return
  end
  if not row.cpu_time and (not net or load.estimate) then
    local extra = slower == "new" and load.new.runq - load.base.runq or load.base.runq - load.new.runq
    explained = explained + math.max(0, extra)
  end
  local change = math.abs(n_val - b_val)
  local what = net and " net of run-queue delay" or ""
  if explained > 0 and change <= explained then
    row.significant = nil
    local why = load.heavier == slower and "the " .. slower .. " side ran under more load"
        or load.both_busy and "both sides ran beside other work"
        or load.heavier and "the " .. load.heavier .. " side ran under more load, and load can speed code up too"
        or "the " .. slower .. " side waited longer for a CPU"
    say("confounded", string.format("%s%s (%s), but %s (%s), which can account for " ..
      "%s of the %s change: confounded; for a verdict, run both sides again interleaved (wb bench BASE NEW) or " ..
      "on a quieter machine", M.describe(row), what, row.reason_core, why, load.text,
      util.format_seconds(explained), util.format_seconds(change)), true)
  elseif explained > 0 then
    row.reason = row.reason .. string.format(" (%s; beyond the %s the load difference can account for: %s)",
      net and "net of run-queue delay" or "the slower side waited longer for a CPU", util.format_seconds(explained), load.text)
  end
end

-- row = verdict.compare(metric, base, new [, opts]) : one judged row, as if alone (no correction)
-- opts: threshold, alpha, kind, stat ("mean" (default) or "median": the statistic base and new
-- are, whose ratio the samples' CI is for; an information-only statistic such as "max" is never
-- tested), base_samples, new_samples (lists or wb.stats samples), seed, resamples, resolution
-- (the smallest absolute change the measurement resolves, in the metric's unit; resolution_text
-- writes it, seconds by default; resolution_of names it).
-- row: {metric, kind, stat, base, new, delta, ratio, tested, p, ci_lo, ci_hi, n_base, n_new,
-- verdict, reason, note, significant}
-- verdict: "regression" | "improvement" | "unchanged" | "not tested" | "changed" | "inconclusive" |
-- "interference" | "confounded"
-- base_evidence, new_evidence (wb.interference.evidence of base_samples and new_samples, a
-- wall-time row's): the row is tested on net wall samples (ratio, p, CI: the net ones; raw: the
-- raw wall test; net_base, net_new; load: wb.interference.load of the sides). base_load,
-- new_load (wb.interference.side): the load a time row's sides ran under, without samples of
-- its own (a CPU time, with cpu_time = true, or "split" for a user or system time alone; a stage's
-- time). A time row with a load is weighed against it (the header's rules), unless
-- opts.interleaved (the sides' runs alternated in one run: the same load by construction); then
-- samples of equal count are paired run by run (verdict.paired_test: the k-th of each side ran in
-- the same round), others get the unpaired rank test's Hodges–Lehmann interval.
function M.compare(metric, base, new, opts)
  opts = opts or {}
  local kind = opts.kind or M.classify(metric)
  local stat = opts.stat or M.stat_of(metric) or "mean"
  local row = { metric = metric, kind = kind, stat = stat, base = base, new = new, tested = false,
    resolution = opts.resolution, resolution_text = opts.resolution_text, resolution_of = opts.resolution_of }
  if type(base) ~= "number" or type(new) ~= "number" then
    row.verdict, row.reason, row.note = "inconclusive", "missing on one side", "missing on one side"
    return row
  end
  row.delta = new - base
  row.ratio = base ~= 0 and new / base or nil
  row.cpu_time = opts.cpu_time
  if kind == "time" and opts.base_load and opts.new_load then
    row.load = require("wb.interference").load(opts.base_load, opts.new_load)
  end
  if kind ~= "count" and kind ~= "other" then
    if INFO_STATS[stat] then
      row.info = stat
    else
      local base_samples, new_samples = opts.base_samples, opts.new_samples
      local interference = kind == "time" and with_evidence(row, opts)
      if interference then base_samples, new_samples = interference.net_base, interference.net_new end
      -- sides run interleaved share the machine's load run by run: the rank test and its own
      -- interval judge them, so that an outside job's odd slow run moves neither (a mean would)
      local topts = { stat = stat, shift = opts.interleaved, paired = opts.interleaved, seed = opts.seed,
        resamples = opts.resamples, alpha = opts.alpha, exact = M.EXACT[metric] }
      local t, why = M.test(base_samples, new_samples, topts)
      -- but a mean row must also see a change of a share of the runs (a lock, a cold path: 12 of
      -- 40 runs 1.5x slower are a mean 15% up, the Hodges–Lehmann ratio 1.01x): where the rank
      -- test's interval shows no change beyond the threshold and the means' bootstrap does, the
      -- means decide
      if t and t.estimate and not t.underpowered and stat == "mean" and row.ratio then
        local threshold, alpha = M.threshold_of(row, opts), opts.alpha or M.ALPHA
        t.ratio = t.estimate
        if not clear_change(t, threshold, alpha) then
          topts.shift, topts.paired = false, false
          local tm = M.test(base_samples, new_samples, topts)
          if tm then tm.ratio = row.ratio end
          if tm and clear_change(tm, threshold, alpha) then
            row.share = string.format("the mean moved, the typical run did not (Hodges–Lehmann %s): a share of the runs changed",
              M.describe({ kind = kind, ratio = t.estimate }))
            t = tm
          end
        end
      end
      if t then
        -- the ratio is then the Hodges–Lehmann estimate, and the change it implies at the base's
        -- level the delta (the sides' means are still shown)
        if t.estimate and row.ratio then
          row.ratio, row.estimate = t.estimate, t.paired and "paired" or "hodges_lehmann"
          row.delta = row.base * (t.estimate - 1)
        end
        row.samples = { base_samples, new_samples }
        row.p, row.ci_lo, row.ci_hi, row.n_base, row.n_new = t.p, t.ci_lo, t.ci_hi, t.n_base, t.n_new
        row.exact = t.exact
        row.untested = t.underpowered or (not row.ratio and "the base is 0: no ratio") or nil
        row.tested = row.untested == nil
      else
        row.untested = why
      end
    end
  end
  if kind == "time" and not row.load and opts.base_evidence and opts.new_evidence then
    local bs, ns = values_of(opts.base_samples), values_of(opts.new_samples)
    if bs and ns and #bs == #opts.base_evidence.runq and #ns == #opts.new_evidence.runq then
      local itf = require "wb.interference"
      row.load = itf.load(itf.side(bs, opts.base_evidence), itf.side(ns, opts.new_evidence))
    end
  end
  decide(row, opts)
  return row
end

-- q = verdict.bh(ps) : Benjamini–Hochberg adjusted p-values (q[i] for ps[i])
function M.bh(ps)
  local m = #ps
  local order = {}
  for i = 1, m do order[i] = i end
  table.sort(order, function(a, b) return ps[a] < ps[b] or (ps[a] == ps[b] and a < b) end)
  local q, running = {}, 1
  for k = m, 1, -1 do
    local i = order[k]
    running = math.min(running, ps[i] * m / k)
    q[i] = running
  end
  return q
end

-- info = verdict.judge(rows [, {threshold, alpha}]) : the final verdicts of rows judged together.
-- With more than one test the p-values are adjusted for multiple testing (Benjamini–Hochberg,
-- false-discovery rate alpha) and each tested row's q is set.
-- info: {tested (rows), tests (distinct pairs of samples), correction (nil when one test or none
-- was made), alpha, counts}
function M.judge(rows, opts)
  opts = opts or {}
  -- one test per pair of samples: rows judged on the same samples (a mean and a median of the
  -- same runs) share one p-value and count once
  local tests, ps, test_of = {}, {}, {}
  for _, r in ipairs(rows) do
    if r.tested and r.p then
      local b, n = table.unpack(r.samples or { r, r })
      test_of[b] = test_of[b] or {}
      local i = test_of[b][n]
      if not i then
        i = #ps + 1
        test_of[b][n], ps[i] = i, r.p
      end
      tests[#tests + 1] = { row = r, index = i }
    end
  end
  local correction
  if #ps > 1 then
    correction = M.CORRECTION
    local q = M.bh(ps)
    for _, t in ipairs(tests) do t.row.q = q[t.index] end
  end
  local counts = { regression = 0, improvement = 0, unchanged = 0, ["not tested"] = 0, changed = 0, inconclusive = 0,
    interference = 0, confounded = 0 }
  for _, r in ipairs(rows) do
    if r.tested then decide(r, opts) end
    counts[r.verdict] = counts[r.verdict] + 1
  end
  return { tested = #tests, tests = #ps, correction = correction, alpha = opts.alpha or M.ALPHA, counts = counts }
end

-- ev = verdict.segment_evidence(points, first, last, walls) : the interference evidence of points
-- first..last together (each point's {runq, cpu, wall_own, others, scope}, as verdict.steps takes
-- them), for walls, their samples in order; nil when a point has none. The scope is "tree" unless
-- a point's is weaker.
local function segment_evidence(points, first, last, walls)
  local runq, cpu, wall_own, others, scope = {}, {}, {}, {}, "tree"
  for i = first, last do
    local ev = points[i].evidence
    if type(ev) ~= "table" or type(ev.runq) ~= "table" then return nil end
    if ev.scope ~= "tree" then scope = ev.scope or "leader" end
    for k, x in ipairs(ev.runq) do
      runq[#runq + 1] = x
      cpu[#cpu + 1] = ev.cpu and ev.cpu[k] or false
      wall_own[#wall_own + 1] = ev.wall_own and ev.wall_own[k] or false
      others[#others + 1] = ev.others and ev.others[k] or false
    end
  end
  return require("wb.interference").evidence(walls, runq, cpu, wall_own, others, scope)
end

M.segment_evidence = segment_evidence

-- xs = verdict.segment_samples(points, first, last) : the samples of points first..last, pooled
-- in order
local function segment_samples(points, first, last)
  local xs = {}
  for i = first, last do
    for _, x in ipairs(points[i].samples) do xs[#xs + 1] = x end
  end
  return xs
end
M.segment_samples = segment_samples

-- xs, net = verdict.segment_net(points, first, last) : those samples net of the runs' wait for a
-- CPU where every point carries that evidence (net true), else as they are: the level the code
-- ran at
function M.segment_net(points, first, last)
  local xs = segment_samples(points, first, last)
  local ev = segment_evidence(points, first, last, xs)
  if not ev then return xs, false end
  return require("wb.interference").net(xs, ev), true
end

local function mean_of(xs) return require("wb.stats").mean(xs) end

-- steps = verdict.steps(points [, opts]) : the steps of a series, found by wb.stats.steps over
-- the points' means (of their wall samples net of the runs' wait for a CPU when every point
-- carries interference evidence: a busy machine's delays are not the code's) and each judged by
-- this engine on all samples of the segment before against all samples of the segment after,
-- the steps together (Benjamini–Hochberg).
-- points[i] = {samples = {...} (non-empty), evidence = {runq, cpu, wall_own, others, scope}?}
-- opts: metric ("wall mean"), kind, stat ("mean"), min_size, threshold, alpha, seed, resolution,
-- resolution_text, resolution_of (as verdict.compare's: a user or system time's tick, an RSS's
-- per-CPU counters).
-- Each step: {index (its first point), before, after, ratio, kind = "regression"|"improvement",
-- row (the verdict row: verdict, reason, p, q, ci_lo, ci_hi), significant}.
function M.steps(points, opts)
  opts = opts or {}
  local metric = opts.metric or "wall mean"
  local kind = opts.kind or M.classify(metric)
  local means, nets = {}, kind == "time" and {} or nil
  for i, pt in ipairs(points) do
    means[i] = mean_of(pt.samples)
    if nets then
      local xs, net = M.segment_net(points, i, i)
      nets = net and nets or nil
      if nets then nets[i] = mean_of(xs) end
    end
  end
  local raw = #means >= 2 and require("wb.stats").steps(nets or means, { min_size = opts.min_size }) or {}
  local bounds = { 1 }
  for _, st in ipairs(raw) do bounds[#bounds + 1] = st.index end
  bounds[#bounds + 1] = #points + 1
  local steps, rows = {}, {}
  for k, st in ipairs(raw) do
    local before = segment_samples(points, bounds[k], bounds[k + 1] - 1)
    local after = segment_samples(points, bounds[k + 1], bounds[k + 2] - 1)
    local evidence = kind == "time"
    rows[k] = M.compare(metric, st.before, st.after, { kind = kind, stat = opts.stat or "mean",
      threshold = opts.threshold, alpha = opts.alpha, base_samples = before, new_samples = after, seed = opts.seed,
      resolution = opts.resolution, resolution_text = opts.resolution_text, resolution_of = opts.resolution_of,
      base_evidence = evidence and segment_evidence(points, bounds[k], bounds[k + 1] - 1, before) or nil,
      new_evidence = evidence and segment_evidence(points, bounds[k + 1], bounds[k + 2] - 1, after) or nil })
    steps[k] = { index = st.index, before = st.before, after = st.after, ratio = st.ratio,
      kind = st.ratio > 1 and "regression" or "improvement", row = rows[k] }
  end
  M.judge(rows, { threshold = opts.threshold, alpha = opts.alpha })
  for _, st in ipairs(steps) do
    st.significant = st.row.verdict == "regression" or st.row.verdict == "improvement"
  end
  return steps
end

local function plural(n, word) return string.format("%d %s%s", n, word, n == 1 and "" or "s") end

-- text = verdict.summary_text(info) : "1 regression, 0 improvements, 6 unchanged, 4 not tested;
-- 7 metrics tested together (4 tests), p-values adjusted by Benjamini–Hochberg for a
-- false-discovery rate of 5%"
function M.summary_text(info)
  local c = info.counts
  local parts = { plural(c.regression, "regression"), plural(c.improvement, "improvement"),
    c.unchanged .. " unchanged" }
  if c["not tested"] > 0 then parts[#parts + 1] = c["not tested"] .. " not tested" end
  if c.changed > 0 then parts[#parts + 1] = c.changed .. " changed" end
  if c.inconclusive > 0 then parts[#parts + 1] = c.inconclusive .. " inconclusive" end
  if (c.interference or 0) > 0 then parts[#parts + 1] = c.interference .. " interference, not code" end
  if (c.confounded or 0) > 0 then parts[#parts + 1] = c.confounded .. " confounded" end
  local text = table.concat(parts, ", ")
  if info.correction then
    text = text .. string.format("; %d metrics tested together (%d tests), p-values adjusted by %s for a " ..
      "false-discovery rate of %g%%", info.tested, info.tests, info.correction, info.alpha * 100)
  end
  return text
end

-- s = verdict.describe(row) : "1.23× slower", "2.00× faster", "+5", "unchanged"
function M.describe(row)
  if row.verdict == "inconclusive" and not row.ratio then return "inconclusive" end
  if row.kind == "count" then
    if row.delta == 0 then return "unchanged" end
    return string.format("%+g", row.delta)
  end
  if not row.ratio then return row.verdict end
  if row.ratio == 0 then return "→ 0" end
  if row.kind == "time" then
    if row.ratio >= 1 then return string.format("%.2f× slower", row.ratio) end
    return string.format("%.2f× faster", 1 / row.ratio)
  end
  if row.kind == "memory" then
    if row.ratio >= 1 then return string.format("%.2f× larger", row.ratio) end
    return string.format("%.2f× smaller", 1 / row.ratio)
  end
  if row.kind == "rate" then
    if row.ratio >= 1 then return string.format("%.2f× higher", row.ratio) end
    return string.format("%.2f× lower", 1 / row.ratio)
  end
  return string.format("%.3g×", row.ratio)
end

return M

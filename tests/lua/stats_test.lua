-- wb.stats: descriptive statistics, outliers, bootstrap, Mann–Whitney, step detection, samples.
-- Expected values come from hand computation (fixtures), published tables and independent
-- reference code written here.
local T = require "wb.test"
local S = require "wb.stats"
local core = require "wb.core"

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local function fixture(name) return dofile(here .. "/../fixtures/stats/" .. name .. ".lua") end

local function rel_near(actual, expected, tol, msg)
  T.near(actual, expected, tol * math.max(1, math.abs(expected)), msg)
end

local function to_samples(t)
  local s = S.samples()
  for _, x in ipairs(t) do s:add(x) end
  return s
end

local function gauss() -- standard normal from math.random (Box–Muller)
  return math.sqrt(-2 * math.log(1 - math.random())) * math.cos(2 * math.pi * math.random())
end

-- ---- descriptive statistics ----------------------------------------------------------------

T.case("summary, quantile, mean, stddev, median, mad match hand-computed values", function()
  for _, c in ipairs(fixture "descriptive") do
    for _, xs in ipairs { c.data, to_samples(c.data) } do
      local s = S.summary(xs)
      T.eq(s.n, c.n, c.name .. ": n")
      T.ok(math.type(s.n) == "integer", "n is an integer")
      for _, k in ipairs { "min", "max", "sum", "mean", "stddev", "median", "mad", "q1", "q3",
        "p5", "p95" } do
        rel_near(s[k], c[k], 1e-12, c.name .. ": " .. k)
      end
      for _, q in ipairs(c.quantiles) do
        rel_near(S.quantile(xs, q[1]), q[2], 1e-12, c.name .. ": quantile " .. q[1])
      end
      rel_near(S.mean(xs), c.mean, 1e-12, c.name .. ": mean()")
      rel_near(S.stddev(xs), c.stddev, 1e-12, c.name .. ": stddev()")
      rel_near(S.median(xs), c.median, 1e-12, c.name .. ": median()")
      rel_near(S.mad(xs), c.mad, 1e-12, c.name .. ": mad()")
    end
  end
end)

T.case("summary keys come in a stable order", function()
  T.eq(core.ordered_keys(S.summary { 1, 2, 3 }),
    { "n", "min", "max", "mean", "stddev", "median", "mad", "q1", "q3", "p5", "p95", "sum" })
end)

T.case("the input is not modified and order does not matter", function()
  local xs = { 5, 3, 9, 1, 7 }
  T.eq(S.median(xs), 5)
  T.eq(S.quantile(xs, 0.25), 3)
  T.eq(xs, { 5, 3, 9, 1, 7 })
end)

T.case("the mean is accurate for large offsets", function()
  T.eq(S.mean { 1e16, 1, -1e16, 1 }, 0.5)
  rel_near(S.stddev { 1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16 }, math.sqrt(30), 1e-9)
end)

T.case("misuse raises", function()
  T.raises(function() S.summary {} end, "no values")
  T.raises(function() S.mean {} end, "no values")
  T.raises(function() S.median(S.samples()) end, "no values")
  T.raises(function() S.mean { 1, "2", 3 } end, "number expected at [2], got string")
  T.raises(function() S.mean { 1, 0 / 0 } end, "NaN at [2]")
  T.raises(function() S.mean "12" end, "sequence of numbers")
  T.raises(function() S.quantile({ 1, 2 }, 1.5) end, "p must be in [0, 1]")
  T.raises(function() S.quantile({ 1, 2 }) end, "number expected")
  T.raises(function() S.outliers({ 1, 2 }, -1) end, "threshold")
end)

-- ---- modified z-scores and outliers ---------------------------------------------------------

T.case("modified z-scores and outliers on a planted outlier", function()
  for _, c in ipairs(fixture "outliers") do
    local z = S.modified_z(c.data)
    T.eq(#z, #c.z, c.name)
    for i = 1, #z do T.near(z[i], c.z[i], 1e-9, c.name .. ": z[" .. i .. "]") end
    T.eq(S.outliers(c.data), c.outliers, c.name)
    T.eq(S.outliers(to_samples(c.data)), c.outliers, c.name .. " (samples)")
    T.eq(S.outliers(c.data, 1.0), c.outliers_at_1, c.name .. " at threshold 1")
  end
  T.eq(S.outliers({ 10, 10.2, 9.9, 15, 10.1 }, 100), {})
  T.eq(S.modified_z {}, {})
  T.eq(S.outliers {}, {})
end)

-- ---- bootstrap ------------------------------------------------------------------------------

local function normal_sample(seed, n, mean, sd)
  math.randomseed(seed)
  local t = {}
  for i = 1, n do t[i] = mean + sd * gauss() end
  return t
end

-- Independent reference of the documented PRNG: splitmix64 seeds xoshiro256**; an index in
-- [0, n) is drawn by rejecting outputs >= 2^64 - 1 - ((2^64 - 1) mod n), then taking the
-- output mod n (all unsigned 64-bit arithmetic).
local function reference_rng(seed)
  local sm = seed
  local function splitmix()
    sm = sm + 0x9e3779b97f4a7c15
    local z = sm
    z = (z ~ (z >> 30)) * 0xbf58476d1ce4e5b9
    z = (z ~ (z >> 27)) * 0x94d049bb133111eb
    return z ~ (z >> 31)
  end
  local s = { splitmix(), splitmix(), splitmix(), splitmix() }
  local function rotl(x, k) return (x << k) | (x >> (64 - k)) end
  local function next()
    local out = rotl(s[2] * 5, 7) * 9
    local t = s[2] << 17
    s[3] = s[3] ~ s[1]
    s[4] = s[4] ~ s[2]
    s[2] = s[2] ~ s[3]
    s[1] = s[1] ~ s[4]
    s[3] = s[3] ~ t
    s[4] = rotl(s[4], 45)
    return out
  end
  local max63 = math.maxinteger
  local function umod(v, n) -- v as unsigned 64-bit, mod n
    if v >= 0 then return v % n end
    return ((v & max63) % n + (max63 % n) + 1) % n
  end
  return function(n)
    local limit = -1 - umod(-1, n)
    while true do
      local v = next()
      if math.ult(v, limit) then return umod(v, n) end
    end
  end
end

local function reference_bootstrap(xs, ys, stat, level, resamples, seed)
  local below = reference_rng(seed)
  local function resample(t)
    local r = {}
    for i = 1, #t do r[i] = t[below(#t) + 1] end
    if stat:find "median" then
      table.sort(r)
      local m = #r // 2
      return #r % 2 == 1 and r[m + 1] or (r[m] + r[m + 1]) / 2
    end
    local sum = 0
    for _, v in ipairs(r) do sum = sum + v end
    return sum / #r
  end
  local boot = {}
  for b = 1, resamples do
    local sx = resample(xs)
    boot[b] = ys and resample(ys) / sx or sx
  end
  table.sort(boot)
  local function q(p)
    local h = (#boot - 1) * p
    local lo = math.floor(h)
    if lo + 1 >= #boot then return boot[#boot] end
    return boot[lo + 1] + (h - lo) * (boot[lo + 2] - boot[lo + 1])
  end
  local alpha = (1 - level) / 2
  return q(alpha), q(1 - alpha)
end

T.case("bootstrap follows the documented PRNG bit for bit", function()
  local xs, ys = { 3, 1, 4, 1, 5, 9, 2, 6 }, { 10, 12, 11, 13, 15, 14 }
  for _, c in ipairs {
    { stat = "mean", seed = 1, level = 0.95, resamples = 2000 },
    { stat = "median", seed = 42, level = 0.9, resamples = 1001 },
    { stat = "ratio_mean", seed = -7, level = 0.99, resamples = 1500, ys = ys },
    { stat = "ratio_median", seed = 123456789, level = 0.95, resamples = 999, ys = ys },
  } do
    local lo, hi = S.bootstrap_ci(xs, c.ys, c)
    local rlo, rhi = reference_bootstrap(xs, c.ys, c.stat, c.level, c.resamples, c.seed)
    T.eq({ lo, hi }, { rlo, rhi }, c.stat)
  end
end)

T.case("bootstrap: same seed, same bounds; another seed, slightly different bounds", function()
  local xs = normal_sample(11, 40, 100, 1)
  local lo1, hi1, est1 = S.bootstrap_ci(xs, { seed = 5 })
  local lo2, hi2, est2 = S.bootstrap_ci(xs, { seed = 5 })
  T.eq({ lo1, hi1, est1 }, { lo2, hi2, est2 })
  local lo3, hi3, est3 = S.bootstrap_ci(xs, { seed = 6 })
  T.eq(est3, est1)
  T.ok(lo3 ~= lo1 and hi3 ~= hi1, "different seeds give different bounds")
  local width = hi1 - lo1
  T.ok(math.abs(lo3 - lo1) < 0.2 * width and math.abs(hi3 - hi1) < 0.2 * width,
    "different seeds differ only slightly")
  T.eq(est1, S.mean(xs))
  T.ok(lo1 < est1 and est1 < hi1)
  T.eq({ S.bootstrap_ci(xs) }, { S.bootstrap_ci(xs, { seed = 1 }) }, "default seed 1")
  T.eq({ S.bootstrap_ci(xs, nil, { seed = 5 }) }, { lo1, hi1, est1 }, "explicit nil ys")
end)

T.case("bootstrap ratio CI of 2x data contains 2 and excludes 1", function()
  local xs = normal_sample(1, 30, 100, 1)
  local base = normal_sample(2, 30, 100, 1)
  local ys = {}
  for i, v in ipairs(base) do ys[i] = 2 * v end
  for _, stat in ipairs { "ratio_mean", "ratio_median" } do
    local lo, hi, est = S.bootstrap_ci(xs, ys, { stat = stat })
    T.ok(lo < 2 and hi > 2, stat .. " contains 2: " .. lo .. " " .. hi)
    T.ok(lo > 1.9 and hi < 2.1, stat .. " is tight")
    T.ok(lo <= est and est <= hi)
  end
  local lo, hi, est = S.bootstrap_ci(to_samples(xs), to_samples(ys)) -- default: ratio_mean
  T.eq(est, S.mean(ys) / S.mean(xs))
  T.ok(lo < 2 and hi > 2)
  local same_lo, same_hi = S.bootstrap_ci(xs, xs, { stat = "ratio_mean" })
  T.ok(same_lo < 1 and same_hi > 1, "identical samples: ratio CI contains 1")
end)

T.case("bootstrap CI narrows with more samples and widens with the level", function()
  local small, large = normal_sample(3, 20, 100, 1), normal_sample(4, 500, 100, 1)
  for _, stat in ipairs { "mean", "median" } do
    local l1, h1 = S.bootstrap_ci(small, { stat = stat, resamples = 2000 })
    local l2, h2 = S.bootstrap_ci(large, { stat = stat, resamples = 2000 })
    T.ok(h2 - l2 < (h1 - l1) / 2, stat .. ": 500 samples give a much narrower CI")
  end
  local l90, h90 = S.bootstrap_ci(small, { level = 0.90 })
  local l99, h99 = S.bootstrap_ci(small, { level = 0.99 })
  T.ok(l99 < l90 and h99 > h90)
end)

T.case("bootstrap misuse raises", function()
  T.raises(function() S.bootstrap_ci({ 1, 2 }, { stat = "ratio_mean" }) end, "needs ys")
  T.raises(function() S.bootstrap_ci({ 1, 2 }, { 3, 4 }, { stat = "mean" }) end, "ratio_mean")
  T.raises(function() S.bootstrap_ci({ 1, 2 }, { stat = "mode" }) end, "unknown statistic")
  T.raises(function() S.bootstrap_ci({ 1, 2 }, { level = 1 }) end, "level")
  T.raises(function() S.bootstrap_ci({ 1, 2 }, { resamples = 0 }) end, "resamples")
  T.raises(function() S.bootstrap_ci({ 1, 2 }, { seed = 1.5 }) end, "integer expected")
  T.raises(function() S.bootstrap_ci({ 1, 2 }, { stat = 1 }) end, "string expected")
  T.raises(function() S.bootstrap_ci({}, {}) end, "no values")
  T.raises(function() S.bootstrap_ci({ 1 }, {}, {}) end, "no values")
end)

-- ---- Mann–Whitney ---------------------------------------------------------------------------

-- Exact two-sided p by enumerating every assignment of the ranks 1..n1+n2 to the first sample.
local function brute_force_distribution(n1, n2)
  local counts, total = {}, 0
  local function rec(next_rank, left, rank_sum)
    if left == 0 then
      local u = rank_sum - n1 * (n1 + 1) // 2
      counts[u] = (counts[u] or 0) + 1
      total = total + 1
      return
    end
    for r = next_rank, n1 + n2 - left + 1 do rec(r + 1, left - 1, rank_sum + r) end
  end
  rec(1, n1, 0)
  return function(u)
    local le, ge = 0, 0
    for v, c in pairs(counts) do
      if v <= u then le = le + c end
      if v >= u then ge = ge + c end
    end
    return math.min(1, 2 * math.min(le, ge) / total)
  end
end

T.case("Mann–Whitney exact p matches brute-force enumeration (n1 = 4, n2 = 5 and 3, 6)", function()
  for _, sizes in ipairs { { 4, 5 }, { 3, 6 } } do
    local n1, n2 = sizes[1], sizes[2]
    local p_of = brute_force_distribution(n1, n2)
    local function each_subset(next_rank, chosen) -- every rank set of the first sample
      if #chosen == n1 then
        local in_x, xs, ys = {}, {}, {}
        for _, r in ipairs(chosen) do in_x[r] = true end
        for r = 1, n1 + n2 do
          local t = in_x[r] and xs or ys
          t[#t + 1] = r * 1.5 - 0.25 -- distinct values in rank order
        end
        local u = 0 -- pairs with x > y
        for _, x in ipairs(xs) do for _, y in ipairs(ys) do if x > y then u = u + 1 end end end
        local r = S.mann_whitney(xs, ys)
        T.eq(r.u, u)
        T.ok(r.exact, "exact without ties")
        T.near(r.p, p_of(u), 1e-12, string.format("n1=%d n2=%d u=%d", n1, n2, u))
        return
      end
      for rank = next_rank, n1 + n2 do
        chosen[#chosen + 1] = rank
        each_subset(rank + 1, chosen)
        chosen[#chosen] = nil
      end
    end
    each_subset(1, {})
  end
end)

-- Two samples without ties whose U (of xs) is u: ys = 1..n2, and each x sits above k_i ys.
local function samples_with_u(n1, n2, u)
  local xs, ys, left = {}, {}, u
  for j = 1, n2 do ys[j] = j end
  for i = 1, n1 do
    local k = math.min(n2, left)
    left = left - k
    xs[i] = k + 0.5 + i / 1000
  end
  assert(left == 0)
  return xs, ys
end

T.case("Mann–Whitney exact p agrees with the published critical values (alpha 0.05)", function()
  for _, c in ipairs(fixture "mann_whitney") do
    local label = string.format("n1=%d n2=%d", c.n1, c.n2)
    local r = S.mann_whitney(samples_with_u(c.n1, c.n2, c.u_crit))
    T.eq(r.u, c.u_crit, label)
    T.ok(r.exact, label)
    T.ok(r.p <= 0.05, label .. ": U_crit is significant, p = " .. r.p)
    r = S.mann_whitney(samples_with_u(c.n1, c.n2, c.u_crit + 1))
    T.ok(r.p > 0.05, label .. ": U_crit + 1 is not, p = " .. r.p)
    local xs, ys = samples_with_u(c.n1, c.n2, c.u_crit)
    local swapped = S.mann_whitney(ys, xs)
    T.eq(swapped.u, c.n1 * c.n2 - c.u_crit, label .. ": U of the other sample")
    T.near(swapped.p, S.mann_whitney(xs, ys).p, 1e-12, label .. ": symmetric p")
  end
end)

-- Standard normal upper tail by Simpson integration of the density (independent of erfc).
local function upper_tail(z)
  local steps, h = 20000, z / 20000
  local f = function(t) return math.exp(-t * t / 2) / math.sqrt(2 * math.pi) end
  local acc = f(0) + f(z)
  for i = 1, steps - 1 do acc = acc + (i % 2 == 1 and 4 or 2) * f(i * h) end
  return 0.5 - acc * h / 3
end

-- U, z, p by the normal approximation with midranks, tie correction and continuity correction.
local function reference_normal(xs, ys)
  local all = {}
  for _, v in ipairs(xs) do all[#all + 1] = { v = v, x = true } end
  for _, v in ipairs(ys) do all[#all + 1] = { v = v, x = false } end
  table.sort(all, function(a, b) return a.v < b.v end)
  local n, rank_sum, tie_sum, i = #all, 0, 0, 1
  while i <= n do
    local j = i
    while j < n and all[j + 1].v == all[i].v do j = j + 1 end
    local t, mid = j - i + 1, (i + j) / 2
    for k = i, j do if all[k].x then rank_sum = rank_sum + mid end end
    tie_sum = tie_sum + t ^ 3 - t
    i = j + 1
  end
  local n1, n2 = #xs, #ys
  local u = rank_sum - n1 * (n1 + 1) / 2
  local sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_sum / (n * (n - 1))))
  local d = u - n1 * n2 / 2
  local z = (d > 0 and 1 or -1) * math.max(math.abs(d) - 0.5, 0) / sigma
  return u, z, 2 * upper_tail(math.abs(z))
end

T.case("Mann–Whitney normal approximation with ties matches the formula", function()
  math.randomseed(77)
  for _, sizes in ipairs { { 60, 70, 0 }, { 30, 55, 1 }, { 80, 55, 3 } } do
    local xs, ys = {}, {}
    for i = 1, sizes[1] do xs[i] = math.random(1, 8) end
    for i = 1, sizes[2] do ys[i] = math.random(1, 8) + sizes[3] end
    local u, z, p = reference_normal(xs, ys)
    local r = S.mann_whitney(xs, ys)
    T.ok(not r.exact, "ties: normal approximation")
    T.eq(r.u, u)
    T.near(r.z, z, 1e-12)
    T.near(r.p, p, 1e-9)
  end
  local r = S.mann_whitney({ 1, 2, 3, 4 }, { 1, 2, 3, 4 }) -- ties across the samples
  T.eq({ r.u, r.z, r.p, r.exact }, { 8, 0, 1, true })
  r = S.mann_whitney({ 5, 5, 5 }, { 5, 5 }) -- every value tied: no information
  T.eq({ r.u, r.p }, { 3, 1 })
end)

-- Exact two-sided p with ties by definition: every way to give n1 of the pooled values' midranks
-- to the first sample, and the share whose rank sum is as far out on the nearer tail, doubled.
local function brute_force_tied_p(xs, ys)
  local all = {}
  for _, v in ipairs(xs) do all[#all + 1] = v end
  for _, v in ipairs(ys) do all[#all + 1] = v end
  table.sort(all)
  local mid = {}
  for i, v in ipairs(all) do
    local lo, hi = i, i
    while lo > 1 and all[lo - 1] == v do lo = lo - 1 end
    while hi < #all and all[hi + 1] == v do hi = hi + 1 end
    mid[i] = (lo + hi) / 2
  end
  local observed = 0
  for _, x in ipairs(xs) do
    for i, v in ipairs(all) do if v == x then observed = observed + mid[i]; break end end
  end
  local le, ge, total = 0, 0, 0
  local function rec(next_i, left, sum)
    if left == 0 then
      total = total + 1
      if sum <= observed + 1e-9 then le = le + 1 end
      if sum >= observed - 1e-9 then ge = ge + 1 end
      return
    end
    for i = next_i, #all - left + 1 do rec(i + 1, left - 1, sum + mid[i]) end
  end
  rec(1, #xs, 0)
  return math.min(1, 2 * math.min(le, ge) / total)
end

T.case("Mann–Whitney with ties up to 50 values a side is exact (tied times keep their power)", function()
  math.randomseed(5)
  for trial = 1, 40 do
    local n1, n2 = math.random(2, 6), math.random(2, 7)
    local xs, ys, shift = {}, {}, math.random(0, 3)
    for i = 1, n1 do xs[i] = math.random(1, 5) end
    for i = 1, n2 do ys[i] = math.random(1, 5) + shift end
    local r = S.mann_whitney(xs, ys)
    T.ok(r.exact, "exact at these sizes")
    T.near(r.p, brute_force_tied_p(xs, ys), 1e-12, string.format("trial %d: %s vs %s", trial,
      table.concat(xs, ","), table.concat(ys, ",")))
  end
  -- five trials a side wholly apart, two of one side tied (a microsecond clock): the exact p of
  -- complete separation, 2 / C(10, 5), which the normal approximation (0.012) would miss at 0.01
  local r = S.mann_whitney({ 0.100812, 0.100812, 0.100851, 0.100877, 0.100903 },
    { 0.200811, 0.200874, 0.200902, 0.200911, 0.200955 })
  T.eq({ r.u, r.exact }, { 0, true })
  T.near(r.p, 2 / 252, 1e-15)
  -- 50 a side, heavily tied, still exact and fast
  local xs, ys = {}, {}
  for i = 1, 50 do xs[i], ys[i] = i % 7, i % 7 + 1 end
  r = S.mann_whitney(xs, ys)
  T.ok(r.exact and r.p > 0 and r.p < 0.05, r.p)
end)

T.case("Mann–Whitney without ties above 50 values uses the normal approximation", function()
  local xs, ys = {}, {}
  for i = 1, 60 do xs[i] = i * 2 end
  for i = 1, 40 do ys[i] = i * 2 + 1 + 30 end
  local u, z, p = reference_normal(xs, ys)
  local r = S.mann_whitney(to_samples(xs), ys)
  T.eq({ r.u, r.exact }, { u, false })
  T.near(r.z, z, 1e-12)
  T.near(r.p, p, 1e-9)
  T.eq(core.ordered_keys(r), { "u", "p", "z", "exact" })
  T.raises(function() S.mann_whitney({}, { 1 }) end, "no values")
  T.raises(function() S.mann_whitney({ 1 }) end, "sequence of numbers")
end)

T.case("shift_ci: the Hodges–Lehmann ratio, and an interval that excludes 1 exactly when the rank test rejects", function()
  -- every ratio y / x of {1, 2} and {3, 4}: 1.5, 2, 3, 4; two values a side cannot reach 95%
  local est, lo, hi = S.shift_ci({ 1, 2 }, { 3, 4 })
  T.eq({ est, lo, hi }, { 2.5, nil, nil })
  -- five a side: P(U < 3) = 4/252 <= 0.025 < P(U < 4) = 7/252, so the 3rd and 23rd of 25 ratios
  local xs, ys = { 1, 1.1, 0.9, 1.05, 0.95 }, { 1.2, 1.3, 1.1, 1.25, 1.15 }
  local ratios = {}
  for _, x in ipairs(xs) do
    for _, y in ipairs(ys) do ratios[#ratios + 1] = y / x end
  end
  table.sort(ratios)
  est, lo, hi = S.shift_ci(to_samples(xs), ys)
  T.eq({ est, lo, hi }, { ratios[13], ratios[3], ratios[23] })
  -- random untied samples, slowed by 0-10%, with the odd run five times as long: the interval
  -- and the test agree, run by run
  math.randomseed(7)
  local agreed, rejected = 0, 0
  for k = 1, 300 do
    local a, b = {}, {}
    for i = 1, 6 + k % 7 do a[i] = 1 + math.random() * 0.1 * (math.random() < 0.1 and 50 or 1) end
    for i = 1, 9 + k % 5 do b[i] = (1 + (k % 11) / 100) * (1 + math.random() * 0.1 * (math.random() < 0.1 and 50 or 1)) end
    local _, l, h = S.shift_ci(a, b)
    local p = S.mann_whitney(a, b).p
    local excluded = l > 1 or h < 1
    if (p < 0.05 and excluded) or (p > 0.05 and not excluded) then agreed = agreed + 1 end
    if excluded then rejected = rejected + 1 end
  end
  T.eq(agreed, 300)
  T.ok(rejected > 30 and rejected < 270, "both outcomes met: " .. rejected)
  -- above 50 values a side: the normal approximation's critical value
  local big_x, big_y = {}, {}
  for i = 1, 80 do big_x[i] = 1 + i / 800 end
  for i = 1, 60 do big_y[i] = 1.1 * (1 + i / 600) end
  est, lo, hi = S.shift_ci(big_x, big_y)
  T.ok(lo < est and est < hi and lo > 1, string.format("%g < %g < %g", lo, est, hi))
  T.eq({ S.shift_ci({ 0, 1 }, { 1 }) }, { nil, "a value of the base sample is not positive: no ratio" })
  T.raises(function() S.shift_ci({ 1 }, { 1 }, { level = 1 }) end, "level must be in")
  T.raises(function() S.shift_ci({}, { 1 }) end, "no values")
end)

-- ---- step detection -------------------------------------------------------------------------

local function noisy_series(seed, n, level_at, noise)
  math.randomseed(seed)
  local t = {}
  for i = 1, n do t[i] = level_at(i) * (1 + noise * (2 * math.random() - 1)) end
  return t
end

T.case("steps: a planted 10% step at index 31 in ±2% noise", function()
  for seed = 1, 5 do
    local series = noisy_series(seed, 60, function(i) return i >= 31 and 110 or 100 end, 0.02)
    local steps = S.steps(series)
    T.eq(#steps, 1, "seed " .. seed)
    T.ok(math.abs(steps[1].index - 31) <= 1, "index " .. steps[1].index)
    T.near(steps[1].ratio, 1.10, 0.02)
    T.near(steps[1].before, 100, 2)
    T.near(steps[1].after, 110, 2)
    T.eq(core.ordered_keys(steps[1]), { "index", "before", "after", "ratio" })
  end
end)

-- The default penalty is the documented 3 * sigma * ln(n), sigma = max(1.4826 * MAD,
-- 1.253314 * mean absolute deviation) / sqrt(2) of the successive differences, recomputed here
-- from the series: over a sweep of step heights that crosses the detection threshold, the
-- default finds exactly what that explicit penalty finds (a penalty 10% off moves the
-- threshold across several heights of the sweep).
T.case("steps: the default penalty is 3 sigma ln n of the successive differences", function()
  local function median(xs)
    local c = table.move(xs, 1, #xs, 1, {})
    table.sort(c)
    local m = #c // 2
    return #c % 2 == 1 and c[m + 1] or (c[m] + c[m + 1]) / 2
  end
  local function penalty(y)
    local d = {}
    for i = 1, #y - 1 do d[i] = y[i + 1] - y[i] end
    local med, dev, sum = median(d), {}, 0
    for i, x in ipairs(d) do dev[i] = math.abs(x - med); sum = sum + dev[i] end
    local sigma = math.max(1.4826 * median(dev), 1.253314 * sum / #d) / math.sqrt(2)
    return 3 * sigma * math.log(#y)
  end
  local found, missed = 0, 0
  for k = 0, 120 do
    local h = 100 + k * 0.05
    local y = noisy_series(7, 40, function(i) return i > 20 and h or 100 end, 0.02)
    local default, explicit = S.steps(y), S.steps(y, { penalty = penalty(y) })
    T.eq(#default, #explicit, "step height " .. h)
    if #explicit > 0 then found = found + 1 else missed = missed + 1 end
  end
  T.ok(found > 10 and missed > 10, "the sweep crosses the threshold: " .. found .. " found, " .. missed .. " missed")
end)

T.case("steps: pure noise gives no step", function()
  for seed = 1, 10 do
    T.eq(S.steps(noisy_series(seed, 60, function() return 100 end, 0.02)), {}, "uniform " .. seed)
    math.randomseed(seed)
    local g = {}
    for i = 1, 200 do g[i] = 50 + gauss() end
    T.eq(S.steps(g), {}, "gaussian " .. seed)
  end
end)

T.case("steps: two steps are both found", function()
  local series = noisy_series(9, 90, function(i)
    return i < 31 and 100 or (i < 61 and 115 or 95)
  end, 0.02)
  local steps = S.steps(to_samples(series))
  T.eq(#steps, 2)
  T.ok(math.abs(steps[1].index - 31) <= 1 and math.abs(steps[2].index - 61) <= 1)
  T.near(steps[1].ratio, 1.15, 0.03)
  T.near(steps[2].ratio, 95 / 115, 0.03)
  T.eq(steps[2].before, steps[1].after)
end)

T.case("steps: exact levels, options and short series", function()
  T.eq(S.steps { 1, 1, 1, 2, 2, 2 }, { { index = 4, before = 1, after = 2, ratio = 2 } })
  T.eq(S.steps { 3, 3, 3, 3 }, {})
  T.eq(S.steps { 1, 2, 3 }, {}, "too short for two segments of 2")
  T.eq(S.steps {}, {})
  local series = noisy_series(3, 60, function(i) return i >= 31 and 110 or 100 end, 0.02)
  T.eq(S.steps(series, { penalty = 1e9 }), {})
  T.ok(#S.steps(series, { penalty = 0 }) > 5, "no penalty: over-segmented")
  T.eq(S.steps(series, { min_size = 31 }), {})
  local steps = S.steps(series, { min_size = 10 })
  T.eq(#steps, 1)
  T.raises(function() S.steps(series, { min_size = 0 }) end, "min_size")
  T.raises(function() S.steps(series, { penalty = -1 }) end, "penalty")
  T.raises(function() S.steps(series, 5) end, "table expected")
end)

-- ---- samples --------------------------------------------------------------------------------

T.case("samples: add, length, index, totable, summary, tostring", function()
  local s = S.samples(4)
  T.eq(#s, 0)
  T.eq(tostring(s), "wb.stats.samples (n=0)")
  for _, v in ipairs { 2, 4, 4, 4, 5, 5, 7, 9 } do s:add(v) end
  T.eq(#s, 8)
  T.eq({ s[1], s[8], s[0], s[9], s[2.0], s[1.5] }, { 2, 9, nil, nil, 4, nil })
  T.eq(s:totable(), { 2, 4, 4, 4, 5, 5, 7, 9 })
  T.eq(s:summary().mean, 5)
  T.near(s:summary().stddev, 2.1380899352993950, 1e-12)
  T.eq(tostring(s), "wb.stats.samples (n=8)")
  T.raises(function() s:add "x" end, "number expected")
  T.raises(function() s:add(0 / 0) end, "NaN")
  T.raises(function() S.samples(-1) end, "capacity")
end)

T.case("samples: close releases and later use raises", function()
  local outer
  do
    local s <close> = S.samples()
    s:add(1)
    outer = s
  end
  T.eq(tostring(outer), "wb.stats.samples (closed)")
  T.raises(function() return #outer end, "closed")
  T.raises(function() outer:add(1) end, "closed")
  T.raises(function() return outer[1] end, "closed")
  T.raises(function() S.mean(outer) end, "closed")
  local s = S.samples()
  s:close()
  s:close()
  T.raises(function() s:totable() end, "closed")
end)

T.case("samples: 10,000 values cost about 80 KB", function()
  collectgarbage "collect"
  local before = collectgarbage "count"
  local s = S.samples()
  for i = 1, 10000 do s:add(i * 0.5) end
  local grown = collectgarbage "count" - before
  collectgarbage "collect"
  local kept = collectgarbage "count" - before
  T.ok(grown < 512, "growth while adding: " .. grown .. " KB")
  T.ok(kept >= 78 and kept < 200, "kept after a collection: " .. kept .. " KB")
  T.eq(#s, 10000)
  T.eq(s[10000], 5000)
  T.eq(S.summary(s).sum, 25002500)
  s = nil
  collectgarbage "collect"
  before = collectgarbage "count"
  local exact = S.samples(10000)
  for i = 1, 10000 do exact:add(i) end
  kept = collectgarbage "count" - before
  T.ok(kept >= 78 and kept < 82, "with the capacity given up front: " .. kept .. " KB")
end)

T.case("samples: integer arrays read, scale and encode as integers", function()
  local s = S.samples(4, "integer")
  T.eq(s:kind(), "integer")
  s:add(3)
  s:add(4.0)
  s:add(-7)
  T.raises(function() s:add(1.5) end, "integer expected")
  T.eq(math.type(s[1]), "integer")
  T.eq(s:totable(), { 3, 4, -7 })
  T.eq(tostring(s), "wb.stats.samples (n=3, integer)")
  T.eq(require("wb.json").encode(s), "[3,4,-7]")
  local kib = s:scaled(1024)
  T.eq(kib:kind(), "integer")
  T.eq(kib:totable(), { 3072, 4096, -7168 })
  T.eq(S.mean(s), 0)
  local f = S.samples(nil, "float")
  f:add(2)
  T.eq(f:kind(), "float")
  T.eq(math.type(f[1]), "float")
  T.eq(f:scaled(0.5):totable(), { 1.0 })
  T.raises(function() S.samples(1, "complex") end, "invalid option 'complex'")
  T.raises(function() s:scaled(0 / 0) end, "a finite number expected")
  T.raises(function() s:scaled(math.huge) end, "a finite number expected")
  local big = S.samples(1, "integer")
  big:add(1 << 52)
  T.raises(function() big:scaled(4) end, "out of the integer range at [1]")
end)

T.case("bootstrap_ci beyond 2e8 drawn values: the normal limit, the same interval as the bootstrap just below", function()
  local function sample(n, seed, scale) -- skewed times: 10 ms plus an exponential tail
    local out, x = {}, seed
    for i = 1, n do
      x = (x * 1103515245 + 12345) % 2147483648
      out[i] = scale * (0.01 + 0.002 * -math.log((x + 0.5) / 2147483648))
    end
    return out
  end
  local a, b = sample(60000, 7, 1.0), sample(60000, 11, 1.03)
  local cases = { { "ratio_mean", b }, { "ratio_median", b }, { "mean" }, { "median" } }
  for _, c in ipairs(cases) do
    -- 1500 resamples x 120,000 values = 1.8e8: bootstrapped; 2000 x 120,000 = 2.4e8: the normal limit
    local l1, h1, e1 = S.bootstrap_ci(a, c[2], { stat = c[1], resamples = c[2] and 1500 or 3000 })
    local l2, h2, e2 = S.bootstrap_ci(a, c[2], { stat = c[1], resamples = c[2] and 2000 or 4000 })
    local l3, h3 = S.bootstrap_ci(a, c[2], { stat = c[1], resamples = c[2] and 2000 or 4000, seed = 2 })
    T.eq({ l3, h3 }, { l2, h2 }, c[1] .. ": beyond the threshold the interval does not depend on the seed")
    T.eq(e2, e1, c[1] .. ": the estimate")
    local width = h1 - l1
    T.near(l2, l1, 0.1 * width, c[1] .. ": lower bound within 10% of the width")
    T.near(h2, h1, 0.1 * width, c[1] .. ": upper bound within 10% of the width")
  end
end)

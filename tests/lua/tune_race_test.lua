-- wb.tune_race and wb.stats.confseq against a noise model: trial times are a candidate's true
-- time, times a factor the whole block shares (the machine's drift), times its own log-normal
-- noise, drawn from seeded generators, so every figure here is the same on every run.
local T = require "wb.test"
local wb = require "wb"
local race_mod = require "wb.tune_race"

local generator = T.seeded

-- result = campaign(truth, seed, opts) : a race over the candidates of truth ({name = seconds}),
-- until one survives or opts.blocks blocks ran; noise opts.noise (log sd of a trial, default 3%),
-- drift opts.drift (log sd of a block, default 5%). {winner (the leader at the end), race}
local function campaign(truth, seed, opts)
  opts = opts or {}
  local u, normal = generator(seed)
  local names = {}
  for name in pairs(truth) do names[#names + 1] = name end
  table.sort(names)
  local race = race_mod.new { candidates = names, alpha = opts.alpha or 0.05, delta = opts.delta or 0.02 }
  for _ = 1, opts.blocks or 60 do
    if #race:alive() == 1 then break end
    local drift, cap, block = math.exp((opts.drift or 0.05) * normal()), race:cap_seconds(), {}
    for _, name in ipairs(race:order(u)) do
      local t = truth[name] * drift * math.exp((opts.noise or 0.03) * normal())
      block[name] = cap and t > cap and { seconds = cap, capped = true } or t
    end
    race:add(block)
  end
  return { winner = race:leader(), race = race }
end

-- 24 candidates: a 4 x 6 grid of two parameters whose runtime is a known function with one best
-- configuration, 5% ahead of the next.
local function grid()
  local truth = {}
  for a = 1, 4 do
    for b = 1, 6 do
      local t = 1 + 0.05 * ((a - 3) ^ 2 + (b - 2) ^ 2)
      truth[string.format("a%d_b%d", a, b)] = t
    end
  end
  return truth
end

T.case("confseq: covers the mean at every look in at least 1 - alpha of sequences; narrows as n grows", function()
  local u = generator(11)
  local misses, widths = 0, {}
  for s = 1, 200 do
    local xs, missed = {}, false
    for i = 1, 300 do
      xs[i] = u() ^ 2 -- mean 1/3
      if i % 10 == 0 then
        local lo, up = wb.stats.confseq(xs, 0.05)
        T.ok(lo <= up and lo >= 0 and up <= 1, "ordered and inside [0, 1]")
        if lo > 1 / 3 or up < 1 / 3 then missed = true end
        if s == 1 then widths[i] = up - lo end
      end
    end
    if missed then misses = misses + 1 end
  end
  T.ok(misses <= 10, misses .. " of 200 sequences missed the mean at one of their 30 looks")
  T.ok(widths[300] < widths[100] and widths[100] < widths[30], "narrower with more observations")
  T.ok(widths[300] < 0.15, "300 observations of sd 0.3: width " .. widths[300])
  local lo, up = wb.stats.confseq({}, 0.05, { lo = -2, hi = 2 })
  T.eq({ lo, up }, { -2, 2 })
  lo, up = wb.stats.confseq({ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 0.05, { lo = 0, hi = 2 })
  T.ok(lo < 1 and up > 1, string.format("a constant inside its interval: %.3f..%.3f", lo, up))
  T.raises(function() wb.stats.confseq({ 3 }, 0.05, { lo = 0, hi = 2 }) end, "outside [")
  T.raises(function() wb.stats.confseq({ 0.5 }, 1.5) end, "alpha must be in (0, 1)")
  T.raises(function() wb.stats.confseq({ 0.5 }, 0.05, { lo = 1, hi = 1 }) end, "lo must be below hi")
end)

T.case("the race finds the best of 24 configurations (5% ahead of the next) in at least 19 of 20 campaigns", function()
  local found, eliminated_best = 0, 0
  for seed = 1, 20 do
    local c = campaign(grid(), seed)
    if c.winner == "a3_b2" then found = found + 1 end
    for _, e in ipairs(c.race:eliminated()) do
      if e.name == "a3_b2" then eliminated_best = eliminated_best + 1 end
    end
  end
  T.ok(found >= 19, found .. " of 20 campaigns found a3_b2")
  T.eq(eliminated_best, 0, "the best is never eliminated")
end)

T.case("A/A: 24 equal candidates, none eliminated in at least 1 - alpha of 60 campaigns", function()
  local truth = {}
  for i = 1, 24 do truth["c" .. i] = 1.0 end
  local with = 0
  for seed = 101, 160 do
    if #campaign(truth, seed, { blocks = 40 }).race:eliminated() > 0 then with = with + 1 end
  end
  T.ok(with <= 3, with .. " of 60 A/A campaigns eliminated a candidate (alpha 0.05)")
end)

T.case("budget: racing 24 candidates runs at most half the trials of the full grid over the same blocks; " ..
  "the ledger adds up", function()
  for seed = 1, 5 do
    local c = campaign(grid(), seed, { blocks = 60 })
    local r = c.race
    T.ok(r.runs <= 0.5 * 24 * r.blocks, string.format("seed %d: %d runs in %d blocks (the grid: %d)", seed, r.runs,
      r.blocks, 24 * r.blocks))
    local sum = 0
    for _, e in ipairs(r:eliminated()) do
      sum = sum + e.trials
      T.ok(e.ratio > 1.02 and e.evalue >= 23 / 0.05, e.name .. " slower than " .. e.slower_than .. " by more than delta")
      T.ok(e.ratio_lower <= e.ratio and e.ratio <= e.ratio_upper)
      T.ok(e.block <= r.blocks)
    end
    local left = 0
    for _, name in ipairs(r:alive()) do left = left + #r.times[name] end
    T.eq(sum + left, r.runs, "the ledger adds up: every trial is a survivor's or an eliminated candidate's")
  end
end)

T.case("misuse raises: too few candidates, duplicates, a block missing a survivor or naming another", function()
  T.raises(function() race_mod.new { candidates = { "a" } } end, "at least two names")
  T.raises(function() race_mod.new { candidates = { "a", "a" } } end, "distinct names")
  T.raises(function() race_mod.new { candidates = { "a", "b" }, alpha = 2 } end, "alpha must be in (0, 1)")
  local r = race_mod.new { candidates = { "a", "b" } }
  T.raises(function() r:add { a = 1 } end, "b needs a time > 0")
  T.raises(function() r:add { a = 1, b = 1, c = 1 } end, "c is not a surviving candidate")
  T.raises(function() r:add { a = 1, b = -1 } end, "b needs a time > 0")
  T.eq(r:leader(), nil)
  T.eq(r:cap_seconds(), nil)
  r:add { a = 1, b = { seconds = 2, capped = true } }
  T.eq(r:leader(), "a")
  T.eq(r:cap_seconds(), 1.5)
end)

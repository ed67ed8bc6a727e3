-- The screening race of a tuning campaign (issue #34, `wb tune`): candidates run in blocks — one
-- trial of every surviving candidate per block, in a random order, on the same inputs — and a
-- candidate is eliminated once it is slower than another by more than `delta`, at an error level
-- `alpha` that holds however many blocks the race looks at.
--
-- Each two candidates in the same block give a paired difference d = log(t_i) - log(t_j) (what
-- the machine did to the whole block cancels). A candidate's trial is stopped at `cap` times the
-- leader's median time (irace's adaptive capping) and counts as that time. For every ordered pair
-- (i, j) the race bets that i is slower than j by more than delta in more than half of their
-- blocks (wb.stats.eprocess on the indicators d > log(1 + delta), against a mean of 1/2: a
-- nonnegative supermartingale while it is not so); i is eliminated when that capital reaches
-- (K - 1) / alpha. A candidate whose paired ratio to every other has a median of at most 1 + delta
-- (the fastest, and any within delta of it) is in K - 1 pairs, each of which reaches that with
-- probability at most alpha / (K - 1) (Ville's inequality): it survives with probability at least
-- 1 - alpha, however many blocks the race looks at and whenever it stops. Signs, not means: a
-- trial that an outside job slowed tenfold counts once, and precise timings decide in few blocks
-- (a bet on a bounded mean grows no faster than its range allows). The eliminated carry a
-- confidence sequence (wb.stats.confseq, at the same level) of their mean ratio to the one that
-- beat them, from the log ratios clipped to [-log(cap), log(cap)].
--
--   local race = tune_race.new { candidates = {"a", "b", ...}, alpha = 0.05, delta = 0.02, cap = 3 }
--   for _, name in ipairs(race:order(math.random)) do ... run it, stopping it at race:cap_seconds() ... end
--   race:add { a = 1.23, b = { seconds = 3.69, capped = true }, ... }
--   race:alive(), race:leader(), race:eliminated(), race.blocks, race.runs
local stats = require "wb.stats"

local M = {}

M.ALPHA, M.DELTA, M.CAP = 0.05, 0.02, 1.5

local Race = {}
Race.__index = Race

local function misuse(msg) error("wb.tune_race: " .. msg, 3) end

-- race = tune_race.new{candidates = {names}, alpha = 0.05, delta = 0.02, cap = 1.5} : raises on misuse
function M.new(spec)
  local names = spec.candidates
  if type(names) ~= "table" or #names < 2 then misuse("candidates: a list of at least two names") end
  local alpha, delta, cap = spec.alpha or M.ALPHA, spec.delta or M.DELTA, spec.cap or M.CAP
  if not (alpha > 0 and alpha < 1) then misuse("alpha must be in (0, 1)") end
  if not (delta >= 0) then misuse("delta must be >= 0") end
  if not (cap > 1 + delta) then misuse("cap must be above 1 + delta") end
  local r = setmetatable({ names = {}, index = {}, live = {}, times = {}, pairs = {}, out = {}, blocks = 0, runs = 0,
    alpha = alpha, delta = delta, cap = cap, bound = math.log(cap), pair_alpha = alpha / (#names - 1) },
    Race)
  for i, name in ipairs(names) do
    if type(name) ~= "string" or r.index[name] then misuse("candidates: distinct names expected") end
    r.names[i], r.index[name], r.live[name], r.times[name] = name, i, true, {}
  end
  return r
end

-- list = race:alive() : the surviving candidates, in the order given
function Race:alive()
  local out = {}
  for _, name in ipairs(self.names) do
    if self.live[name] then out[#out + 1] = name end
  end
  return out
end

-- out = tune_race.shuffled(list, rand) : a copy of list in a random order (Fisher-Yates with
-- rand() in [0, 1): math.random, or a seeded generator for a journaled campaign)
function M.shuffled(list, rand)
  local out = table.move(list, 1, #list, 1, {})
  for i = #out, 2, -1 do
    local j = math.floor(rand() * i) + 1
    out[i], out[j] = out[j], out[i]
  end
  return out
end

-- list = race:order(rand) : the surviving candidates in the order of the next block, shuffled
-- with rand() (tune_race.shuffled)
function Race:order(rand) return M.shuffled(self:alive(), rand) end

local function mean_log(xs)
  local s = 0
  for _, x in ipairs(xs) do s = s + math.log(x) end
  return s / #xs
end

-- name = race:leader() : the surviving candidate with the least mean log time (nil before a block)
function Race:leader()
  local best, at
  for _, name in ipairs(self:alive()) do
    local t = self.times[name]
    if #t > 0 then
      local m = mean_log(t)
      if not best or m < best then best, at = m, name end
    end
  end
  return at
end

-- seconds = race:cap_seconds() : where a trial of the next block is stopped: cap times the
-- leader's median time (nil before a block)
function Race:cap_seconds()
  local leader = self:leader()
  return leader and self.cap * stats.median(self.times[leader]) or nil
end

-- The clipped log ratios of a against b, block by block ({} when they never met).
function Race:ratios(a, b)
  local forward = self.index[a] < self.index[b]
  local ds = self.pairs[forward and (a .. "\0" .. b) or (b .. "\0" .. a)] or {}
  if forward then return ds end
  local out = {}
  for i, d in ipairs(ds) do out[i] = -d end
  return out
end

-- lower, upper = race:interval(a, b) : the confidence sequence (at the race's pair level) of the
-- ratio of a's time to b's (the exp of their mean clipped log ratio)
function Race:interval(a, b)
  local lo, up = stats.confseq(self:ratios(a, b), self.pair_alpha, { lo = -self.bound, hi = self.bound })
  return math.exp(lo), math.exp(up)
end

-- race:add(block) : one block's trials, {[name] = seconds | {seconds = s, capped = true}} for
-- every surviving candidate (raises on a missing or unknown one, or a time that is not > 0);
-- then eliminates what the confidence sequences now exclude
function Race:add(block)
  local alive = self:alive()
  local t = {}
  for name in pairs(block) do
    if not self.live[name] then misuse("add: " .. tostring(name) .. " is not a surviving candidate") end
  end
  for _, name in ipairs(alive) do
    local v = block[name]
    local s = type(v) == "table" and v.seconds or v
    if type(s) ~= "number" or not (s > 0) or s == math.huge then
      misuse("add: " .. name .. " needs a time > 0, got " .. tostring(s))
    end
    t[name] = s
  end
  for i, a in ipairs(alive) do
    self.times[a][#self.times[a] + 1] = t[a]
    for j = i + 1, #alive do
      local b = alive[j]
      local first, second = a, b
      if self.index[a] > self.index[b] then first, second = b, a end
      local key = first .. "\0" .. second
      local d = math.log(t[first]) - math.log(t[second])
      local ds = self.pairs[key] or {}
      self.pairs[key] = ds
      ds[#ds + 1] = math.max(-self.bound, math.min(self.bound, d))
    end
  end
  self.blocks, self.runs = self.blocks + 1, self.runs + #alive
  local margin, gone = math.log(1 + self.delta), {}
  for _, a in ipairs(alive) do
    for _, b in ipairs(self.names) do
      local ds = b ~= a and self:ratios(a, b) or {}
      local signs = {}
      for i, d in ipairs(ds) do signs[i] = d > margin and 1 or 0 end
      local e = #ds > 0 and stats.eprocess(signs, 0.5) or 0
      if e >= 1 / self.pair_alpha then
        local sum, wins = 0, 0
        for i, d in ipairs(ds) do sum, wins = sum + d, wins + signs[i] end
        local lo, up = self:interval(a, b)
        gone[#gone + 1] = { name = a, block = self.blocks, slower_than = b, ratio = math.exp(sum / #ds),
          ratio_lower = lo, ratio_upper = up, evalue = e, trials = #self.times[a], slower_blocks = wins,
          met_blocks = #ds }
        break
      end
    end
  end
  if #gone == #alive then -- only when the sequences failed (at most alpha): the leader stays
    local leader = self:leader()
    for i, g in ipairs(gone) do
      if g.name == leader then table.remove(gone, i) break end
    end
  end
  for _, g in ipairs(gone) do
    self.live[g.name] = false
    self.out[#self.out + 1] = g
  end
end

-- race:drop(name, why) : a surviving candidate leaves the race without a time (its trial failed:
-- why, e.g. "exit 3"); it goes into race:eliminated() with failed = why
function Race:drop(name, why)
  if not self.live[name] then misuse("drop: " .. tostring(name) .. " is not a surviving candidate") end
  self.live[name] = false
  self.out[#self.out + 1] = { name = name, block = self.blocks + 1, failed = tostring(why), trials = #self.times[name] }
end

-- list = race:eliminated() : {name, block, slower_than, ratio (its mean clipped ratio to
-- slower_than), ratio_lower, ratio_upper (race:interval), evalue (the capital that eliminated it),
-- trials, slower_blocks (the blocks it was slower than slower_than by more than delta in), met_blocks} (a dropped one: {name, block, failed, trials}), in the order of elimination
function Race:eliminated() return self.out end

return M

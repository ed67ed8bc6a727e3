-- Confirm before alarming (docs/compare.md): the commands behind a comparison's changes run
-- again, base and new interleaved in one wb.bench run on this machine now, so that whatever the
-- machine does (other jobs, a slower host, drift between the two original runs) hits both
-- alike; each changed row gets the verdict of that re-run beside its own, and a change the
-- re-run does not bear out no longer counts (one that could not be re-run still does).
--
--   local result = compare.compare(base_set, new_set)
--   confirm.run(result, base_doc, new_doc)  -- wb.bench summaries of both sides
local json = require "wb.json"
local util = require "wb.util"

local M = {}

-- The verdicts a confirmation re-runs: a change, or one the load may have made or hidden.
M.TO_CONFIRM = { regression = true, improvement = true, confounded = true, interference = true }

-- yes = confirm.needs(row) : whether a comparison row is re-run: a verdict of TO_CONFIRM, or a
-- time whose sides ran under materially different load (its "unchanged" may be a real change the
-- load hid: more work on the quieter side).
function M.needs(r)
  return M.TO_CONFIRM[r.verdict] or (r.kind == "time" and r.tested and r.load ~= nil and r.load.heavier ~= nil)
end

-- The timed runs of each side of a re-run: a confirmation should settle it (beside heavy load a
-- planted 10% was confirmed in 3 of 4 pairs with 10 runs a side).
M.MIN_RUNS = 20
-- The allocation runs a side of a re-run of a record whose bytes allocated changed (an exact count).
M.ALLOC_RUNS = 5

-- The commands of a wb.bench summary by name: {argv, cwd}.
local function commands_of(doc)
  local out = {}
  for _, c in ipairs(type(doc) == "table" and type(doc.commands) == "table" and doc.commands or {}) do
    if type(c) == "table" and c.name ~= nil then out[tostring(c.name)] = c end
  end
  return out
end

-- Why the record's two commands cannot be re-run as the two sides, or nil.
local function cannot(b, n)
  if not b or not n then return "the command is missing on one side" end
  if not util.is_list(b.argv) or not util.is_list(n.argv) or #b.argv == 0 or #n.argv == 0 then
    return "a side does not record its command's arguments (a summary of an older wb)"
  end
  if type(b.cwd) ~= "string" or type(n.cwd) ~= "string" then
    return "a side does not record the directory its command ran in (a summary of an older wb)"
  end
  if json.encode(b.argv) == json.encode(n.argv) and b.cwd == n.cwd then
    return "both sides are the same command in the same directory, so the base's code is not there to run " ..
        "(keep the base's build beside the new one, or compare two builds with wb bench BASE NEW)"
  end
  return nil
end

-- One wb.bench summary holding command c of the re-run under the original's name.
local function as_summary(summary, c, name)
  local doc = json.object()
  for k, v in pairs(summary) do doc[k] = v end
  local cmd = json.object()
  for k, v in pairs(c) do cmd[k] = v end
  cmd.name = name
  doc.commands, doc.comparisons = json.array({ cmd }), json.array()
  return doc
end

-- The re-run of one record: its rows of the comparison of the interleaved samples, by row name.
local function rerun(name, b, n, opts, threshold)
  local bench, compare = require "wb.bench", require "wb.compare"
  local runs = math.max(opts.runs or M.MIN_RUNS, 2)
  io.stderr:write(string.format("confirm: %s: base and new again, interleaved, %d runs each\n", name, runs))
  local ok, summary = pcall(bench.run, { commands = { { name = "base", argv = b.argv, cwd = b.cwd },
    { name = "new", argv = n.argv, cwd = n.cwd } }, runs = runs, warmup = opts.warmup or 1, seed = opts.seed or 1,
    timeout = opts.timeout, alloc_runs = opts.alloc_runs })
  if not ok then
    if type(summary) == "table" and summary.interrupted then error(summary, 0) end
    return nil, "the re-run failed: " .. (type(summary) == "table" and tostring(summary.msg) or tostring(summary))
  end
  local res = compare.compare(compare.from_document(as_summary(summary, summary.commands[1], name), "base (re-run)"),
    compare.from_document(as_summary(summary, summary.commands[2], name), "new (re-run)"),
    { threshold = threshold, interleaved = true })
  local by = {}
  for _, r in ipairs(res.rows) do by[r.name] = r end
  return by
end

-- confirm.run(result, base_doc, new_doc [, {runs, warmup, seed, timeout}]) : every row of the
-- wb.compare result that needs it (confirm.needs), confirmed by a re-run of its record's two
-- commands (from the wb.bench summaries base_doc and new_doc). Each such row gets confirmation
-- {verdict ("not confirmable" when it could not run), reason, ratio}; result.confirmed is set and
-- the summary's regressions and improvements count the confirmed changes and, failing closed,
-- those that could not be re-run (unconfirmable); unconfirmed: the changes a re-run did not bear out.
function M.run(result, base_doc, new_doc, opts)
  opts = opts or {}
  local bases, news = commands_of(base_doc), commands_of(new_doc)
  local reruns, allocs = {}, {}
  for _, r in ipairs(result.rows) do -- a record with a change in the bytes allocated: its re-run counts them
    if M.needs(r) and r.metric == "alloc_bytes mean" then allocs[r.record] = true end
  end
  for _, r in ipairs(result.rows) do
    if M.needs(r) and r.record ~= nil and reruns[r.record] == nil then
      local b, n = bases[r.record], news[r.record]
      local why = cannot(b, n)
      local rows
      local o = setmetatable({ alloc_runs = allocs[r.record] and M.ALLOC_RUNS or nil }, { __index = opts })
      if not why then rows, why = rerun(r.record, b, n, o, result.threshold) end
      reruns[r.record] = rows or why
    end
  end
  return M.apply(result, reruns)
end

-- result = confirm.apply(result, reruns) : each row that needs it (confirm.needs) confirmed by
-- reruns[its record] (the re-run's rows by name, or why there is none) as confirm.run says: a
-- change that could not be re-run keeps its verdict in the counts (a gate must not pass on a
-- change nothing disproved)
function M.apply(result, reruns)
  local counts = { regression = 0, improvement = 0, unconfirmed = 0, unconfirmable = 0 }
  local called = { regression = true, improvement = true }
  for _, r in ipairs(result.rows) do
    if M.needs(r) then
      local got = reruns[r.record]
      local row = type(got) == "table" and got[r.name]
      local conf = json.object()
      if row then
        conf.verdict, conf.reason, conf.ratio = row.verdict, row.reason, row.ratio or json.null
        if called[conf.verdict] then counts[conf.verdict] = counts[conf.verdict] + 1 end
        if called[r.verdict] and conf.verdict ~= r.verdict then counts.unconfirmed = counts.unconfirmed + 1 end
      else
        conf.verdict = "not confirmable"
        conf.reason = type(got) == "string" and got or "the re-run has no such metric"
        conf.ratio = json.null
        if called[r.verdict] then
          counts[r.verdict] = counts[r.verdict] + 1
          counts.unconfirmable = counts.unconfirmable + 1
        end
      end
      r.confirmation = conf
    end
  end
  local s = result.summary
  s.regressions, s.improvements = counts.regression, counts.improvement
  s.unconfirmed, s.unconfirmable = counts.unconfirmed, counts.unconfirmable
  local function n(k, what) return string.format("%d %s%s", counts[k], what, counts[k] == 1 and "" or "s") end
  s.text = s.text .. "; confirmed by an interleaved re-run: " .. n("regression", "regression") .. ", " ..
      n("improvement", "improvement") .. " (" .. n("unconfirmed", "change") .. " not confirmed" ..
      (counts.unconfirmable > 0 and ("; " .. n("unconfirmable", "change") .. " that could not be re-run, counted as called")
        or "") .. ")"
  result.confirmed = true
  return result
end

-- text = confirm.text(r) : a row's confirmation as the report's "confirmed" column shows it
function M.text(r)
  local c = r.confirmation
  if not c then return "" end
  if c.verdict == "not confirmed" or c.verdict == "not confirmable" then return c.verdict .. ": " .. c.reason end
  return c.reason
end

return M

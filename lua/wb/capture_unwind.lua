-- Profile-quality figures of a capture whose user stacks were walked with call-frame information
-- (wb.capture{unwind = "dwarf"}: wb.perf.sampler's unwind statistics, core/unwind.c): which
-- unwinding each object used, the share of samples whose stack reaches the process or thread
-- entry, the share of walks that stopped early and why, the cost.
local M = {}

local STACK_LOST = ";" .. require("wb.capture_fold").STACK_LOST

-- Frames that only a complete stack holds: the process's entry (through libc's start-up) and a
-- thread's (glibc's start_thread, called from clone3/clone).
M.ENTRY = { main = true, _start = true, __libc_start_main = true, __libc_start_call_main = true,
  start_thread = true, clone3 = true, __clone3 = true, clone = true, __clone = true }

M.TRUNCATED_LIMIT = 0.05 -- warn above this share of walks that stopped early
M.TRUNCATED_MIN = 10      -- ... when at least this many did
M.NO_CFI_SHARE = 0.01     -- name an object without CFI or frame pointers that stopped this share of walks
M.BPF_STACK_MAX = 16376   -- the most bytes of user stack wb.bpf copies per record
M.STACK_MAX = 65528       -- the most bytes perf_event copies per sample (PERF_SAMPLE_STACK_USER)

-- fraction, total = M.reach_entry(folded_text) : the share of counts whose stack holds an entry frame
-- (the root frame, the process name, is not looked at; versioned names as "name@@GLIBC_2.34"),
-- time kept without its stack ("[stack lost]") left out; total: the counts looked at
function M.reach_entry(text)
  local total, reach = 0, 0
  for line in text:gmatch("[^\n]+") do
    local stack, n = line:match("^(.*) (%d+)$")
    if stack and not stack:find(STACK_LOST, 1, true) then
      n = tonumber(n)
      total = total + n
      local first = true
      for f in (stack .. ";"):gmatch("([^;]*);") do
        if not first and M.ENTRY[f:match("^[^@]*")] then
          reach = reach + n
          break
        end
        first = false
      end
    end
  end
  return total > 0 and reach / total or 0, total
end

-- figures = M.figures(stats, folded_text) : stats is a sampler's read().unwind; figures =
-- {method = "dwarf", stack_size, walks, truncated, truncated_fraction, reach_entry_fraction,
-- reasons = {reason = walks} (the non-zero ones), objects = {{path, method, cfi, fp, stopped,
-- stops = {reason = walks}}}
-- (most frames first), seconds (walking), ns_per_sample, stack_bytes}
function M.figures(u, text)
  local reasons = {}
  for k, v in pairs(u.reasons) do
    if v > 0 then reasons[k] = v end
  end
  local objects = {}
  for i, o in ipairs(u.objects) do
    objects[i] = { path = o.path, build_id = o.build_id ~= "" and o.build_id or nil, method = o.method,
      cfi = o.cfi, fp = o.fp, stopped = o.stopped, stops = o.stops }
  end
  table.sort(objects, function(a, b)
    if a.cfi + a.fp ~= b.cfi + b.fp then return a.cfi + a.fp > b.cfi + b.fp end
    return a.path < b.path
  end)
  return { method = "dwarf", stack_size = u.stack_size, walks = u.walks, truncated = u.truncated,
    truncated_fraction = u.walks > 0 and u.truncated / u.walks or 0, reach_entry_fraction = M.reach_entry(text),
    reasons = reasons, objects = objects, seconds = u.seconds,
    ns_per_sample = u.walks > 0 and u.seconds * 1e9 / u.walks or 0, stack_bytes = u.stack_bytes }
end

-- M.warn(warnings, figures) : warnings where stacks stopped early: an object with neither CFI nor
-- frame pointers for the pcs the walks met (which object, how many walks), and, when more than
-- TRUNCATED_LIMIT of the walks (and at least TRUNCATED_MIN) stopped early, why and where
-- text = M.reasons_text(reasons) : why walks stopped early, as "complex_rule 1, off_stack 218"
-- (reasons as in figures: walks by why they ended; the complete ones are left out)
function M.reasons_text(reasons)
  local why = {}
  for k, v in pairs(reasons) do
    if k ~= "complete" then why[#why + 1] = string.format("%s %d", k, v) end
  end
  table.sort(why)
  return table.concat(why, ", ")
end

function M.warn(w, fig)
  for _, o in ipairs(fig.objects) do
    local n = o.stops.no_cfi or 0
    if n > 0 and n >= M.NO_CFI_SHARE * fig.walks then
      w[#w + 1] = string.format("%s has neither call-frame information nor frame pointers where %d of %d user "
        .. "stacks were: their callers are missing (rebuild it with -fasynchronous-unwind-tables, gcc's default, "
        .. "or -fno-omit-frame-pointer)", o.path, n, fig.walks)
    end
  end
  if fig.truncated_fraction <= M.TRUNCATED_LIMIT or fig.truncated < M.TRUNCATED_MIN then return end
  local where = {}
  for _, o in ipairs(fig.objects) do
    if o.stopped > 0 then where[#where + 1] = string.format("%s (%d)", o.path, o.stopped) end
  end
  local hint = ""
  -- deep stacks or large frames (a big buffer on main's frame): the copies were too short
  -- (walks without any copy, of exiting or exec'ing processes, are no sign of short copies)
  if (fig.reasons.off_stack or 0) * 2 >= fig.truncated - (fig.reasons.no_stack or 0) and fig.stack_size < M.STACK_MAX then
    hint = string.format("; most ran past the end of their %d-byte stack copies: raise stack_size (%s)",
      fig.stack_size, fig.stack_size < M.BPF_STACK_MAX and "stack_size=" .. M.BPF_STACK_MAX .. ", or up to "
      .. M.STACK_MAX .. " with method=perf_event" or "up to " .. M.STACK_MAX .. " with method=perf_event")
  end
  w[#w + 1] = string.format("%.0f%% of user stacks are truncated (%s)%s; their callers are missing%s",
    fig.truncated_fraction * 100, M.reasons_text(fig.reasons),
    #where > 0 and (": stopped in " .. table.concat(where, ", ")) or "", hint)
end

return M

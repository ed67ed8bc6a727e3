-- Text and HTML views of a wb.capture result (lua/wb/capture.lua): the summary `wb profile`
-- prints, and a self-contained HTML page with the counters, the top functions and the flame
-- graphs (each SVG embedded whole in an iframe's srcdoc, so its zoom and search work and nothing
-- is loaded from elsewhere).
local fold = require "wb.capture_fold"
local fs = require "wb.fs"
local page = require "wb.page"
local util = require "wb.util"

local M = {}

local seconds = util.format_seconds -- the one formatter of durations and counts (lua/wb/util.lua)

local function grouped(n) return util.thousands(math.floor(n + 0.5)) end

-- s = capture_report.counter_text(reading) : "2.01 s", "1,234 (scaled ×1.6)" or "unavailable: why"
function M.counter_text(r)
  if not r.available then return "unavailable: " .. tostring(r.reason) end
  local v = r.unit == "ns" and seconds(r.value / 1e9) or grouped(r.value)
  if r.scaled then v = v .. string.format(" (scaled, counted %.0f%% of the time)", r.running_fraction * 100) end
  if r.user_only then v = v .. " (user space only)" end
  return v
end

local function pct(x) return string.format("%5.1f%%", x * 100) end

-- s = capture_report.kib_text(kb) : "812 KiB", "201.3 MiB", "2.10 GiB"
function M.kib_text(kb)
  if kb < 1024 then return string.format("%d KiB", kb) end
  if kb < 1024 * 1024 then return string.format("%.1f MiB", kb / 1024) end
  return string.format("%.2f GiB", kb / 1024 / 1024)
end

-- list = capture_report.largest(processes) : the processes by peak RSS, largest first
function M.largest(processes)
  local list = {}
  for i, p in ipairs(processes) do list[i] = p end
  table.sort(list, function(a, b) return a.peak_rss_kb > b.peak_rss_kb or (a.peak_rss_kb == b.peak_rss_kb and a.pid < b.pid) end)
  return list
end

-- The first n rows of a top-functions list, one line each: self and total share, name, and the
-- place of its self time (fold.locate) where it has one: "  self total  name  at file:line".
local function top_lines(add, rows, n)
  for i, row in ipairs(rows) do
    if i > n then break end
    local where = fold.where(row)
    add("  %s %s  %s%s", pct(row.self_fraction), pct(row.total_fraction), row.name, where and "  at " .. where or "")
  end
end

-- line = M.python_source(res) : how res.python's frames were read (merged or the fallback sampler)
function M.python_source(res)
  local py = res.python
  if py.source == "bpf" then
    return string.format("Python frames: read by the BPF program with each native sample and merged into its stack "
      .. "(each _PyEval_EvalFrameDefault replaced by the Python functions it ran; %d of %d on-CPU samples); "
      .. "the Python-only view below", py.samples_merged or 0, res.oncpu and res.oncpu.samples or 0)
  end
  return string.format("Python frames: sampled apart from the native stacks by a thread of wb's (method %s "
    .. "reads no Python frames at sample time; eBPF with unwind=dwarf merges them)", res.method)
end

-- lines = capture_report.loss_lines(res) : what was lost beyond 1 point of a profile's shares
-- (M.LOSS_POINTS), each saying how far its shares may be off: the worst case, all of the lost
-- share in one function
M.LOSS_POINTS = 1
function M.loss_lines(res)
  local out = {}
  local on, off = res.oncpu, res.offcpu
  if on and not on.skipped and (on.lost or 0) > 0 then
    local share = 100 * on.lost / (on.samples + on.lost)
    if share > M.LOSS_POINTS then
      out[#out + 1] = string.format("LOSS: %s of %s on-CPU samples were lost (%.1f%%): each share below may be off " ..
        "by up to %.1f points", grouped(on.lost), grouped(on.samples + on.lost), share, share)
    end
  end
  if off and not off.skipped and (off.lost or 0) > 0 then
    out[#out + 1] = string.format("LOSS: %s off-CPU intervals were lost with their time (a full map): the off-CPU " ..
      "profile undercounts by an unknown amount", grouped(off.lost))
  end
  if off and not off.skipped and off.total_seconds and off.total_seconds > 0 then
    local share = 100 * (off.stack_lost_seconds or 0) / off.total_seconds
    if share > M.LOSS_POINTS then
      out[#out + 1] = string.format("LOSS: %s of %s off-CPU (%.1f%%) has no stack ([stack lost]): each off-CPU " ..
        "share below may be off by up to %.1f points", seconds(off.stack_lost_seconds), seconds(off.total_seconds),
        share, share)
    end
  end
  return out
end

-- lines = capture_report.waits_for_lines(c) : what the tree's processes waited for in each other
-- (at most 5 of at least 1% of the wall time), which the critical path follows instead
function M.waits_for_lines(c)
  local out = {}
  for _, w in ipairs(c.waits_for or {}) do
    if #out < 5 and w.seconds >= 0.01 * c.wall_seconds then
      out[#out + 1] = w.pid == w.waker_pid
        and string.format("%s[%d] waited %s for its own threads", w.comm, w.pid, seconds(w.seconds))
        or string.format("%s[%d] waited %s for %s[%d]", w.comm, w.pid, seconds(w.seconds), w.waker_comm, w.waker_pid)
    end
  end
  return out
end

-- lead, processes = capture_report.critical_lines(c) : the critical path's split by kind, and its
-- processes with their shares (at most 5, those of at least 1% of it)
function M.critical_lines(c)
  local w = c.wall_seconds
  local k = c.by_kind
  local lead = string.format("%s of wall time followed: on a CPU %s (%s), runnable but not running %s (%s), " ..
    "waiting on something outside the process tree %s (%s)%s", seconds(w), seconds(k.oncpu), pct(k.oncpu / w),
    seconds(k.runqueue), pct(k.runqueue / w), seconds(k.wait), pct(k.wait / w),
    k.unknown > 0 and string.format(", not traced %s", seconds(k.unknown)) or "")
  local procs = {}
  for _, p in ipairs(c.by_process) do
    local t = p.oncpu + p.runqueue + p.wait + p.unknown
    if #procs < 5 and t >= 0.01 * w then
      procs[#procs + 1] = string.format("%s %s[%d] (on a CPU %s, runnable %s, waiting %s)", pct(t / w), p.comm, p.pid,
        seconds(p.oncpu), seconds(p.runqueue), seconds(p.wait))
    end
  end
  return lead, procs
end

-- text = capture_report.text(res [, {top = 15, command}]) : the plain-text summary, its losses
-- (M.loss_lines) first
function M.text(res, opts)
  opts = opts or {}
  local n = opts.top or 15
  local out = {}
  local function add(...) out[#out + 1] = string.format(...) end
  local r = res.result or {}
  add("wb profile: %s (method %s, %d Hz, %s wall, %s)", opts.command or "", res.method, res.freq or 0,
    seconds(r.wall or 0), r.exited and ("exit " .. r.code) or ("signal " .. tostring(r.signal)))
  if res.fallback then add("  fallback: %s", res.fallback) end
  for _, line in ipairs(M.loss_lines(res)) do add("%s", line) end
  if res.counters then
    add("")
    add("counters")
    local names = require("wb.core").ordered_keys(res.counters) or {}
    for _, k in ipairs(names) do add("  %-18s %s", k, M.counter_text(res.counters[k])) end
  end
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    local p = res[kind]
    if p then
      add("")
      if p.skipped then
        add("%s: skipped: %s", kind == "oncpu" and "on-CPU" or "off-CPU", p.skipped)
      else
        if kind == "oncpu" then
          add("on-CPU: %s samples; top functions (self, total share of samples)", grouped(p.samples))
          local u = p.unwind
          if u then
            local used = {}
            for _, o in ipairs(u.objects) do used[#used + 1] = (o.path:match("[^/]+$") or o.path) .. " " .. o.method end
            add("  unwinding: CFI from %d-byte stack copies; %s of stacks reach main/_start/start_thread, %s "
              .. "truncated, %.1f us per sample; %s", u.stack_size, pct(u.reach_entry_fraction),
              pct(u.truncated_fraction), u.ns_per_sample / 1000, table.concat(used, ", "))
          end
          local c = res.symbolize
          if c and c.addresses > 0 then
            local most = {}
            for i = 1, math.min(3, #c.objects) do
              local obj = c.objects[i]
              most[i] = string.format("%s %s", obj.path:match("[^/]+$") or obj.path, seconds(obj.seconds))
            end
            add("  symbolized: %s addresses in %s; most: %s", grouped(c.addresses), seconds(c.seconds),
              table.concat(most, ", "))
          end
        else
          add("off-CPU: %s (blocked %s, run queue %s%s); top functions (self, total share of off-CPU time)",
            seconds(p.total_seconds), seconds(p.blocked_seconds), seconds(p.runqueue_seconds), M.stack_lost_text(p))
        end
        top_lines(add, p.top, n)
      end
    end
  end
  if res.critical then
    local lead, procs = M.critical_lines(res.critical)
    add("")
    add("critical path: %s", lead)
    for _, line in ipairs(procs) do add("  %s", line) end
    local waits = M.waits_for_lines(res.critical)
    if #waits > 0 then
      add("  waits for the tree's own processes and threads (the path follows them instead):")
      for _, line in ipairs(waits) do add("    %s", line) end
    end
    add("  top functions and waits on it (self, total share of the path)")
    top_lines(add, res.critical.top, n)
  end
  local py = res.python
  if py and py.source then
    add("")
    add("%s", M.python_source(res))
  end
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    local p = py and py[kind]
    if p and p.samples > 0 then
      add("")
      if kind == "oncpu" then
        add("Python on-CPU: %s samples; top Python functions (self, total share of samples)", grouped(p.samples))
      else
        add("Python off-CPU: %s; top Python functions (self, total share of off-CPU time)", seconds(p.total_seconds))
      end
      top_lines(add, p.top, n)
    end
  end
  local mem = res.memory
  if mem then
    add("")
    if mem.skipped then
      add("memory: skipped: %s", mem.skipped)
    else
      add("memory: tree peak RSS %s at %s%s (%d samples at %g Hz); largest processes (peak RSS, own peak)",
        M.kib_text(mem.peak_rss_kb), seconds(mem.peak_t), mem.peak_pss_kb and (", PSS " .. M.kib_text(mem.peak_pss_kb)) or "",
        mem.samples, mem.hz)
      for i, p in ipairs(M.largest(mem.processes)) do
        if i > 5 then break end
        add("  %10s %10s  %s %d", M.kib_text(p.peak_rss_kb), M.kib_text(p.hwm_kb), p.comm, p.pid)
      end
      if mem.stages and #mem.stages > 0 then
        add("  stages (RSS growth, peak RSS):")
        local rows = require("wb.memory_stages").rows(mem.stages, M.kib_text, seconds)
        for i = 2, #rows do -- after the header
          local row = rows[i]
          add("  %12s %10s  %s %s%s", row[5], row[6], row[1], row[2], row[7] ~= "" and " (holds the tree's peak)" or "")
        end
      end
    end
  end
  if res.alloc then require("wb.alloc_report").text(add, res.alloc, n) end
  if #res.warnings > 0 then
    add("")
    for _, w in ipairs(res.warnings) do add("warning: %s", w) end
  end
  return table.concat(out, "\n") .. "\n"
end

-- What a profile page adds to the page kit's style sheet.
local CSS = [[
td.r{white-space:nowrap}
code{word-break:break-all}
iframe{width:100%;border:1px solid #eaeef2;border-radius:6px;margin-top:12px;background:#fff}
figure.memory{margin:8px 0 12px}figure.memory svg{width:100%;height:auto;min-width:0}
]]

-- The top rows as a table; a "where" column (fold.locate's place of their self time) when any has one.
local function top_table(rows, n)
  local located = false
  for i, row in ipairs(rows) do located = located or (i <= n and row.file ~= nil) end
  local t = { { "function", "self", "total", located and "where (most self time)" or nil } }
  for i, row in ipairs(rows) do
    if i > n then break end
    local where = fold.where(row)
    t[#t + 1] = { page.code(row.name), pct(row.self_fraction), pct(row.total_fraction),
      located and (where and page.code(where) or "") or nil }
  end
  return page.table(t, { align = { "l", "r", "r", "l" } })
end

local function meta(x) return page.p(x, { class = "meta" }) end

-- A flame graph of more than this many bytes is linked, not embedded: a browser opening a page of
-- tens of megabytes of SVG stalls (a clang++ compile's report was 28.7 MB).
M.EMBED_MAX = 8 * 1024 * 1024

-- The flame graph at path embedded in the page, or, over M.EMBED_MAX, a link to it (relative to
-- base, the page's directory, when it is below it) and why it was left out.
local function flame_frame(path, title, base)
  local st = path and fs.stat(path)
  if st and st.size > M.EMBED_MAX then
    local href = base and path:sub(1, #base + 1) == base .. "/" and path:sub(#base + 2) or ("file://" .. path)
    return meta(page.join { string.format("%s: %s, not embedded (over %s): ", title, util.format_bytes(st.size),
      util.format_bytes(M.EMBED_MAX)), page.link(href, href) })
  end
  local text = path and fs.read(path)
  return text and page.frame(text, title) or nil
end

-- sections = capture_report.memory_sections(res [, n = 25 [, base]]) : the Memory section (the
-- timeline chart and the largest processes' peaks) and the Allocations section of a wb.capture
-- result, as page kit sections, those it has (base: as capture_report.html's)
function M.memory_sections(res, n, base)
  n = n or 25
  local section, out = page.section, {}
  local mem = res.memory
  if mem and mem.skipped then
    out[#out + 1] = section("Memory", meta("skipped: " .. mem.skipped))
  elseif mem then
    local rows = { { "process", "peak RSS", "at", "own peak (VmHWM)", "peak PSS", "seen" } }
    for i, p in ipairs(M.largest(mem.processes)) do
      if i > n then break end
      rows[#rows + 1] = { page.code(p.comm .. " " .. p.pid), M.kib_text(p.peak_rss_kb), seconds(p.peak_t),
        M.kib_text(p.hwm_kb), p.peak_pss_kb and M.kib_text(p.peak_pss_kb) or "–",
        seconds(p.first_t) .. " – " .. seconds(p.last_t) }
    end
    local chart = mem.svg and fs.read(mem.svg)
    local blocks = { meta(string.format("tree peak RSS %s at %s%s · %d samples at %g Hz", M.kib_text(mem.peak_rss_kb),
      seconds(mem.peak_t), mem.peak_pss_kb and (", PSS " .. M.kib_text(mem.peak_pss_kb)) or "", mem.samples, mem.hz)) }
    if chart then blocks[#blocks + 1] = page.figure(chart, "Resident memory of the process tree over time", { class = "memory" }) end
    if mem.stages and #mem.stages > 0 then
      blocks[#blocks + 1] = page.table(require("wb.memory_stages").rows(mem.stages, M.kib_text, seconds),
        { align = { "l", "r", "r", "r", "r", "r", "l" } })
    end
    blocks[#blocks + 1] = page.table(rows, { align = { "l", "r", "r", "r", "r", "r" } })
    out[#out + 1] = section("Memory", blocks)
  end
  if res.alloc then
    local function frame(path, title) return flame_frame(path, title, base) end
    out[#out + 1] = require("wb.alloc_report").html(res.alloc, { flame = frame, top = top_table, n = n })
  end
  return out
end

-- text = M.stack_lost_text(offcpu) : "; without their stack 12.3 ms" when some off-CPU time was
-- kept without its stack (under wb.capture_fold's STACK_LOST), else ""
function M.stack_lost_text(p)
  if (p.stack_lost_seconds or 0) <= 0 then return "" end
  return "; without their stack " .. seconds(p.stack_lost_seconds)
end

-- blocks = capture_report.quality_blocks(res) : the profile's quality as the report shows it (empty
-- without CFI unwinding figures): a table of the whole-profile figures, then one row per object
-- with how its frames were unwound, where walks stopped there and why, and what naming its
-- addresses cost
function M.quality_blocks(res)
  local u = res.oncpu and res.oncpu.unwind
  if not u then return {} end
  local function share(x) return x and (pct(x):gsub("^ +", "")) or "" end
  local reasons = require("wb.capture_unwind").reasons_text
  local rows = { { "figure", "value" },
    { "user stacks walked with CFI", string.format("%s, from %d-byte stack copies (%s copied)", grouped(u.walks),
      u.stack_size, M.kib_text(math.floor(u.stack_bytes / 1024 + 0.5))) },
    { "on-CPU stacks reaching main, _start or start_thread", share(u.reach_entry_fraction) },
  }
  local off = res.offcpu and res.offcpu.unwind
  if off then rows[#rows + 1] = { "off-CPU stacks reaching them", share(off.reach_entry_fraction) } end
  rows[#rows + 1] = { "truncated walks", share(u.truncated_fraction)
    .. (u.truncated > 0 and (" (" .. reasons(u.reasons) .. ")") or "") }
  rows[#rows + 1] = { "on-CPU samples with an unresolved frame", share(res.oncpu.unresolved_fraction) }
  rows[#rows + 1] = { "on-CPU samples lost", grouped(res.oncpu.lost or 0) }
  local o = res.offcpu
  if o and not o.skipped then
    rows[#rows + 1] = { "off-CPU intervals lost (time and stack)", grouped(o.lost or 0) }
    rows[#rows + 1] = { "off-CPU intervals without their stack ([stack lost])", string.format("%s, %s (%s of the off-CPU time)",
      grouped(o.stack_lost or 0), seconds(o.stack_lost_seconds or 0),
      share((o.stack_lost_seconds or 0) / math.max(o.total_seconds or 0, 1e-9))) }
    rows[#rows + 1] = { "off-CPU intervals whose switch-in the kernel did not report (ended by the next switch-out)",
      grouped(o.inferred_ins or 0) }
  end
  rows[#rows + 1] = { "fork, exec and exit records lost", grouped(res.lost_images or 0) }
  rows[#rows + 1] = { "walking", string.format("%s, %.1f µs per stack", seconds(u.seconds), u.ns_per_sample / 1000) }
  local c = res.symbolize
  if c then
    rows[#rows + 1] = { "symbolization", string.format("%s addresses in %s", grouped(c.addresses), seconds(c.seconds)) }
  end
  local cost = {}
  for _, o in ipairs(c and c.objects or {}) do cost[o.path] = o end
  local objs = { { "object", "unwound with", "frames (CFI / frame pointers)", "walks stopped here", "symbolized" } }
  for _, o in ipairs(u.objects) do
    local sc = cost[o.path]
    objs[#objs + 1] = { o.path, o.method, string.format("%s / %s", grouped(o.cfi), grouped(o.fp)),
      o.stopped > 0 and string.format("%s (%s)", grouped(o.stopped), reasons(o.stops)) or "0",
      sc and string.format("%s addresses, %s", grouped(sc.addresses), seconds(sc.seconds)) or "" }
  end
  return { page.table(rows, { align = { "l", "l" } }), page.table(objs, { align = { "l", "l", "r", "l", "r" } }) }
end

-- html = capture_report.html(res [, {title, command, top = 25, diffs = {{title, path, href}}, sections,
-- base}]) : the whole page; diffs are differential flame graphs (path read and embedded, href
-- linked); sections, page-kit blocks added before them (a step's tasks:
-- wb.slurm_capture.report_sections); base, the directory the page is written to (a flame graph
-- over M.EMBED_MAX is linked relative to it)
function M.html(res, opts)
  opts = opts or {}
  local n = opts.top or 25
  local r = res.result or {}
  local doc = page.document { title = opts.title or "Profile", css = CSS, meta = {
    { page.code(opts.command or "") },
    { page.join { "method ", page.strong(res.method) }, string.format("%d Hz", res.freq or 0),
      seconds(r.wall or 0) .. " wall", r.exited and ("exit " .. r.code) or ("signal " .. tostring(r.signal)) },
    res.fallback and { "fallback: " .. res.fallback } or nil,
  } }
  local section = page.section
  local loss = M.loss_lines(res)
  if #loss > 0 then doc:add(section("Loss", page.list(loss), { class = "warnings" })) end
  if #res.warnings > 0 then doc:add(section("Warnings", page.list(res.warnings), { class = "warnings" })) end
  if res.counters then
    local rows = { { "event", "value" } }
    for _, k in ipairs(require("wb.core").ordered_keys(res.counters) or {}) do
      rows[#rows + 1] = { k, M.counter_text(res.counters[k]) }
    end
    doc:add(section("Counters", page.table(rows)))
  end
  local quality = M.quality_blocks(res)
  if #quality > 0 then doc:add(section("Profile quality", quality)) end
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    local p = res[kind]
    local name = kind == "oncpu" and "On-CPU" or "Off-CPU"
    if p and p.skipped then
      doc:add(section(name, meta("skipped: " .. p.skipped)))
    elseif p then
      local lead = kind == "oncpu" and string.format("%s samples", grouped(p.samples)) or
        string.format("%s off the CPU: blocked %s, waiting on the run queue %s%s", seconds(p.total_seconds),
          seconds(p.blocked_seconds), seconds(p.runqueue_seconds), M.stack_lost_text(p))
      doc:add(section(name, { meta(lead), top_table(p.top, n), flame_frame(p.svg, name .. " flame graph", opts.base) }))
    end
  end
  if res.critical then
    local lead, procs = M.critical_lines(res.critical)
    local blocks = { meta("The time the run's wall clock followed across its processes and threads: a wait " ..
      "for another thread of the tree is replaced by what that thread did meanwhile. " .. lead), page.list(procs) }
    local waits = M.waits_for_lines(res.critical)
    if #waits > 0 then
      blocks[#blocks + 1] = meta("Waits for the tree's own processes and threads, which the path follows instead: " ..
        table.concat(waits, "; "))
    end
    blocks[#blocks + 1] = top_table(res.critical.top, n)
    blocks[#blocks + 1] = flame_frame(res.critical.svg, "Critical path flame graph", opts.base)
    doc:add(section("Critical path", blocks))
  end
  local py = res.python
  for _, kind in ipairs({ "oncpu", "offcpu" }) do
    local p = py and py[kind]
    if p and p.samples > 0 then
      local name = kind == "oncpu" and "Python on-CPU" or "Python off-CPU"
      if kind == "oncpu" then doc:add(meta(M.python_source(res))) end
      local lead = kind == "oncpu" and string.format("%s samples of Python stacks", grouped(p.samples)) or
        string.format("%s off the CPU in Python code", seconds(p.total_seconds))
      doc:add(section(name, { meta(lead), top_table(p.top, n), flame_frame(p.svg, name .. " flame graph", opts.base) }))
    end
  end
  for _, b in ipairs(M.memory_sections(res, n, opts.base)) do doc:add(b) end
  for _, b in ipairs(opts.sections or {}) do doc:add(b) end
  for _, d in ipairs(opts.diffs or {}) do
    doc:add(section(d.title, { meta(page.join { page.link(d.href), " (red: more than before, blue: less)" }),
      flame_frame(d.path, d.title, opts.base) }))
  end
  local prof = { { "profiler", "available", "version", "notes" } }
  for _, e in ipairs(res.profilers or {}) do
    prof[#prof + 1] = { e.name, e.available and "yes" or "no", e.version or "", e.notes or "" }
  end
  doc:add(section("Profilers on this machine", page.table(prof)))
  return page.html(doc)
end

return M

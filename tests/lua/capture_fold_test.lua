local T = require "wb.test"
local fold = require "wb.capture_fold"

-- A symbolizer stand-in: addresses are already names; "[unknown]" ones count as unresolved.
local fake = {
  frames = function(_, _, addrs)
    local list, bad = {}, 0
    for i, a in ipairs(addrs) do
      list[i] = a
      if a:find("^%[unknown%]") or a:find("%+0x%x+$") then bad = bad + 1 end
    end
    return list, bad
  end,
}

T.case("off-CPU stacks lose the probe's own leaf frames, its unnamed BPF frames included", function()
  local records = {
    { pid = 1, comm = "app", kind = "blocked", count = 5, user = { "main" },
      kernel = { "[unknown]_[k]", "bpf_trace_run4_[k]", "__schedule_[k]", "schedule_[k]", "[unknown]_[k]" } },
  }
  local text, info = fold.fold(records, fake)
  -- leaf first in, root first out: the probe frames at the leaf are gone, an unnamed frame
  -- elsewhere in the stack stays (and still counts as unresolved)
  T.eq(text, "app;main;[unknown]_[k];schedule_[k];__schedule_[k] 5\n")
  T.eq(info.unresolved, 5)
  text, info = fold.fold({ { pid = 1, comm = "app", kind = "blocked", count = 2, user = { "main" },
    kernel = { "[unknown]_[k]", "bpf_trace_run4_[k]", "__schedule_[k]" } } }, fake)
  T.eq(text, "app;main;__schedule_[k] 2\n")
  T.eq(info.unresolved, 0, "the dropped probe frame was the only unnamed one")
end)

T.case("a probe frame named after whatever kernel symbol precedes the JIT'd program is dropped too", function()
  local text = fold.fold({ { pid = 1, comm = "app", kind = "blocked", count = 3, user = { "main" },
    kernel = { "_einittext_[k]", "bpf_trace_run4_[k]", "__schedule_[k]", "schedule_[k]" } } }, fake)
  T.eq(text, "app;main;schedule_[k];__schedule_[k] 3\n")
  -- past the first PROBE_DEPTH frames a machinery name is the kernel's own business
  local deep = {}
  for i = 1, fold.PROBE_DEPTH do deep[i] = "f" .. i .. "_[k]" end
  deep[#deep + 1] = "perf_trace_x_[k]"
  text = fold.fold({ { pid = 1, comm = "app", kind = "blocked", count = 1, user = {}, kernel = deep } }, fake)
  T.ok(text:find("perf_trace_x_[k];f" .. fold.PROBE_DEPTH .. "_[k]", 1, true), text)
end)

T.case("a user stack whose walk stopped early is marked with the frames shown; cut kernel walks too", function()
  local function rec(user, count)
    return { pid = 1, comm = "app", kind = "oncpu", count = count, user = user, kernel = {} }
  end
  local text = fold.fold({ rec({ "leaf", "mid", fold.TRUNCATED_PC }, 2), rec({ "leaf", "mid", "main" }, 1) }, fake)
  T.eq(text, "app;[truncated after 2 frames];mid;leaf 2\napp;main;mid;leaf 1\n")
  local long = {}
  for i = 1, 127 do long[i] = "f" .. i end
  text = fold.fold({ rec(long, 1) }, fake, { cut = fold.KERNEL_MAX_DEPTH })
  T.match(text, "^app;%[truncated after 127 frames%];f127;")
  T.match(fold.fold({ rec(long, 1) }, fake), "^app;f127;", "without cut, 127 frames are just a stack")
  local _, info = fold.fold({ rec({ "leaf", fold.TRUNCATED_PC }, 4) }, fake)
  local top = fold.top(info.stacks, 5)
  T.eq(#top, 1, "the mark is not a function in the top table")
  T.eq(top[1].name, "leaf")
end)

T.case("top: the unresolved addresses of one module are one row", function()
  local stacks = {
    { frames = { "xz", "main", "liblzma.so.5+0x15bc9" }, count = 3 },
    { frames = { "xz", "main", "liblzma.so.5+0x15b76" }, count = 2 },
    { frames = { "xz", "main", "lzma_code" }, count = 1 },
  }
  local top = fold.top(stacks, 5)
  T.eq(top[1].name, "liblzma.so.5 (unresolved addresses)")
  T.eq(top[1].self, 5)
  T.eq(top[2].name, "lzma_code")
  T.eq(fold.module_of("liblzma.so.5.4.1+0x15bc9"), "liblzma.so.5.4.1")
  T.eq(fold.module_of("lzma_code"), nil)
end)

T.case("locate: a top row's place is the line most of its own self count was sampled at", function()
  -- addresses "name@file:line": the symbolizer names the function and places the leaf address
  local placed = {
    frames = function(_, _, addrs)
      local list, leaf = {}, nil
      for i, a in ipairs(addrs) do
        local name, file, line = a:match("^(.-)@(.*):(%d+)$")
        list[i] = name or a
        if i == 1 and name then leaf = { file = file, line = tonumber(line) } end
      end
      return list, 0, nil, leaf
    end,
  }
  local function rec(user, kernel, count, python)
    return { pid = 1, comm = "app", kind = "oncpu", count = count, user = user, kernel = kernel or {}, python = python }
  end
  -- a Python collector stand-in: r.python's frames replace the native leaf (an interpreter's
  -- eval loop), as the merge does; "GIL" puts the GIL wait's mark before it
  local merge = {
    add = function(_, _, user, r)
      local out = { r.python }
      for i = r.python == "[waiting for the GIL]" and 1 or 2, #user do out[#out + 1] = user[i] end
      return out
    end,
  }
  local _, info = fold.fold({
    rec({ "hot@h.c:10", "a@h.c:30", "main@h.c:40" }, nil, 3),
    rec({ "hot@h.c:11", "b@h.c:31", "main@h.c:41" }, nil, 2),
    rec({ "hot@h.c:11", "a@h.c:30", "main@h.c:40" }, nil, 2), -- h.c:11 over two paths: 4 against 3
    rec({ "hot@h.c:12", "a@h.c:30", "main@h.c:40" }, { "sys_read_[k]" }, 9), -- self in the kernel
    rec({ "_PyEval_EvalFrameDefault@ceval.c:5", "main@h.c:40" }, nil, 6, "work (<frozen os>:3)"),
    rec({ "futex_wait@futex.c:9", "main@h.c:40" }, nil, 5, "[waiting for the GIL]"),
    rec({ "lib.so+0x10" }, nil, 1),
  }, placed, { python = merge })
  local top = fold.locate(fold.top(info.stacks, 10), info.located)
  local where = {}
  for _, row in ipairs(top) do where[row.name] = fold.where(row) or false end
  T.eq(where["hot"], "h.c:11", "hot: its line with the most self samples, summed over its callers")
  T.eq(where["sys_read_[k]"], false, "a kernel frame: no place")
  T.eq(where["work (<frozen os>:3)"], false, "a Python frame merged in the eval loop's stead: not the loop's line")
  T.eq(where["[waiting for the GIL]"], false, "the GIL mark merged before a native leaf: not its line")
  T.eq(where["lib.so (unresolved addresses)"], false, "no line known")
  -- user_only (off-CPU): the kernel stack's self goes to hot, at h.c:12
  top = fold.locate(fold.top(info.stacks, 10, { user_only = true }), info.located, { user_only = true })
  T.eq(fold.where(top[1]), "h.c:12", top[1].name)
  -- keep: the stacks given to top were chosen, and so are the ones that place its rows
  local function no_kernel(frames) return not frames[#frames]:find("_%[k%]$") end
  top = fold.locate(fold.top(info.stacks, 10, { user_only = true }), info.located, { user_only = true, keep = no_kernel })
  for _, row in ipairs(top) do
    if row.name == "hot" then T.eq(fold.where(row), "h.c:11", "the kernel stack left out") end
  end
end)

T.case("by_name: processes matched by name, not by pid", function()
  -- two runs of one command: a driver and two helpers, with other pids
  local a = "drv-100;main 5\nhelper-104;hot 40\nhelper-102;hot 38\nhelper-102;cold 2\n"
  local b = "drv-7000;main 6\nhelper-7003;hot 41\nhelper-7001;hot 37\nhelper-7001;cold 1\n"
  T.eq(fold.by_name(a), "drv;main 5\nhelper;hot 40\nhelper;hot 38\nhelper;cold 2\n")
  T.eq(fold.by_name(b), "drv;main 6\nhelper;hot 41\nhelper;hot 37\nhelper;cold 1\n")
  -- read as stacks, the helpers are one: 78 under helper;hot in both runs
  local flame = require "wb.flame"
  local function hot(text)
    local n = 0
    for _, st in ipairs((flame.parse(fold.by_name(text)))) do
      if st.frames[1] == "helper" and st.frames[2] == "hot" then n = n + st.count end
    end
    return n
  end
  T.eq({ hot(a), hot(b) }, { 78, 78 })
  -- a process alone (root = "comm", or one process) and text in another form are kept as they are
  T.eq(fold.by_name("cpu_split;spin_a 10\n"), "cpu_split;spin_a 10\n")
  T.eq(fold.by_name("x-12;f 3\n"), "x-12;f 3\n")
  T.eq(fold.by_name("a-1;f 1\nb;g 2\n"), "a-1;f 1\nb;g 2\n")
  T.eq(fold.by_name(""), "")
  -- a comm that ends in -digits itself, and a root frame with no stack above it
  T.eq(fold.by_name("w-1-5 2\nw-1-9;f 3\n"), "w-1 2\nw-1;f 3\n")
end)

T.case("test.probe_frame: frames of wb's own probes, not another tool's trampoline or kernel bpf_* code", function()
  T.eq(T.probe_frame("app;start_thread;do_exit_[k];switch_task_namespaces_[k];__bpf_prog_enter_recur_[k] 1\n"), nil)
  T.eq(T.probe_frame("app;reap;wait4;release_task_[k];security_inode_free_[k];bpf_inode_storage_free_[k] 5\n"), nil)
  T.eq(T.probe_frame("a;main 3\napp;spin;asm_sysvec_[k];bpf_overflow_handler_[k];bpf_prog_6deef7357e7b4530_on_cpu_[k] 2\n"),
    "app;spin;asm_sysvec_[k];bpf_overflow_handler_[k];bpf_prog_6deef7357e7b4530_on_cpu_[k] 2")
  T.eq(T.probe_frame("app;x;__bpf_trace_sched_switch_[k] 1"), "app;x;__bpf_trace_sched_switch_[k] 1")
  T.eq(T.probe_frame(""), nil)
end)

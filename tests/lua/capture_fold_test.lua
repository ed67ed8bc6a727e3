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

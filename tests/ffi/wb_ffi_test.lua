-- Loads core/wb.h unchanged into LuaJIT's FFI and calls libwb.so through it: version, clock,
-- spawn/wait, JSON, and that it leaves process-wide state alone.
-- Run: luajit tests/ffi/wb_ffi_test.lua [BUILD_DIR]
local ffi = require "ffi"
local build = arg[1] or os.getenv("WB_BUILD") or "build"

local header = assert(io.open("core/wb.h")):read("*a")
ffi.cdef(header)
local wb = ffi.load(build .. "/libwb.so")

local passed, failed = 0, 0
local function case(name, fn)
  local ok, err = pcall(fn)
  if ok then
    passed = passed + 1
    print("ok - " .. name)
  else
    failed = failed + 1
    print("not ok - " .. name .. "\n    " .. tostring(err))
  end
end

case("wb_version", function()
  assert(ffi.string(wb.wb_version()):match("^%d+%.%d+%.%d+$"))
end)

case("wb_clock_ns is monotonic", function()
  local a = wb.wb_clock_ns()
  local b = wb.wb_clock_ns()
  assert(b >= a and a > 0)
end)

case("wb_child_spawn + wb_child_wait run a real process", function()
  local out = os.tmpname()
  local argv = ffi.new("const char *[4]", { "sh", "-c", "echo hello from ffi; exit 3" })
  local err = ffi.new("char[256]")
  local child = wb.wb_child_spawn(argv, nil, out, "", 10, 1, err, 256)
  assert(child ~= nil, ffi.string(err))
  assert(wb.wb_child_pid(child) > 0)
  local res = ffi.new("wb_child_result")
  assert(wb.wb_child_wait(child, res) == 0)
  wb.wb_child_free(child)
  assert(res.exited == 1 and res.exit_code == 3, "exit code " .. res.exit_code)
  assert(res.wall_ns > 0)
  local f = io.open(out)
  local text = f:read("*a")
  f:close()
  os.remove(out)
  assert(text == "hello from ffi\n", text)
end)

case("wb_child_spawn reports a missing executable", function()
  local argv = ffi.new("const char *[2]", { "wb-no-such-program" })
  local err = ffi.new("char[256]")
  local child = wb.wb_child_spawn(argv, nil, nil, nil, 0, 0, err, 256)
  assert(child == nil)
  assert(ffi.string(err) == "spawn: wb-no-such-program: No such file or directory", ffi.string(err))
end)

case("wb_json_reformat canonicalises and reports errors with line and column", function()
  local err = ffi.new("char[256]")
  local text = '{"b": [1, 2.5, true, null],\n "a": "x"}'
  local s = wb.wb_json_reformat(text, #text, 0, err, 256)
  assert(s ~= nil, ffi.string(err))
  assert(ffi.string(s) == '{"b":[1,2.5,true,null],"a":"x"}', ffi.string(s))
  wb.wb_free(s)
  local bad = '{"a": 1,\n "b": }'
  s = wb.wb_json_reformat(bad, #bad, 0, err, 256)
  assert(s == nil)
  assert(ffi.string(err):match("^json: line 2 col %d+: "), ffi.string(err))
end)

case("libwb.so changes no process-wide state: not a subreaper, the descriptor limit as it was", function()
  ffi.cdef [[
    int prctl(int option, ...);
    struct wb_test_rlimit { unsigned long cur, max; };
    int getrlimit(int resource, struct wb_test_rlimit *rl);
    int setrlimit(int resource, const struct wb_test_rlimit *rl);
  ]]
  local PR_GET_CHILD_SUBREAPER, RLIMIT_NOFILE = 37, 7
  local before = ffi.new("struct wb_test_rlimit")
  assert(ffi.C.getrlimit(RLIMIT_NOFILE, before) == 0)
  if before.cur == before.max and before.max > 64 then -- a soft limit that wb would raise
    before.cur = 64
    assert(ffi.C.setrlimit(RLIMIT_NOFILE, before) == 0)
  end
  local argv = ffi.new("const char *[4]", { "sh", "-c", "exit 0" })
  local err = ffi.new("char[256]")
  local child = wb.wb_child_spawn(argv, nil, "", "", 10, 1, err, 256)
  assert(child ~= nil, ffi.string(err))
  local res = ffi.new("wb_child_result")
  assert(wb.wb_child_wait(child, res) == 0 and res.exit_code == 0)
  wb.wb_child_free(child)
  local flag = ffi.new("int[1]", -1)
  assert(ffi.C.prctl(PR_GET_CHILD_SUBREAPER, flag) == 0)
  assert(flag[0] == 0, "luajit became a child subreaper")
  local after = ffi.new("struct wb_test_rlimit")
  assert(ffi.C.getrlimit(RLIMIT_NOFILE, after) == 0)
  assert(after.cur == before.cur, "the soft descriptor limit changed")
end)

print(string.format("%d passed, %d failed", passed, failed))
os.exit(failed == 0 and 0 or 1)

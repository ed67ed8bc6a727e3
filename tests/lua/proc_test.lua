local T = require "wb.test"
local proc = require "wb.proc"
local fs = require "wb.fs"
local clock = require "wb.clock"

local function sh(script, extra)
  local spec = { argv = { "sh", "-c", script } }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return spec
end

local function lines_of(s)
  local out = {}
  for l in s:gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

local function my_pid() return tonumber(assert(fs.read("/proc/self/stat")):match("^(%d+)")) end

-- What descriptor n of a child started with `spec` (running sleep) refers to.
local function child_fd(spec, n)
  spec.argv = { "sleep", "10" }
  local p <close> = assert(proc.spawn(spec))
  return assert(fs.readlink("/proc/" .. p.pid .. "/fd/" .. n))
end

-- A sleep duration no other process uses, so its processes can be found by command line.
local function marker() return string.format("%d.%06d", math.random(90, 99), math.random(0, 999999)) end

-- The pids of live processes whose command line is `sleep MARKER`.
local function survivors(m)
  local r = proc.run { argv = { "pgrep", "-f", "^sleep " .. (m:gsub("%.", "\\.")) .. "$" }, stdout = "capture" }
  return r.stdout
end

-- Waits (up to 10 s) until `count` processes `sleep MARKER` run; returns how many do.
local function await_survivors(m, count)
  return T.wait_until(count .. " processes sleep " .. m, 10, function()
    local n = T.count(survivors(m), "\n")
    return n >= count and n
  end)
end

T.case("argv runs without a shell; arguments arrive intact", function()
  local r = proc.run { argv = { "printf", "[%s]\n", "a b", "q\"uo'te", "$HOME", "*" }, stdout = "capture" }
  T.eq(r.stdout, "[a b]\n[q\"uo'te]\n[$HOME]\n[*]\n")
  T.ok(r.ok and r.exited and r.code == 0 and r.signal == nil and not r.timed_out)
  T.eq(math.type(r.pid), "integer")
  local n = proc.run { argv = { "sh", "-c", "echo $#:$1", "sh", 42 }, stdout = "capture" }
  T.eq(n.stdout, "1:42\n")
end)

-- A child that writes without newlines must not make wb hold its output whole: an over-long line
-- reaches the callback in 1 MiB pieces (piece = true on all but the last), counted once.
T.case("a 3 MiB line reaches a line callback in 1 MiB pieces, counted as one long line", function()
  local got, pieces, flags = {}, 0, {}
  local res = proc.run { argv = { "sh", "-c", "head -c 3200000 /dev/zero | tr '\\0' x; printf '\\nshort\\n'" },
    stdout = function(line, piece)
      pieces = pieces + 1
      got[#got + 1] = line
      flags[#flags + 1] = piece
      T.ok(#line <= 1 << 20, "piece of " .. #line .. " bytes")
    end }
  T.ok(res.ok)
  T.eq(pieces, 5) -- 1 MiB x 3, the rest of the long line, "short"
  T.eq(flags, { true, true, true, false, false })
  T.eq(table.concat(got, "", 1, 4), string.rep("x", 3200000))
  T.eq(got[5], "short")
  T.eq(res.stdout_long_lines, 1)
end)

T.case("shell=true runs cmd (or a string argv) through /bin/sh -c", function()
  T.eq(proc.run({ shell = true, cmd = "echo $((1+2)) | tr 3 x", stdout = "capture" }).stdout, "x\n")
  T.eq(proc.run({ shell = true, argv = "echo a; echo b", stdout = "capture" }).stdout, "a\nb\n")
end)

T.case("env adds to the environment; env_mode=replace gives exactly env", function()
  local r = proc.run(sh('printf "%s|%s" "$WB_T1" "${PATH:+set}"', { env = { WB_T1 = "v 1" }, stdout = "capture" }))
  T.eq(r.stdout, "v 1|set")
  local over = proc.run(sh('printf %s "$HOME"', { env = { HOME = "/elsewhere" }, stdout = "capture" }))
  T.eq(over.stdout, "/elsewhere")
  local rep = proc.run { argv = { "env" }, env = { A = "1", B = "x=y" }, env_mode = "replace", stdout = "capture" }
  local got = lines_of(rep.stdout)
  table.sort(got)
  T.eq(got, { "A=1", "B=x=y" })
end)

T.case("argv[1] is looked up in the child's PATH when env sets it", function()
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/wbtool", "#!/bin/sh\necho tool:$1\n"))
  os.execute("chmod +x " .. dir .. "/wbtool")
  local r = proc.run { argv = { "wbtool", "z" }, env = { PATH = dir .. ":/usr/bin:/bin" }, stdout = "capture" }
  T.eq(r.stdout, "tool:z\n")
  local p, err = proc.spawn { argv = { "wbtool" } }
  T.eq({ p, err }, { nil, "spawn: wbtool: No such file or directory" })
  T.eq(proc.which("wbtool", dir), dir .. "/wbtool")
  T.eq(proc.which("wbtool"), nil)
  T.match(proc.which("sh"), "^/.*/sh$")
  T.eq(proc.which("nosuchprog"), nil)
end)

T.case("cwd; a missing cwd is an error", function()
  local dir = T.tmpdir()
  T.eq(proc.run({ argv = { "pwd" }, cwd = dir, stdout = "capture" }).stdout, dir .. "\n")
  local r, err, errno = proc.run { argv = { "pwd" }, cwd = dir .. "/nope" }
  T.eq({ r, err, errno }, { nil, "spawn: cwd " .. dir .. "/nope: No such file or directory", 2 })
end)

T.case("stdin: null (default), file, data (1 MiB through cat), inherit", function()
  T.eq(proc.run({ argv = { "cat" }, stdout = "capture" }).stdout, "")
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/in", "from file\n"))
  T.eq(proc.run({ argv = { "cat" }, stdin = { file = dir .. "/in" }, stdout = "capture" }).stdout, "from file\n")
  local chunk = {}
  for i = 1, 16384 do chunk[i] = string.format("%063d\n", i) end
  local big = table.concat(chunk)
  T.eq(#big, 1 << 20)
  local r = proc.run { argv = { "cat" }, stdin = { data = big }, stdout = "capture" }
  T.ok(r.stdout == big, "1 MiB came back intact")
  T.eq(proc.run({ argv = { "cat" }, stdin = { data = "" }, stdout = "capture" }).stdout, "")
  local res, err, errno = proc.run { argv = { "cat" }, stdin = { file = dir .. "/missing" } }
  T.eq({ res, err, errno }, { nil, "spawn: stdin " .. dir .. "/missing: No such file or directory", 2 })
  T.eq(child_fd({ stdin = "inherit" }, 0), assert(fs.readlink("/proc/" .. my_pid() .. "/fd/0")))
  T.eq(child_fd({}, 0), "/dev/null")
end)

T.case("stdout/stderr: inherit, null, file, append, capture, tee", function()
  local pid = my_pid()
  T.eq(child_fd({}, 1), assert(fs.readlink("/proc/" .. pid .. "/fd/1")))
  T.eq(child_fd({ stdout = "inherit", stderr = "inherit" }, 2), assert(fs.readlink("/proc/" .. pid .. "/fd/2")))
  T.eq(child_fd({ stdout = "null" }, 1), "/dev/null")
  T.eq(child_fd({ stderr = "null" }, 2), "/dev/null")
  T.eq(proc.run(sh("true", { stderr = "capture" })).stdout, nil)
  local dir = T.tmpdir()
  local f = dir .. "/out"
  proc.run(sh("echo one; echo err1 >&2", { stdout = { file = f }, stderr = { file = dir .. "/err" } }))
  proc.run(sh("echo two", { stdout = { file = f, append = true } }))
  T.eq(assert(fs.read(f)), "one\ntwo\n")
  T.eq(assert(fs.read(dir .. "/err")), "err1\n")
  proc.run(sh("echo three", { stdout = { file = f } }))
  T.eq(assert(fs.read(f)), "three\n")
  local both = proc.run(sh("echo out; echo err >&2", { stdout = "capture", stderr = "capture" }))
  T.eq({ both.stdout, both.stderr }, { "out\n", "err\n" })
  local tee = proc.run(sh("echo t1; echo t2 >&2", { stdout = { tee = f, append = true }, stderr = { tee = dir .. "/e2" } }))
  T.eq({ tee.stdout, tee.stderr }, { "t1\n", "t2\n" })
  T.eq(assert(fs.read(f)), "three\nt1\n")
  T.eq(assert(fs.read(dir .. "/e2")), "t2\n")
  local r, err, errno = proc.run { argv = { "true" }, stdout = { file = dir .. "/no/such/dir" } }
  T.eq({ r, err, errno }, { nil, "spawn: stdout " .. dir .. "/no/such/dir: No such file or directory", 2 })
  r, err = proc.run { argv = { "true" }, stderr = { tee = dir } }
  T.eq({ r, err }, { nil, "spawn: stderr " .. dir .. ": Is a directory" })
end)

T.case("line callbacks get each line without newline, a final partial line too", function()
  local out, err = {}, {}
  local r = proc.run(sh("printf 'a\\n\\nb'; printf 'c\\n'; printf 'x\\ny' >&2; printf 'tail'", {
    stdout = function(l) out[#out + 1] = l end,
    stderr = function(l) err[#err + 1] = l end,
  }))
  T.ok(r.ok)
  T.eq(out, { "a", "", "bc", "tail" })
  T.eq(err, { "x", "y" })
  T.eq({ r.stdout, r.stderr }, { nil, nil })
end)

T.case("line_time: when wb read the line, not when a busy callback got it; restored after a nested wait", function()
  T.eq(proc.line_time(), nil)
  local seen = {}
  local r = proc.run(sh("printf 'a\\nb\\n'; sleep 0.3; printf 'c\\n'", {
    stdout = function(l)
      seen[#seen + 1] = { l, proc.line_time(), clock.now() }
      if l == "a" then
        local until_ns = clock.now() + 200e6
        while clock.now() < until_ns do end
        local inner = proc.run(sh("echo inner", { stdout = function() end }))
        T.ok(inner.ok)
        T.eq(proc.line_time(), seen[1][2], "the outer line's time is back after a nested wait")
      end
    end,
  }))
  T.ok(r.ok)
  T.eq(#seen, 3)
  T.eq(seen[2][2], seen[1][2], "a and b came in one read")
  T.ok(seen[2][3] - seen[2][2] >= 200e6, "b was delivered after a's 200 ms callback")
  T.ok(seen[1][2] <= seen[1][3] and seen[3][2] <= seen[3][3])
  T.ok(seen[3][2] - seen[1][2] >= 250e6, "c was read after the child's 0.3 s sleep")
  T.eq(proc.line_time(), nil)
end)

T.case("stderr = \"stdout\" merges into stdout's destination", function()
  local r = proc.run(sh("echo o1; echo e1 >&2; echo o2", { stdout = "capture", stderr = "stdout" }))
  T.eq(r.stdout, "o1\ne1\no2\n")
  T.eq(r.stderr, nil)
  local dir = T.tmpdir()
  proc.run(sh("echo o; echo e >&2", { stdout = { file = dir .. "/m" }, stderr = "stdout" }))
  T.eq(assert(fs.read(dir .. "/m")), "o\ne\n")
  local seen = {}
  proc.run(sh("echo o; echo e >&2", { stdout = function(l) seen[#seen + 1] = l end, stderr = "stdout" }))
  T.eq(seen, { "o", "e" })
end)

T.case("exit codes and signals", function()
  local r = proc.run(sh("exit 3"))
  T.eq({ r.exited, r.code, r.signal, r.ok }, { true, 3, nil, false })
  local k = proc.run(sh("kill -9 $$"))
  T.eq({ k.exited, k.code, k.signal, k.ok }, { false, nil, 9, false })
end)

T.case("a missing executable is an error value, not a crash", function()
  local p, err, errno = proc.spawn { argv = { "nosuchprog", "x" } }
  T.eq({ p, err, errno }, { nil, "spawn: nosuchprog: No such file or directory", 2 })
  local r, rerr = proc.run { argv = { "/nonexistent/prog" } }
  T.eq({ r, rerr }, { nil, "spawn: /nonexistent/prog: No such file or directory" })
  local _, perr = proc.run { argv = { "/etc/passwd" } }
  T.eq(perr, "spawn: /etc/passwd: Permission denied")
end)

T.case("misuse raises", function()
  T.raises(function() proc.spawn("ls") end, "table expected")
  T.raises(function() proc.spawn {} end, "argv must be a non-empty table of strings")
  T.raises(function() proc.spawn { argv = "ls" } end, "argv must be a non-empty table of strings")
  T.raises(function() proc.spawn { argv = { "ls", {} } } end, "argv[2] must be a string")
  T.raises(function() proc.spawn { argv = { "ls" }, stdout = "bogus" } end, "unknown stdout mode 'bogus'")
  T.raises(function() proc.spawn { argv = { "ls" }, stdout = "stdout" } end, "unknown stdout mode 'stdout'")
  T.raises(function() proc.spawn { argv = { "ls" }, stderr = {} } end, "stderr table needs file or tee")
  T.raises(function() proc.spawn { argv = { "ls" }, stdin = "capture" } end, "stdin must be")
  T.raises(function() proc.spawn { argv = { "ls" }, timeout = -1 } end, "timeout must not be negative")
  T.raises(function() proc.spawn { argv = { "ls" }, grace = "x" } end, "grace must be a number")
  T.raises(function() proc.spawn { argv = { "ls" }, env = { 1 } } end, "env must be a table")
  T.raises(function() proc.spawn { argv = { "ls" }, env_mode = "merge" } end, "env_mode must be")
  T.raises(function() proc.spawn { shell = true } end, "shell=true needs cmd")
  T.raises(function() proc.wait_any { 1 } end, "a list of wb.proc handles expected")
  T.raises(function() proc.wait_any({}, -1) end, "timeout must not be negative")
end)

-- A bash child that prints, on SIGTERM, how long it had run by its own clock ($EPOCHREALTIME):
-- the deadline as the child saw it, free of the test's own scheduling delays.
local CLOCKED = [[s=$EPOCHREALTIME; trap 'echo "$s $EPOCHREALTIME"; exit 0' TERM; sleep 30 & wait]]
local function child_seconds(res)
  local a, b = (res.stdout or ""):match("^([%d.]+) ([%d.]+)\n$")
  T.ok(a, "the child's clock readings, got " .. T.show(res.stdout))
  return tonumber(b) - tonumber(a)
end
-- The deadline by the child's clock: at most the timeout (the child starts after start_ns), late
-- by no more than 0.35 s of wake-up on a loaded machine (3x late, 1.5 s, is far outside).
local function check_deadline(seconds, timeout, early)
  T.between(seconds, timeout - early, timeout + 0.35, "seconds to SIGTERM by the child's clock")
end

T.case("timeout: the child gets SIGTERM at the deadline, by its own clock", function()
  local r = proc.run { argv = { "bash", "-c", CLOCKED }, timeout = 0.5, stdout = "capture" }
  T.eq(r.timed_out, true)
  check_deadline(child_seconds(r), 0.5, 0.5)
  T.between(r.wall, 0.5, 0.5 + 0.6, "wall")
end)

T.case("timeout = 0: the child is ended at once; no timeout given: it is not", function()
  local r = proc.run { argv = { "sleep", "5" }, timeout = 0 }
  T.eq({ r.timed_out, r.signal }, { true, 15 })
  T.between(r.wall, 0, 1, "wall")
  T.eq(proc.run({ argv = { "sleep", "0.05" } }).timed_out, false)
end)

T.case("timeout ends a plain sleep: SIGTERM, timed_out, wall near the timeout", function()
  local r = proc.run { argv = { "sleep", "10" }, timeout = 0.3 }
  T.eq({ r.timed_out, r.signal, r.exited, r.ok }, { true, 15, false, false })
  T.between(r.wall, 0.3, 0.3 + 0.6, "wall")
  T.ok(r.wall_ns >= 290000000 and math.type(r.wall_ns) == "integer")
end)

T.case("timeout: grandchildren that ignore SIGTERM do not survive", function()
  local m = marker()
  local r = proc.run(sh("trap '' TERM; sleep " .. m .. " & sleep " .. m .. " & wait", { timeout = 0.3, grace = 0.3 }))
  T.eq({ r.timed_out, r.signal }, { true, 9 })
  T.eq(survivors(m), "")
  -- the leader dies at SIGTERM, its children ignore it: the group still gets SIGKILL after grace
  local m2 = marker()
  local script = "(trap '' TERM; exec sleep " .. m2 .. ") & (trap '' TERM; exec sleep " .. m2 .. ") & exec sleep 100"
  local r2 = proc.run(sh(script, { timeout = 0.3, grace = 0.5 }))
  T.eq({ r2.timed_out, r2.signal }, { true, 15 })
  T.eq(survivors(m2), "")
end)

T.case("rusage: CPU time and peak memory", function()
  local busy = proc.run(sh("i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"))
  T.ok(busy.user > 0, "user " .. busy.user)
  T.ok(busy.sys >= 0)
  local mem = proc.run(sh("x=$(head -c 30000000 /dev/zero | tr '\\0' a); echo ${#x}", { stdout = "capture" }))
  T.eq(mem.stdout, "30000000\n")
  T.ok(mem.maxrss_kb > 25000, "maxrss " .. mem.maxrss_kb)
end)

-- The descriptors open in wb now, read in-process (a child's listing of /proc/PID/fd races with
-- wb's own closing of that child's pipe ends); objects that are garbage (earlier cases'
-- processes, whose __gc closes their descriptors) are collected first.
local function my_fds()
  collectgarbage()
  collectgarbage()
  return #assert(fs.list("/proc/self/fd"))
end

T.case("200 concurrent children: every line once, to the right child, none interleaved", function()
  -- what wb.proc opens once for the life of the process (the /dev/null it hands to children, its
  -- wait loop) is opened first, so that only what the 200 leave behind is counted
  local warm = assert(proc.spawn { argv = { "true" }, stdout = function() end, stderr = "capture" })
  proc.wait_all({ warm })
  warm:close()
  local fds = my_fds()
  local script = [[
i=0
while [ $i -lt 10 ]; do printf '%s-%s-a ' "$1" $i; printf 'b\n'; i=$((i+1)); done
printf '%s-err\n' "$1" >&2
printf '%s-tail' "$1"]]
  local procs, got = {}, {}
  for k = 1, 200 do
    got[k] = {}
    local spec = { argv = { "sh", "-c", script, "sh", "c" .. k } }
    if k % 2 == 0 then
      spec.stdout = function(l) table.insert(got[k], l) end
      spec.stderr = "capture"
    else
      spec.stdout = "capture"
      spec.stderr = function(l) table.insert(got[k], l) end
    end
    procs[k] = assert(proc.spawn(spec))
  end
  local results = proc.wait_all(procs)
  T.eq(#results, 200)
  for k = 1, 200 do
    local want = {}
    for i = 0, 9 do want[#want + 1] = string.format("c%d-%d-a b", k, i) end
    want[#want + 1] = "c" .. k .. "-tail"
    local r = results[k]
    T.eq(r.pid, procs[k].pid)
    T.ok(r.ok)
    if k % 2 == 0 then
      T.eq(got[k], want, "lines of child " .. k)
      T.eq(r.stderr, "c" .. k .. "-err\n")
    else
      T.eq(r.stdout, table.concat(want, "\n"), "capture of child " .. k)
      T.eq(got[k], { "c" .. k .. "-err" })
    end
    procs[k]:close()
  end
  -- as before the baseline, only what is still referenced counts; a child that has exited may
  -- still be waiting to be reaped (its pidfd open) for a moment: a leak stays, that does not
  local now
  for _ = 1, 50 do
    collectgarbage()
    collectgarbage()
    now = my_fds()
    if now == fds then break end
    clock.sleep(0.02)
  end
  T.eq(now, fds, "descriptors left open in wb")
end)

T.case("waiting on one child pumps the output of the others", function()
  local big = assert(proc.spawn { argv = { "head", "-c", "1048576", "/dev/zero" }, stdout = "capture" })
  local stat = "/proc/" .. big.pid .. "/stat"
  local until_exited = "while [ -e " .. stat .. " ] && ! grep -q ') Z ' " .. stat .. "; do sleep 0.01; done"
  local watcher = proc.run(sh(until_exited, { timeout = 20, stderr = "null" }))
  T.ok(not watcher.timed_out, "the writer finished while another child was waited on")
  T.ok(not big:running())
  T.eq(#big:wait().stdout, 1048576)
  big:close()
end)

T.case("kill reaches what a finished child left in its group", function()
  local m = marker()
  local p <close> = assert(proc.spawn(sh("sleep " .. m .. " & exit 0")))
  T.eq(p:wait().code, 0)
  T.eq(await_survivors(m, 1), 1)
  T.eq(p:kill(9), true)
  T.wait_until("the group's processes to end", 10, function() return survivors(m) == "" end)
  T.eq(survivors(m), "")
  T.eq({ p:kill() }, { nil, "kill: No such process", 3 })
end)

T.case("the wb binary is a child subreaper and runs at its hard descriptor limit", function()
  local m = marker()
  local p <close> = assert(proc.spawn(sh("sleep " .. m .. " & echo $!", { stdout = "capture" })))
  local r = p:wait()
  T.eq(r.code, 0)
  local pid = T.ok(tonumber(r.stdout:match("^(%d+)")))
  local stat = T.ok(fs.read("/proc/" .. pid .. "/stat"))
  T.eq(tonumber(stat:match("^%d+ %b() %a (%d+)")), my_pid()) -- reparented to wb, not to init
  T.eq(p:kill(9), true)
  -- a wb started with a soft limit below its hard one runs at the hard one
  local dir = T.tmpdir()
  assert(fs.write(dir .. "/limits_test.lua", 'local T = require "wb.test"\n'
    .. 'T.case("limits", function() io.write(assert(require("wb.fs").read("/proc/self/limits"))) end)\n'))
  local lim = proc.run { argv = { "sh", "-c", 'unset WB_TEST_FILTER; ulimit -Sn 64 && exec "$0" test "$1"', T.wb_binary(),
    dir .. "/limits_test.lua" }, stdout = "capture" }
  T.eq(lim.code, 0)
  local soft, hard = lim.stdout:match("Max open files +(%S+) +(%S+)")
  T.ok(soft and soft ~= "64", lim.stdout)
  T.eq(soft, hard)
end)

T.case("wait_any, wait_all, wait returns the same result", function()
  local slow = assert(proc.spawn { argv = { "sleep", "10" } })
  local fast = assert(proc.spawn { argv = { "sh", "-c", "exit 4" } })
  local p, res = proc.wait_any { slow, fast }
  T.ok(p == fast)
  T.eq(res.code, 4)
  T.ok(fast:wait() == res)
  T.eq(proc.wait_any({ slow }, 0.05), nil)
  T.eq(proc.wait_any {}, nil)
  T.ok(slow:running())
  slow:kill()
  local all = proc.wait_all { fast, slow }
  T.eq({ all[1].code, all[2].signal }, { 4, 15 })
  slow:close()
  fast:close()
  T.ok(fast:wait() == res, "the result outlives close")
end)

T.case("wait_any with timeout 0 looks once without blocking: an exit since is seen", function()
  local p <close> = assert(proc.spawn { argv = { "true" } })
  local gone = T.wait_until("the child to exit", 10, function()
    local st = fs.read("/proc/" .. p.pid .. "/stat")
    return st and st:match("^%d+ %b() Z") ~= nil
  end)
  T.ok(gone)
  local done, res = proc.wait_any({ p }, 0)
  T.ok(done == p, "the exited child is reaped by a zero-timeout look")
  T.eq(res and res.code, 0)
end)

T.case("<close> kills a running child and its group", function()
  local m = marker()
  local pid
  do
    local p <close> = assert(proc.spawn(sh("sleep " .. m .. " & sleep " .. m)))
    pid = p.pid
    T.ok(p:running())
  end
  T.eq(io.open("/proc/" .. pid .. "/stat"), nil)
  T.eq(survivors(m), "")
end)

T.case("poll, kill, running, tostring, closed handles", function()
  local p = assert(proc.spawn { argv = { "sleep", "10" } })
  T.eq(p:poll(), nil)
  T.ok(p:running())
  T.eq(tostring(p), "wb.proc (pid " .. p.pid .. ", running)")
  T.eq(p:kill(9), true)
  local res
  for _ = 1, 200 do
    res = p:poll()
    if res then break end
    proc.wait_any({ p }, 0.05)
  end
  T.eq(res and res.signal, 9)
  T.ok(not p:running())
  T.eq(tostring(p), "wb.proc (pid " .. p.pid .. ", signal 9)")
  local again, err = p:kill()
  T.eq({ again, err }, { nil, "kill: No such process" })
  p:close()
  p:close()
  T.eq(tostring(p), "wb.proc (pid " .. p.pid .. ", closed)")
  local q = assert(proc.spawn { argv = { "true" } })
  q:wait()
  T.eq(tostring(q), "wb.proc (pid " .. q.pid .. ", exited 0)")
  local z = assert(proc.spawn { argv = { "sleep", "10" } })
  z:close()
  T.raises(function() z:wait() end, "is closed")
  T.raises(function() z:kill() end, "is closed")
end)

T.case("a raising line callback propagates out of wait", function()
  local p <close> = assert(proc.spawn(sh("echo boom; sleep 10", { stdout = function(l) error("cb:" .. l) end })))
  T.raises(function() p:wait() end, "cb:boom")
  T.ok(p:running())
  T.raises(function() proc.run(sh("echo x", { stdout = function() error("in run") end })) end, "in run")
  local h
  h = assert(proc.spawn(sh("echo 1; echo 2; sleep 10", { stdout = function(l) if l == "2" then h:close() end end })))
  T.raises(function() h:wait() end, "is closed")
  local self
  self = assert(proc.spawn(sh("echo 1; sleep 10", { stdout = function() self:wait() end })))
  T.raises(function() self:wait() end, "waited on from its own line callback")
  self:close()
end)

T.case("children: own process group, default signals, no inherited descriptors", function()
  local p = assert(proc.spawn { argv = { "cat", "/proc/self/stat" }, stdout = "capture" })
  local stat = p:wait().stdout
  local pid, pgrp = stat:match("^(%d+) %b() %a %d+ (%d+)")
  T.eq({ tonumber(pid), tonumber(pgrp) }, { p.pid, p.pid })
  p:close()
  local status = proc.run({ argv = { "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status" }, stdout = "capture" }).stdout
  T.match(status, "SigBlk:%s+0+\n")
  -- glibc's posix_spawn leaves its two internal signals (32, 33) ignored; 1..31 must be default
  local ign = tonumber(status:match("SigIgn:%s+(%x+)"), 16)
  T.eq(ign & 0x7fffffff, 0)
  local f = assert(io.open("/proc/self/stat"))
  T.eq(proc.run({ argv = { "ls", "/proc/self/fd" }, stdout = "capture" }).stdout, "0\n1\n2\n3\n")
  f:close()
end)

T.case("SIGINT to wb while it waits: the child's group ends, wb exits 130", function()
  local dir = T.tmpdir()
  local m = marker()
  assert(fs.write(dir .. "/recipe.lua", string.format([[
local wb = require "wb"
return wb.recipe { run = function(ctx)
  wb.proc.run { argv = { "sh", "-c", "trap '' TERM; sleep %s & sleep %s" }, grace = 0.5 }
  return 0
end }
]], m, m)))
  local wb = assert(proc.spawn { argv = { T.wb_binary(), "run", dir .. "/recipe.lua" }, cwd = dir,
    stdout = "capture", stderr = "capture", timeout = 30 })
  T.eq(await_survivors(m, 2), 2, "both sleepers started")
  wb:kill(2)
  local res = wb:wait()
  wb:close()
  T.eq(res.code, 130, res.stderr)
  T.match(res.stderr, "interrupted")
  T.eq(survivors(m), "")
end)

-- ---- held start ---------------------------------------------------------------------------

local function proc_state(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s:match("^%d+ %b() (%a)")
end

T.case("held: the child waits at the gate, named like the program, until release", function()
  local p <close> = assert(proc.spawn { argv = { "sh", "-c", 'echo "$0|$1"', "zero", "two words" },
    held = true, stdout = "capture" })
  T.match(assert(fs.read("/proc/" .. p.pid .. "/cmdline")), "^wb%z__gate%z/[^%z]*/sh%zsh%z%-c%z")
  T.eq(assert(fs.read("/proc/" .. p.pid .. "/comm")), "sh\n")
  T.wait_until("the child to block at the gate", 5, function() return proc_state(p.pid) == "S" end)
  T.eq(proc_state(p.pid), "S", "blocked at the gate")
  T.raises(function() p:wait() end, "is held: call p:release() first")
  T.raises(function() proc.wait_all { p } end, "is held")
  T.eq(p:poll(), nil)
  T.ok(p:running())
  local hold = clock.timer()
  clock.sleep(0.3)
  T.eq(p:release(), true)
  T.eq(p:release(), true, "a second release is a no-op")
  local res = p:wait()
  T.eq(res.stdout, "zero|two words\n")
  T.ok(res.ok)
  T.ok(res.wall < hold:elapsed(), "wall time starts at the release")
end)

T.case("held: env, cwd, PATH lookup and descriptors are those of a plain spawn", function()
  local dir = T.tmpdir()
  local p <close> = assert(proc.spawn { argv = { "sh", "-c", 'echo "$WB_HELD $PWD"; ls /proc/self/fd' }, env = { WB_HELD = "yes" },
    cwd = dir, held = true, stdout = "capture" })
  assert(p:release())
  local res = p:wait()
  T.eq(res.stdout, "yes " .. dir .. "\n0\n1\n2\n3\n")
  local missing = { proc.spawn { argv = { "no-such-program-wb" }, held = true } }
  T.eq(missing[1], nil)
  T.match(missing[2], "no%-such%-program%-wb: No such file")
end)

T.case("held: the timeout starts at the release", function()
  local p <close> = assert(proc.spawn { argv = { "sleep", "0.2" }, held = true, timeout = 0.5 })
  clock.sleep(0.7)
  T.ok(p:running(), "not timed out while held")
  assert(p:release())
  local res = p:wait()
  T.eq({ res.ok, res.timed_out }, { true, false })
  local q <close> = assert(proc.spawn { argv = { "sleep", "5" }, held = true, timeout = 0.2 })
  assert(q:release())
  local r = q:wait()
  T.eq({ r.timed_out, r.signal }, { true, 15 })
  -- held 0.7 s, then the 0.5 s deadline runs from the release: by the child's clock (it starts
  -- at the release) SIGTERM comes 0.5 s later, neither at once nor 1.5 s later
  local c <close> = assert(proc.spawn { argv = { "bash", "-c", CLOCKED }, held = true, timeout = 0.5, stdout = "capture" })
  clock.sleep(0.7)
  assert(c:release())
  local cr = c:wait()
  T.eq(cr.timed_out, true)
  check_deadline(child_seconds(cr), 0.5, 0.25)
end)

T.case("held: killed at the gate, release reports it; close ends a held child", function()
  local p <close> = assert(proc.spawn { argv = { "true" }, held = true })
  assert(p:kill(9))
  while p:running() do clock.sleep(0.01) end
  local ok, err = p:release()
  T.eq(ok, nil)
  T.match(err, "^release: ")
  T.eq(p:wait().signal, 9)
  local q = assert(proc.spawn { argv = { "sleep", "10" }, held = true })
  local pid = q.pid
  q:close()
  T.eq(proc_state(pid), nil, "no process and no zombie left")
  local plain <close> = assert(proc.spawn { argv = { "true" } })
  T.eq(plain:release(), true)
  plain:wait()
end)

T.case("runner: the same command many times, one result table reused", function()
  local d = T.tmpdir()
  local r <close> = proc.runner(sh("n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count; echo out; exit $((n % 3))",
    { cwd = d, stdout = "capture" }))
  local first = r:run()
  T.eq({ first.ok, first.code, first.stdout, first.signal }, { true, 0, "out\n", nil })
  T.ok(first.wall > 0 and first.maxrss_kb > 0 and first.pid > 0)
  local pid = first.pid
  local second = r:run()
  T.ok(rawequal(first, second), "the same table")
  T.eq({ second.ok, second.code, second.exited }, { false, 1, true })
  T.ok(second.pid ~= pid)
  for _ = 1, 8 do r:run() end
  T.eq(assert(fs.read(d .. "/count")), "10\n")
  T.match(tostring(r), "^wb.proc.runner %(sh%)$")
end)

T.case("runner: timeouts, signals, missing programs, misuse", function()
  local r <close> = proc.runner(sh("sleep 5", { timeout = 0.2 }))
  local res = r:run()
  T.eq({ res.timed_out, res.ok, res.code, res.signal }, { true, false, nil, 15 })
  local k <close> = proc.runner(sh("kill -9 $$"))
  T.eq(k:run().signal, 9)
  local missing <close> = proc.runner { argv = { "wb-no-such-program" } }
  local none, err = missing:run()
  T.eq(none, nil)
  T.match(err, "wb%-no%-such%-program: No such file or directory")
  T.raises(function() proc.runner(sh("true", { stdout = function() end })) end, "no line callbacks")
  T.raises(function() proc.runner(sh("true", { held = true })) end, "cannot hold")
  T.raises(function() proc.runner {} end, "argv must be")
  local closed = proc.runner(sh("true"))
  closed:close()
  T.raises(function() closed:run() end, "wb.proc.runner is closed")
  T.eq(tostring(closed), "wb.proc.runner (closed)")
end)

T.case("maxrss: a child below wb's own peak is its own (exit messages) or flagged as an upper bound", function()
  local small = assert(proc.run { argv = { "true" } })
  if small.own_peak_rss_kb then -- root: the exit message's figure (both cases: tests/lua/memory_test.lua)
    T.eq(small.maxrss_bound, false)
    T.ok(small.maxrss_kb < 8 * 1024, "true's own few MB: " .. small.maxrss_kb)
  else
    T.eq(small.maxrss_bound, true, "true stays below wb's peak RSS, which Linux reports in its place")
  end
  local big = assert(proc.run { argv = { "lua5.4", "-e", "local s = string.rep('x', 96 * 1024 * 1024)" } })
  T.eq(big.ok, true)
  T.eq(big.maxrss_bound, false)
  T.ok(big.maxrss_kb >= 96 * 1024, "peak RSS " .. big.maxrss_kb .. " KiB holds the 96 MiB string")
  local r <close> = proc.runner { argv = { "true" } }
  T.eq(r:run().maxrss_bound, small.maxrss_bound)
end)

T.case("wall time runs from the spawn to the reap: a single-threaded child never uses more CPU than wall", function()
  -- A regression test: the clock once started after posix_spawn returned, so a parent scheduled
  -- late behind its vfork child measured a fraction of the child's life.
  local r <close> = proc.runner { argv = { "true" } }
  for i = 1, 30 do
    local res = i % 2 == 0 and r:run() or proc.run { argv = { "true" } }
    T.ok(res.wall >= res.user + res.sys - 1e-4,
      string.format("run %d: wall %.6f s < user %.6f + sys %.6f", i, res.wall, res.user, res.sys))
  end
end)

T.case("runner: closing it from a line callback while it runs raises, the run goes on", function()
  local r <close> = proc.runner(sh("sleep 0.3"))
  local err
  local p <close> = assert(proc.spawn(sh("echo x", { stdout = function() err = select(2, pcall(r.close, r)) end })))
  local res = r:run()
  T.eq(res.ok, true)
  T.match(tostring(err), "wb.proc.runner is running")
  T.eq(p:wait().ok, true)
end)

T.case("wb started with stdio closed: /dev/null stands in; held children with a cwd, merged output, no stray descriptors", function()
  local d = T.tmpdir()
  local recipe = d .. "/stdio.lua"
  require("wb.fs").write(recipe, [[
local wb = require "wb"
return wb.recipe { run = function()
  local p = assert(wb.proc.spawn { argv = { "pwd" }, cwd = "/tmp", held = true, stdout = "capture" })
  assert(p:release())
  io.stderr:write("held: ", p:wait().stdout)
  local res, err = wb.proc.run { argv = { "sh", "-c", "ls -l /proc/$$/fd > ]] .. d .. [[/fds" },
    stdout = "inherit", stderr = "stdout" }
  io.stderr:write("merge: ", res and "ran" or err, "\n")
end }
]])
  for _, closed in ipairs { "0", "1" } do
    local res = proc.run { argv = { "sh", "-c", 'exec "$0" run "$1" -o "$2" ' .. closed .. '<&-', T.wb_binary(), recipe,
      d .. "/run" .. closed }, stdout = { file = d .. "/out" }, stderr = "capture" }
    T.eq(res.code, 0, res.stderr)
    T.match(res.stderr, "held: /tmp\n")
    local listing = require("wb.fs").read(d .. "/fds") or ""
    T.ok(not listing:find("pipe:", 1, true), "a pipe of wb's reached the child:\n" .. listing)
    T.match(res.stderr, "merge: ran\n")
  end
end)

T.case("interference evidence: a run sharing its CPU with a busy loop waits for it, and says how long", function()
  local cpu = proc.run({ argv = { "taskset", "-c", "0", "true" }, stdout = "null", stderr = "null" })
  if not (cpu and cpu.ok) then T.skip("taskset cannot pin to CPU 0 here") end
  -- a hog pinned to CPU 0 and, beside it, a CPU-bound child pinned there too: the scheduler shares
  -- the CPU, so the child spends about as long waiting as running
  local hog = assert(proc.spawn { argv = { "taskset", "-c", "0", "sh", "-c", "while :; do :; done" } })
  local ok, res = pcall(proc.run, { argv = { "taskset", "-c", "0", "sh", "-c",
    "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done" } })
  hog:kill()
  hog:wait()
  hog:close()
  assert(ok, res)
  T.ok(res.ok, res.code)
  T.ok(res.runq_scope == "tree" or res.runq_scope == "leader", res.runq_scope)
  local busy = res.user + res.sys
  T.ok(res.runq > 0.25 * res.wall, string.format("waited %.3f s of %.3f s wall", res.runq, res.wall))
  -- one thread at a time: its wall is what it ran, what it waited and nothing else (it never blocks)
  local own = res.wall_own or res.wall
  T.ok(math.abs(own - busy - res.runq) < 0.1 * own + 0.02,
    string.format("own wall %.3f = cpu %.3f + runq %.3f", own, busy, res.runq))
  T.ok(res.wall_own == nil or (res.wall_own <= res.wall and res.wall_own > 0.9 * res.wall), "the kernel's wall within wb's")
  T.ok(res.nivcsw > 0, "preempted")
  T.ok(math.type(res.cpus) == "integer" and res.cpus >= 1)
  T.ok(res.others_cpu == nil or res.others_cpu > 0.3, "the hog's CPU use seen as other load: " .. tostring(res.others_cpu))
end)

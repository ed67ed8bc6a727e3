local T = require "wb.test"
local fs = require "wb.fs"

T.case("write and read back, atomically replacing", function()
  local d = T.tmpdir()
  local p = d .. "/a.txt"
  T.eq(fs.write(p, "one\n"), true)
  T.eq(fs.read(p), "one\n")
  T.eq(fs.write(p, "two"), true)
  T.eq(fs.read(p), "two")
  T.eq(fs.list(d), { "a.txt" }, "no temporary file left behind")
  T.eq(fs.write(p, "3", { append = true }), true)
  T.eq(fs.read(p), "two3")
  local big = string.rep("x", 3 * 1024 * 1024 + 7)
  fs.write(p, big)
  T.eq(#fs.read(p), #big)
  T.eq(fs.stat(p).mode, 420) -- 0644
  fs.write(p, "m", { mode = 384 })
  T.eq(fs.stat(p).mode, 384)
end)

T.case("environment failures return nil, message, errno", function()
  local v, err, errno = fs.read("/nonexistent/x")
  T.eq(v, nil)
  T.eq(err, "/nonexistent/x: No such file or directory")
  T.eq(errno, 2)
  v, err = fs.write("/nonexistent/dir/x", "data")
  T.eq(v, nil)
  T.eq(err, "/nonexistent/dir/x: No such file or directory")
  v, err = fs.stat("/nonexistent")
  T.eq(err, "/nonexistent: No such file or directory")
  v, err = fs.list("/nonexistent")
  T.eq(v, nil)
end)

T.case("a failed atomic write (full disk) keeps the old file and leaves no temporary", function()
  local d = T.tmpdir()
  if not os.execute("mount -t tmpfs -o size=64k wbtest '" .. d .. "' 2>/dev/null") then
    T.skip("cannot mount a small tmpfs (needs root)")
  end
  local p = d .. "/manifest.json"
  T.eq(fs.write(p, "old"), true)
  local ok, err, errno = fs.write(p, string.rep("x", 1024 * 1024))
  local after, listing = fs.read(p), fs.list(d)
  os.execute("umount '" .. d .. "'")
  T.eq(ok, nil)
  T.eq(err, p .. ": No space left on device")
  T.eq(errno, 28)
  T.eq(after, "old")
  T.eq(listing, { "manifest.json" })
end)

T.case("mkdir_p, stat, exists, list, glob", function()
  local d = T.tmpdir()
  T.eq(fs.mkdir_p(d .. "/a/b/c"), true)
  T.eq(fs.mkdir_p(d .. "/a/b/c"), true, "idempotent")
  T.eq(fs.stat(d .. "/a/b").type, "dir")
  fs.write(d .. "/a/f1.log", "12345")
  fs.write(d .. "/a/f2.log", "")
  fs.write(d .. "/a/g.txt", "")
  T.eq(fs.stat(d .. "/a/f1.log").size, 5)
  T.eq(fs.stat(d .. "/a/f1.log").type, "file")
  T.ok(fs.exists(d .. "/a/g.txt"))
  T.ok(not fs.exists(d .. "/a/none"))
  T.eq(fs.list(d .. "/a"), { "b", "f1.log", "f2.log", "g.txt" })
  T.eq(fs.glob(d .. "/a/*.log"), { d .. "/a/f1.log", d .. "/a/f2.log" })
  T.eq(fs.glob(d .. "/a/*.none"), {})
  local ok, err = fs.mkdir_p(d .. "/a/g.txt/x")
  T.eq(ok, nil)
  T.match(err, "Not a directory")
end)

T.case("symlinks replace atomically; readlink, realpath, lstat", function()
  local d = T.tmpdir()
  fs.mkdir_p(d .. "/r1")
  fs.mkdir_p(d .. "/r2")
  T.eq(fs.symlink("r1", d .. "/latest"), true)
  T.eq(fs.readlink(d .. "/latest"), "r1")
  T.eq(fs.symlink("r2", d .. "/latest"), true)
  T.eq(fs.readlink(d .. "/latest"), "r2")
  T.eq(fs.lstat(d .. "/latest").type, "link")
  T.eq(fs.stat(d .. "/latest").type, "dir")
  T.eq(fs.realpath(d .. "/latest"), fs.realpath(d .. "/r2"))
end)

T.case("remove, remove_tree (does not follow symlinks), rename, tmpdir, cwd", function()
  local d = T.tmpdir()
  local outside = T.tmpdir()
  fs.write(outside .. "/precious", "x")
  fs.mkdir_p(d .. "/t/u/v")
  fs.write(d .. "/t/u/v/f", "x")
  fs.symlink(outside, d .. "/t/link")
  T.eq(fs.remove_tree(d .. "/t"), true)
  T.ok(not fs.exists(d .. "/t"))
  T.ok(fs.exists(outside .. "/precious"), "symlink target untouched")
  T.eq(fs.remove_tree(d .. "/t"), true, "missing is fine")
  T.raises(function() fs.remove_tree("/") end, "refusing")
  fs.write(d .. "/x", "1")
  T.eq(fs.rename(d .. "/x", d .. "/y"), true)
  T.eq(fs.read(d .. "/y"), "1")
  T.eq(fs.remove(d .. "/y"), true)
  local ok, err = fs.remove(d .. "/y")
  T.eq(ok, nil)
  T.match(err, "No such file")
  local t = fs.tmpdir("wbfs")
  T.match(t, "/wbfs%.")
  T.eq(fs.stat(t).mode, 448) -- 0700
  fs.remove_tree(t)
  T.ok(#fs.cwd() > 0)
end)

T.case("write: data from a function, piece by piece; its error keeps the old file", function()
  local d = T.tmpdir()
  local p = d .. "/pieces.txt"
  local i = 0
  T.eq(fs.write(p, function()
    i = i + 1
    if i <= 3 then return "piece " .. i .. "\n" end
  end), true)
  T.eq(fs.read(p), "piece 1\npiece 2\npiece 3\n")
  T.raises(function() fs.write(p, function() error("no more data") end) end, "no more data")
  T.eq(fs.read(p), "piece 1\npiece 2\npiece 3\n")
  T.raises(function() fs.write(p, function() return 42 end) end, "returned a number, not a string")
  T.eq(fs.list(d), { "pieces.txt" })
  local n = 0
  T.eq(fs.write(p, function()
    n = n + 1
    if n <= 2 then return "x" end
  end, { append = true }), true)
  T.eq(fs.read(p), "piece 1\npiece 2\npiece 3\nxx")
end)

T.case("tmpdir: a new private directory, under a given directory or $TMPDIR", function()
  local base = T.tmpdir()
  local d = assert(fs.tmpdir("probe", base))
  T.match(d, "^" .. base:gsub("%p", "%%%0") .. "/probe%.[%w]+$")
  local st = assert(fs.stat(d))
  T.eq({ st.type, st.mode & 511 }, { "dir", 448 })
  local none, err = fs.tmpdir("probe", base .. "/missing")
  T.eq(none, nil)
  T.match(err, "missing/probe%.XXXXXX: No such file or directory")
end)

-- The sync of an atomic write, seen from outside (strace): the temporary is fsync'ed before the
-- rename, then the directory is. Without root or a crash, this is what tells a write that skips
-- its fsync from one that does it.
T.case("atomic write: fsync of the temporary, rename, fsync of the directory (strace)", function()
  local proc = require "wb.proc"
  if not proc.which("strace") then T.skip("strace is not installed (make deps)") end
  local d = T.tmpdir()
  local script = d .. "/write_test.lua"
  assert(fs.write(script, string.format([[
local T = require "wb.test"
T.case("write", function() assert(require("wb.fs").write(%q, "data\n")) end)
]], d .. "/out.txt")))
  local log = d .. "/strace.log"
  -- LeakSanitizer (make asan) cannot run under ptrace: no leak check for the traced wb
  local asan = (os.getenv("ASAN_OPTIONS") and os.getenv("ASAN_OPTIONS") .. ":" or "") .. "detect_leaks=0"
  local res = proc.run { argv = { "env", "-u", "WB_TEST_FILTER", "ASAN_OPTIONS=" .. asan, "strace", "-f", "-qq", "-e",
    "trace=fsync,rename,renameat,renameat2,openat", "-o", log, T.wb_binary(), "test", script }, stdout = "capture", stderr = "capture" }
  T.eq(res.code, 0, res.stderr .. res.stdout)
  -- names relative to a directory descriptor (openat, renameat) are made whole again
  local fds, order = {}, {}
  local function whole(at, name)
    if name:sub(1, 1) == "/" or at == "AT_FDCWD" then return name end
    local dir = fds[at] or "?"
    return name == "." and dir or dir .. "/" .. name
  end
  for line in assert(fs.read(log)):gmatch("[^\n]+") do
    local at, path, fd = line:match('openat%(([%w_]+), "([^"]+)".-= (%d+)$')
    if path then fds[fd] = whole(at, path) end
    local synced = line:match("fsync%((%d+)%)%s+= 0")
    if synced then order[#order + 1] = "fsync " .. (fds[synced] or "?"):gsub("%.tmp%.%w+$", ".tmp") end
    local from, to = line:match('rename%("([^"]+)", "([^"]+)"%)%s+= 0')
    if not from then
      local a, f, b, t = line:match('renameat2?%(([%w_]+), "([^"]+)", ([%w_]+), "([^"]+)".-= 0')
      if a then from, to = whole(a, f), whole(b, t) end
    end
    if from then order[#order + 1] = "rename " .. from:gsub("%.tmp%.%w+$", ".tmp") .. " " .. to end
  end
  local out = d .. "/out.txt"
  T.eq(order, { "fsync " .. out .. ".tmp", "rename " .. out .. ".tmp " .. out, "fsync " .. d })
end)

T.case("hash: BLAKE2b-256 of a file as b2sum -l 256 gives it; a FIFO, a directory or a file too large refused", function()
  local proc = require "wb.proc"
  local d = T.tmpdir()
  local p = d .. "/data"
  local pieces = {}
  for i = 1, 5000 do pieces[i] = string.format("%d,%x;", i, i * 7919) end -- not a multiple of 128 or 64 KiB
  T.eq(fs.write(p, table.concat(pieces):rep(3)), true)
  local res = proc.run { argv = { "b2sum", "-l", "256", p }, stdout = "capture", stderr = "capture" }
  T.eq(res.code, 0, res.stderr)
  local hex, size = fs.hash(p)
  T.eq(hex, res.stdout:match("^(%x+)"))
  T.eq(size, fs.stat(p).size)
  local none, err, errno = fs.hash(p, 1000)
  T.eq(none, nil)
  T.match(err, "larger than 1000 bytes")
  T.eq(errno, 27, "EFBIG")
  -- the block and piece boundaries: 128-byte blocks (the last one held back), 64 KiB reads
  for _, n in ipairs({ 0, 1, 127, 128, 129, 256, 65536, 65537, 2 * 65536 + 128 }) do
    local q = d .. "/n" .. n
    T.eq(fs.write(q, ("\0"):rep(n)), true)
    local want = proc.run { argv = { "b2sum", "-l", "256", q }, stdout = "capture" }
    T.eq(fs.hash(q), want.stdout:match("^(%x+)"), n .. " bytes")
  end
  T.eq(proc.run({ argv = { "mkfifo", d .. "/fifo" } }).code, 0)
  T.eq(fs.hash(d .. "/fifo"), nil, "a FIFO with no writer: refused, not waited on")
  T.eq(fs.hash(d), nil)
  T.eq(fs.hash(d .. "/missing"), nil)
end)

local T = require "wb.test"
local files = require "wb.files"
local fs = require "wb.fs"
local proc = require "wb.proc"

local function tree()
  local d = T.tmpdir()
  assert(fs.mkdir_p(d .. "/a/b"))
  assert(fs.write(d .. "/x.txt", "h\n1\n2\n"))         -- 6 bytes, 3 lines
  assert(fs.write(d .. "/a/y.txt", "h\n1\n2\n3"))      -- 7 bytes, 4 lines (no final newline)
  assert(fs.write(d .. "/a/b/z.bin", ("\0"):rep(100)))
  assert(assert(proc.run { argv = { "ln", "-s", d .. "/a", d .. "/link" } }).ok)
  return d
end

T.case("walk: every entry once, directories before their contents, links not followed", function()
  local d = tree()
  local seen, order = {}, {}
  files.walk(d, function(path, info)
    seen[path:sub(#d + 2)] = info.type
    order[#order + 1] = path:sub(#d + 2)
  end)
  T.eq(seen, { x = nil, ["x.txt"] = "file", a = "dir", ["a/y.txt"] = "file", ["a/b"] = "dir",
    ["a/b/z.bin"] = "file", link = "link" })
  local pos = {}
  for i, p in ipairs(order) do pos[p] = i end
  T.ok(pos.a < pos["a/b"] and pos["a/b"] < pos["a/b/z.bin"], "depth first, parents first")
  local n = 0
  files.walk(d .. "/missing", function() n = n + 1 end)
  T.eq(n, 0, "a missing directory has no entries")
  T.raises(function() files.walk(1, print) end, "dir must be a string")
  T.raises(function() files.walk(d) end, "fn must be a function")
end)

T.case("tree_stats: regular files only, sizes from stat; zero for a missing directory", function()
  local d = tree()
  local st = files.tree_stats(d)
  T.eq(st.file_count, 3)
  T.eq(st.total_size_bytes, 6 + 7 + 100)
  T.eq(require("wb.json").encode(files.tree_stats(d .. "/nope")), '{"file_count":0,"total_size_bytes":0}',
    "a JSON object in key order")
end)

T.case("count_lines and count_rows: lines as wc -l counts them plus an unterminated last one", function()
  local d = tree()
  T.eq(files.count_lines(d .. "/x.txt"), 3)
  T.eq(files.count_lines(d .. "/a/y.txt"), 4)
  local res = assert(proc.run { argv = { "wc", "-l", d .. "/x.txt" }, stdout = "capture" })
  T.eq(tonumber(res.stdout:match("%d+")), files.count_lines(d .. "/x.txt"), "wc -l agrees")
  local n, err = files.count_lines(d .. "/none")
  T.eq(n, nil)
  T.match(err, "none")
  T.eq(files.count_rows(d, "*.txt", 1), 2)
  T.eq(files.count_rows(d, { "*.txt", "a/*.txt" }, 1), 2 + 3)
  T.eq(files.count_rows(d, "a/*.txt"), 4, "no header by default")
  T.eq(files.count_rows(d, "*.csv", 1), nil, "no file matches")
end)

T.case("follow: lines of files that appear and grow, named by their file", function()
  if not proc.which("tail") then return T.skip("tail: not installed (coreutils)") end
  local d = T.tmpdir()
  local got = {}
  local p = files.follow({ d .. "/one.log", d .. "/two.log" }, function(path, line)
    got[#got + 1] = path:match("[^/]*$") .. ":" .. line
  end)
  T.ok(p, "a tail process")
  assert(fs.write(d .. "/one.log", "a\n\nb\n"))
  assert(proc.run { argv = { "sleep", "0.5" } })
  assert(fs.write(d .. "/two.log", "c\n"))
  -- wb.proc's loop reads the tail's output while wb waits on another process
  local deadline = os.time() + 20
  while #got < 4 and os.time() < deadline do assert(proc.run { argv = { "sleep", "0.2" } }) end
  p:close()
  table.sort(got)
  T.eq(got, { "one.log:", "one.log:a", "one.log:b", "two.log:c" }, "the file's own empty line, not tail's separator")
  T.eq(files.follow({}, print), nil, "nothing to follow")
  T.raises(function() files.follow("x", print) end, "paths must be a list")
end)

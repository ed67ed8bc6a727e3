-- File-system mechanics every recipe may need, over wb.fs, wb.scan and wb.proc: walking a tree,
-- its file count and size, counting lines, and following growing files (`tail -F`).
local fs = require "wb.fs"
local json = require "wb.json"

local M = {}

-- files.walk(dir, fn) : calls fn(path, info) for every entry under dir, depth first, directories
-- before their contents (info from fs.lstat: symbolic links are not followed); a missing or
-- unreadable directory is skipped
function M.walk(dir, fn)
  if type(dir) ~= "string" then error("files.walk: dir must be a string", 2) end
  if type(fn) ~= "function" then error("files.walk: fn must be a function", 2) end
  local function visit(d)
    for _, name in ipairs(fs.list(d) or {}) do
      local path = d .. "/" .. name
      local info = fs.lstat(path)
      if info then
        fn(path, info)
        if info.type == "dir" then visit(path) end
      end
    end
  end
  visit(dir)
end

-- st = files.tree_stats(dir) : a JSON object {file_count, total_size_bytes} of the regular files
-- under dir (0, 0 when it does not exist)
function M.tree_stats(dir)
  local st = json.object()
  st.file_count = 0
  st.total_size_bytes = 0
  M.walk(dir, function(_, info)
    if info.type == "file" then
      st.file_count = st.file_count + 1
      st.total_size_bytes = st.total_size_bytes + info.size
    end
  end)
  return st
end

-- n = files.count_lines(path) : the number of lines of the file (a last line without its newline
-- counts), or nil, err
function M.count_lines(path)
  local res, err = require("wb.scan").file(path, { rules = {} })
  if not res then return nil, err end
  return res.lines
end

-- n = files.count_rows(dir, globs [, header_lines = 0]) : the data lines of the files matching
-- each glob (a pattern or a list of them) under dir, header_lines less per file; nil when no
-- file matches
function M.count_rows(dir, globs, header_lines)
  if type(globs) == "string" then globs = { globs } end
  local header, total = header_lines or 0, nil
  for _, pattern in ipairs(globs) do
    for _, path in ipairs(fs.glob(dir .. "/" .. pattern)) do
      local n = M.count_lines(path)
      if n then total = (total or 0) + math.max(n - header, 0) end
    end
  end
  return total
end

local Follower = {}
Follower.__index = Follower

-- follower:close() : stops every tail (also as a to-be-closed variable)
function Follower:close()
  for _, p in ipairs(self.procs) do p:close() end
  self.procs = {}
end
Follower.__close = Follower.close

-- follower = files.follow(paths, on_line) : follows the files (`tail -F`: each may not exist yet,
-- grow, or be replaced), calling on_line(path, line) for every line, from their beginnings, as
-- wb.proc's loop reads them (while wb waits on another process). One tail per file, so that a line
-- is always named by the file it came from (a single tail's "==> file <==" headers were seen
-- missing for a file that appeared late). Returns the follower (close it to stop), or nil when
-- there is nothing to follow or no `tail` (and, with the error, when a tail cannot be started).
function M.follow(paths, on_line)
  if type(paths) ~= "table" then error("files.follow: paths must be a list", 2) end
  if type(on_line) ~= "function" then error("files.follow: on_line must be a function", 2) end
  local proc = require "wb.proc"
  if #paths == 0 or not proc.which("tail") then return nil end
  local f = setmetatable({ procs = {} }, Follower)
  for i, path in ipairs(paths) do
    local p, err, errno = proc.spawn {
      argv = { "tail", "-n", "+1", "-s", "0.1", "-F", path }, stderr = "null",
      stdout = function(line) on_line(path, line) end,
    }
    if not p then
      f:close()
      return nil, err, errno
    end
    f.procs[i] = p
  end
  return f
end

return M

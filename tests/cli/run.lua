-- CLI transcript tests, run by the stock lua5.4 interpreter (not by the wb under test).
--
-- A .t file holds blocks:   # comment
--                           $ command            (run by bash in the repo root, wb on PATH,
--                           expected output       $T = a fresh temporary directory per file)
--                           [2]                   (expected exit status; default 0)
-- Expected output is the combined stdout+stderr, compared line by line; a line `...` matches
-- any number of lines, and a line ending in ` (re)` is a Lua pattern anchored at both ends.
-- A comment `# requires: root: WHY` before a block marks it as needing root: run by another user,
-- the block is not run but reported as `skip - FILE: $ COMMAND: needs root: WHY`.
-- Ends with the line `N passed, N failed, N skipped`; a file without a block, or no file, is a
-- failure.
local files = { ... }
local root = os.getenv("WB_ROOT") or io.popen("pwd"):read("l")
local build = os.getenv("WB_BUILD") or "build"

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function parse(path)
  local blocks, cur, root_why = {}, nil, nil
  for line in io.lines(path) do
    local cmd = line:match("^%$ (.*)$")
    if not cur and line:match("^# requires: root") then
      root_why = line:match("^# requires: root: (.*%S)") or "no reason given"
    end
    if cmd then
      cur = { cmd = cmd, expect = {}, status = 0, line = #blocks, root_why = root_why }
      root_why = nil
      blocks[#blocks + 1] = cur
    elseif cur and line:match("^%[(%d+)%]$") then
      cur.status = tonumber(line:match("^%[(%d+)%]$"))
      cur = nil
    elseif cur and line == "" then
      cur = nil
    elseif cur then
      cur.expect[#cur.expect + 1] = line
    end
  end
  return blocks
end

local function line_matches(pat, line)
  local re = pat:match("^(.*) %(re%)$")
  if re then return line:match("^" .. re .. "$") ~= nil end
  return pat == line
end

local function matches(expect, actual, i, j)
  i, j = i or 1, j or 1
  if i > #expect then return j > #actual end
  if expect[i] == "..." then
    for k = j, #actual + 1 do
      if matches(expect, actual, i + 1, k) then return true end
    end
    return false
  end
  if j > #actual or not line_matches(expect[i], actual[j]) then return false end
  return matches(expect, actual, i + 1, j + 1)
end

local is_root = io.popen("id -u"):read("l") == "0"
local passed, failed, skipped = 0, 0, 0
if #files == 0 then
  print("not ok - no transcript file given")
  failed = failed + 1
end
for _, file in ipairs(files) do
  local blocks = parse(file)
  if #blocks == 0 then
    print("not ok - " .. file .. ": no `$ command` block")
    failed = failed + 1
  end
  local tmp = io.popen("mktemp -d /tmp/wbcli.XXXXXX"):read("l")
  for _, b in ipairs(blocks) do
    if b.root_why and not is_root then
      skipped = skipped + 1
      print("skip - " .. file:match("([^/]+)$") .. ": $ " .. b.cmd .. ": needs root: " .. b.root_why)
      goto continue
    end
    local script = "cd " .. shell_quote(root) .. " && export T=" .. shell_quote(tmp) ..
        " PATH=" .. shell_quote(root .. "/" .. build) .. ":\"$PATH\" && " .. b.cmd
    local p = io.popen("bash -c " .. shell_quote(script) .. " 2>&1 </dev/null")
    local out = p:read("a")
    local _, _, code = p:close()
    local actual = {}
    for l in (out .. (out:sub(-1) == "\n" and "" or "\n")):gmatch("(.-)\n") do actual[#actual + 1] = l end
    if out == "" then actual = {} end
    local label = file:match("([^/]+)$") .. ": $ " .. b.cmd
    if code == b.status and matches(b.expect, actual) then
      passed = passed + 1
      print("ok - " .. label)
    else
      failed = failed + 1
      print("not ok - " .. label)
      print("    expected status " .. b.status .. ", got " .. tostring(code))
      print("    expected output:")
      for _, l in ipairs(b.expect) do print("      | " .. l) end
      print("    actual output:")
      for _, l in ipairs(actual) do print("      | " .. l) end
    end
    ::continue::
  end
  os.execute("rm -rf " .. shell_quote(tmp))
end
print(string.format("%d passed, %d failed, %d skipped", passed, failed, skipped))
os.exit(failed == 0 and 0 or 1)

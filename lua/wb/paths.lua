-- Where wb finds its data, the one place that decides it for the built and the installed binary.
--
--   <src>/build/wb            (built, not installed)  data: <src>            examples: <src>/build/examples
--   <prefix>/bin/wb           (installed)             data: <prefix>/share/wb examples: <prefix>/libexec/wb/examples
-- Helpers wb loads into the programs it runs (the allocation sampler libwballoc.so) sit beside the
-- built binary, or in <prefix>/libexec/wb.
--
-- A data directory holds recipes/ and profiles/. The built binary recognises the source tree it
-- was built in by lua/wb/cli.lua and recipes/ beside its own directory; nothing depends on the
-- current directory or on where the checkout is. The compiled-in install directories
-- (wb.core.datadir, wb.core.libexecdir) are used only by a binary with neither beside it (copied
-- elsewhere), and WB_PREFIX=P replaces them for it (P/share/wb, P/libexec/wb): an installed tree
-- never mixes with another installation.
local core = require "wb.core"
local fs = require "wb.fs"

local M = {}

local function is_dir(p)
  local st = fs.stat(p)
  return st ~= nil and st.type == "dir"
end

-- p2 = paths.normalize(p) : p without `.` segments, `x/..` pairs and doubled or trailing slashes
-- (lexically; "a/b/../c" is "a/c", "./x" is "x")
function M.normalize(p)
  local abs = p:sub(1, 1) == "/"
  local out = {}
  for seg in p:gmatch("[^/]+") do
    if seg == ".." and #out > 0 and out[#out] ~= ".." then
      out[#out] = nil
    elseif seg == ".." and abs then -- /.. is /
    elseif seg ~= "." then
      out[#out + 1] = seg
    end
  end
  local s = table.concat(out, "/")
  if abs then return "/" .. s end
  return s == "" and "." or s
end

local cache

-- The install directories a binary with no tree beside it uses: WB_PREFIX's (an absolute path),
-- else its own.
local function install_dirs()
  local prefix = os.getenv("WB_PREFIX")
  if prefix and prefix:sub(1, 1) == "/" then return prefix .. "/share/wb", prefix .. "/libexec/wb" end
  return core.datadir, core.libexecdir
end

local function resolve()
  if cache then return cache end
  local exe = core.exe_path()
  local bindir = exe and M.normalize(exe:match("^(.*)/[^/]*$") or ".")
  local data, examples, seen = {}, {}, {}
  local function add(list, dir)
    if dir and is_dir(dir) then
      local real = fs.realpath(dir) or dir
      if not seen[real] then
        seen[real] = true
        list[#list + 1] = real
      end
    end
  end
  if bindir then
    local src = M.normalize(bindir .. "/..")
    if fs.exists(src .. "/lua/wb/cli.lua") and is_dir(src .. "/recipes") then
      add(data, src)
      add(examples, bindir .. "/examples")
    end
    add(data, M.normalize(bindir .. "/../share/wb"))
    add(examples, M.normalize(bindir .. "/../libexec/wb/examples"))
  end
  local lonely = #data == 0
  if lonely then -- a binary away from any tree of its own: the directories it was built for
    local datadir, libexecdir = install_dirs()
    add(data, datadir)
    add(examples, libexecdir and libexecdir .. "/examples")
  end
  cache = { data = data, examples = examples, lonely = lonely }
  return cache
end

-- dirs = paths.data_dirs() : the existing data directories (each with recipes/ and profiles/),
-- most specific first, as absolute paths
function M.data_dirs()
  return table.move(resolve().data, 1, #resolve().data, 1, {})
end

-- list = paths.sub_dirs(name) : data_dirs() each followed by "/" .. name ("recipes", "profiles")
function M.sub_dirs(name)
  local out = {}
  for _, d in ipairs(resolve().data) do out[#out + 1] = d .. "/" .. name end
  return out
end

-- dir, err = paths.examples_dir() : the directory of the bundled example programs
-- ($WB_EXAMPLES when set), or nil and a sentence naming where they were looked for
function M.examples_dir()
  local env = os.getenv("WB_EXAMPLES")
  if env and env ~= "" then return env end
  local dir = resolve().examples[1]
  if dir then return dir end
  local exe = core.exe_path() or "wb"
  return nil, "the bundled examples are not installed (looked beside " .. exe ..
    " in examples/ and ../libexec/wb/examples; set WB_EXAMPLES=DIR)"
end

-- path, err = paths.helper(name) : the helper file `name` (e.g. "libwballoc.so") beside the built
-- binary or in the installation's libexec/wb, or nil and a sentence naming where it was looked for
function M.helper(name)
  local exe = core.exe_path()
  local bindir = exe and M.normalize(exe:match("^(.*)/[^/]*$") or ".")
  local tried = {}
  if bindir then
    tried[1] = bindir .. "/" .. name
    tried[2] = M.normalize(bindir .. "/../libexec/wb/" .. name)
  end
  local libexecdir = core.libexecdir
  if resolve().lonely then libexecdir = select(2, install_dirs()) end
  if libexecdir then tried[#tried + 1] = libexecdir .. "/" .. name end
  for _, p in ipairs(tried) do
    if fs.exists(p) then return fs.realpath(p) or p end
  end
  return nil, name .. " is not installed (looked in " .. table.concat(tried, ", ") .. ")"
end

return M

-- The environment a run saw, as evidence and as something a re-run can restore: each campaign
-- records wb's environment in preflight.json (`environment`), the values of secret-named
-- variables replaced by [REDACTED] and the variables that only describe a terminal or a login
-- session left out. A confirmation (wb.matrix_confirm) re-runs a previous run's commands with the
-- variables that differ set back to what they were (docs/compare.md).
local util = require "wb.util"

local M = {}

M.REDACTED = "[REDACTED]"

-- Variables that describe the session, not the work: never recorded, never restored.
local SESSION = {
  PWD = true, OLDPWD = true, SHLVL = true, _ = true, TERM = true, COLORTERM = true, COLUMNS = true,
  LINES = true, DISPLAY = true, WINDOWID = true, TMUX = true, TMUX_PANE = true, STY = true, LS_COLORS = true,
  PS1 = true, PS2 = true, PROMPT_COMMAND = true, MAIL = true, HISTFILE = true, HISTSIZE = true,
  INVOCATION_ID = true, JOURNAL_STREAM = true, WB_NO_PROGRESS = true, TMPDIR = true, XDG_RUNTIME_DIR = true,
  DBUS_SESSION_BUS_ADDRESS = true, XAUTHORITY = true, WAYLAND_DISPLAY = true, TERM_SESSION_ID = true,
  BUILD_ID = true, BUILD_NUMBER = true, BUILD_URL = true, JOB_URL = true,
}
local SESSION_PREFIXES = { "SSH_", "XDG_SESSION_", "TERM_PROGRAM", "SLURM_", "SBATCH_", "SRUN_", "WB_TEST_",
  "GITHUB_", "RUNNER_", "CI_JOB_", "CI_PIPELINE_", "CI_RUNNER_" }

-- Variables that choose what code runs (the loader, interpreters, shells, the search path) or
-- whose user it runs as: never set back by a re-run, whoever recorded them. A difference in one
-- of them makes the previous side not reproducible, and says so.
local CODE = { PATH = true, HOME = true, SHELL = true, USER = true, LOGNAME = true, ENV = true, BASH_ENV = true,
  IFS = true, NODE_OPTIONS = true, JAVA_TOOL_OPTIONS = true, _JAVA_OPTIONS = true, JDK_JAVA_OPTIONS = true,
  GCONV_PATH = true, LOCPATH = true, PERL5OPT = true, RUBYOPT = true }
local CODE_PREFIXES = { "LD_", "PYTHON", "PERL", "RUBY", "LUA_", "GIT_", "DYLD_" }

-- yes = environ.chooses_code(name) : whether a variable can choose what code runs (never restored)
function M.chooses_code(name)
  if CODE[name] or name:find("PATH$") then return true end
  for _, p in ipairs(CODE_PREFIXES) do
    if name:sub(1, #p) == p then return true end
  end
  return false
end

-- Secret by name (util.is_secret_name) or by these words, or a URL with a password in it.
local MORE_SECRET_WORDS = { "AUTH", "JWT", "PASSPHRASE", "DSN", "COOKIE", "CREDENTIAL", "SESSION" }
local function is_secret(name, value)
  if util.is_secret_name(name) then return true end
  local upper = name:upper()
  for _, w in ipairs(MORE_SECRET_WORDS) do
    if upper:find(w, 1, true) then return true end
  end
  return value:find("://[^/@%s]*:[^/@%s]*@") ~= nil
end

local function is_session(name)
  if SESSION[name] then return true end
  for _, p in ipairs(SESSION_PREFIXES) do
    if name:sub(1, #p) == p then return true end
  end
  return false
end

-- The most bytes of /proc/self/environ read (the kernel's own limit on an exec's strings is
-- larger, but an environment this large is not one a report can show).
local MAX_BYTES = 1 << 20

-- env = environ.capture([text]) : {NAME = value} of this process's environment (or of text, in
-- /proc/PID/environ's form), sorted, secret values redacted (secret-named, or a URL with a
-- password), session variables left out
function M.capture(text)
  text = text or require("wb.fs").read("/proc/self/environ") or ""
  local out = require("wb.json").object()
  local names = {}
  local values = {}
  if #text > MAX_BYTES then text = text:sub(1, MAX_BYTES):match("^(.*%z)") or "" end -- whole entries only
  for entry in text:gmatch("([^%z]+)") do
    local name, value = entry:match("^([^=]+)=(.*)$")
    if name and not is_session(name) and values[name] == nil then
      names[#names + 1] = name
      values[name] = is_secret(name, value) and M.REDACTED or value
    end
  end
  table.sort(names)
  for _, n in ipairs(names) do out[n] = values[n] end
  return out
end

-- diffs = environ.diff(base, now) : the variables whose value differs, sorted by name:
-- {name, base = value or nil (not set), now = value or nil}; session variables and variables
-- redacted on both sides are left out (a secret's value is not known, so it is taken as equal)
function M.diff(base, now)
  local names, seen = {}, {}
  for _, t in ipairs({ base, now }) do
    for n in pairs(t) do
      if not seen[n] and not is_session(n) then
        seen[n] = true
        names[#names + 1] = n
      end
    end
  end
  table.sort(names)
  local out = {}
  for _, n in ipairs(names) do
    local b, w = base[n], now[n]
    if b ~= w and not (b == M.REDACTED and w == M.REDACTED) then out[#out + 1] = { name = n, base = b, now = w } end
  end
  return out
end

local function shown(v)
  v = tostring(v)
  return #v > 40 and (v:sub(1, 37) .. "...") or v
end

-- text = environ.text(diffs) : "GWAS_ENGINE_SLOWDOWN=1.10 (not set before); OMP_NUM_THREADS 4 → 8",
-- or nil when there is no difference
function M.text(diffs)
  if #diffs == 0 then return nil end
  local parts = {}
  for _, d in ipairs(diffs) do
    if d.base == nil then
      parts[#parts + 1] = d.name .. "=" .. shown(d.now) .. " (not set before)"
    elseif d.now == nil then
      parts[#parts + 1] = d.name .. " unset (was " .. shown(d.base) .. ")"
    else
      parts[#parts + 1] = d.name .. " " .. shown(d.base) .. " → " .. shown(d.now)
    end
  end
  return table.concat(parts, "; ")
end

-- text = environ.restore_text(diffs [, keep]) : what environ.restore does, "GWAS_ENGINE_SLOWDOWN
-- unset; OMP_NUM_THREADS=4", or nil when nothing
function M.restore_text(diffs, keep)
  local parts = {}
  for _, d in ipairs(diffs) do
    if not (keep and keep[d.name] ~= nil) then
      parts[#parts + 1] = d.base == nil and (d.name .. " unset") or (d.name .. "=" .. shown(d.base))
    end
  end
  return #parts > 0 and table.concat(parts, "; ") or nil
end

-- argv2, err = environ.restore(argv, diffs [, keep]) : argv run by env(1) with the base's values
-- of diffs set back (unset where the base had none); names in keep (the case's own env, set by
-- the executor) are left alone. nil, why when a variable that chooses code differs
-- (environ.chooses_code), when a base value is redacted (it cannot be restored), or when the
-- program's name holds '=' (env(1) would take it for a variable).
function M.restore(argv, diffs, keep)
  local unset, set = {}, {}
  for _, d in ipairs(diffs) do
    if not (keep and keep[d.name] ~= nil) then
      if M.chooses_code(d.name) then
        return nil, d.name .. " differs from the previous run's, and wb does not set back a variable that " ..
            "chooses what code runs (PATH, LD_*, PYTHON*, HOME, ...)"
      elseif d.base ~= nil and d.base:find(M.REDACTED, 1, true) then
        return nil, "the previous run's value of " .. d.name .. " is redacted, so it cannot be set back"
      elseif d.base == nil then
        unset[#unset + 1] = d.name
      else
        set[#set + 1] = d.name .. "=" .. d.base
      end
    end
  end
  if #unset == 0 and #set == 0 then return argv end
  return M.wrap(argv, unset, set)
end

-- argv2, err = environ.wrap(argv [, unset, set]) : argv run by env(1), with the names in unset
-- unset and the NAME=VALUE words of set set; with neither, env(1) only runs it (so that the side
-- it is compared with pays for the same exec). nil, why when the program's name holds '='.
function M.wrap(argv, unset, set)
  if tostring(argv[1]):find("=", 1, true) then return nil, "the program's name holds '=': env(1) cannot run it" end
  local out = { require("wb.proc").which("env") or "/usr/bin/env" }
  for _, n in ipairs(unset or {}) do
    out[#out + 1] = "-u"
    out[#out + 1] = n
  end
  out[#out + 1] = "--"
  table.move(set or {}, 1, #(set or {}), #out + 1, out)
  table.move(argv, 1, #argv, #out + 1, out)
  return out
end

return M

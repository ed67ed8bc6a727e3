local T = require "wb.test"
local util = require "wb.util"

T.case("shell_quote and split_words round-trip hostile strings", function()
  local hostile = { "plain", "two words", "it's", 'say "hi"', "$HOME", "back\\slash", "new\nline",
    "", "a;b|c&d", "*?[x]", "tab\there", "ünïcode" }
  for _, s in ipairs(hostile) do
    T.eq(util.split_words(util.shell_quote(s)), { s }, s)
  end
  T.eq(util.split_words(util.shell_join(hostile)), hostile)
  -- and the real shell agrees
  local p = io.popen("sh -c 'for a in \"$@\"; do printf \"%s\\0\" \"$a\"; done' sh " .. util.shell_join(hostile))
  local out = p:read("a")
  p:close()
  local got = {}
  for w in out:gmatch("([^%z]*)%z") do got[#got + 1] = w end
  T.eq(got, hostile)
end)

T.case("split_words follows shell word rules", function()
  T.eq(util.split_words("sleep 0.1"), { "sleep", "0.1" })
  T.eq(util.split_words([[  a   'b c'  "d \"e\" \$f" g\ h '' ]]), { "a", "b c", 'd "e" $f', "g h", "" })
  T.eq(util.split_words([["a"'b'c]]), { "abc" })
  local v, err = util.split_words("echo 'open")
  T.eq(v, nil)
  T.eq(err, "unterminated single quote")
  T.eq(select(2, util.split_words('echo "open')), "unterminated double quote")
end)

T.case("hash is FNV-1a 64", function()
  T.eq(util.hash(""), "cbf29ce484222325")
  T.eq(util.hash("a"), "af63dc4c8601ec8c")
  T.eq(util.hash("foobar"), "85944171f73967e8")
end)

T.case("secrets are found by name and redacted", function()
  T.ok(util.is_secret_name("GITHUB_TOKEN"))
  T.ok(util.is_secret_name("aws_secret_access_key"))
  T.ok(util.is_secret_name("DB_PASSWORD"))
  T.ok(util.is_secret_name("MY_CREDENTIALS"))
  T.ok(not util.is_secret_name("HOME"))
  local vals = util.secret_values({ API_TOKEN = "s3cr3t-value", PATH = "/bin", SHORT_KEY = "ab" })
  T.eq(vals, { "s3cr3t-value" })
  T.eq(util.redact("x=s3cr3t-value and s3cr3t-value.", vals), "x=[REDACTED] and [REDACTED].")
  -- the length boundary (4 characters and more) and each word of the list, KEY included
  T.eq(util.secret_values({ API_KEY = "abcd" }), { "abcd" })
  T.eq(util.secret_values({ API_KEY = "abc" }), {})
  T.ok(util.is_secret_name("AWS_ACCESS_KEY_ID"))
  T.ok(util.is_secret_name("ssh_key"))
end)

-- Each writer escapes differently: a secret with \ " & < ' and a tab must not survive in any of
-- the forms wb writes, and an override of a secret key is redacted as typed.
T.case("secrets are redacted in every escaped form, and in overrides as typed", function()
  local json, yaml, page = require "wb.json", require "wb.yaml", require "wb.page"
  local secret = "ab\"cd\\ef<&>'12\tz"
  local forms = util.secret_forms({ secret })
  local written = {
    json = json.encode({ password = secret }), yaml = yaml.dump({ password = secret }),
    html = page.escape(secret), html_json = page.escape(json.encode(secret)),
    csv = require("wb.report").csv_field(secret), md = page.md_text(secret),
    shell = util.shell_quote(secret),
  }
  for name, text in pairs(written) do
    local clean = util.redact(text, forms)
    T.ok(clean:find("[REDACTED]", 1, true), name .. ": " .. clean)
    T.ok(not clean:find("cd", 1, true) and not clean:find("ef", 1, true), name .. " leaks: " .. clean)
  end
  T.eq(util.redact_overrides({ "runs=3", "+tool.password=ab\"cd", "db.api_key='x y'", "~tool.token=abcd" }),
    { "runs=3", "+tool.password=[REDACTED]", "db.api_key=[REDACTED]", "~tool.token=[REDACTED]" })
end)

T.case("paths", function()
  T.eq(util.basename("/a/b/c.lua"), "c.lua")
  T.eq(util.basename("c"), "c")
  T.eq(util.dirname("/a/b/c.lua"), "/a/b")
  T.eq(util.dirname("c"), ".")
  T.eq(util.dirname("/c"), "/")
  T.eq(util.join("a/", "b", "c"), "a/b/c")
  T.eq(util.join("a", "/abs"), "/abs")
  T.eq(util.safe_name("threads=4,chunk=8192"), "threads=4,chunk=8192")
  T.eq(util.safe_name("a b/c"), "a_b_c")
  T.eq(util.safe_name(".."), "_")
end)

T.case("deep_copy keeps ordered tables ordered", function()
  local wb = require "wb"
  local t = wb.ordered()
  t.z = 1
  t.a = { 2 }
  t.m = 3
  local c = util.deep_copy(t)
  T.eq(wb.ordered_keys(c), { "z", "a", "m" })
  T.ok(c.a ~= t.a)
  T.eq(c.a, { 2 })
end)

T.case("format_seconds", function()
  T.eq(util.format_seconds(0.0000123), "12.3 µs")
  T.eq(util.format_seconds(0.0123), "12.3 ms")
  T.eq(util.format_seconds(1.5), "1.500 s")
  T.eq(util.format_seconds(185), "3m 05s")
end)

T.case("suggest: prefixes first, then close spellings, at most three", function()
  T.eq(util.suggest("dmo", { "demo", "bench", "list" }), { "demo" })
  T.eq(util.suggest("lst", { "list", "test", "run", "repl" }), { "list", "test" })
  T.eq(util.suggest("be", { "bench", "beta", "demo" }), { "bench", "beta" })
  T.eq(util.suggest("profile", { "profile_app_full", "profile", "profiles", "matrix" }),
    { "profile", "profile_app_full", "profiles" })
  T.eq(util.suggest("zzzzzz", { "demo", "bench" }), {})
end)

# The test harness cannot report green for what it did not check: a file without a case, a NaN or
# an infinity given to a numeric assertion, a filter matching nothing, a skip without a reason,
# and (with CI=true) a skip or a left-out suite that tests/skips.allow does not document each
# make the run fail. The nested tests/run.sh gets none of the outer run's selection variables.

$ wb test tests/fixtures/harness/zero_cases_test.lua
not ok - tests/fixtures/harness/zero_cases_test.lua: the file registers no test case
0 passed, 1 failed, 0 skipped
[1]

$ wb test tests/fixtures/harness/nonfinite_test.lua | grep -v '^    '
not ok - nonfinite_test.lua: near NaN
not ok - nonfinite_test.lua: near inf
not ok - nonfinite_test.lua: near NaN expected
not ok - nonfinite_test.lua: near NaN tolerance
not ok - nonfinite_test.lua: between NaN
not ok - nonfinite_test.lua: between -inf
not ok - nonfinite_test.lua: finite inf
ok - nonfinite_test.lua: near NaN asked
ok - nonfinite_test.lua: between inf asked
2 passed, 7 failed, 0 skipped

$ wb test tests/fixtures/harness/nonfinite_test.lua >/dev/null
[1]

$ wb test tests/fixtures/harness/nonfinite_test.lua | grep -A1 'near NaN$'
not ok - nonfinite_test.lua: near NaN
    tests/fixtures/harness/nonfinite_test.lua:4: expected 5 ± 0%.1, got %-?nan (re)

$ wb test tests/fixtures/harness/skips_test.lua
skip - skips_test.lua: named: skipped: the frobnicator is not installed
not ok - skips_test.lua: unnamed
    tests/fixtures/harness/skips_test.lua:4: T.skip needs a reason naming what is missing
...
0 passed, 1 failed, 1 skipped
[1]

$ WB_TEST_FILTER=nosuch wb test tests/fixtures/harness/one_pass_test.lua
not ok - WB_TEST_FILTER=nosuch matches none of the 1 cases of tests/fixtures/harness/one_pass_test.lua
0 passed, 1 failed, 0 skipped
[1]

$ WB_TEST_FILTER=arith wb test tests/fixtures/harness/one_pass_test.lua
ok - one_pass_test.lua: arithmetic
1 passed, 0 failed, 0 skipped

# A final case runs after every plain case of every file given, final cases in the order registered.
$ wb test tests/fixtures/harness/final_first_test.lua tests/fixtures/harness/final_second_test.lua
ok - final_first_test.lua: first file, plain
ok - final_second_test.lua: second file, plain
ok - final_first_test.lua: first file, final
ok - final_second_test.lua: second file, final
4 passed, 0 failed, 0 skipped

$ wb test tests/fixtures/harness/final_second_test.lua tests/fixtures/harness/zero_cases_test.lua | tail -n 1
2 passed, 1 failed, 0 skipped

# tests/run.sh: a suite named in WB_TEST_BEHIND starts at the beginning and runs behind the
# others; it is reported in its place in the list, with its seconds.
$ env -u CI -u WB_TEST_SKIP -u WB_TEST_PASS WB_TEST_ONLY=integration WB_TEST_BEHIND=integration/behind_started.sh WB_TEST_INTEGRATION="tests/fixtures/harness/after_behind.sh tests/fixtures/harness/behind_started.sh" bash tests/run.sh
== integration/after_behind.sh
   1 passed, 0 failed %(%d+ s%) (re)
== integration/behind_started.sh
# ran behind the other suites: %d+ s (re)
   1 passed, 0 failed %(%d+ s%) (re)
2 passed, 0 failed, 0 skipped

# tests/run.sh: the skip is listed and counted; with CI=true an undocumented one fails the run.
$ env -u CI -u WB_TEST_SKIP -u WB_TEST_PASS -u WB_TEST_FILTER WB_TEST_ONLY=lua WB_TEST_LUA=tests/fixtures/harness/one_skip_test.lua bash tests/run.sh
== lua/one_skip_test.lua
skip - one_skip_test.lua: needs a frobnicator: skipped: the frobnicator is not installed
   0 passed, 0 failed, 1 skipped %(%d+ s%) (re)
== skips
   lua/one_skip_test.lua: skip - one_skip_test.lua: needs a frobnicator: skipped: the frobnicator is not installed
0 passed, 0 failed, 1 skipped

$ env -u WB_TEST_SKIP -u WB_TEST_PASS -u WB_TEST_FILTER CI=true WB_TEST_ONLY=lua WB_TEST_LUA=tests/fixtures/harness/one_skip_test.lua bash tests/run.sh | tail -n 2
not ok - undocumented skip (CI=true, not in tests/skips.allow): lua/one_skip_test.lua: skip - one_skip_test.lua: needs a frobnicator: skipped: the frobnicator is not installed
0 passed, 1 failed, 1 skipped

$ env -u WB_TEST_SKIP -u WB_TEST_PASS -u WB_TEST_FILTER CI=true WB_TEST_ONLY=lua WB_TEST_LUA=tests/fixtures/harness/one_skip_test.lua bash tests/run.sh >/dev/null
[1]

# A file without a case fails its suite in tests/run.sh too.
$ env -u CI -u WB_TEST_SKIP -u WB_TEST_PASS -u WB_TEST_FILTER WB_TEST_ONLY=lua WB_TEST_LUA=tests/fixtures/harness/zero_cases_test.lua bash tests/run.sh | tail -n 1
0 passed, 1 failed, 0 skipped

# A suite left out with WB_TEST_SKIP is a counted skip; CI=true accepts it only where
# tests/skips.allow says why (the fuzz suite in the ASan pass), not in another pass.
$ env -u CI -u WB_TEST_PASS -u WB_TEST_FILTER WB_TEST_ONLY=lua WB_TEST_LUA="tests/fixtures/harness/one_pass_test.lua" WB_TEST_SKIP=lua/one_pass_test.lua bash tests/run.sh
== lua/one_pass_test.lua (skipped: WB_TEST_SKIP)
== skips
   lua/one_pass_test.lua: skip - left out by WB_TEST_SKIP
0 passed, 0 failed, 1 skipped

$ env -u WB_TEST_FILTER CI=true WB_TEST_PASS=asan WB_TEST_ONLY=fuzz WB_TEST_SKIP=fuzz bash tests/run.sh
== fuzz (skipped: WB_TEST_SKIP)
== skips
   fuzz: skip - left out by WB_TEST_SKIP (pass: asan)
0 passed, 0 failed, 1 skipped

$ env -u WB_TEST_PASS -u WB_TEST_FILTER CI=true WB_TEST_ONLY=fuzz WB_TEST_SKIP=fuzz bash tests/run.sh | tail -n 2
not ok - undocumented skip (CI=true, not in tests/skips.allow): fuzz: skip - left out by WB_TEST_SKIP
0 passed, 1 failed, 1 skipped

# A skip line must say what is missing (`skip - WHAT: reason`).
$ env -u CI -u WB_TEST_SKIP -u WB_TEST_PASS -u WB_TEST_FILTER WB_TEST_ONLY=integration WB_TEST_INTEGRATION=tests/fixtures/harness/bare_skip.sh bash tests/run.sh | grep '^not ok'
not ok - integration/bare_skip.sh: a skip without its reason: skip - frobnicator

# Every curated mutant (tests/mutate/, make mutate) still applies to the tree: one the code moved
# away from would mutate nothing, and only a full `make mutate` would say so.
$ for p in tests/mutate/[0-9]*.patch; do git apply --check "$p" 2>/dev/null || echo "does not apply: $p"; done; echo checked
checked

# `wb compare BASE NEW`: the Markdown table, --fail-on-regression, --json and the exit-2 errors.

$ wb compare tests/fixtures/compare/manifest_base.json tests/fixtures/compare/manifest_new.json
| metric                        |     base |      new | verdict    | why                                                        | interference |
| :---------------------------- | -------: | -------: | :--------- | :--------------------------------------------------------- | :----------- |
| binary_cpu output_row_count   |    50000 |    50000 | unchanged  | unchanged: exact metric                                    |              |
| binary_cpu output_total_bytes |  3.0 MiB |  3.0 MiB | unchanged  | unchanged: exact metric                                    |              |
| binary_cpu stage_seconds.fit  |  2.500 s |  2.500 s | not tested | 1.00× slower: no repeated samples on either side           | no evidence  |
| binary_cpu stage_seconds.load |  1.500 s |  1.500 s | not tested | 1.00× slower: no repeated samples on either side           | no evidence  |
| binary_cpu wall_time_seconds  |  4.200 s |  4.250 s | not tested | 1.01× slower: p = 1, but 3 vs 3 runs cannot reach p < 0.05 | no evidence  |
| linear_cpu output_row_count   |    50000 |    49998 | regression | -2: exact metric changed                                   |              |
| linear_cpu output_total_bytes |  2.0 MiB |  2.0 MiB | unchanged  | unchanged: exact metric                                    |              |
| linear_cpu stage_seconds.fit  | 400.0 ms | 100.0 ms | not tested | 4.00× faster: no repeated samples on either side           | no evidence  |
| linear_cpu stage_seconds.load |  1.500 s |  1.500 s | not tested | 1.00× slower: no repeated samples on either side           | no evidence  |
| linear_cpu wall_time_seconds  |  2.000 s |  1.600 s | not tested | 1.25× faster: no repeated samples on either side           | no evidence  |
...
1 regression, 0 improvements, 3 unchanged, 6 not tested (2 metrics not in both files)

$ wb compare tests/fixtures/compare/hyperfine_base.json tests/fixtures/compare/hyperfine_new.json --fail-on-regression
...
| sort -n data.txt wall max                 | 121.5 ms |  60.8 ms | not tested  | 2.00× faster: max: information only                                                                                                                             | none: hyperfine export |
| sort -n data.txt wall mean                | 120.1 ms |  60.0 ms | improvement | 2.00× faster: p = 0.00016, q = 0.00031, CI 1.99–2.01×: improvement (mean CPU time (user + system) 1.77× faster too, beyond the 1.50× that load can account for) | none: hyperfine export |
...
0 regressions, 2 improvements, 2 unchanged, 8 not tested; 4 metrics tested together (2 tests), p-values adjusted by Benjamini–Hochberg for a false-discovery rate of 5%

$ wb compare tests/fixtures/compare/bench_base.json tests/fixtures/compare/bench_new.json --fail-on-regression
...
| xz -k data wall mean        | 200.0 ms | 220.0 ms | regression | 1.10× slower: p = 1.1e-05, q = 4.3e-05, CI 1.10–1.10×: regression | no evidence  |
...
3 regressions, 0 improvements, 7 unchanged, 4 not tested; 10 metrics tested together (8 tests), p-values adjusted by Benjamini–Hochberg for a false-discovery rate of 5%
[1]

$ wb compare --threshold 0.2 --fail-on-regression tests/fixtures/compare/bench_base.json tests/fixtures/compare/bench_new.json
...
0 regressions, 0 improvements, 10 unchanged, 4 not tested; 10 metrics tested together (8 tests), p-values adjusted by Benjamini–Hochberg for a false-discovery rate of 5%

$ wb compare tests/fixtures/compare/generic_base.json tests/fixtures/compare/generic_new.json --json
{
  "schema_name": "wb.compare",
  "schema_version": 1,
  "base": {
    "path": "tests/fixtures/compare/generic_base.json",
    "format": "json"
  },
  "new": {
    "path": "tests/fixtures/compare/generic_new.json",
    "format": "json"
  },
  "threshold": 0.02,
  "rows": [
    {
      "metric": "build.compile_seconds",
      "record": null,
      "quantity": "build.compile_seconds",
      "kind": "time",
      "stat": "mean",
      "unit": "s",
      "base": 12.5,
      "new": 11.0,
...
      "verdict": "not tested",
      "reason": "1.14× faster: no repeated samples on either side",
      "note": null,
      "change": "1.14× faster",
      "interference": null
    },
    {
      "metric": "build.warnings_count",
...
  "summary": {
    "compared": 7,
    "tested": 0,
    "tests": 0,
    "correction": null,
    "alpha": 0.05,
    "regressions": 2,
    "improvements": 0,
    "unchanged": 1,
    "not_tested": 3,
    "changed": 1,
    "inconclusive": 0,
    "interference": 0,
    "confounded": 0,
    "only_base": 1,
    "only_new": 1,
    "text": "2 regressions, 0 improvements, 1 unchanged, 3 not tested, 1 changed (2 metrics not in both files)",
    "notes": []
  }
}

$ wb compare tests/fixtures/compare/generic_base.json tests/fixtures/compare/generic_new.json --json --fail-on-regression > $T/out.json; echo "exit $?"; grep -c '"verdict": "regression"' $T/out.json
exit 1
2

$ wb compare tests/fixtures/compare/malformed.json tests/fixtures/compare/bench_new.json
wb: compare: tests/fixtures/compare/malformed.json: json: line 3 col 39: unexpected character '}'
[2]

$ wb compare tests/fixtures/compare/bench_base.json tests/fixtures/compare/bench_v2.json
wb: compare: tests/fixtures/compare/bench_v2.json: unsupported wb.bench schema_version 2 (this wb reads up to 1)
[2]

$ wb compare tests/fixtures/compare/hyperfine_base.json tests/fixtures/compare/manifest_new.json
wb: compare: no metric in common between tests/fixtures/compare/hyperfine_base.json and tests/fixtures/compare/manifest_new.json
[2]

$ wb compare tests/fixtures/compare/bench_base.json $T/missing.json
wb: compare: /tmp/wbcli%.%w+/missing%.json: No such file or directory (re)
[2]

$ wb compare tests/fixtures/compare/bench_base.json
wb: compare: expected two files (BASE and NEW), got 1
usage: wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02] [--confirm]
[2]

$ wb compare a.json b.json --threshold two
wb: compare: --threshold takes a fraction in [0, 1) such as 0.02 or 2%, not 'two'
usage: wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02] [--confirm]
[2]

$ wb compare --help
usage: wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02] [--confirm]

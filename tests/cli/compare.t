# `wb compare BASE NEW`: the Markdown table, --fail-on-regression, --json and the exit-2 errors.

$ wb compare tests/fixtures/compare/manifest_base.json tests/fixtures/compare/manifest_new.json
| metric                        |     base |      new | change                                  | verdict     |
| :---------------------------- | -------: | -------: | :-------------------------------------- | :---------- |
| binary_cpu output_row_count   |    50000 |    50000 | unchanged                               | unchanged   |
| binary_cpu output_total_bytes |  3.0 MiB |  3.0 MiB | 1.00× larger                            | unchanged   |
| binary_cpu stage_seconds.fit  |  2.500 s |  2.500 s | 1.00× slower                            | unchanged   |
| binary_cpu stage_seconds.load |  1.500 s |  1.500 s | 1.00× slower                            | unchanged   |
| binary_cpu wall_time_seconds  |  4.200 s |  4.250 s | 1.01× slower (95% CI 0.96–1.04×, p = 1) | unchanged   |
| linear_cpu output_row_count   |    50000 |    49998 | -2                                      | regression  |
| linear_cpu output_total_bytes |  2.0 MiB |  2.0 MiB | 1.00× larger                            | unchanged   |
| linear_cpu stage_seconds.fit  | 400.0 ms | 100.0 ms | 4.00× faster                            | improvement |
| linear_cpu stage_seconds.load |  1.500 s |  1.500 s | 1.00× slower                            | unchanged   |
| linear_cpu wall_time_seconds  |  2.000 s |  1.600 s | 1.25× faster                            | improvement |
...
1 regression, 2 improvements, 7 unchanged (2 metrics not in both files)

$ wb compare tests/fixtures/compare/hyperfine_base.json tests/fixtures/compare/hyperfine_new.json --fail-on-regression
...
| sort -n data.txt mean                | 120.1 ms |  60.0 ms | 2.00× faster (95% CI 1.99–2.01×, p = 0.00016) | improvement |
...
0 regressions, 5 improvements, 7 unchanged

$ wb compare tests/fixtures/compare/bench_base.json tests/fixtures/compare/bench_new.json --fail-on-regression
...
| xz -k data wall mean        | 200.0 ms | 220.0 ms | 1.10× slower (95% CI 1.10–1.10×, p = 0.00018) | regression |
...
3 regressions, 0 improvements, 7 unchanged
[1]

$ wb compare --threshold 0.2 --fail-on-regression tests/fixtures/compare/bench_base.json tests/fixtures/compare/bench_new.json
...
0 regressions, 0 improvements, 10 unchanged

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
      "kind": "time",
      "unit": "s",
      "base": 12.5,
      "new": 11.0,
...
      "verdict": "improvement",
      "note": null,
      "change": "1.14× faster"
    },
    {
      "metric": "build.warnings_count",
...
  "summary": {
    "compared": 7,
    "regressions": 2,
    "improvements": 1,
    "unchanged": 3,
    "changed": 1,
    "inconclusive": 0,
    "only_base": 1,
    "only_new": 1,
    "text": "2 regressions, 1 improvement, 3 unchanged, 1 changed (2 metrics not in both files)"
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
usage: wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02]
[2]

$ wb compare a.json b.json --threshold two
wb: compare: --threshold takes a fraction in [0, 1) such as 0.02 or 2%, not 'two'
usage: wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02]
[2]

$ wb compare --help
usage: wb compare BASE.json NEW.json [--json] [--fail-on-regression] [--threshold 0.02]

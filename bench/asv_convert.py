"""The wb records of bench/history.lua as an asv 0.6 project, for `asv publish` to read.

usage: asv-venv/bin/python bench/asv_convert.py RUNS REPO OUT

RUNS holds one wb run directory per commit (manifest.json, preflight.json): each run of its
manifest (name, samples.wall_seconds) becomes the asv benchmark `wb.time_<name>`, and each
commit's samples one asv results file (format version 2) holding the result and statistics
asv's own runner computes from the samples (asv_runner.statistics.compute_stats). REPO is the
git repository of those commits (branch main); its commit dates are the results' dates. OUT
receives asv.conf.json, results/ and, when asv publish runs, html/. Nothing is timed here.
"""
import datetime
import hashlib
import json
import os
import subprocess
import sys

from asv_runner.statistics import compute_stats

ENV_NAME = "existing-wb"
PYTHON = "%d.%d" % sys.version_info[:2]


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, data, version=None):
    """Writes data as compact JSON, with asv's file format version when given."""
    if version is not None:
        data = dict(data, version=version)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, separators=(",", ":"))


def commit_dates(repo):
    """{sha: commit time in JavaScript milliseconds} of the branch main."""
    out = subprocess.run(["git", "-C", repo, "log", "--format=%H %ct", "main"], check=True,
                         capture_output=True, text=True).stdout
    return {sha: int(t) * 1000 for sha, t in (line.split() for line in out.splitlines())}


def machine_info(preflight):
    """asv's machine.json fields (strings, as `asv machine` writes them) from a wb preflight."""
    return {
        "machine": preflight.get("host") or "wb-bench",
        "arch": os.uname().machine,
        "cpu": preflight.get("cpu_model") or "",
        "num_cpu": str(preflight.get("cpu_count") or ""),
        "os": "Linux " + (preflight.get("kernel") or ""),
        "ram": str((preflight.get("memory_bytes") or 0) // 1024),
    }


def benchmark_entry(name):
    """The benchmarks.json entry `asv run` discovers for a plain time_ function."""
    code = "def time_%s():\n    pass  # converted from wb records" % name
    return {
        "code": code, "min_run_count": 2, "name": "wb.time_" + name, "number": 0, "param_names": [],
        "params": [], "repeat": 0, "rounds": 2, "sample_time": 0.01, "type": "time", "unit": "seconds",
        "version": hashlib.sha256(code.encode()).hexdigest(), "warmup_time": -1,
    }


# The columns of a results file's rows, as asv 0.6 writes them (a row leaves out its empty tail).
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
           "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]


def result_row(samples, version, started_at):
    """One benchmark's row of a results file, in the order of COLUMNS without the profile
    (unparameterized: each value a list of one)."""
    value, stats = compute_stats(samples, 1)
    return [[value], [], version, started_at, sum(samples), [stats["ci_99_a"]], [stats["ci_99_b"]],
            [stats["q_25"]], [stats["q_75"]], [stats["number"]], [stats["repeat"]], [samples]]


def main(runs, repo, out):
    out = os.path.abspath(out)
    dates = commit_dates(repo)
    benchmarks, machine = {}, None
    for entry in sorted(os.listdir(runs)):
        rundir = os.path.join(runs, entry)
        if not os.path.isfile(os.path.join(rundir, "manifest.json")):
            continue
        manifest = read_json(os.path.join(rundir, "manifest.json"))
        preflight = read_json(os.path.join(rundir, "preflight.json"))
        machine = machine or machine_info(preflight)
        sha = preflight["git"]["commit"]
        created = datetime.datetime.strptime(manifest["created_at_utc"], "%Y-%m-%dT%H:%M:%SZ")
        started_at = int(created.replace(tzinfo=datetime.timezone.utc).timestamp()) * 1000
        results = {}
        for run in manifest["runs"]:
            b = benchmarks.get(run["name"]) or benchmark_entry(run["name"])
            benchmarks[run["name"]] = b
            results[b["name"]] = result_row(run["samples"]["wall_seconds"], b["version"], started_at)
        params = dict(machine, python=PYTHON)
        write_json(os.path.join(out, "results", machine["machine"], "%s-%s.json" % (sha[:8], ENV_NAME)), {
            "commit_hash": sha, "env_name": ENV_NAME, "date": dates[sha], "params": params, "python": PYTHON,
            "requirements": {}, "env_vars": {}, "result_columns": COLUMNS, "results": results,
            "durations": {}}, version=2)
    if machine is None:
        sys.exit("asv_convert: no wb run directory in " + runs)
    write_json(os.path.join(out, "results", machine["machine"], "machine.json"), machine, version=1)
    write_json(os.path.join(out, "results", "benchmarks.json"),
               {b["name"]: b for b in benchmarks.values()}, version=2)
    write_json(os.path.join(out, "asv.conf.json"), {
        "version": 1, "project": "wb-history-bench", "project_url": "", "repo": os.path.abspath(repo),
        "dvcs": "git", "branches": ["main"], "environment_type": "existing", "benchmark_dir": "benchmarks",
        "results_dir": os.path.join(out, "results"), "html_dir": os.path.join(out, "html"),
        "env_dir": os.path.join(out, "env")})


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: asv_convert.py RUNS REPO OUT")
    main(*sys.argv[1:])

# wb bench on the command line: parameter scans named by scan.PARAM=values, the run directory.

$ wb bench 'sleep 0.00{n}' scan.n=1..4 runs=3 -o $T/scan | head -5
| Command .* | Relative | (re)
| :%-+ | .* | (re)
| `sleep 0.001` %(reference%) | .* |     1.00 | (re)
| `sleep 0.002` .* | (re)
| `sleep 0.004` .* | (re)

$ wb bench 'sleep 0.00{n}' scan.n=1,2 runs=2 --multirun -o $T/multi > /dev/null && ls $T/multi | grep -c summary.json
1

$ wb bench 'sleep 0.00{n}' scan.n=1,3 runs=2 -o $T/list > /dev/null && ls $T/list | grep -c -E '^(summary\.(json|md|csv)|runs\.csv|hyperfine\.json|report\.html)$'
6

$ wb bench 'sleep 0.01' scn.n=1 runs=1 -o $T/typo
wb: override 'scn.n=1': unknown key 'scn.n' (use +scn.n=1 to add it); did you mean 'scan'?
[2]

#!/usr/bin/env bash
# Evidence that speed verdicts can be trusted, on a GPU machine after scripts/gpu-suite.sh has built cugrade:
#   1. the reference's median time from a grading, against Nsight Compute's gpu__time_duration of the same kernels;
#   2. ten gradings of one submission placed about 10% from two tier boundaries: the spread of its reported time,
#      and whether its points ever change.
# Writes to $OUT (default build/speed-evidence).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${OUT:-build/speed-evidence}")
mkdir -p "$out"
cugrade=build/grader/cugrade
rubric=tests/speed/sum-speed-only.yaml

$cugrade check reference --exercise sum --rubric $rubric --cache-dir build/test-cache --json "$out/reference.json" >/dev/null 2>&1
ncu --clock-control none --target-processes all --kernel-name sum_kernel --launch-skip 40 \
    --launch-count 40 --metrics gpu__time_duration.sum --csv \
    $cugrade check reference --exercise sum --rubric $rubric --cache-dir build/test-cache >"$out/ncu.csv" 2>"$out/ncu.log"

for i in $(seq 1 10); do
    $cugrade check tests/fixtures/sum/seed_tree --exercise sum --rubric $rubric --cache-dir build/test-cache \
        --json "$out/grading-$i.json" >/dev/null 2>&1
done

python3 - "$out" <<'PY'
import csv, json, statistics, sys, pathlib
out = pathlib.Path(sys.argv[1])
def speed(path):
    case = next(c for c in json.loads(path.read_text())["exercises"][0]["cases"] if c["group"] == "speed")
    return case
ref = speed(out / "reference.json")["measurements"]
rows = [r for r in csv.reader(open(out / "ncu.csv")) if len(r) > 10]
if not rows:
    # The checker runs in the sandbox with a minimal environment, which Nsight Compute's injection variables are not
    # part of: a profiler outside cugrade sees no kernel of it.
    print(f"reference, sum of 2^28 floats: cugrade median {ref['reference_ms']:.4f} ms; Nsight Compute profiled no "
          f"kernel (its messages: {out / 'ncu.csv'}, {out / 'ncu.log'}), so there is no comparison")
else:
    header = rows[0]
    name_i, value_i = header.index("Kernel Name"), header.index("Metric Value")
    durations = [(r[name_i], float(r[value_i].replace(",", ""))) for r in rows[1:]]
    # One call is one sum_kernel launch; ncu reports nanoseconds.
    calls = [duration for name, duration in durations if "sum_kernel" in name]
    ncu_ms = statistics.median(calls) / 1e6
    print(f"reference, sum of 2^28 floats: cugrade median {ref['reference_ms']:.4f} ms (submission side {ref['submission_ms']:.4f} ms), "
          f"Nsight Compute gpu__time_duration median {ncu_ms:.4f} ms over {len(calls)} calls: "
          f"difference {100 * (ref['reference_ms'] - ncu_ms) / ncu_ms:+.2f}%")
gradings = [speed(out / f"grading-{i}.json") for i in range(1, 11)]
times = [g["measurements"]["submission_ms"] for g in gradings]
ratios = [g["measurements"]["ratio"] for g in gradings]
points = sorted({g["points"] for g in gradings})
print(f"ten gradings of tests/fixtures/sum/seed_tree: time {min(times):.4f} to {max(times):.4f} ms, "
      f"spread (max - min) / median {100 * (max(times) - min(times)) / statistics.median(times):.2f}%; "
      f"ratio to the reference {min(ratios):.3f} to {max(ratios):.3f}; points {points}; "
      f"samples {sorted({g['measurements']['samples'] for g in gradings})}")
PY

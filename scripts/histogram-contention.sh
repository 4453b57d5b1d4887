#!/usr/bin/env bash
# The reference histogram's time on 2^28 values spread over 256 bins and on 2^28 values all in one bin, each graded
# as a submission with the speed test's machinery (tests/speed/histogram-*.yaml), and their ratio: the target is at
# most 2. Run after cugrade is built (build/grader/cugrade), on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${OUT:-build/histogram-contention}")
mkdir -p "$out"
for input in spread one-bin; do
    build/grader/cugrade check reference --exercise histogram --rubric "tests/speed/histogram-$input.yaml" \
        --no-diagnosis --cache-dir build/test-cache --json "$out/$input.json" >/dev/null 2>&1 || true
done
python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def median_ms(name):
    report = json.loads((out / f"{name}.json").read_text())
    case = next(c for c in report["exercises"][0]["cases"] if c["group"] == "speed")
    return case["status"], case["measurements"].get("submission_ms")
times = {name: median_ms(name) for name in ("spread", "one-bin")}
for name, (status, ms) in times.items():
    print(f"histogram reference, 2^28 values, 256 bins, {name}: {ms} ms ({status})")
spread, one = times["spread"][1], times["one-bin"][1]
if spread and one:
    print(f"one bin / spread: {one / spread:.2f} (target: at most 2)")
PY

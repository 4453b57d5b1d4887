#!/usr/bin/env bash
# The whole suite on a machine with an NVIDIA GPU: configure, build, every test (the GPU fixtures included), then a
# verdict table of every fixture. Logs and reports go to $OUT (default build/gpu-suite). FIGURES=0 skips the
# reference figures and cugrade bench (the tests alone).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${OUT:-build/gpu-suite}")
mkdir -p "$out/reports"
jobs=$(nproc)

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$out/figures.txt"
if ! { cmake --preset default && cmake --build --preset default -j "$jobs"; } >"$out/build.log" 2>&1; then
    tail -40 "$out/build.log"
    exit 1
fi
export CUGRADE_FIXTURE_REPORTS=$out/reports
ctest --preset default -j "${CTEST_JOBS:-4}" --timeout 1200 2>&1 | tee "$out/ctest.log"
status=${PIPESTATUS[0]}
python3 scripts/verdict_table.py "$out/reports" | tee -a "$out/figures.txt"

if [ "${FIGURES:-1}" = 0 ]; then
    tar -czf "$out/reports.tar.gz" -C "$out" reports && rm -rf "$out/reports"
    exit "$status"
fi
# Figures taken alone on the GPU (the suite above runs several fixtures at once): the references graded as
# submissions, hidden cases shown.
build/grader/cugrade check reference --show-hidden --cache-dir build/test-cache \
    --json "$out/reports/figures-reference.json" >>"$out/figures.txt" 2>&1
# The references against CUB and the copy, alone on the GPU.
build/grader/cugrade bench --cache-dir build/test-cache --size 1048576 --size 16777216 --size 268435456 \
    --shape 8192x8192 --shape 16384x16384 --json "$out/reports/bench.json" 2>&1 | tee -a "$out/figures.txt"
tail -60 "$out/figures.txt"
tar -czf "$out/reports.tar.gz" -C "$out" reports && rm -rf "$out/reports"
exit "$status"

#!/usr/bin/env bash
# How many CUDA processes one GPU starts and ends a second, by how many run at once: plain, faulting, under racecheck
# and memcheck, and plain ones while faulting ones run beside them. A process's life holds something the driver
# serialises (its context made and torn down, a fault recovered, a sanitizer's start), so past a few at once more of
# them only wait longer: the rate a kind levels off at is what each of its processes costs a whole batch
# (docs/performance-history.md). Needs a GPU; nothing else may use it meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build}
mkdir -p "$out"
sanitizer=$(command -v compute-sanitizer || echo "$(dirname "$(command -v nvcc)")/compute-sanitizer")
program=$out/process-throughput
nvcc -O2 -arch=sm_90 -o "$program" scripts/process-throughput.cu
# The checker makes its context with one hardware queue (case_runner.cpp).
export CUDA_DEVICE_MAX_CONNECTIONS=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true

# KIND AT_ONCE COUNT COMMAND...: COUNT processes of COMMAND, AT_ONCE at a time.
measure() {
    local kind=$1 at_once=$2 count=$3
    shift 3
    local start end
    start=$(date +%s.%N)
    seq "$count" | timeout 120 xargs -P "$at_once" -I{} "$@" > /dev/null 2>&1 || echo "($kind: some processes failed)"
    end=$(date +%s.%N)
    awk -v kind="$kind" -v p="$at_once" -v m="$count" -v s="$start" -v e="$end" 'BEGIN {
        printf "%-22s %2d at once: %3d processes in %6.2f s, %5.1f a second, %.2f s each\n", kind, p, m, e - s,
               m / (e - s), (e - s) * p / m }'
}

measure plain 1 16 "$program"
for at_once in 2 4 8 16 32; do measure plain "$at_once" 48 "$program"; done
measure faulting 1 12 "$program" fault
for at_once in 4 8 16; do measure faulting "$at_once" 32 "$program" fault; done
racecheck=("$sanitizer" --tool racecheck --racecheck-report analysis --check-device-heap no)
measure racecheck 1 6 "${racecheck[@]}" "$program"
for at_once in 4 8 16; do measure racecheck "$at_once" 16 "${racecheck[@]}" "$program"; done
memcheck=("$sanitizer" --tool memcheck --leak-check no)
for at_once in 1 8 16; do measure memcheck "$at_once" 24 "${memcheck[@]}" "$program"; done
# Faulting processes, 8 at a time, for as long as the plain ones below take.
( seq 64 | xargs -P 8 -I{} "$program" fault > /dev/null 2>&1 || true ) &
faulting=$!
sleep 0.5
measure "plain beside faults" 8 48 "$program"
wait "$faulting"

#!/usr/bin/env bash
# Builds and runs scripts/counters-start.cu: where the checker's profile of a speed test spends its time in a fresh
# process (CUPTI's first Start after attaching, with and without the warm-up launch, by the number of launches), and
# whether it survives other contexts' work beside it: kernels back to back, then kernels that fault; then one attach kept
# across profiles (its cost, and what other contexts' faults between its profiles do to it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build}
mkdir -p "$out"
cupti=${CUPTI:-$(dirname "$(command -v nvcc)")/../lib64/libcupti.so}
program=$out/counters-start
nvcc -std=c++20 -O2 -arch=sm_90 -Iexercises/common -o "$program" scripts/counters-start.cu \
    exercises/common/counter_profile.cpp -lcuda -ldl
for run in "kernel 1" "empty 1" "none 1" "kernel 40" "kernel 200"; do
    echo "== warm-up and launches: $run"
    "$program" profile $run "$cupti"
done
echo "== beside another context's kernels, back to back"
"$program" busy 12 &
busy=$!
sleep 1
for _ in 1 2 3; do "$program" profile kernel 1 "$cupti" | grep profile || true; done
wait "$busy"
echo "== beside other contexts whose kernels fault"
( until=$((SECONDS + 25)); faults=0
  while [ $SECONDS -lt $until ]; do "$program" fault || faults=$((faults + 1)); done
  echo "faults: $faults" ) &
faulting=$!
sleep 1
failed=0
for _ in $(seq 1 12); do "$program" profile kernel 1 "$cupti" > "$out/counters-start.log" || failed=$((failed + 1)); grep failed "$out/counters-start.log" || true; done
echo "processes with a failed profile: $failed of 12"
wait "$faulting"
echo "== one attach kept across profiles of other kernels and of a module loaded after it"
"$program" kept "$cupti" || true
echo "== one attach kept, other contexts faulting between its profiles (attached and idle meanwhile)"
gate=$out/counters-start-gate
rm -rf "$gate"
mkdir -p "$gate"
"$program" kept "$cupti" "$gate" &
kept=$!
for _ in 1 2 3 4 5; do
    while [ ! -e "$gate/idle" ] && kill -0 "$kept" 2>/dev/null; do sleep 0.02; done
    rm -f "$gate/idle"
    for _ in 1 2 3; do "$program" fault || true; done
    touch "$gate/go"
done
wait "$kept" || true

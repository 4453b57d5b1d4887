#!/usr/bin/env bash
# Two questions about racecheck's cost and reports (docs/performance-history.md), on a small racy program
# (scripts/racecheck-reports.cu):
# - Is a child cheaper under one compute-sanitizer front-end that sees many processes (--target-processes all, a
#   spawner starting the children) than with a front-end each? Each child's time, one at a time and eight at once.
# - Does --print-limit hide the reports of later launches? The program launches its racy kernel 30 times, a marker
#   before each; counted: the launches with a report after their marker, and racecheck's summary.
# Every run is bounded; the figures go to $OUT (default build)/racecheck-reports/summary.txt. Needs a GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build}/racecheck-reports
mkdir -p "$out"
nvcc -O2 -arch=sm_90 -o "$out/racy" scripts/racecheck-reports.cu || exit 1
g++ -O2 -o "$out/spawner" scripts/racecheck-spawner.cpp || exit 1
sanitizer=$(command -v compute-sanitizer || echo "$(dirname "$(command -v nvcc)")/compute-sanitizer")
racecheck=("$sanitizer" --tool racecheck --racecheck-report analysis --check-device-heap no)
log() { echo "$@" | tee -a "$out/summary.txt"; }
: > "$out/summary.txt"
seconds() { local s; s=$(date +%s.%N); "$@"; awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f", e - s }'; }
races() { grep -c 'Race reported' "$1"; }

log "== a front-end each, 8 one at a time"
for i in 1 2 3 4 5 6 7 8; do
    took=$(seconds timeout 60 "${racecheck[@]}" "$out/racy" > "$out/each-$i.txt" 2>&1)
    log "  child $i: $took s, races reported: $(races "$out/each-$i.txt")"
done
log "== one front-end (--target-processes all), the spawner starting 8 children one at a time"
took=$(seconds timeout 120 "${racecheck[@]}" --target-processes all "$out/spawner" 8 1 "$out/racy" > "$out/kept-one.txt" 2>&1)
log "  whole: $took s, races reported: $(races "$out/kept-one.txt")"
grep SPAWNER "$out/kept-one.txt" | tee -a "$out/summary.txt"
log "== one front-end, 24 children 8 at once"
took=$(seconds timeout 120 "${racecheck[@]}" --target-processes all "$out/spawner" 24 8 "$out/racy" > "$out/kept-eight.txt" 2>&1)
log "  whole: $took s, races reported: $(races "$out/kept-eight.txt")"
grep SPAWNER "$out/kept-eight.txt" | tail -2 | tee -a "$out/summary.txt"
log "== a front-end each, 24 processes 8 at once (the spawner outside racecheck)"
printf '#!/bin/sh\nexec %s "$@"\n' "${racecheck[*]} $out/racy" > "$out/each.sh"
chmod +x "$out/each.sh"
took=$(seconds timeout 120 "$out/spawner" 24 8 "$out/each.sh" > "$out/each-eight.txt" 2>&1)
log "  whole: $took s, races reported: $(races "$out/each-eight.txt")"
grep SPAWNER "$out/each-eight.txt" | tail -2 | tee -a "$out/summary.txt"
log "== 30 launches of a racy kernel in one process"
for limit in 10 100; do
    timeout 60 "${racecheck[@]}" --print-limit "$limit" "$out/racy" 30 > "$out/limit-$limit.txt" 2>&1
    log "  --print-limit $limit: launches with a report: $(awk '/^launch/ { at = $2 } /Race reported/ { seen[at] = 1 }
        END { n = 0; for (k in seen) n++; print n }' "$out/limit-$limit.txt") of 30; $(grep -o 'RACECHECK SUMMARY.*' "$out/limit-$limit.txt")"
done

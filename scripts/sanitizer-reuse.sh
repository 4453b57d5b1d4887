#!/usr/bin/env bash
# Can one process under compute-sanitizer serve several submissions' device code in turn, rather than a process (and
# the tool's start) per submission? Runs scripts/sanitizer-reuse.cu over modules of scripts/sanitizer-reuse-kernel.cu:
# under racecheck, alone and with faulting processes beside it throughout (a fault of another process breaks an
# attached CUPTI profiler: does it break a sanitizer?); under memcheck with --destroy-on-device-error kernel (does the
# context outlive a reported access, so that the next submission still runs?) and with the default (it does not).
# Prints, per submission, how it ended and the reports pinned on it. Needs a GPU (docs/performance-history.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build}/sanitizer-reuse
mkdir -p "$out"
sanitizer=$(command -v compute-sanitizer || echo "$(dirname "$(command -v nvcc)")/compute-sanitizer")
nvcc -O2 -arch=sm_90 -o "$out/host" scripts/sanitizer-reuse.cu -lcuda
nvcc -fatbin -lineinfo -arch=sm_90 -DRACY -o "$out/racy.fatbin" scripts/sanitizer-reuse-kernel.cu
nvcc -fatbin -lineinfo -arch=sm_90 -o "$out/clean.fatbin" scripts/sanitizer-reuse-kernel.cu
nvcc -fatbin -lineinfo -arch=sm_90 -DOUT_OF_BOUNDS -o "$out/out_of_bounds.fatbin" scripts/sanitizer-reuse-kernel.cu
nvcc -O2 -arch=sm_90 -o "$out/faulting" scripts/process-throughput.cu

# The reports of each submission, from the tool's output in FILE.
reports() {
    awk '/^submission [0-9]+ ended/ { printf "  %s  races reported: %d, invalid accesses: %d\n", $0, races[at], accesses[at]; next }
         /^submission [0-9]+ / { at = $2 } /Race reported/ { races[at]++ } /Invalid / { accesses[at]++ }
         /SUMMARY/ { print "  " $0 }' "$1"
}
alternating=()
for _ in 1 2 3 4; do alternating+=("$out/racy.fatbin" "$out/clean.fatbin"); done
racecheck=("$sanitizer" --tool racecheck --racecheck-report analysis --check-device-heap no)

echo "== racecheck, 8 submissions in one process, alone"
start=$(date +%s.%N)
timeout 60 "${racecheck[@]}" "$out/host" "${alternating[@]}" > "$out/racecheck-alone.txt" 2>&1 || true
awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "  the whole process: %.2f s\n", e - s }'
reports "$out/racecheck-alone.txt"

# Two loops of processes that fault, until the script ends.
faulting=()
for _ in 1 2; do
    ( for _ in $(seq 200); do "$out/faulting" fault > /dev/null 2>&1 || true; done ) &
    faulting+=($!)
done
trap 'kill "${faulting[@]}" 2> /dev/null || true' EXIT
sleep 1
echo "== racecheck, 8 submissions in one process, processes faulting beside it throughout"
timeout 60 "${racecheck[@]}" "$out/host" "${alternating[@]}" > "$out/racecheck-faults.txt" 2>&1 || true
reports "$out/racecheck-faults.txt"
echo "== memcheck --destroy-on-device-error kernel: out of bounds, clean, racy, out of bounds, clean"
timeout 60 "$sanitizer" --tool memcheck --leak-check no --destroy-on-device-error kernel "$out/host" \
    "$out/out_of_bounds.fatbin" "$out/clean.fatbin" "$out/racy.fatbin" "$out/out_of_bounds.fatbin" \
    "$out/clean.fatbin" > "$out/memcheck-kernel.txt" 2>&1 || true
reports "$out/memcheck-kernel.txt"
echo "== memcheck, its default (the context destroyed on a reported access): out of bounds, clean"
timeout 60 "$sanitizer" --tool memcheck --leak-check no "$out/host" "$out/out_of_bounds.fatbin" \
    "$out/clean.fatbin" > "$out/memcheck-default.txt" 2>&1 || true
reports "$out/memcheck-default.txt"

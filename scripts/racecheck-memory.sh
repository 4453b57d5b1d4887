#!/usr/bin/env bash
# Where a racecheck process's start goes (docs/performance-history.md): its memory, mapped and faulted in page by page,
# read mid-run from /proc; and whether huge pages for malloc (GLIBC_TUNABLES=glibc.malloc.hugetlb=1) change its page
# faults or time. Every run is bounded; the figures go to $OUT (default build)/racecheck-memory/summary.txt. Needs a
# GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build}/racecheck-memory
mkdir -p "$out"
nvcc -O2 -arch=sm_90 -o "$out/pausing" scripts/racecheck-memory.cu || exit 1
sanitizer=$(command -v compute-sanitizer || echo "$(dirname "$(command -v nvcc)")/compute-sanitizer")
{
echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled), shmem: $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)"
echo "== the largest mappings of racecheck's target, mid-run"
timeout 60 "$sanitizer" --tool racecheck --check-device-heap no "$out/pausing" 4 > /dev/null 2>&1 &
front=$!
sleep 2.5
for pid in $(pgrep -f "$out/pausing 4"); do
    echo "-- pid $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" | cut -c1-100)"
    grep -E '^(Rss|AnonHugePages)' "/proc/$pid/smaps_rollup"
    awk '/^[0-9a-f]+-[0-9a-f]+ / { name = $6; range = $1; perm = $2 }
         /^Rss:/ { if ($2 > 10000) print $2 " KB", range, perm, name }' "/proc/$pid/smaps" | sort -rn | head -6
done
wait "$front"
echo "== one at a time: wall, user, system seconds, minor page faults, largest resident set"
for tool in racecheck memcheck; do
    for setting in "PLAIN=1" "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"; do
        for run in 1 2 3; do
            /usr/bin/time -f "$tool $setting: %e s, %U user, %S system, %R faults, %M KB" \
                env "$setting" timeout 60 "$sanitizer" --tool "$tool" --check-device-heap no "$out/pausing" \
                2>&1 > /dev/null | tail -1
        done
    done
done
} 2>&1 | tee "$out/summary.txt"

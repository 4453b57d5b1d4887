#!/usr/bin/env bash
# The figures of `cugrade grade` (docs/batch.md), on a synthetic class drawn from the fixture corpus: every student
# gets, for each exercise, one fixture in turn (correct, slow, wrong, crashing, hanging, not compiling).
#   STUDENTS=100 scripts/batch-benchmark.sh        the class from an empty cache: wall time per stage, the GPU's
#                                                   busy fraction, cugrade's own peak memory; then the points of a
#                                                   few students graded alone with `cugrade check`; then the class
#                                                   again into a second folder, killed with SIGKILL at three random
#                                                   moments and resumed: the gradebooks must be identical.
#   GPU_JOBS=1 ...                                  students graded at once on the GPU (default: cugrade's)
#   RESUME=0 CHECK_ALONE=0 ...                      skip those parts (STUDENTS=1000 RESUME=0 CHECK_ALONE=0 for the
#                                                   memory figure).
# Figures go to $OUT (default build/batch-benchmark)/figures.txt. Needs build/grader/cugrade.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${OUT:-build/batch-benchmark}")
students=${STUDENTS:-100}
cugrade=$PWD/build/grader/cugrade
rm -rf "$out" && mkdir -p "$out/class"
figures=$out/figures.txt

for exercise in sum minmax transpose; do
    mapfile -t fixtures < <(find "tests/fixtures/$exercise" -mindepth 1 -maxdepth 1 -type d | sort)
    for ((i = 0; i < students; i++)); do
        student=$(printf "s%04d" "$i")
        mkdir -p "$out/class/$student"
        fixture=${fixtures[$((i % ${#fixtures[@]}))]}
        cp "$fixture/$exercise.cu" "$out/class/$student/"
    done
done
echo "class: $students students x 3 exercises from tests/fixtures" | tee "$figures"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee -a "$figures"

# cugrade's own peak memory (VmHWM of its process, not its children's), sampled until it exits. Arguments: the
# files for its standard output and error, then the command.
run_measured() {
    local stdout=$1 stderr=$2
    shift 2
    "$@" > "$stdout" 2> "$stderr" &
    local pid=$! peak=0 hwm measured
    while kill -0 "$pid" 2>/dev/null; do
        # cugrade itself, under `timeout`
        measured=$(pgrep -P "$pid" -x cugrade | head -1)
        hwm=$(awk '/^VmHWM/ {print $2}' "/proc/${measured:-$pid}/status" 2>/dev/null || echo 0)
        [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
        sleep 0.5
    done
    wait "$pid"
    local status=$?
    echo "cugrade's own peak memory: $((peak / 1024)) MiB" | tee -a "$figures"
    return $status
}

if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 500 > "$out/gpu-utilization.txt" &
    sampler=$!
fi
start=$(date +%s.%N)
# LIMIT (seconds, default none) stops the grading early, so that a lease's time limit still leaves the figures of
# what was graded: per-student times by stage are in grade.log either way.
run_measured "$out/grade.txt" "$out/grade.log" \
    timeout -s INT "${LIMIT:-0}" "$cugrade" grade "$out/class" -o "$out/results" --cache-dir "$out/cache" \
    --require-sandbox none ${GPU_JOBS:+--gpu-jobs "$GPU_JOBS"}
end=$(date +%s.%N)
[ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
grep -E "^cugrade: (graded|time in each stage|grading on|built)" "$out/grade.log" | tee -a "$figures"
awk -v start="$start" -v end="$end" 'BEGIN { printf "wall time: %.1f s\n", end - start }' | tee -a "$figures"
if [ -s "$out/gpu-utilization.txt" ]; then
    awk '{ n++; sum += $1; busy += ($1 > 0) } END { if (n) printf "GPU busy: %.0f%% of samples, mean utilisation %.0f%%\n", 100 * busy / n, sum / n }' \
        "$out/gpu-utilization.txt" | tee -a "$figures"
fi
awk -F, 'NR > 2 { count[$(NF-1)]++ } END { for (s in count) printf "status %s: %d\n", s, count[s] }' \
    "$out/results/gradebook.csv" | sort | tee -a "$figures"

# The same class again with every result up to date: what the merge job of a cluster batch does once its tasks have
# graded everyone (keys compared, gradebook, exports and class report written).
start=$(date +%s.%N)
"$cugrade" grade "$out/class" -o "$out/results" --cache-dir "$out/cache" --require-sandbox none \
    > /dev/null 2> "$out/merge.log"
end=$(date +%s.%N)
awk -v start="$start" -v end="$end" -v n="$students" \
    'BEGIN { printf "merge (a rerun with all %d students up to date): %.1f s\n", n, end - start }' | tee -a "$figures"

if [ "${CHECK_ALONE:-1}" = 1 ]; then
    # A few students graded alone: each exercise's points and speed points must equal the gradebook's (which rounds
    # to hundredths). A racy fixture's correctness points may differ from run to run; its speed tier may not.
    differences=0
    for student in s0000 s0001 s0002 s0003 s0004 s0005; do
        [ -d "$out/class/$student" ] || continue
        "$cugrade" check "$out/class/$student" --cache-dir "$out/cache" --json "$out/$student.json" >/dev/null 2>&1
        python3 - "$out/$student.json" "$out/results/gradebook.csv" "$student" <<'PY' || differences=$((differences + 1))
import csv, json, sys
exercises = json.load(open(sys.argv[1]))["exercises"]
row = next(r for r in csv.DictReader(open(sys.argv[2], newline="")) if r["id"] == sys.argv[3])
def speed(e):
    return sum(c["points"] for c in e.get("cases", []) if c.get("group") == "speed")
points = {e["exercise"]: (e["points"], speed(e)) for e in exercises}
bad = {x: p for x, p in points.items() if abs(p[0] - float(row[x])) > 0.006}
tiers = {x: p for x, p in points.items() if abs(p[1] - float(row[x + ":speed"] or 0)) > 0.006}
print(f"{sys.argv[3]}: alone {points} (points, speed points)" +
      (f"; points DIFFERENT from the gradebook {bad}" if bad else "") +
      (f"; speed tier CHANGED {tiers}" if tiers else "") + ("" if bad or tiers else ", same as the gradebook"))
sys.exit(1 if bad or tiers else 0)
PY
    done | tee -a "$figures"
fi

if [ "${RESUME:-1}" = 1 ]; then
    # Killed with SIGKILL at three random moments, then resumed (the cache is warm now: the kills land in grading).
    for moment in 1 2 3; do
        "$cugrade" grade "$out/class" -o "$out/resumed" --cache-dir "$out/cache" --require-sandbox none \
            2>> "$out/resumed.log" >/dev/null &
        pid=$!
        sleep "$(awk -v seed="$RANDOM" 'BEGIN { srand(seed); printf "%.1f", 2 + rand() * 20 }')"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    "$cugrade" grade "$out/class" -o "$out/resumed" --cache-dir "$out/cache" --require-sandbox none \
        2>> "$out/resumed.log" >/dev/null
    graded=$(grep -cE '^cugrade: \[[0-9]+/[0-9]+\]' "$out/resumed.log")
    twice=$(grep -oE '^cugrade: \[[0-9]+/[0-9]+\] [^:]+' "$out/resumed.log" | awk '{print $3}' | sort | uniq -d | wc -l)
    if cmp -s "$out/results/gradebook.csv" "$out/resumed/gradebook.csv"; then same=identical; else same=DIFFERENT; fi
    echo "killed 3 times and resumed: $graded gradings for $students students, $twice graded twice, gradebook $same" |
        tee -a "$figures"
fi

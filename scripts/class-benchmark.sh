#!/usr/bin/env bash
# What grading a class costs (docs/batch.md, docs/performance.md), on a class made from the fixture corpus: student i
# gets, for each of sum, minmax and transpose, fixture i (mod the count) of that exercise (correct, slow, wrong, racy,
# crashing, hanging or not compiling), with a line naming the student appended, so that every file is distinct and
# built on its own: a #define, so that no two files are the same code either (a batch reads a slow speed test's
# counters once for files that differ only in comments: docs/diagnoses.md), or with COPIES=comment a comment, so that
# a fixture's copies are the same code.
#   scripts/class-benchmark.sh 100     the class graded from an empty cache with the defaults (diagnoses on): wall
#                                      time, builds, the time per stage summed over the students, the slowest
#                                      students, the GPU's busy fraction; then the same class again with nothing
#                                      changed (a rerun); then every fixture used graded alone with `cugrade check`,
#                                      and each student's verdicts and points compared with their fixture's
#   PHASES="class rerun" ...           only some phases: class, rerun, alone, compare, resume (default: the first
#                                      four). resume: the class again into a second folder, killed with SIGKILL at
#                                      three random moments and resumed; the gradebooks must be identical.
#   COPIES=comment ...                 a fixture's copies differ in a comment only (default: code, a #define)
#   GPU_JOBS=N, LIMIT=SECONDS ...      submissions graded at once on the GPU (default: cugrade's); stop the class after
#                                      LIMIT seconds, so that a lease's time limit still leaves the figures
# The class's trace (every harness process, its tool and seconds: `cugrade grade --trace`) is $OUT/trace.jsonl;
# `scripts/trace_summary.py $OUT/trace.jsonl $OUT/fixtures.txt` sums it by tool and by fixture.
# Figures go to $OUT (default build/class-benchmark)/figures.txt. Needs build/grader/cugrade.
set -uo pipefail
cd "$(dirname "$0")/.."
students=${1:-${STUDENTS:-100}}
phases=" ${PHASES:-class rerun alone compare} "
out=$(realpath -m "${OUT:-build/class-benchmark}")
cugrade=$PWD/build/grader/cugrade
exercises=(sum minmax transpose)
copies=${COPIES:-code}
case $copies in
    code) naming() { echo "#define CLASS_BENCHMARK_STUDENT_$1"; } ;;
    comment) naming() { echo "// class benchmark: $1"; } ;;
    *) echo "class-benchmark.sh: COPIES is code or comment, not '$copies'" >&2; exit 2 ;;
esac
figures=$out/figures.txt
mkdir -p "$out"
has() { [[ $phases == *" $1 "* ]]; }
seconds_since() { awk -v start="$1" -v end="$(date +%s.%N)" 'BEGIN { printf "%.1f", end - start }'; }

# The class, and which fixture each of its files came from (fixtures.txt: student exercise fixture).
if has class || [ ! -d "$out/class" ]; then
    rm -rf "$out/class" "$out/results" "$out/cache" "$out/fixtures.txt" "$out/trace.jsonl"
    mkdir -p "$out/class"
    for exercise in "${exercises[@]}"; do
        mapfile -t fixtures < <(find "tests/fixtures/$exercise" -mindepth 1 -maxdepth 1 -type d | sort)
        for ((i = 0; i < students; i++)); do
            student=$(printf "s%04d" "$i")
            fixture=${fixtures[$((i % ${#fixtures[@]}))]}
            mkdir -p "$out/class/$student"
            { cat "$fixture/$exercise.cu"; naming "$student"; } > "$out/class/$student/$exercise.cu"
            echo "$student $exercise $fixture" >> "$out/fixtures.txt"
        done
    done
    : > "$figures"
fi
grade() {
    "$cugrade" grade "$out/class" -o "$1" --cache-dir "$out/cache" --require-sandbox none ${GPU_JOBS:+--gpu-jobs "$GPU_JOBS"}
}

if has class; then
    echo "class: $students students x ${#exercises[@]} exercises (${exercises[*]}) from tests/fixtures, every file distinct (copies of a fixture differ in $([ "$copies" = code ] && echo "code: a #define" || echo "a comment only: the same code"))" |
        tee -a "$figures"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee -a "$figures"
    echo "cores: $(nproc)" | tee -a "$figures"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 \
            > "$out/gpu-utilization.txt" &
        sampler=$!
    fi
    vmstat -n 1 > "$out/cpu.txt" &
    cpu_sampler=$!
    start=$(date +%s.%N)
    timeout -s INT "${LIMIT:-0}" "$cugrade" grade "$out/class" -o "$out/results" --cache-dir "$out/cache" \
        --require-sandbox none ${GPU_JOBS:+--gpu-jobs "$GPU_JOBS"} --trace "$out/trace.jsonl" \
        > "$out/grade.txt" 2> "$out/grade.log"
    cold=$(seconds_since "$start")
    echo "cold (empty cache, diagnoses on): $cold s" | tee -a "$figures"
    [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
    kill "$cpu_sampler" 2>/dev/null
    grep -E "^cugrade: (graded|time in each stage|grading on|built)" "$out/grade.log" | tee -a "$figures"
    if [ -s "$out/gpu-utilization.txt" ]; then
        awk -F', *' '{ n++; sum += $1; busy += ($1 > 0); if ($2 > most) most = $2 }
            END { if (n) printf "GPU busy in %.0f%% of samples, mean utilisation %.0f%%, at most %.1f GiB of its memory in use\n", 100 * busy / n, sum / n, most / 1024 }' \
            "$out/gpu-utilization.txt" | tee -a "$figures"
    fi
    # vmstat's columns: ... us sy id wa st (the 13th to 17th); its first line of figures is since boot.
    awk 'NR > 3 && $15 ~ /^[0-9]+$/ { n++; busy += 100 - $15; wait += $16; if (100 - $15 > 90) full++ }
        END { if (n) printf "CPU busy %.0f%% on average (%.0f%% waiting for I/O), over 90%% busy in %.0f%% of seconds\n", busy / n, wait / n, 100 * full / n }' \
        "$out/cpu.txt" | tee -a "$figures"
    # A run cut at LIMIT ends without the batch's summary: the figures from the students graded by then.
    if ! grep -q '^cugrade: graded ' "$out/grade.log"; then
        awk -v cut="$cold" -v students="$students" '
            # The builds before grading began (the rest build beside the grading).
            /^cugrade: built (each|[0-9]+ submissions)/ { for (i = 1; i <= NF; i++) if ($i == "in") built = $(i + 1) }
            /^cugrade: \[[0-9]+\/[0-9]+\] / { graded++ }
            END { if (graded) printf "cut at %.0f s: %d of %d students graded in %.0f s after %.1f s of builds, %.1f s a student; all %d in about %.0f s\n",
                      cut, graded, students, cut - built, built, (cut - built) / graded, students, built + students * (cut - built) / graded }' \
            "$out/grade.log" | tee -a "$figures"
    fi
    # Each student's line: "cugrade: [k/N] ID: STATUS POINTS (S s: build B, harness start H, ...)".
    echo "the slowest students (seconds of the batch's time, all three exercises):" | tee -a "$figures"
    grep -E '^cugrade: \[[0-9]+/[0-9]+\] ' "$out/grade.log" | sed -E 's/^cugrade: \[[0-9]+\/[0-9]+\] //' |
        awk -F'[(]' '{ split($2, t, " "); print t[1] "\t" $0 }' | sort -rn | head -8 | cut -f2- | tee -a "$figures"
    awk -F, 'NR > 2 { count[$(NF-1)]++ } END { for (s in count) printf "status %s: %d\n", s, count[s] }' \
        "$out/results/gradebook.csv" | sort | tee -a "$figures"
    # The costliest fixtures, from the trace: what their submissions cost in processes and seconds.
    if [ -s "$out/trace.jsonl" ]; then
        python3 scripts/trace_summary.py "$out/trace.jsonl" "$out/fixtures.txt" |
            sed -n '/^by fixture/,/^the costliest/p' | sed '$d' | head -11 | tee -a "$figures"
    fi
fi

if has rerun; then
    start=$(date +%s.%N)
    grade "$out/results" > /dev/null 2> "$out/rerun.log"
    echo "rerun with nothing changed: $(seconds_since "$start") s" | tee -a "$figures"
fi

if has alone; then
    # Every fixture the class used, graded alone, one at a time, with the same cache.
    rm -rf "$out/alone" && mkdir -p "$out/alone"
    start=$(date +%s.%N)
    awk '{ print $2, $3 }' "$out/fixtures.txt" | sort -u | while read -r exercise fixture; do
        "$cugrade" check "$fixture" -e "$exercise" --cache-dir "$out/cache" --show-hidden \
            --json "$out/alone/$exercise-$(basename "$fixture").json" > /dev/null 2>&1
    done
    echo "every fixture alone with cugrade check: $(seconds_since "$start") s" | tee -a "$figures"
fi

if has compare; then
    python3 - "$out" <<'PY' | tee -a "$figures"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
cases_differ, points_differ, tiers_differ, compared = [], [], [], 0
for line in (out / "fixtures.txt").read_text().splitlines():
    student, exercise, fixture = line.split()
    name = pathlib.Path(fixture).name
    alone_file = out / "alone" / f"{exercise}-{name}.json"
    graded_file = out / "results" / "students" / student / "results-instructor.json"
    if not alone_file.exists() or not graded_file.exists():
        continue
    pick = lambda path: next(e for e in json.loads(path.read_text())["exercises"] if e["exercise"] == exercise)
    alone, graded = pick(alone_file), pick(graded_file)
    compared += 1
    a = {c["id"]: c for c in alone.get("cases", [])}
    for c in graded.get("cases", []):
        other = a.get(c["id"])
        if other is None or other["status"] != c["status"]:
            detail = (c.get("detail") or "").replace("\n", " ")[:160]
            cases_differ.append(f"{student} {exercise}/{name} {c['id']}: {other and other['status']} alone, "
                                f"{c['status']} in the class" + (f" ({detail})" if detail else ""))
        if other is not None and c.get("group") == "speed" and abs(other["points"] - c["points"]) > 1e-9:
            tiers_differ.append(f"{student} {exercise}/{name}: speed {other['points']} alone, {c['points']} in the class")
    if abs(alone.get("points", 0) - graded.get("points", 0)) > 0.006:
        points_differ.append(f"{student} {exercise}/{name}: {alone.get('points')} alone, {graded.get('points')} in the class")
print(f"verdicts against each fixture graded alone: {compared} submissions compared, {len(cases_differ)} cases with "
      f"another status, {len(points_differ)} submissions with other points, {len(tiers_differ)} changed speed tiers")
for line in (cases_differ + points_differ + tiers_differ)[:40]:
    print("  " + line)
PY
fi

if has resume; then
    # Killed with SIGKILL at three random moments, then resumed (the cache is warm now: the kills land in grading).
    rm -rf "$out/resumed"
    for moment in 1 2 3; do
        grade "$out/resumed" 2>> "$out/resumed.log" >/dev/null &
        pid=$!
        sleep "$(awk -v seed="$RANDOM" 'BEGIN { srand(seed); printf "%.1f", 2 + rand() * 20 }')"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    grade "$out/resumed" 2>> "$out/resumed.log" >/dev/null
    graded=$(grep -cE '^cugrade: \[[0-9]+/[0-9]+\]' "$out/resumed.log")
    twice=$(grep -oE '^cugrade: \[[0-9]+/[0-9]+\] [^:]+' "$out/resumed.log" | awk '{print $3}' | sort | uniq -d | wc -l)
    if cmp -s "$out/results/gradebook.csv" "$out/resumed/gradebook.csv"; then same=identical; else same=DIFFERENT; fi
    echo "killed 3 times and resumed: $graded gradings for $students students, $twice graded twice, gradebook $same" |
        tee -a "$figures"
fi

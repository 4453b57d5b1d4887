#!/usr/bin/env python3
"""Sums a grading trace (cugrade grade --trace FILE) by tool: processes, seconds, seconds waiting for the GPU, the
longest process, and how the processes ended; what a submission costs on average; then the submissions that cost the
most; then the times the GPU was held alone (speed tests, profiled calls): how long they held it and for what (the
counters' turns, or the case's group), how long each waited for it, and what the work that left last before it was;
then the cases' own time (waits for the GPU excluded) by exercise, case group and tool, with each one's median, and
the slowest cases; then the cases set aside (a seeming hang that kept a speed test waiting, stopped and run again
once the GPU was quiet) and how long their submissions waited; then the cases run once more after a launch failure
(another context's fault can end a correct kernel so); then why Nsight Compute was asked (the harness's own
counters said why they were not enough); then what the harness's own counters cost, step by step, and the rounds of
profiles; then the class's end: when its last student started, how many were graded at once after that, and what ran
beside each quiet round.

    scripts/trace_summary.py TRACE [FIXTURES]

FIXTURES, a class made by scripts/class-benchmark.sh (its fixtures.txt: student, exercise, fixture), adds what each
fixture's submissions cost: their processes by tool, their seconds, and their share of all the processes' time."""
import collections
import json
import statistics
import sys

lines = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
records = [r for r in lines if "event" not in r]
alone = [r for r in lines if r.get("event") == "alone"]
cases = [r for r in lines if r.get("event") == "case"]
set_aside = [r for r in lines if r.get("event") == "set_aside"]
quiet = [r for r in lines if r.get("event") == "quiet"]
launch_failure_reruns = [r for r in lines if r.get("event") == "launch_failure_rerun"]
profiles = [r for r in lines if r.get("event") == "profile"]
counter_profiles = [r for r in lines if r.get("event") == "counters"]
by_tool = collections.defaultdict(list)
by_submission = collections.Counter()
for r in records:
    by_tool[r["tool"]].append(r)
    by_submission[r["submission"]] += r["seconds"]
print(f"{'tool':<16} {'processes':>9} {'seconds':>9} {'waited':>8} {'starting':>8} {'longest':>8}  endings")
for tool, rs in sorted(by_tool.items(), key=lambda item: -sum(r["seconds"] for r in item[1])):
    endings = collections.Counter(r["ended"] for r in rs)
    # Outside its cases and its waits: the process's start (CUDA, the tool's instrumenting) and its end.
    starting = sum(r["seconds"] - r["in_cases"] - r["waited_for_gpu"] for r in rs)
    print(f"{tool:<16} {len(rs):>9} {sum(r['seconds'] for r in rs):>9.1f} {sum(r['waited_for_gpu'] for r in rs):>8.1f} "
          f"{starting:>8.1f} "
          f"{max(r['seconds'] for r in rs):>8.1f}  " + ", ".join(f"{n} {e}" for e, n in endings.most_common(3)))
n = max(1, len(by_submission))
waited = sum(r["waited_for_gpu"] for r in records)
starting = sum(r["seconds"] - r["in_cases"] - r["waited_for_gpu"] for r in records)
print(f"per submission ({len(by_submission)}): {len(records) / n:.1f} processes ("
      + ", ".join(f"{tool} {len(rs) / n:.1f}" for tool, rs in sorted(by_tool.items(), key=lambda item: -len(item[1])))
      + f"), {sum(r['seconds'] for r in records) / n:.1f} s, of which {waited / n:.1f} s waiting for the GPU and "
      f"{starting / n:.1f} s starting")
# Where a process's time outside its cases and waits went: to its first case (CUDA's start, a tool's), after its last
# (its end); and the CPU it used, the harness (a tool included) and the submission's runner.
timed = [r for r in records if r.get("ready_after", -1) >= 0 and "cpu" in r]
if timed:
    print(f"{'tool, ending':<40} {'processes':>9} {'to ready':>8} {'after':>6} {'cpu':>6} {'runner':>6}  (means, s)")
    groups = collections.defaultdict(list)
    for r in timed:
        groups[(r["tool"], r["ended"])].append(r)
    for (tool, ended), rs in sorted(groups.items(), key=lambda item: -len(item[1]))[:10]:
        k = len(rs)
        before = [r.get("waited_before_ready", 0.0) for r in rs]
        to_ready = sum(r["ready_after"] - w for r, w in zip(rs, before)) / k
        after = sum(r["seconds"] - r["ready_after"] - r["in_cases"] - (r["waited_for_gpu"] - w)
                    for r, w in zip(rs, before)) / k
        print(f"{tool + ', ' + ended:<40.40} {k:>9} {to_ready:>8.2f} {after:>6.2f} "
              f"{sum(r['cpu'] for r in rs) / k:>6.2f} {sum(r['runner_cpu'] for r in rs) / k:>6.2f}")
# Jobs of kept checkers (a race check, a memory check or a wrong answer's rerun serving one submission after
# another): how many, how many checkers started for them, and how many had nothing reported (the tool had nothing to
# say) rather than going to a fresh process; then the same by kind (a rerun's checker has bare buffers).
jobs = [r for r in records if "kept_job" in r]
def kept_line(label, jobs):
    silent = sum(1 for r in jobs if r["ended"] == "a job served, nothing reported")
    later = sorted(r["seconds"] for r in jobs if r["kept_job"] > 1)
    print(f"{label}: {len(jobs)} jobs, {sum(1 for r in jobs if r['kept_job'] == 1)} checkers started for them; "
          f"{silent} with nothing reported, {len(jobs) - silent} with a report or not finished; "
          f"{sum(r['seconds'] for r in jobs) / len(jobs):.2f} s a job"
          + (f", {later[len(later) // 2]:.2f} s (median) where the checker had served one before" if later else ""))
if jobs:
    kept_line("kept checkers", jobs)
    kinds = {}
    for r in jobs:
        kinds.setdefault(r["tool"] + (" (reruns)" if r.get("bare_buffers") else ""), []).append(r)
    for kind in sorted(kinds):
        kept_line("  " + kind, kinds[kind])
def wall_in_processes(spans):
    """Seconds of wall time with at least one of the (start, end) spans running: processes run at once count once."""
    total, reach = 0.0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total
if len(sys.argv) > 2:
    # The submission's label is its path: .../STUDENT/EXERCISE.cu.
    fixture_of = {}
    for line in open(sys.argv[2]):
        if line.strip():
            student, exercise, fixture = line.split()
            fixture_of[(student, exercise)] = f"{exercise}/{fixture.rstrip('/').rsplit('/', 1)[-1]}"
    by_fixture = collections.defaultdict(list)
    for r in records:
        student, file = r["submission"].rsplit("/", 2)[-2:]
        by_fixture[fixture_of.get((student, file.removesuffix(".cu")), "?")].append(r)
    everything = sum(r["seconds"] for r in records) or 1.0
    print("by fixture (its submissions; a submission's processes, by tool, and seconds, and the wall time with one "
          "running; their share of all):")
    for fixture, rs in sorted(by_fixture.items(), key=lambda item: -sum(r["seconds"] for r in item[1])):
        k = len({r["submission"] for r in rs})
        tools = collections.Counter(r["tool"] for r in rs)
        seconds = sum(r["seconds"] for r in rs)
        starting = sum(r["seconds"] - r["in_cases"] - r["waited_for_gpu"] for r in rs)
        spans = collections.defaultdict(list)
        for r in rs:
            spans[r["submission"]].append((r["at"] - r["seconds"], r["at"]))
        wall = sum(wall_in_processes(s) for s in spans.values())
        print(f"    {fixture:<40} {k:>3} {len(rs) / k:>5.1f} processes ("
              + ", ".join(f"{tool} {n / k:.1f}" for tool, n in tools.most_common())
              + f"), {seconds / k:5.1f} s ({starting / k:.1f} starting; wall {wall / k:.1f} s), "
              + f"{100 * seconds / everything:4.1f}%")
print("the costliest submissions (seconds of harness processes; wall: with at least one of them running):")
for submission, seconds in by_submission.most_common(8):
    tools = collections.Counter()
    spans = []
    for r in records:
        if r["submission"] == submission:
            tools[r["tool"]] += r["seconds"]
            spans.append((r["at"] - r["seconds"], r["at"]))
    print(f"  {seconds:6.1f} s (wall {wall_in_processes(spans):5.1f} s)  {submission}: "
          + ", ".join(f"{t} {s:.1f}" for t, s in tools.most_common()))

if alone:
    held = sum(r["held"] for r in alone)
    waited = sum(r["waited"] for r in alone)
    print(f"the GPU alone: {len(alone)} times, {held:.1f} s held, {waited:.1f} s waited for it "
          f"({sum(r['waited'] > 1 for r in alone)} waits over 1 s)")
    # What had it: the counters' turns, a speed test's turn that its profile shared, and otherwise the case's group (a
    # speed test's sampling, a profiled call).
    by_reason = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for r in alone:
        group = (r.get("case") or "?").split("/")[0]
        if r.get("counters"):
            reason = "counters" if r.get("counters_from_start", True) else f"{group} + counters"
        else:
            reason = group
        entry = by_reason[f"{reason} ({r['tool']})"]
        entry[0] += 1
        entry[1] += r["held"]
        entry[2] = max(entry[2], r["held"])
    print("  held by (what: times, seconds held, longest):")
    for reason, (n, h, longest) in sorted(by_reason.items(), key=lambda item: -item[1][1]):
        print(f"    {reason:<28} {n:>4} {h:>7.1f} {longest:>7.2f}")
    # What a speed test waited for: the last shared work to leave, by tool and by the case's group.
    by_kind = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for r in alone:
        if not r["last_to_leave"]:
            continue
        _, case, tool = r["last_to_leave"].rsplit(" ", 2)
        kind = by_kind[f"{tool} {case.split('/')[0]}"]
        kind[0] += 1
        kind[1] += r["waited"]
        kind[2] += r["last_to_leave_held"]
    print("  waited for (tool, group: times, seconds waited, seconds that work had held the GPU):")
    for kind, (n, w, h) in sorted(by_kind.items(), key=lambda item: -item[1][1])[:10]:
        print(f"    {kind:<28} {n:>4} {w:>7.1f} {h:>7.1f}")
    print("  the longest holds:")
    for r in sorted(alone, key=lambda r: -r["held"])[:5]:
        print(f"    {r['held']:6.2f} s  {r['submission']} ({r['tool']})")

if cases:
    # A submission's label ends with its file (sum.cu); a case's group is its id's first part (edges/n=0/... ).
    by_group = collections.defaultdict(list)
    for r in cases:
        by_group[(r["submission"].rsplit("/", 1)[-1], r["case"].split("/")[0], r["tool"])].append(r["seconds"])
    total = sum(r["seconds"] for r in cases)
    print(f"the cases: {len(cases)} runs, {total:.1f} s (file, group, tool: runs, seconds, median ms, longest s):")
    for (file, group, tool), seconds in sorted(by_group.items(), key=lambda item: -sum(item[1]))[:15]:
        print(f"    {file + ' ' + group + ' ' + tool:<36} {len(seconds):>5} {sum(seconds):>7.1f} "
              f"{1000 * statistics.median(seconds):>7.1f} {max(seconds):>7.2f}")
    print("  the slowest cases:")
    for r in sorted(cases, key=lambda r: -r["seconds"])[:8]:
        print(f"    {r['seconds']:6.2f} s  {r['submission']} {r['case']} ({r['tool']})")

if set_aside or quiet:
    print(f"set aside: {len(set_aside)} cases, {sum(r['held'] for r in set_aside):.1f} s held before each was stopped; "
          f"{len(quiet)} waits for a quiet GPU, {sum(r['waited'] for r in quiet):.1f} s in all")
    for r in set_aside:
        print(f"    {r['held']:6.2f} s  {r['submission']} {r['case']}")

if launch_failure_reruns:
    print(f"run once more after a launch failure: {len(launch_failure_reruns)} cases")
    for r in launch_failure_reruns:
        print(f"    {r['submission']} {r['case']}: {r['detail'][:100]}")

if profiles:
    print(f"Nsight Compute asked {len(profiles)} times (status, why the harness's counters were not enough):")
    for (status, why), n in collections.Counter((r["status"], r["why"][:120]) for r in profiles).most_common(10):
        print(f"    {n:>4}  {status}: {why}")
    for r in profiles[:10]:
        print(f"    {r['submission']} {r['case']}")

if counter_profiles:
    # The checker's own counters: what each step cost, summed (the GPU-alone steps are availability to disable).
    steps = collections.defaultdict(float)
    for r in counter_profiles:
        for step, seconds in r.get("steps", {}).items():
            steps[step] += seconds
    print(f"the checker's counters: {len(counter_profiles)} profiles, "
          f"{sum(r['setup_seconds'] + r['seconds'] for r in counter_profiles):.1f} s, "
          f"{sum(r['passes'] for r in counter_profiles) / len(counter_profiles):.1f} passes each; by step (s):")
    print("    " + ", ".join(f"{step} {seconds:.1f}" for step, seconds in sorted(steps.items(), key=lambda i: -i[1])))
# Rounds of profiles (a batch's slow speed tests profiled together, one checker attached for several): how many, their
# jobs, how long they held the GPU alone, and the jobs that failed.
rounds = [r for r in lines if r.get("event") == "counters_round"]
if rounds:
    jobs = [r for r in lines if r.get("event") == "counters_job"]
    print(f"rounds of profiles: {len(rounds)} (a checker's share of a round each), {sum(r['jobs'] for r in rounds)} "
          f"jobs, {sum(r['checkers'] for r in rounds)} checkers started; the GPU alone "
          f"{sum(r['held'] for r in rounds):.1f} s, waited for {sum(r['waited'] for r in rounds):.1f} s; "
          f"{sum(r['failed'] for r in rounds)} jobs without a profile")
    if jobs:
        seconds = sorted(r["seconds"] for r in jobs)
        print(f"    a job {sum(seconds) / len(seconds):.2f} s on average, {seconds[len(seconds) // 2]:.2f} s median, "
              f"{seconds[-1]:.2f} s at most")
    for r in [r for r in jobs if not r.get("profiled")][:10]:
        print(f"    no profile: {r['submission']} {r['case']}: {r.get('detail', '')[:160]}")
# Speed tests diagnosed from counters read on the same code before (a file differing only in comments).
same_code = [r for r in lines if r.get("event") == "counters_of_same_code"]
if same_code:
    print(f"diagnosed from the counters of the same code read before: {len(same_code)} speed tests "
          f"of {len({r['submission'] for r in same_code})} submissions")

# The class's end (records carry "at", seconds since the trace began, as each ended): a student's span runs from its
# first process's start to its last's end.
def student_of(record):
    return record["submission"].rsplit("/", 2)[-2]  # the label is .../STUDENT/EXERCISE.cu


timed_records = [r for r in records if "at" in r]
if timed_records:
    spans = {}
    for r in timed_records:
        start, end = r["at"] - r["seconds"], r["at"]
        first, last = spans.get(student_of(r), (start, end))
        spans[student_of(r)] = (min(first, start), max(last, end))
    class_end = max(end for _, end in spans.values())
    last_start, last_end = max(spans.values())
    # Students graded at once from the last one's start on, sampled every 0.1 s.
    samples = [last_start + 0.1 * k for k in range(int((class_end - last_start) / 0.1) + 1)]
    at_once = [sum(start <= t < end for start, end in spans.values()) for t in samples]
    print(f"the class's end: its last student started at {last_start:.1f} s and its last process ended at "
          f"{class_end:.1f} s; from that start on, {sum(at_once) / max(1, len(at_once)):.1f} students at once on "
          f"average, {last_end - last_start:.1f} s for that last student")
    # A round's waits end together: those within a second of each other are one round.
    rounds = []
    for r in sorted((r for r in quiet if "at" in r), key=lambda r: r["at"]):
        if rounds and r["at"] - rounds[-1][-1]["at"] < 1.0:
            rounds[-1].append(r)
        else:
            rounds.append([r])
    for waits in rounds:
        opened = waits[0]["at"]
        round_students = {student_of(r) for r in waits}
        # Its processes: one case each, started as it opened.
        ended = [r["at"] for r in timed_records if student_of(r) in round_students and r["cases"] == 1 and
                 opened - 0.5 <= r["at"] - r["seconds"] <= opened + 5]
        round_end = max(ended, default=opened)
        beside = sorted(student for student, (start, end) in spans.items()
                        if start < round_end and end > opened and student not in round_students)
        print(f"  a quiet round opened at {opened:.1f} s for {len(round_students)} students"
              + (f", its {len(ended)} processes ending {min(ended):.1f}-{max(ended):.1f} s" if ended else "")
              + f"; {len(beside)} other students graded beside it" + (f" ({', '.join(beside)})" if beside else "")
              + f"; its students' last process ended at {max(spans[s][1] for s in round_students):.1f} s")

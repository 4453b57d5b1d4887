#!/usr/bin/env python3
"""Summarises fixture reports (CUGRADE_FIXTURE_REPORTS) as the diagnoses each fixture got and what they cost: per
fixture, the failing or slow cases' diagnoses (kind and summary, one per distinct summary), the patterns, and the
seconds the grading spent on diagnoses (compute-sanitizer reruns, the profile) beside its other stages."""
import json
import pathlib
import sys

folder = pathlib.Path(sys.argv[1])
costs = []
for path in sorted(folder.glob("*.json")):
    report = json.loads(path.read_text())
    seconds_file = folder / "seconds" / path.name
    seconds = json.loads(seconds_file.read_text()) if seconds_file.exists() else {}
    for exercise in report["exercises"]:
        lost = [c for c in exercise["cases"] if c["status"] not in ("passed", "skipped")]
        if not lost:
            continue
        diagnosis_seconds = seconds.get("diagnosis", 0.0)
        other = sum(v for k, v in seconds.items() if k not in ("diagnosis", "gpu_wait", "quiet_wait"))
        costs.append((diagnosis_seconds, path.stem))
        print(f"{path.stem}: {len(lost)} cases lost points; diagnoses {diagnosis_seconds:.1f} s "
              f"(the rest of the grading {other:.1f} s)")
        seen = set()
        for c in lost:
            d = c.get("diagnosis")
            if d and d["summary"] not in seen:
                seen.add(d["summary"])
                print(f"  {d['kind']:<13} {d['summary']}  [{c['id']}]")
        for p in exercise.get("patterns", []):
            print(f"  {'pattern':<13} {p['summary']}")
        for note in exercise.get("diagnosis_notes", []):
            print(f"  {'note':<13} {note}")
if costs:
    costs.sort()
    print(f"\ndiagnosis seconds per submission: median {costs[len(costs) // 2][0]:.1f}, "
          f"most {costs[-1][0]:.1f} ({costs[-1][1]})")

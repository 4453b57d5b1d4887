#!/usr/bin/env python3
"""Summarises fixture reports (cugrade --json) as one table: fixture, outcome, points, and the count of each status."""
import collections
import json
import pathlib
import sys

rows = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    report = json.loads(path.read_text())
    for exercise in report["exercises"]:
        counts = collections.Counter(case["status"] for case in exercise["cases"])
        speed = next((c for c in exercise["cases"] if c["group"] == "speed"), None)
        timing = ""
        if speed and "ratio" in speed.get("measurements", {}):
            m = speed["measurements"]
            timing = f'{m["submission_ms"]:.3f} ms vs ref {m["reference_ms"]:.3f} ms ({m["ratio"]:.2f}x)'
        rows.append((path.stem, exercise["outcome"], f'{exercise["points"]:.2f}/{exercise["max_points"]:.0f}',
                     ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), timing))
    gpu = report["gpu"].get("name", "no GPU")
print(f"GPU: {gpu}" if rows else "no reports")
widths = [max(len(r[i]) for r in rows) for i in range(5)] if rows else []
for r in rows:
    print("  ".join(r[i].ljust(widths[i]) for i in range(5)))

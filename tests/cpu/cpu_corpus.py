#!/usr/bin/env python3
"""The fixture corpus graded by the CPU self-check (`cugrade check --cpu`), against the verdicts the GPU gives.

Every fixture, reference and template of the exercises named below is checked on the CPU; each case the CPU ran is
compared with the statuses its expected.yaml allows on the GPU (`status`, then the first `cases` rule whose glob
matches). A case whose CPU verdict is not among them must be listed in tests/cpu/cpu_differs.yaml with the reason
("may differ on CPU"); anything else fails the test. Prints the agreement rate (docs/cpu-mode.md quotes it).

    cpu_corpus.py CUGRADE SOURCE_DIR CACHE_DIR [EXERCISE ...]
"""
import concurrent.futures
import fnmatch
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:
    print("the CPU corpus test needs PyYAML (python3-yaml)")
    sys.exit(77)

cugrade, source, cache = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
# Four exercises keep it to minutes in CI (dot for its host_partials, which the runner's rules reject); the others are
# checked on request (their references all pass). The matrices are slow here: transpose's 2048 x 2048 cases take about
# 100 s a fixture, matmul's 1000^3 minutes.
exercises = sys.argv[4:] or ["sum", "minmax", "histogram", "dot"]
fixtures = source / "tests" / "fixtures"
differs = yaml.safe_load((source / "tests" / "cpu" / "cpu_differs.yaml").read_text()) or {}


def as_list(value):
    return value if isinstance(value, list) else [value]


def allowed(expected, case_id):
    for rule in expected.get("cases") or []:
        if fnmatch.fnmatchcase(case_id, rule["match"]):
            return as_list(rule["status"])
    return as_list(expected.get("status", "passed"))


def subjects():
    for exercise in exercises:
        for folder in sorted((fixtures / exercise).iterdir()):
            if folder.is_dir() and folder.name != "compile_error":
                yield exercise, folder.name, folder, folder / "expected.yaml"
        for name, folder in (("reference", source / "reference"), ("template", source / "student_template")):
            yield exercise, name, folder, fixtures / f"{exercise}-{name}.expected.yaml"


def check(subject):
    exercise, name, folder, expected_file = subject
    with tempfile.TemporaryDirectory() as work:
        out = pathlib.Path(work) / "report.json"
        started = time.monotonic()
        subprocess.run([cugrade, "check", str(folder), "-e", exercise, "--cpu", "--show-hidden", "--cache-dir", cache,
                        "--json", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1200)
        seconds = time.monotonic() - started
        report = json.loads(out.read_text()) if out.exists() else None
    return subject, report, seconds


failures, agreed, compared, listed_used = [], 0, 0, set()
with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 1))) as pool:
    for (exercise, name, folder, expected_file), report, seconds in pool.map(check, list(subjects())):
        key = f"{exercise}/{name}"
        if report is None or report["exercises"][0].get("error"):
            failures.append(f"{key}: cugrade failed: {report and report['exercises'][0].get('error')}")
            continue
        expected = yaml.safe_load(expected_file.read_text())
        ran = [c for c in report["exercises"][0]["cases"] if c["status"] != "skipped"]
        known = differs.get(key, {})
        mismatches = []
        for c in ran:
            compared += 1
            if c["status"] in allowed(expected, c["id"]):
                agreed += 1
                continue
            reason = next((why for glob, why in known.items() if fnmatch.fnmatchcase(c["id"], glob)), None)
            if reason is None:
                mismatches.append(f"{c['id']}: {c['status']} on the CPU, the GPU gives "
                                  f"{' or '.join(allowed(expected, c['id']))} ({c['detail'][:160]})")
            else:
                listed_used.add(key)
        print(f"{key}: {len(ran)} cases on the CPU in {seconds:.1f} s, {len(mismatches)} unexplained differences")
        for m in mismatches:
            print(f"  MISMATCH {key}: {m}")
        sys.stdout.flush()
        failures += [f"{key}: {m}" for m in mismatches]

# A listed difference that no case shows any more is stale: the list says what the CPU gets wrong, no more.
for key in sorted(differs):
    if key.split("/")[0] in exercises and key not in listed_used:
        failures.append(f"{key}: listed in tests/cpu/cpu_differs.yaml, but every case agrees with the GPU now")
        print(f"  STALE {key}: listed in tests/cpu/cpu_differs.yaml, but every case agrees with the GPU now")

print(f"agreement with the GPU's verdicts: {agreed} of {compared} cases ({100.0 * agreed / max(compared, 1):.1f}%); "
      f"the others are listed in tests/cpu/cpu_differs.yaml with their reasons")
if failures:
    print(f"{len(failures)} cases differ from the GPU's verdicts without a reason in tests/cpu/cpu_differs.yaml, or "
          f"listed differences are stale")
sys.exit(1 if failures else 0)

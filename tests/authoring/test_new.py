#!/usr/bin/env python3
"""`cugrade new` as an instructor uses it: an exercise added to a copy of the course, refused where it must be, then
its reference and its template graded with `cugrade check`. On a GPU the reference passes and the template fails
every case but n=0; without one both build and report skipped (exit code 77).

Usage: test_new.py CUGRADE SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

CUGRADE, SOURCE, WORK = sys.argv[1:4]
NAME = "scale_twice"
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what, file=sys.stderr)


def cugrade(*arguments, cwd=None):
    return subprocess.run([CUGRADE, *arguments], cwd=cwd, capture_output=True, text=True, timeout=1200)


shutil.rmtree(WORK, ignore_errors=True)
course = os.path.join(WORK, "course")
for folder in ("exercises", "reference", "rubrics", "student_template"):
    shutil.copytree(os.path.join(SOURCE, folder), os.path.join(course, folder))

made = cugrade("new", NAME, "--course", course)
check(made.returncode == 0, f"cugrade new exited {made.returncode}: {made.stderr}")
expected_files = [f"exercises/{NAME}/exercise.yaml", f"exercises/{NAME}/{NAME}.h", f"exercises/{NAME}/harness.cu",
                  f"exercises/{NAME}/README.md", f"reference/{NAME}.cu", f"student_template/{NAME}.cu",
                  f"rubrics/{NAME}.yaml", f"tests/fixtures/{NAME}-reference.expected.yaml",
                  f"tests/fixtures/{NAME}-template.expected.yaml", f"tests/fixtures/{NAME}/README.md"]
for path in expected_files:
    check(os.path.isfile(os.path.join(course, path)), f"{path} was not written")
    check(f"  {path}\n" in made.stdout, f"the summary does not list {path}: {made.stdout}")
check("title: Scale twice\n" in open(os.path.join(course, f"exercises/{NAME}/exercise.yaml")).read(),
      "the default title is not made from the name")
for path in expected_files:
    text = open(os.path.join(course, path)).read()
    check("@name@" not in text and "@Title@" not in text and "@NAME@" not in text, f"{path} has a placeholder left")

# Refusals: nothing written, exit code 2, the message verbatim.
before = sorted(os.listdir(os.path.join(course, "exercises")))
for arguments, message in [
    ([NAME], f"cugrade: error: exercise '{NAME}' exists already: {course}/exercises/{NAME}\n"),
    (["Scale"], "cugrade: error: cannot name an exercise 'Scale': use lowercase letters, digits and '_', starting "
                "with a letter, at most 40 characters\n"),
    (["2d_scale"], "cugrade: error: cannot name an exercise '2d_scale': use lowercase letters, digits and '_', "
                   "starting with a letter, at most 40 characters\n"),
    (["float"], "cugrade: error: cannot name an exercise 'float': its entry point would clash with a name of C++, "
                "CUDA or the course\n"),
    (["cudaMalloc"], "cugrade: error: cannot name an exercise 'cudaMalloc': use lowercase letters, digits and '_', "
                     "starting with a letter, at most 40 characters\n"),
    (["cuda_sum"], "cugrade: error: cannot name an exercise 'cuda_sum': its entry point would clash with a name of "
                   "C++, CUDA or the course\n"),
    # What the C library and CUDA declare is asked of nvcc, on the headers the harness includes.
    (["read"], "cugrade: error: cannot name an exercise 'read': 'read' is a name the C library already declares "
               "(unistd.h); choose another\n"),
    (["time"], "cugrade: error: cannot name an exercise 'time': 'time' is a name the C library already declares "
               "(time.h); choose another\n"),
    (["fork"], "cugrade: error: cannot name an exercise 'fork': 'fork' is a name the C library already declares "
               "(unistd.h); choose another\n"),
    (["assert"], "cugrade: error: cannot name an exercise 'assert': 'assert' is a macro the C library already "
                 "defines (assert.h); choose another\n"),
    (["min"], "cugrade: error: cannot name an exercise 'min': 'min' is a name CUDA already declares "
              "(crt/math_functions.h); choose another\n"),
    # A usage error's hint names the subcommand used.
    (["-rf"], "cugrade: error: name is required\n(run 'cugrade new --help' for the options)\n"),
    ([NAME + "_too", "-rf"], "cugrade: error: The following argument was not expected: -rf\n"
                             "(run 'cugrade new --help' for the options)\n"),
]:
    refused = cugrade("new", *arguments, "--course", course)
    check(refused.returncode == 2, f"cugrade new {arguments} exited {refused.returncode}")
    check(refused.stderr == message, f"cugrade new {arguments} said {refused.stderr!r}, expected {message!r}")
check(sorted(os.listdir(os.path.join(course, "exercises"))) == before, "a refused name wrote something")

# A folder it writes in that a symbolic link leads out of the course is refused, naming the link; nothing is written.
fixtures = os.path.join(course, "tests", "fixtures")
os.rename(fixtures, fixtures + ".kept")
outside = os.path.join(WORK, "outside")
os.makedirs(outside)
os.symlink(outside, fixtures)
linked = cugrade("new", "scale_thrice", "--course", course)
check(linked.returncode == 2 and linked.stderr == f"cugrade: error: {fixtures} is a symbolic link out of the course "
      f"(to {outside}): remove it, or point it inside the course\n",
      f"a link out of the course was not refused: {linked.stderr!r}")
check(os.listdir(outside) == [] and not os.path.exists(os.path.join(course, "exercises", "scale_thrice")),
      "a refused link wrote something")
os.remove(fixtures)
os.makedirs(os.path.join(course, "elsewhere"))
os.symlink("../elsewhere", fixtures)  # a link that stays inside the course is followed
inside = cugrade("new", "scale_thrice", "--course", course)
check(inside.returncode == 0 and
      os.path.isfile(os.path.join(course, "elsewhere", "scale_thrice-template.expected.yaml")),
      f"a link inside the course was refused: {inside.stderr!r}")
os.remove(fixtures)
os.rename(fixtures + ".kept", fixtures)
os.remove(os.path.join(course, f"rubrics/{NAME}.yaml"))
shutil.rmtree(os.path.join(course, f"exercises/{NAME}"))
half = cugrade("new", NAME, "--course", course)
check(half.returncode == 2 and half.stderr == f"cugrade: error: {course}/reference/{NAME}.cu exists already: remove "
      "it, or name the exercise otherwise\n", f"a half-made exercise was not refused: {half.stderr!r}")
check(not os.path.exists(os.path.join(course, f"exercises/{NAME}")), "a refused exercise wrote its folder")
for path in expected_files:
    if os.path.exists(os.path.join(course, path)):
        os.remove(os.path.join(course, path))
made = cugrade("new", NAME, "--course", course, "--title", "Scale by two")
check(made.returncode == 0, f"cugrade new after cleaning up exited {made.returncode}: {made.stderr}")

# The new exercise grades at once: its reference passes, its template fails (or both build and skip, without a GPU).
cache = os.path.join(WORK, "cache")
graded = {}
for folder in ("reference", "student_template"):
    result = cugrade("check", os.path.join(course, folder), "-e", NAME, "--course", course, "--cache-dir", cache,
                     "--no-diagnosis", "--no-cpu", "--json", os.path.join(WORK, f"{folder}.json"))
    check(result.returncode in (0, 1, 77), f"check of {folder} exited {result.returncode}: {result.stderr}")
    graded[folder] = (result.returncode, json.load(open(os.path.join(WORK, f"{folder}.json"))))

no_gpu = graded["reference"][0] == 77
for folder, (code, report) in graded.items():
    exercise = report["exercises"][0]
    check(exercise["build"]["ok"], f"{folder} did not build: {exercise['build']}")
    for case in exercise["cases"]:
        if no_gpu:
            check(case["status"] == "skipped", f"{folder} {case['id']}: {case['status']} without a GPU")
        elif folder == "reference":
            allowed = ("passed", "slow") if case["id"].startswith("speed") else ("passed",)
            check(case["status"] in allowed, f"the reference's {case['id']}: {case['status']} ({case['detail']})")
        else:
            want = "passed" if "/n=0/" in case["id"] else "wrong_answer"
            check(case["status"] == want, f"the template's {case['id']}: {case['status']}, expected {want}")

if failures:
    sys.exit(1)
sys.exit(77 if no_gpu else 0)

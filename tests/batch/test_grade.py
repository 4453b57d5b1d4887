#!/usr/bin/env python3
"""`cugrade grade` end to end, as an instructor runs it: a small class graded into RESULTS/, then graded again after
being killed with SIGKILL at three moments; the exports read back with real parsers (csv, xml.etree, json).

Usage: test_grade.py CUGRADE SOURCE_DIR CACHE_DIR. Without a GPU the cases report skipped, and so does the batch
(exit code 77); everything else is checked the same way.
"""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

CUGRADE, SOURCE, CACHE = sys.argv[1:4]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what, file=sys.stderr)


def make_course(root):
    """The course's exercises and references, with the hostile corpus's small rubric: seconds per student."""
    course = os.path.join(root, "course")
    os.makedirs(os.path.join(course, "rubrics"))
    for folder in ("exercises", "reference"):
        os.symlink(os.path.join(SOURCE, folder), os.path.join(course, folder))
    shutil.copy(os.path.join(SOURCE, "tests/hostile/sum-hostile.yaml"), os.path.join(course, "rubrics/sum.yaml"))
    return course


def make_class(root):
    submissions = os.path.join(root, "class")
    files = {
        "alice/sum.cu": "reference/sum.cu",
        "bob/sum.cu": "tests/fixtures/sum/compile_error/sum.cu",
        "carol/hw1/sum.cu": "reference/sum.cu",
        "dave/sum.cu": "tests/hostile/sum/calls_cub/sum.cu",
        "erin/sum.cu": "tests/fixtures/sum/one_block/sum.cu",
        "frank/sum.cu": "tests/hostile/sum/prints_its_arguments/sum.cu",
    }
    for target, source in files.items():
        os.makedirs(os.path.dirname(os.path.join(submissions, target)), exist_ok=True)
        shutil.copy(os.path.join(SOURCE, source), os.path.join(submissions, target))
    # alice's file with other comments and spacing: the class report groups the two as identical.
    os.makedirs(os.path.join(submissions, "gina"))
    with open(os.path.join(SOURCE, "reference/sum.cu")) as original, \
            open(os.path.join(submissions, "gina/sum.cu"), "w") as copy:
        copy.write("// my own work, honestly\n" + original.read().replace("\n", "\n\n"))
    roster = os.path.join(root, "roster.csv")
    with open(roster, "w") as out:
        out.write('id,name,email,section\nalice,Alice A,alice@x.edu,1\nbob,"Bob, B",bob@x.edu,2\n'
                  'zed,Zed Z,zed@x.edu,1\n')
    return submissions, roster


def command(course, submissions, roster, results):
    return [CUGRADE, "grade", submissions, "-o", results, "--roster", roster, "--course", course,
            "--cache-dir", CACHE, "--require-sandbox", "none", "-j", "2", "-e", "sum"]


def graded_ids(log):
    """The students a run says it graded: lines 'cugrade: [k/n] ID: ...'."""
    ids = []
    for line in log.splitlines():
        if line.startswith("cugrade: [") and "] " in line:
            ids.append(line.split("] ", 1)[1].split(":", 1)[0])
    return ids


def run_killed(cmd, kill_after_line):
    """Runs `cmd` and kills it with SIGKILL once it has printed a line starting with `kill_after_line`."""
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    log = ""
    for line in process.stderr:
        log += line
        if line.startswith(kill_after_line):
            os.killpg(process.pid, signal.SIGKILL)
            break
    process.wait()
    return log


def main():
    root = tempfile.mkdtemp(prefix="cugrade-test-grade-")
    course = make_course(root)
    submissions, roster = make_class(root)

    # Graded whole, once.
    whole = os.path.join(root, "whole")
    first = subprocess.run(command(course, submissions, roster, whole), capture_output=True, text=True)
    check(first.returncode in (0, 77), f"cugrade grade exits 0 or 77, not {first.returncode}: {first.stderr}")
    gradebook = open(os.path.join(whole, "gradebook.csv"), newline="").read()
    check(sorted(graded_ids(first.stderr)) == ["alice", "bob", "carol", "dave", "erin", "frank", "gina"],
          f"every student graded once: {graded_ids(first.stderr)}")
    check("not in the roster: carol, dave, erin, frank, gina" in first.stderr, "students missing from the roster named")

    check("exercises: sum (named by -e; not graded: " in first.stdout, f"the exercises graded are named: {first.stdout}")

    # Without -e or an assignment in course.yaml, a class that handed in only sum.cu is graded on sum alone.
    inferred = os.path.join(root, "inferred")
    without_e = command(course, submissions, roster, inferred)[:-2]
    found = subprocess.run(without_e, capture_output=True, text=True)
    check("exercises: sum (handed in by some student; not graded: " in found.stdout,
          f"the exercises handed in are graded: {found.stdout}")
    header = open(os.path.join(inferred, "gradebook.csv"), newline="").readline()
    check("sum" in header and "dot" not in header, f"the gradebook has sum's column alone: {header}")

    # Up to date: a rerun grades no one and writes the same gradebook.
    again = subprocess.run(command(course, submissions, roster, whole), capture_output=True, text=True)
    check(graded_ids(again.stderr) == [], f"a rerun grades no one: {graded_ids(again.stderr)}")
    check(open(os.path.join(whole, "gradebook.csv"), newline="").read() == gradebook, "a rerun's gradebook is the same")

    # The same class as a zip (one wrapping folder, as archives usually have): the same gradebook.
    archive = shutil.make_archive(os.path.join(root, "class-archive"), "zip", root_dir=root, base_dir="class")
    zipped = os.path.join(root, "zipped")
    from_zip = subprocess.run(command(course, archive, roster, zipped), capture_output=True, text=True)
    if "this cugrade was built without libarchive" in from_zip.stderr:
        print("cugrade was built without libarchive here: the zip is not checked", file=sys.stderr)
    else:
        check(from_zip.returncode in (0, 77), f"grading a zip exits 0 or 77: {from_zip.stderr}")
        check(open(os.path.join(zipped, "gradebook.csv"), newline="").read() == gradebook,
              "the zip's gradebook equals the folder's")

    # Killed with SIGKILL at three moments, then resumed: the same gradebook, no student graded twice.
    resumed = os.path.join(root, "resumed")
    logs = [run_killed(command(course, submissions, roster, resumed), moment)
            for moment in ("cugrade: 7 students", "cugrade: [2/", "cugrade: [4/")]
    final = subprocess.run(command(course, submissions, roster, resumed), capture_output=True, text=True)
    runs = [graded_ids(log) for log in logs] + [graded_ids(final.stderr)]
    everyone = [student for run in runs for student in run]
    check(len(everyone) == len(set(everyone)), f"no student graded twice across the killed runs: {runs}")
    check(open(os.path.join(resumed, "gradebook.csv"), newline="").read() == gradebook,
          "the resumed gradebook equals the one graded whole")
    check(not [name for name in os.listdir(os.path.join(resumed, "students")) if name.startswith(".")],
          "no staging folder is left behind")

    # The gradebook, read as CSV.
    rows = list(csv.DictReader(open(os.path.join(whole, "gradebook.csv"), newline="")))
    by_id = {row["id"]: row for row in rows}
    check(rows[0]["id"] == "(points possible)" and rows[0]["sum"] == "50", f"points possible: {rows[0]}")
    check(by_id["bob"]["name"] == "Bob, B" and by_id["bob"]["status"] == "build_failed", f"bob: {by_id.get('bob')}")
    check(by_id["zed"]["status"] == "missing" and by_id["zed"]["total"] == "0", f"zed: {by_id.get('zed')}")
    check(by_id["carol"]["status"] == "missing" and "found hw1/sum.cu, not graded" in by_id["carol"]["notes"],
          f"carol: {by_id.get('carol')}")
    check(by_id["dave"]["status"] == "graded" and by_id["dave"]["sum"] == "0", f"dave: {by_id.get('dave')}")
    for row in rows[1:]:
        parts = sum(float(row[f"sum:{group}"]) for group in ("basic", "hidden", "speed"))
        check(abs(parts - float(row["sum"])) < 1e-6, f"{row['id']}: the groups add up to the exercise's points")

    # Canvas's import file and the folders for a similarity checker.
    canvas = list(csv.reader(open(os.path.join(whole, "gradebook-canvas.csv"), newline="")))
    check(canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "cugrade"], f"Canvas: {canvas[0]}")
    check(canvas[1][0] == "Points Possible" and canvas[1][5] == "50", f"Canvas points possible: {canvas[1]}")
    check(["Bob, B", "", "bob", "bob@x.edu", "2", by_id["bob"]["total"]] in canvas, "Canvas row of bob")
    similar = sorted(os.listdir(os.path.join(whole, "similarity", "sum")))
    check(similar == ["alice.cu", "bob.cu", "dave.cu", "erin.cu", "frank.cu", "gina.cu"], f"similarity folder: {similar}")

    # Each graded student's exports, read back; nothing of a hidden case in what a student sees.
    for student in ("alice", "bob", "dave", "erin", "frank"):
        folder = os.path.join(whole, "students", student)
        instructor = json.load(open(os.path.join(folder, "results-instructor.json")))
        hidden = [case["id"] for exercise in instructor["exercises"] for case in exercise["cases"]
                  if case.get("visibility") == "hidden"]
        check(hidden, f"{student}: the instructor's results name the hidden case")
        gradescope = json.load(open(os.path.join(folder, "gradescope-results.json")))
        for field in ("score", "max_score", "output", "tests"):
            check(field in gradescope, f"{student}: Gradescope results have '{field}'")
        for test in gradescope["tests"]:
            check({"name", "score", "max_score", "status", "output", "visibility"} <= set(test),
                  f"{student}: a Gradescope test has every field")
            check(test["status"] in ("passed", "failed"), f"{student}: Gradescope status {test['status']}")
        check(sum(1 for t in gradescope["tests"] if t["visibility"] == "after_published") == len(hidden),
              f"{student}: hidden cases are after_published")
        junit = ElementTree.parse(os.path.join(folder, "junit.xml")).getroot()
        check(junit.tag == "testsuites" and len(junit.findall("./testsuite/testcase")) == 6,
              f"{student}: JUnit has a testcase per case")
        for name in ("results.json", "feedback.md", "gradescope-results.json", "junit.xml"):
            text = open(os.path.join(folder, name)).read()
            for case in hidden:
                check(case not in text and "4194304" not in text, f"{student}/{name} shows a hidden case")

    shutil.rmtree(root)
    print("all passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

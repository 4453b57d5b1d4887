#!/usr/bin/env python3
"""`cugrade grade` on archives and class files that could mislead it, made as instructors make them (Python's zipfile
and tarfile): a .DS_Store beside the class's folder, a one-student class, a README beside the class's folder, a
Gradescope export with a malformed submitter, and rosters with two id columns or an id no folder can have. Each
student's file is one that does not compile: the gradebook says who was found, with or without a GPU.

Usage: test_class_archives.py CUGRADE SOURCE_DIR CACHE_DIR. A cugrade built without libarchive skips (exit code 77).
"""
import csv
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

CUGRADE, SOURCE, CACHE = sys.argv[1:4]
failures = []
SUM = open(os.path.join(SOURCE, "tests/fixtures/sum/compile_error/sum.cu")).read()


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what, file=sys.stderr)


def make_course(root):
    course = os.path.join(root, "course")
    os.makedirs(os.path.join(course, "rubrics"))
    for folder in ("exercises", "reference"):
        os.symlink(os.path.join(SOURCE, folder), os.path.join(course, folder))
    shutil.copy(os.path.join(SOURCE, "tests/hostile/sum-hostile.yaml"), os.path.join(course, "rubrics/sum.yaml"))
    return course


def make_zip(path, files):
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def make_tarball(path, files):
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def grade(course, submissions, results, roster=None):
    command = [CUGRADE, "grade", submissions, "-o", results, "--course", course, "--cache-dir", CACHE,
               "--require-sandbox", "none", "-j", "2", "-e", "sum"]
    if roster:
        command += ["--roster", roster]
    return subprocess.run(command, capture_output=True, text=True)


def gradebook_ids(results):
    rows = list(csv.DictReader(open(os.path.join(results, "gradebook.csv"), newline="")))
    return sorted(row["id"] for row in rows[1:])


def unpacked_folder(results):
    """RESULTS/unpacked/DIGEST: where the batch unpacked its archive."""
    unpacked = os.path.join(results, "unpacked")
    folders = [name for name in os.listdir(unpacked) if os.path.isdir(os.path.join(unpacked, name))]
    return os.path.join(unpacked, folders[0])


def warned(run, message):
    return f"cugrade: warning: {message}\n" in run.stderr


def check_unwrapping(root, course):
    # A .DS_Store and a resource fork beside the class's folder: the folder is unwrapped, and the litter said.
    archive = make_zip(os.path.join(root, "class.zip"), {
        "hw1/alice/sum.cu": SUM, "hw1/bob/sum.cu": SUM, ".DS_Store": "\0\0\0\1Bud1", "__MACOSX/hw1/._alice": "x"})
    results = os.path.join(root, "with-ds-store")
    run = grade(course, archive, results)
    check(run.returncode in (0, 77), f"class.zip graded: {run.stderr}")
    check(gradebook_ids(results) == ["alice", "bob"], f"class.zip: the whole class found: {gradebook_ids(results)}")
    check(warned(run, "unpacked 'class.zip': its folder 'hw1/' holds the class; '.DS_Store' ignored"),
          f"class.zip: the unwrapping said: {run.stderr}")

    # A class of one: the student's folder is not unwrapped.
    archive = make_tarball(os.path.join(root, "alice.tar.gz"), {"alice/sum.cu": SUM, "alice/notes/todo.txt": "x"})
    results = os.path.join(root, "one-student")
    run = grade(course, archive, results)
    check(gradebook_ids(results) == ["alice"], f"alice.tar.gz: alice found: {gradebook_ids(results)}")
    check(warned(run, "unpacked 'alice.tar.gz': its only folder 'alice/' is read as a student's folder: it holds "
                      "sum.cu"), f"alice.tar.gz: the lone folder said: {run.stderr}")

    # A README beside the class's folder: not unwrapped (a guess), and said, with the folder to grade instead.
    archive = make_zip(os.path.join(root, "readme.zip"),
                       {"hw1/alice/sum.cu": SUM, "hw1/bob/sum.cu": SUM, "README.txt": "hw1 of the class"})
    results = os.path.join(root, "with-readme")
    run = grade(course, archive, results)
    check(gradebook_ids(results) == ["hw1"], f"readme.zip: its top read as the class: {gradebook_ids(results)}")
    inner = os.path.join(unpacked_folder(results), "hw1")
    check(warned(run, "unpacked 'readme.zip': not unwrapped: 'README.txt' beside its folder 'hw1/', so 'hw1' is read "
                      f"as a student's folder; if 'hw1/' holds the class, grade '{inner}' instead"),
          f"readme.zip: the folder kept said: {run.stderr}")
    again = grade(course, inner, os.path.join(root, "inner"))
    check(gradebook_ids(os.path.join(root, "inner")) == ["alice", "bob"], "the folder named is the class")
    check(again.returncode in (0, 77), f"the folder named is graded: {again.stderr}")


def check_gradescope(root, course):
    # Gradescope's export zipped in a folder, one submitter written as a string: the others are graded.
    metadata = ("submission_1:\n"
                "  :submitters:\n"
                "  - alice\n"
                "  :created_at: 2026-03-02 10:00:00.000000000 -05:00\n"
                "submission_2:\n"
                "  :submitters:\n"
                "  - :name: Bob B\n"
                "    :sid: '1002'\n"
                "    :email: bob@x.edu\n"
                "  :created_at: 2026-03-02 11:00:00.000000000 -05:00\n")
    archive = make_tarball(os.path.join(root, "export.tar.gz"), {
        "export/submission_metadata.yml": metadata, "export/submission_1/sum.cu": SUM,
        "export/submission_2/sum.cu": SUM, "._export": "x"})
    results = os.path.join(root, "gradescope")
    run = grade(course, archive, results)
    check(run.returncode in (0, 77), f"export.tar.gz graded: {run.stderr}")
    check(gradebook_ids(results) == ["1002"], f"export.tar.gz: the well-formed submitter graded: "
                                              f"{gradebook_ids(results)}")
    file = os.path.join(unpacked_folder(results), "export", "submission_metadata.yml")
    check(warned(run, f"ignored submission_1: {file}:3: a submitter is not a map of :name, :sid and :email; that "
                      "submitter is not graded"), f"export.tar.gz: the malformed submitter said: {run.stderr}")
    check(warned(run, "unpacked 'export.tar.gz': its folder 'export/' holds the class; '._export' ignored"),
          f"export.tar.gz: the unwrapping said: {run.stderr}")


def check_rosters(root, course):
    folder = os.path.join(root, "class")
    for student in ("alice", "bob"):
        os.makedirs(os.path.join(folder, student))
        with open(os.path.join(folder, student, "sum.cu"), "w") as out:
            out.write(SUM)

    two_ids = os.path.join(root, "two-ids.csv")
    with open(two_ids, "w") as out:
        out.write("id,sid,name\nalice,1001,Alice A\nbob,1002,Bob B\n")
    run = grade(course, folder, os.path.join(root, "two-ids"), two_ids)
    check(run.returncode == 2, f"two id columns: exit code 2, not {run.returncode}")
    check(f"cugrade: error: roster '{two_ids}':1: two id columns, 'id' (column 1) and 'sid' (column 2): remove or "
          "rename one of them\n" in run.stderr, f"two id columns refused: {run.stderr}")

    spaced = os.path.join(root, "spaced.csv")
    with open(spaced, "w") as out:
        out.write("id,name\nalice,Alice A\nann lee,Ann Lee\nbob,Bob B\n")
    results = os.path.join(root, "spaced")
    run = grade(course, folder, results, spaced)
    check(run.returncode in (0, 77), f"a roster id with a space: still graded: {run.stderr}")
    check(gradebook_ids(results) == ["alice", "bob"], f"the row left out: {gradebook_ids(results)}")
    check(warned(run, f"roster '{spaced}':3: id 'ann lee' is not usable as a student id (letters, digits and - _ . @ "
                      "+, starting with a letter, digit or _): row left out"), f"the id said: {run.stderr}")


def main():
    root = tempfile.mkdtemp(prefix="cugrade-test-archives-")
    course = make_course(root)
    probe = grade(course, make_zip(os.path.join(root, "probe.zip"), {"alice/sum.cu": SUM}), os.path.join(root, "p"))
    if "this cugrade was built without libarchive" in probe.stderr:
        print("cugrade was built without libarchive here: skipped", file=sys.stderr)
        return 77
    check_unwrapping(root, course)
    check_gradescope(root, course)
    check_rosters(root, course)
    shutil.rmtree(root)
    print("all passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

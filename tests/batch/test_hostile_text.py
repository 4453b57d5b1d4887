#!/usr/bin/env python3
"""`cugrade grade` on a class whose text is hostile: a Gradescope export (as a folder, then as a tarball with a link
in it) whose submitters' names, emails and ids, a roster's cells, and the names of a student's files and of the
archive's entries hold spreadsheet formulas, terminal control sequences and invalid UTF-8. What cugrade prints and
writes is read back as bytes and with Python's csv module: every CSV cell neutralised, no control sequence on the
terminal, no control character or invalid UTF-8 in any text file, feedback.md's structure whole.

Usage: test_hostile_text.py CUGRADE SOURCE_DIR CACHE_DIR. Needs no GPU: without one the cases report skipped and the
batch exits 77, and every file is written all the same.
"""
import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_grade as grade  # noqa: E402  (its helpers; it reads the same arguments)

check = grade.check
failures = grade.failures

HYPERLINK = '=HYPERLINK("http://x","y")'
DDE = "+cmd|' /C calc'!A0"
SUM = "@SUM(1+1)"
ARITHMETIC = "-2+3"
TITLE = "\x1b]0;pwned\x07"  # an OSC sequence that retitles the terminal
RED = "\x1b[31m"
INVALID = b"\xff\xfe"
REPLACED = "\ufffd"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")
# Control characters of C0 (but line feed and tab, which text files keep), DEL and C1.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def yaml_quoted(text):
    """A YAML double-quoted scalar: control characters as escapes (YAML allows no raw ones)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7f else c for c in escaped) + '"'


def make_export(root):
    """A Gradescope export: three submissions of the reference's sum.cu, their submitters' text hostile."""
    export = os.path.join(root, "export")
    hidden_folder = (TITLE + "\n# heading | cell").encode() + INVALID
    for n in (1, 2, 3):
        folder = os.path.join(export, f"submission_{n}")
        os.makedirs(folder)
        shutil.copy(os.path.join(grade.SOURCE, "reference/sum.cu"), os.path.join(folder, "sum.cu"))
    # A near miss whose folder's name is hostile: named in the student's notes, feedback.md and key.txt.
    near = os.path.join(os.fsencode(export), b"submission_3", hidden_folder)
    os.makedirs(near)
    shutil.copy(os.path.join(grade.SOURCE, "reference/sum.cu"), os.path.join(near, b"sum.cu"))
    submitter = '  - :name: {}\n    :sid: {}\n    :email: {}\n'
    metadata = (
        "submission_1:\n  :submitters:\n" + submitter.format(yaml_quoted(HYPERLINK), "'1001'", yaml_quoted(DDE)) +
        "  :created_at: 2026-03-02 10:00:00.000000000 -05:00\n"
        "submission_2:\n  :submitters:\n" + submitter.format(yaml_quoted(TITLE + RED + "red"), "'1002'",
                                                             yaml_quoted(SUM)) +
        submitter.format("Nobody", yaml_quoted(TITLE), "''") +
        "  :created_at: 2026-03-02 10:00:00.000000000 -05:00\n"
        "submission_3:\n  :submitters:\n" + submitter.format(yaml_quoted(ARITHMETIC), "'1003'",
                                                             yaml_quoted("\tlead@x.edu")) +
        "  :created_at: " + yaml_quoted(TITLE) + "\n" +
        yaml_quoted(TITLE + "submission_9") + ":\n  :submitters:\n" + submitter.format("Ghost", "'1009'", "''"))
    with open(os.path.join(export, "submission_metadata.yml"), "w") as out:
        out.write(metadata)
    return export


def make_roster(root):
    """1001's name, email and section from the roster (a roster's cells are trimmed: its tab goes, its = stays); a
    roster student with no submission, by hostile cells; a row whose id is a formula, left out with a warning."""
    roster = os.path.join(root, "roster.csv")
    with open(roster, "wb") as out:
        out.write(b"id,name,email,section\r\n")
        out.write(b'1001,"\t=1+1",' + INVALID + b"@x.edu," + ARITHMETIC.encode() + b"\r\n")
        out.write(b"1004," + SUM.encode() + b"," + (TITLE + RED).encode() + b",\r\n")
        out.write(b'"' + HYPERLINK.replace('"', '""').encode() + b'",' + SUM.encode() + b",,\r\n")
    return roster


def make_tarball(root, export):
    """The export as a tarball, with a link whose name is hostile: a warning names it."""
    tarball = os.path.join(root, "export.tar.gz")
    with tarfile.open(tarball, "w:gz", format=tarfile.GNU_FORMAT) as tar:  # names as raw bytes
        tar.add(export, arcname="export")
        link = tarfile.TarInfo(os.fsdecode(b"export/" + (TITLE + RED).encode() + INVALID + b"link"))
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    return tarball


def check_terminal(output, what):
    """Bytes a terminal shows: valid UTF-8, no escape and no bell."""
    check(b"\x1b" not in output and b"\x07" not in output, f"{what}: no ESC or BEL byte: {output!r}")
    try:
        output.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, f"{what}: invalid UTF-8 on the terminal: {e}")


def text_of(path):
    """A text file's contents, which must be valid UTF-8 with no control character but line feed and tab."""
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, f"{path}: invalid UTF-8: {e}")
        return data.decode("utf-8", "replace")
    check(not CONTROL.search(text.replace("\r\n", "\n")), f"{path}: a control character: {text!r}")
    return text


def check_spreadsheet(path):
    """Every cell of a CSV file: no control character, and no formula start unless the cell is a number."""
    rows = list(csv.reader(io.StringIO(text_of(path), newline="")))
    for row in rows:
        for cell in row:
            check(not CONTROL.search(cell) and "\n" not in cell and "\t" not in cell,
                  f"{path}: a control character in {cell!r}")
            check(not cell.startswith(FORMULA_START) or NUMBER.fullmatch(cell), f"{path}: a formula cell {cell!r}")
    return rows


def check_results(results, what):
    gradebook = {row["id"]: row for row in csv.DictReader(io.StringIO(text_of(os.path.join(results, "gradebook.csv")),
                                                                      newline=""))}
    check_spreadsheet(os.path.join(results, "gradebook.csv"))
    canvas = check_spreadsheet(os.path.join(results, "gradebook-canvas.csv"))
    expected = {
        "1001": ("'=1+1", REPLACED * 2 + "@x.edu", "'" + ARITHMETIC),  # the roster's
        "1002": (REPLACED + "]0;pwned" + REPLACED + REPLACED + "[31mred", "'" + SUM, ""),  # the export's
        "1003": ("'" + ARITHMETIC, REPLACED + "lead@x.edu", ""),
        "1004": ("'" + SUM, REPLACED + "]0;pwned" + REPLACED + REPLACED + "[31m", ""),  # missing
    }
    for sid, (name, email, section) in expected.items():
        row = gradebook.get(sid)
        check(row is not None and (row["name"], row["email"], row["section"]) == (name, email, section),
              f"{what}: gradebook row {sid}: {row}")
    check(gradebook.get("1003", {}).get("submitted_at") == REPLACED + "]0;pwned" + REPLACED,
          f"{what}: 1003's time: {gradebook.get('1003')}")
    check(gradebook.get("1004", {}).get("status") == "missing", f"{what}: the roster's student with no submission")
    check(not any(HYPERLINK in sid for sid in gradebook), f"{what}: the roster's formula id is left out: {gradebook}")
    check(["'" + SUM, "", "1004", REPLACED + "]0;pwned" + REPLACED + REPLACED + "[31m", "", "0"] in canvas,
          f"{what}: Canvas row of the missing student: {canvas}")
    note = gradebook.get("1003", {}).get("notes", "")
    shown_folder = REPLACED + "]0;pwned" + REPLACED + REPLACED + "# heading | cell" + REPLACED * 2
    check(f"also found {shown_folder}/sum.cu, not graded" in note, f"{what}: 1003's note: {note!r}")

    for sid in ("1001", "1002", "1003"):
        folder = os.path.join(results, "students", sid)
        feedback = text_of(os.path.join(folder, "feedback.md"))
        key = text_of(os.path.join(folder, "key.txt"))
        headings = [line for line in feedback.splitlines() if line.startswith("#")]
        check(headings == ["# cugrade feedback"], f"{what}: {sid}'s feedback.md has its own heading alone: {headings}")
        if sid == "1003":
            listed = REPLACED + "\\]0;pwned" + REPLACED * 2 + "# heading \\| cell" + REPLACED * 2
            check(f"\n- sum: graded sum.cu; also found {listed}/sum.cu, not graded\n" in feedback,
                  f"{what}: 1003's note is one list item: {feedback!r}")
            check(f"\n  {shown_folder}/sum.cu " in key and f"\nsubmitted {REPLACED}]0;pwned{REPLACED}\n" in key,
                  f"{what}: 1003's key.txt lists the folder on one line: {key!r}")


WITHOUT_LIBARCHIVE = "this cugrade was built without libarchive"


def grade_class(course, source, roster, results, what):
    """Grades `source` into `results`; what cugrade printed, checked as a terminal would show it, and its log."""
    run = subprocess.run(grade.command(course, source, roster, results), capture_output=True)
    refused_archive = WITHOUT_LIBARCHIVE.encode() in run.stderr and run.returncode == 2
    check(run.returncode in (0, 77) or refused_archive,
          f"{what}: cugrade grade exits 0 or 77, not {run.returncode}: {run.stderr!r}")
    check_terminal(run.stdout + run.stderr, what)
    return run.stderr.decode("utf-8", "replace")


def main():
    root = tempfile.mkdtemp(prefix="cugrade-test-hostile-text-")
    course = grade.make_course(root)
    export = make_export(root)
    roster = make_roster(root)

    results = os.path.join(root, "from-folder")
    log = grade_class(course, export, roster, results, "folder")
    check(f"cugrade: warning: ignored submission_2: submitter '{REPLACED}]0;pwned{REPLACED}' has no usable id"
          in log, f"the submitter with a hostile id is named, made safe: {log!r}")
    check(f"cugrade: warning: ignored {REPLACED}]0;pwned{REPLACED}submission_9: named in submission_metadata.yml"
          in log, f"the hostile folder name is named, made safe: {log!r}")
    check("cugrade: warning: not in the roster: 1002, 1003" in log, f"students missing from the roster: {log!r}")
    check(f":4: id '{HYPERLINK}' is not usable as a student id" in log, f"the roster's formula id is said: {log!r}")
    check_results(results, "folder")
    status = subprocess.run([grade.CUGRADE, "grade", "--status", results], capture_output=True)
    check_terminal(status.stdout + status.stderr, "--status")

    tarball = make_tarball(root, export)
    packed = os.path.join(root, "from-tarball")
    log = grade_class(course, tarball, roster, packed, "tarball")
    if WITHOUT_LIBARCHIVE in log:
        print("cugrade was built without libarchive here: the tarball is not checked", file=sys.stderr)
    else:
        check(f"cugrade: warning: export.tar.gz: left out export/{REPLACED}]0;pwned{REPLACED}{REPLACED}[31m"
              f"{REPLACED}{REPLACED}link: a link" in log, f"the archive's hostile entry is named, made safe: {log!r}")
        check_results(packed, "tarball")

    shutil.rmtree(root)
    print("all passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

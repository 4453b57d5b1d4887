#!/usr/bin/env python3
"""RESULTS/report.html in a real headless browser: Chromium renders it (a screenshot with content), and the totals
on the page, read back from the DOM Chromium built, match gradebook.csv. Exits 77 (skipped) without Chromium.

Usage: test_report_browser.py CUGRADE SOURCE_DIR CACHE_DIR
"""
import csv
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_grade  # noqa: E402  (the same small class and course)


class Totals(html.parser.HTMLParser):
    """The rows of <table id="totals">: student -> (total, status); the identical-submission groups."""

    def __init__(self):
        super().__init__()
        self.rows, self.identical, self.svgs = {}, [], 0
        self._row, self._cells, self._in_cell, self._in_identical, self._text = None, [], False, False, ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg":
            self.svgs += 1
        if tag == "tr" and "data-id" in attrs:
            self._row, self._cells = attrs["data-id"], []
        if tag == "td" and self._row is not None:
            self._in_cell, self._text = True, ""
        if tag == "p" and attrs.get("class") == "identical":
            self._in_identical, self._text = True, ""

    def handle_endtag(self, tag):
        if tag == "td" and self._in_cell:
            self._cells.append(self._text.strip())
            self._in_cell = False
        if tag == "tr" and self._row is not None:
            self.rows[self._row] = (self._cells[1], self._cells[2])
            self._row = None
        if tag == "p" and self._in_identical:
            self.identical.append(self._text.strip())
            self._in_identical = False

    def handle_data(self, data):
        if self._in_cell or self._in_identical:
            self._text += data


def main():
    browser = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(name)), None)
    if browser is None:
        print("no Chromium on this machine: skipped")
        return 77
    root = tempfile.mkdtemp(prefix="cugrade-test-report-")
    course = test_grade.make_course(root)
    submissions, roster = test_grade.make_class(root)
    results = os.path.join(root, "results")
    graded = subprocess.run(test_grade.command(course, submissions, roster, results), capture_output=True, text=True)
    if graded.returncode not in (0, 77):
        print(graded.stderr)
        return 1
    page = "file://" + os.path.join(results, "report.html")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             f"--user-data-dir={os.path.join(root, 'profile')}"]
    dom = subprocess.run(flags + ["--dump-dom", page], capture_output=True, text=True, timeout=120).stdout
    shot = os.path.join(root, "report.png")
    subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1200,2400", page], capture_output=True,
                   timeout=120)

    failures = []
    parsed = Totals()
    parsed.feed(dom)
    gradebook = [row for row in csv.DictReader(open(os.path.join(results, "gradebook.csv"), newline=""))][1:]
    expected = {row["id"]: (row["total"], row["status"]) for row in gradebook}
    if parsed.rows != expected:
        failures.append(f"the page's totals {parsed.rows} differ from the gradebook's {expected}")
    if parsed.svgs < 2:
        failures.append(f"the page has {parsed.svgs} charts")
    if "alice, gina" not in parsed.identical:
        failures.append(f"alice and gina not grouped as identical: {parsed.identical}")
    if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
        failures.append("Chromium made no screenshot of the page")
    for failure in failures:
        print("FAILED:", failure)
    shutil.rmtree(root)
    print("all passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

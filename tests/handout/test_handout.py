#!/usr/bin/env python3
"""`cugrade handout` end to end: the kit made from the course, scanned for anything of the references or the hidden
cases (in its files, inside its tarball, in its objects' string and symbol tables, PTX included); the kit used as a
student uses it (its own scripts/setup.sh builds cugrade from the kit and grades the templates); a second kit from the
same course has the same objects; each refusal says what is wrong. With a GPU (argument --gpu), every fixture graded in
the kit gets the same verdicts and points on its visible cases as in the full course.

Usage: test_handout.py CUGRADE SOURCE_DIR WORK_DIR [--gpu]. Exit code 77 with --gpu where no GPU is visible;
HANDOUT_FIXTURES=EXERCISE/FIXTURE,... limits the comparison to those fixtures.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

CUGRADE, SOURCE, WORK = sys.argv[1:4]
GPU = "--gpu" in sys.argv[4:]
failures = []
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what, file=sys.stderr)


def run(args, cwd=None, env=None):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, errors="replace")


def gpu_arch():
    """sm_XY of the first visible GPU, or None."""
    result = run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"]) if shutil.which("nvidia-smi") else None
    if result is None or result.returncode != 0 or not result.stdout.strip():
        return None
    return "sm_" + result.stdout.split()[0].replace(".", "")


def split_comments(text):
    """The text's code without comments, and its comments' text."""
    code, comments, i = [], [], 0
    while i < len(text):
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            comments.append(text[i:end])
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
            comments.append(text[i:end])
            i = end
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < len(text) and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            code.append(text[i:j + 1])
            i = j + 1
        else:
            code.append(text[i])
            i += 1
    return "".join(code), "\n".join(comments)


def repository_words():
    """Every identifier and word of the repository's files other than the references."""
    files = run(["git", "ls-files"], cwd=SOURCE).stdout.split()
    words = set()
    for name in files:
        if name.startswith("reference/"):
            continue
        try:
            with open(os.path.join(SOURCE, name), encoding="utf-8", errors="replace") as f:
                words.update(IDENTIFIER.findall(f.read()))
        except (IsADirectoryError, FileNotFoundError):
            pass
    return words


def toolkit_names(reference_text, exercise):
    """What the reference's #include lines declare, as nvcc preprocesses them."""
    includes = "".join(line + "\n" for line in reference_text.splitlines() if line.lstrip().startswith("#include"))
    path = os.path.join(WORK, "includes.cu")
    with open(path, "w") as f:
        f.write(includes)
    names = set()
    for extra in ([], ["-Xcompiler", "-dM"]):
        out = run(["nvcc", "-std=c++20", "-E", "-x", "cu", "-I", os.path.join(SOURCE, "exercises", exercise),
                   "-I", os.path.join(SOURCE, "exercises/common"), path] + extra)
        names.update(IDENTIFIER.findall(out.stdout))
    return names


def secrets_of_references():
    """(names, words, lines) found only in the reference sources: their identifiers other than the entry points
    (and what the toolkit declares), the words of their comments, their longer lines of code."""
    elsewhere = repository_words()
    names, words, lines = set(), set(), set()
    other_lines = set()
    for name in run(["git", "ls-files"], cwd=SOURCE).stdout.split():
        if not name.startswith("reference/") and os.path.isfile(os.path.join(SOURCE, name)):
            with open(os.path.join(SOURCE, name), encoding="utf-8", errors="replace") as f:
                other_lines.update(line.strip() for line in f)
    for file in sorted(os.listdir(os.path.join(SOURCE, "reference"))):
        with open(os.path.join(SOURCE, "reference", file)) as f:
            text = f.read()
        code, comments = split_comments(text)
        # #include and #pragma lines name headers and compiler hints, not the reference's own things.
        code = "\n".join(line for line in code.splitlines() if not re.match(r"\s*#\s*(include|pragma)", line))
        known = toolkit_names(text, os.path.splitext(file)[0])
        names.update(n for n in IDENTIFIER.findall(code)
                     if n not in elsewhere and n not in known and len(n) >= 4)
        words.update(w for w in re.findall(r"[A-Za-z]{6,}", comments) if w not in elsewhere)
        lines.update(line.strip() for line in code.splitlines()
                     if len(line.strip()) >= 40 and line.strip() not in other_lines)
    return names, words, lines


def hidden_values():
    """Per rubric file, its hidden groups' names; the names no rubric uses for a visible group (as case ids begin
    with them); and the hidden groups' sizes found in no visible group or speed test of any rubric (a size one
    exercise shows is no secret of another's)."""
    hidden_groups, visible_names, hidden_numbers, visible_numbers = {}, set(), set(), set()
    for file in os.listdir(os.path.join(SOURCE, "rubrics")):
        text = open(os.path.join(SOURCE, "rubrics", file)).read()
        hidden_groups[file] = set()
        # Groups are written one key per line: split the groups list at each "- name:".
        for block in re.split(r"\n  - name: ", text)[1:]:
            name = block.split("\n")[0].strip()
            group = block.split("\nspeed:")[0]
            if re.search(r"visibility:\s*hidden", group):
                hidden_groups[file].add(name)
                hidden_numbers |= set(re.findall(r"\b\d{4,}\b", group))
            else:
                visible_names.add(name)
                visible_numbers |= set(re.findall(r"\b\d{4,}\b", group))
        speed = text.split("\nspeed:")[1] if "\nspeed:" in text else ""
        visible_numbers |= set(re.findall(r"\b\d{4,}\b", speed))
    sizes = hidden_numbers - visible_numbers
    ids = {name + "/" for names in hidden_groups.values() for name in names} - {n + "/" for n in visible_names}
    return hidden_groups, ids, sizes


def kit_texts(kit, tarball):
    """Every file of the kit and of its tarball as text; objects as their strings, symbols and cuobjdump's dump."""
    texts = {}
    unpacked = os.path.join(WORK, "unpacked")
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(tarball) as archive:
        members = archive.getnames()
        archive.extractall(unpacked, filter="data") if hasattr(tarfile, "data_filter") else archive.extractall(unpacked)
    check(all(not name.split("/", 1)[-1].startswith("reference") for name in members),
          "the tarball holds no reference/ folder")
    for root in (kit, unpacked):
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                data = open(path, "rb").read()
                if name.endswith(".o") and os.path.basename(folder) == "cpu":
                    # The CPU self-check's objects: their strings, and their symbols as the linker and c++filt show them.
                    dumps = [run(["strings", "-n", "3", path]).stdout, run(["nm", "-a", path]).stdout]
                    text = "\n".join(dumps)
                    text += "\n" + subprocess.run(["c++filt"], input=text, capture_output=True, text=True).stdout
                    texts[path] = text
                elif name.endswith(".o"):
                    dumps = [run(["strings", "-n", "3", path]).stdout, run(["nm", "-a", path]).stdout]
                    if shutil.which("cuobjdump"):
                        elf = run(["cuobjdump", "-elf", "-ptx", path])
                        check(elf.returncode == 0, f"cuobjdump reads {path}")
                        dumps.append(elf.stdout)
                    # The kit's device code is not compressed, so its PTX and cubins' tables are in the strings.
                    check(".entry" in dumps[0] and ".nv.info" in dumps[0], f"{path}: the device code is readable")
                    text = "\n".join(dumps)
                    text += "\n" + subprocess.run(["c++filt"], input=text, capture_output=True, text=True).stdout
                    texts[path] = text
                else:
                    texts[path] = data.decode("utf-8", errors="replace")
    return texts


def scan_for_leaks(kit, tarball):
    names, words, lines = secrets_of_references()
    check(len(names) >= 10, f"the references have names of their own to look for ({sorted(names)})")
    hidden_groups, ids, sizes = hidden_values()
    check(sum(map(len, hidden_groups.values())) >= 3 and "4194301" in sizes and ids,
          f"the hidden cases have names, ids and sizes to look for ({hidden_groups}, {ids}, {sizes})")
    for path, text in kit_texts(kit, tarball).items():
        found_words = set(re.findall(r"[A-Za-z]+", text))
        found_numbers = set(re.findall(r"\d+", text))
        for name in names:
            check(name not in text, f"{path} shows the reference's name {name!r}")
        for word in words & found_words:
            check(False, f"{path} shows the reference's comment word {word!r}")
        for line in lines:
            check(line not in text, f"{path} shows the reference's line {line!r}")
        for case_id in ids:
            check(case_id + "n=" not in text and case_id + "shape=" not in text,
                  f"{path} shows a hidden case id {case_id!r}")
        if os.path.basename(path) in hidden_groups:
            for group in hidden_groups[os.path.basename(path)]:
                check(f"name: {group}\n" not in text, f"{path} keeps the hidden group {group!r}")
        for size in sizes & found_numbers:
            check(False, f"{path} shows the hidden size {size}")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    arch = gpu_arch()
    if GPU and arch is None:
        print("no GPU visible: the kit's verdicts are compared on a GPU only")
        return 77
    kit = os.path.join(WORK, "kit")
    made = run([CUGRADE, "handout", kit, "--arch", arch or "sm_90"], cwd=SOURCE)
    print(made.stdout, made.stderr)
    check(made.returncode == 0, "cugrade handout makes the kit")
    if made.returncode != 0:
        return 1
    cache = os.path.join(WORK, "cache")
    if GPU:
        return same_verdicts(kit, cache)

    scan_for_leaks(kit, kit + ".tar.gz")
    manifest = json.load(open(os.path.join(kit, "kit.json")))
    check(manifest["exercises"] == ["dot", "histogram", "matadd", "matmul", "minmax", "scan", "sum", "sum_accurate",
                                   "transpose"] and manifest["arches"] == ["sm_90"],
          "kit.json names the exercises and the architecture")
    check(manifest["arch"] == "sm_90", "kit.json names the architecture the course grades on, sm_90 by default")
    check(all(not f.startswith("reference") for f in manifest["files"]), "kit.json lists no reference")
    check(manifest["cpu_target"] == run(["uname", "-m"]).stdout.strip() + "-linux",
          f"kit.json names the machines of its CPU self-check ({manifest['cpu_target']})")
    check("exercises/sum/cpu/reference.o" in manifest["files"], "the CPU self-check's objects decide grades too")

    # The same course gives the same objects.
    again = os.path.join(WORK, "again")
    run([CUGRADE, "handout", again, "--arch", "sm_90", "-e", "sum"], cwd=SOURCE)
    same = open(os.path.join(kit, "exercises/sum/harness.o"), "rb").read() == \
        open(os.path.join(again, "exercises/sum/harness.o"), "rb").read()
    check(same, "a second kit of the same course has the same harness object")

    # A student's check in the kit: the course is the kit, found from the current folder.
    checked = run([CUGRADE, "check", "student_template", "--no-cpu", "--cache-dir", cache, "--json", "check.json"],
                  cwd=kit)
    check(checked.returncode in (0, 1, 77), f"check runs in the kit (exit code {checked.returncode}): {checked.stderr}")
    check(f"course: {kit} (found from the current folder)" in checked.stderr, "check says the kit is the course")
    check("this kit checks the visible cases only: the final grade also has hidden cases" in checked.stdout,
          "the report says the final grade has hidden cases")
    report = json.load(open(os.path.join(kit, "check.json")))
    check(report["visible_cases_only"] is True, "the JSON says visible cases only")
    check(all(c["visibility"] == "visible" for e in report["exercises"] for c in e["cases"]),
          "the kit's rubrics have visible cases only")
    os.remove(os.path.join(kit, "check.json"))

    # The kit's CPU self-check: the harness and the reference prebuilt for the CPU, the submission compiled here.
    seed = os.path.join(WORK, "seed")
    os.makedirs(seed)
    shutil.copy(os.path.join(SOURCE, "tests/fixtures/sum/seed_tree/sum.cu"), seed)
    on_cpu = run([CUGRADE, "check", seed, "-e", "sum", "--cpu", "--cache-dir", cache, "--json", "cpu.json"], cwd=kit)
    # Nothing failed, but the speed test needs a GPU: 77, as a check that could not run everything.
    check(on_cpu.returncode == 77, f"the seed solution passes the kit's CPU self-check (exit code {on_cpu.returncode}): "
          f"{on_cpu.stdout[-2000:]} {on_cpu.stderr[-2000:]}")
    report = json.load(open(os.path.join(kit, "cpu.json")))
    ran = [c for c in report["exercises"][0]["cases"] if c["status"] != "skipped"]
    check(report["cpu_self_check"] is True and len(ran) >= 20 and all(c["status"] == "passed" for c in ran),
          f"the kit's CPU self-check runs the visible cases ({len(ran)} ran)")
    os.remove(os.path.join(kit, "cpu.json"))

    # Refusals.
    rubric = os.path.join(again, "rubrics/sum.yaml")
    with open(rubric, "a") as f:
        f.write("# more points, please\n")
    edited = run([CUGRADE, "check", "student_template", "-e", "sum", "--cache-dir", cache], cwd=again)
    check(edited.returncode == 2 and f"cugrade: error: the kit in '{again}' was changed after it was made: "
          "rubrics/sum.yaml; these files decide grades" in edited.stderr, f"an edited kit is refused: {edited.stderr}")
    not_kit = os.path.join(WORK, "not-a-kit")
    os.makedirs(not_kit)
    open(os.path.join(not_kit, "notes.txt"), "w").write("mine\n")
    refused = run([CUGRADE, "handout", not_kit], cwd=SOURCE)
    check(refused.returncode == 2 and f"cugrade: error: '{not_kit}' exists and is not a cugrade kit: give a new "
          "folder, or remove it first" in refused.stderr, f"a folder that is not a kit is refused: {refused.stderr}")
    bad_arch = run([CUGRADE, "handout", os.path.join(WORK, "old"), "--arch", "sm_50"], cwd=SOURCE)
    check(bad_arch.returncode == 2 and "cannot build sm_50 for a kit (it builds sm_75" in bad_arch.stderr,
          f"an architecture nvcc cannot build is refused: {bad_arch.stderr}")
    graded = run([CUGRADE, "grade", "student_template", "-o", os.path.join(WORK, "results")], cwd=kit)
    check(graded.returncode == 2 and "is a student kit, which has no references or hidden cases: grade runs with "
          "the full course" in graded.stderr, f"grade refuses a kit: {graded.stderr}")
    course = os.path.join(WORK, "course")
    shutil.copytree(SOURCE, course, ignore=shutil.ignore_patterns("build*", ".git"))
    os.remove(os.path.join(course, "reference/minmax.cu"))
    incomplete = run([CUGRADE, "handout", os.path.join(WORK, "incomplete"), "--arch", "sm_90"], cwd=course)
    check(incomplete.returncode == 2 and "exercise 'minmax' is incomplete: " in incomplete.stderr and
          "reference/minmax.cu' is missing" in incomplete.stderr, f"an exercise without a reference is refused: "
          f"{incomplete.stderr}")

    # The kit's own first command: it builds cugrade from the kit's sources and grades the templates.
    setup = run(["scripts/setup.sh"], cwd=kit)
    print(setup.stdout[-3000:], setup.stderr[-3000:])
    check(setup.returncode == 0 and "cugrade setup: done" in setup.stdout, "the kit's scripts/setup.sh works")
    return 1 if failures else 0


def same_verdicts(kit, cache):
    """Every fixture graded in the kit and in the course: the visible cases' statuses and points agree. A case that
    differs is graded three more times on each side: one whose two sides then share a verdict (a race decides it)
    is reported, not failed."""
    def graded(folder, exercise, course):
        out = os.path.join(WORK, "verdict.json")
        run([CUGRADE, "check", folder, "-e", exercise, "--course", course, "--cache-dir", cache, "--json", out])
        cases = json.load(open(out))["exercises"][0]["cases"]
        return {c["id"]: (c["status"], c["points"]) for c in cases if c["visibility"] == "visible"}

    # HANDOUT_FIXTURES=sum/seed_tree,transpose/naive compares only these (a short GPU lease); default: all.
    only = set(filter(None, os.environ.get("HANDOUT_FIXTURES", "").split(",")))
    compared = 0
    fixtures = os.path.join(SOURCE, "tests/fixtures")
    for exercise in sorted(e for e in os.listdir(fixtures) if os.path.isdir(os.path.join(fixtures, e))):
        for fixture in sorted(f for f in os.listdir(os.path.join(fixtures, exercise))
                              if os.path.isdir(os.path.join(fixtures, exercise, f))):
            if only and f"{exercise}/{fixture}" not in only:
                continue
            folder = os.path.join(SOURCE, "tests/fixtures", exercise, fixture)
            in_course, in_kit = graded(folder, exercise, SOURCE), graded(folder, exercise, kit)
            check(set(in_kit) == set(in_course), f"{exercise}/{fixture}: the kit has the course's visible cases")
            differ = {i for i in in_kit if in_kit[i] != in_course.get(i)}
            # A race decides some verdicts anew on every run: a case differs only if, graded three more times on
            # each side, the two sides never give one verdict in common.
            seen_course = {i: {in_course.get(i)} for i in differ}
            seen_kit = {i: {in_kit[i]} for i in differ}
            for _ in range(3 if differ else 0):
                again_course, again_kit = graded(folder, exercise, SOURCE), graded(folder, exercise, kit)
                for i in differ:
                    seen_course[i].add(again_course.get(i))
                    seen_kit[i].add(again_kit.get(i))
            for i in sorted(differ):
                if seen_course[i] & seen_kit[i]:
                    print(f"{exercise}/{fixture} {i}: a race decides it: course {sorted(map(str, seen_course[i]))}, "
                          f"kit {sorted(map(str, seen_kit[i]))}")
                else:
                    check(False, f"{exercise}/{fixture} {i}: course {sorted(map(str, seen_course[i]))}, "
                                 f"kit {sorted(map(str, seen_kit[i]))}")
            compared += len(in_kit)
            print(f"{exercise}/{fixture}: {len(in_kit)} visible cases, "
                  f"{'same' if not differ else str(len(differ)) + ' differ'}", flush=True)
    print(f"{compared} visible cases compared")
    return 1 if failures else 0


if __name__ == "__main__":
    status = main()
    print("FAILED" if failures else "passed", f"({len(failures)} failures)")
    sys.exit(status)

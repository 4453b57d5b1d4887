#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then the installed cugrade, run from a folder outside any course with no
# CUGRADE_COURSE, finds the course installed beside it, says so, and grades a template with it.
# usage: test_install.sh BUILD_DIR WORK_DIR
set -uo pipefail
build=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
# Outside the checkout, which a search from the current folder upwards would find first.
elsewhere=$(mktemp -d)
trap 'rm -rf "$elsewhere"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
cp "$work/prefix/share/cugrade/course/student_template/sum.cu" "$elsewhere/"
cd "$elsewhere" || exit 1
env -u CUGRADE_COURSE "$work/prefix/bin/cugrade" check . --cache-dir "$work/cache" > "$work/check.out" 2>&1
status=$?
expected="cugrade: course: $work/prefix/share/cugrade/course (beside cugrade)"
if ! grep -qxF "$expected" "$work/check.out"; then
    echo "FAILED: the installed cugrade does not say it uses the installed course ($expected):"
    cat "$work/check.out"
    exit 1
fi
# The template builds and is graded (skipped without a GPU, wrong answers with one): never a usage or cugrade error.
if [ "$status" -ne 77 ] && [ "$status" -ne 1 ]; then
    echo "FAILED: cugrade check with the installed course exited $status:"
    cat "$work/check.out"
    exit 1
fi
echo "installed cugrade graded with $work/prefix/share/cugrade/course (exit $status)"

#!/bin/sh
# Stands in for compute-sanitizer and Nsight Compute in the run loop's tests: takes their options, then runs the
# program and its plan (its last two arguments) as they would, telling it the tool it stands in for.
tool=none
while [ $# -gt 2 ]; do
    if [ "$1" = "--tool" ]; then
        tool=$2
    fi
    shift
done
CUGRADE_STAND_IN_TOOL=$tool exec "$@"

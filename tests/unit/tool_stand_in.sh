#!/bin/sh
# Stands in for compute-sanitizer and Nsight Compute in the run loop's tests: takes their options, then runs the
# program and its plan (its last two arguments) as they would.
while [ $# -gt 2 ]; do
    shift
done
exec "$@"

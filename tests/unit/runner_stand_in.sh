#!/bin/sh
# Stands in for a submission's runner in the run loop's tests: reads its channel (descriptor 4) until the checker
# closes it, then ends as a runner does.
exec cat <&4 >/dev/null

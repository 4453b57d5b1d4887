#!/bin/sh
# Stands in for an Nsight Compute that fails once as it does while other processes use the GPU, then profiles: the
# first run (no mark beside the report, the file after --log-file) says the driver reported an error and exits 9;
# the next writes a report of one kernel and runs the program and its plan (its last two arguments).
log=
while [ $# -gt 2 ]; do
    [ "$1" = "--log-file" ] && log=$2
    shift
done
if [ ! -e "$log.tried" ]; then
    : > "$log.tried"
    echo '==ERROR== An error was reported by the driver'
    exit 9
fi
{
    echo '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum"'
    echo '"","","ns","byte","byte"'
    echo '"0","add_each(const float *, unsigned long, float *)","1000000","1000000000","4"'
} > "$log"
exec "$@"

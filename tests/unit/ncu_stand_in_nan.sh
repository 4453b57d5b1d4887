#!/bin/sh
# Stands in for an Nsight Compute that profiled the submission's kernel but could not collect its metrics: its report
# (the file after --log-file) lists the kernel with every figure "nan". Then it runs the program and its plan (its
# last two arguments).
log=
while [ $# -gt 2 ]; do
    [ "$1" = "--log-file" ] && log=$2
    shift
done
{
    echo '==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, profiling results may be inconsistent.'
    echo '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum"'
    echo '"","","ns","byte","byte"'
    echo '"0","add_each(const float *, unsigned long, float *)","nan","nan","nan"'
} > "$log"
exec "$@"

// Ends the program from inside the call: exit(0) in sum(), so the harness never reports the case, with a clean exit
// status. An exit code of 0 must not read as success: every case the process was running when it exited gets
// exited_early, and the grader restarts the program for the next case, which exits the same way.
#include <cstdlib>

#include "sum.h"

void sum(const float*, std::size_t, float*, float*, cudaStream_t) {
    std::exit(0);
}

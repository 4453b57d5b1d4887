// Never finishes on the GPU: one kernel loops until a __device__ flag, read through a volatile pointer, becomes
// non-zero, which nothing ever does; the compiler cannot remove a loop on a volatile read. The harness's
// synchronisation after the call never returns, so each case must end at its wall-clock deadline as timed_out (the
// grader kills the process, which frees the GPU, and restarts it for the next case).
#include "sum.h"

__device__ int release_flag = 0;

__global__ void spin(float* result) {
    volatile int* flag = &release_flag;
    while (*flag == 0) {
    }
    result[0] = 0.0f;
}

void sum(const float*, std::size_t, float* result, float*, cudaStream_t stream) {
    spin<<<1, 1, 0, stream>>>(result);
}

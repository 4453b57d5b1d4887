// Cheats by calling a library: a correct sum through cub::DeviceReduce::Sum, its temporary storage carved out of
// `scratch`. The contract forbids libraries that compute the sum (CUB, Thrust, cuBLAS), and CUB is header-only, so
// its kernels are compiled into the submission's own object file under names that say cub. The static check must find
// it (by its #include, the object's names besides) and reject every case before anything runs.
#include <cub/device/device_reduce.cuh>

#include "sum.h"

void sum(const float* input, std::size_t n, float* result, float* scratch, cudaStream_t stream) {
    std::size_t temp_bytes = 0;
    cub::DeviceReduce::Sum(nullptr, temp_bytes, input, result, n, stream);
    if (temp_bytes <= SUM_SCRATCH_FLOATS * sizeof(float)) {
        cub::DeviceReduce::Sum(scratch, temp_bytes, input, result, n, stream);
    }
}

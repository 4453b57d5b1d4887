// The kernel of one "submission" for scripts/sanitizer-reuse.sh, compiled into a module of its own three ways:
//   -DRACY            a block sum without the barrier in its tree: a race on shared memory (racecheck reports it)
//   -DOUT_OF_BOUNDS   reads one element past its input (memcheck reports it)
//   neither           the block sum done right
extern "C" __global__ void kernel(const float* in, int n, float* out) {
#ifdef OUT_OF_BOUNDS
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        atomicAdd(out, in[i]);
    }
#else
    __shared__ float partial[256];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    partial[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        }
#ifndef RACY
        __syncthreads();
#endif
    }
    if (threadIdx.x == 0) {
        atomicAdd(out, partial[0]);
    }
#endif
}

// Defines the harness's own check of a sum (cugrade::harness::check_total, an inline function of total_check.cuh) to
// find nothing wrong, in the CPU self-check's build only (CUGRADE_CPU, out of sight of the nvcc build and its static
// checks): when the submission's object was linked first into the checker, its definition was the one kept. The sum
// itself writes 0. The submission's runner has no harness: the definition is never called, and every case is a wrong
// answer.
#include "sum.h"

#ifdef CUGRADE_CPU
#include <cstddef>
#include <string>

namespace cugrade::tolerance {
struct SumReference;
}
namespace cugrade::harness {
inline std::string check_total(float, const tolerance::SumReference&, double, std::size_t) { return ""; }
// Called, so that the compiler emits the inline definition.
std::string (*keep_check_total)(float, const tolerance::SumReference&, double, std::size_t) = check_total;
}  // namespace cugrade::harness
#endif

__global__ void write_zero(float* result) { result[0] = 0.0f; }

void sum(const float*, std::size_t, float* result, float*, cudaStream_t stream) {
    write_zero<<<1, 1, 0, stream>>>(result);
}

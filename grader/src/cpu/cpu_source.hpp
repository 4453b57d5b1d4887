// A submission's CUDA source made C++ for the CPU self-check (docs/cpu-mode.md): kernel launches become calls of
// the CPU launcher and `extern __shared__` arrays the launch's dynamic shared memory, each on the lines it was on, so
// that a compiler's messages keep the student's line numbers. The rest of CUDA is exercises/common/cpu/cuda_on_cpu.hpp.
#pragma once

#include <string>
#include <string_view>

namespace cugrade {

// `kernel<<<grid, block, bytes, stream>>>(arguments)` -> `::cugrade::cpu::launcher(kernel, grid, block, bytes,
// stream)(arguments)`; `extern __shared__ float s[];` -> `float* s = static_cast<float*>(...dynamic_shared_memory());`.
// Comments and string literals are left as they are. Throws std::runtime_error at a launch it cannot read, with its
// line.
std::string rewrite_for_cpu(std::string_view source);

}  // namespace cugrade

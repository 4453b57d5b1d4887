// cuda_runtime.h for a submission compiled for the CPU self-check: the CUDA of exercises/common/cpu/cuda_on_cpu.hpp.
// This folder comes first on the include path there, so that a contract's #include <cuda_runtime.h> finds it.
#pragma once

#include "cpu/cuda_on_cpu.hpp"

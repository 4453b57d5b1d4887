// cuda.h for the CPU self-check: the one type of the driver API that the harness's headers name (launch_shape.hpp).
// No driver runs on the CPU: nothing has one of these.
#pragma once

struct CUfunc_st;
using CUfunction = CUfunc_st*;

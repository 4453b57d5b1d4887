// What a speed test's profile reads of the submission's kernels, named once for the checker (which reads the GPU's
// counters itself, counter_profile.hpp) and the grader (which asks Nsight Compute for the same names and turns them
// into hints, speed_profile.hpp). Names as Nsight Compute 2025 and CUPTI call them on sm_70 and later.
#pragma once

#include <array>

namespace cugrade::profile_metrics {

// Read from the GPU's performance counters, over several replays of the call.
inline constexpr std::array<const char*, 19> counters = {
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
};

// The share of each sector's bytes a warp used: Nsight Compute patches the kernel's code for these, a pass of its own;
// the checker's profile goes without them (the hints then count sectors per request).
inline constexpr std::array<const char*, 2> patched = {
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
};

// What the launch itself says: its shape, the kernel's resources and the occupancy they allow. The checker computes
// them from the kernel's attributes and the launch; Nsight Compute reports them under the same names.
inline constexpr std::array<const char*, 10> launch = {
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_warps",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block",
    "launch__grid_size",
    "launch__block_size",
    "launch__sm_count",
};

}  // namespace cugrade::profile_metrics

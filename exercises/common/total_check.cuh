// The check of an exercise whose answer is one float that sums many values (a sum, a dot product): the exact total
// from the GPU, a tolerance from tolerance.hpp, and a message that says how far off the answer is.
#pragma once

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>

#include "describe.hpp"
#include "guarded_buffer.cuh"
#include "tolerance.hpp"

namespace cugrade::harness {

// "n=31: expected 62, got 61 (off by 1, tolerance 0)", or "" when `obtained` is within tolerance.
inline std::string check_total(float obtained, const tolerance::SumReference& reference, double tolerance,
                               std::size_t n) {
    std::ostringstream detail;
    detail << "n=" << n << ": expected " << describe_number(reference.sum) << ", got " << describe_number(obtained);
    if (is_poison(obtained)) {
        detail << " (result was never written)";
    } else if (!std::isfinite(obtained)) {
        detail << " (not a finite number)";
    } else if (!tolerance::within_tolerance(obtained, reference.sum, tolerance)) {
        detail << " (off by " << describe_number(std::abs(obtained - reference.sum)) << ", tolerance "
               << describe_number(tolerance) << ")";
    } else {
        return "";
    }
    return detail.str();
}

}  // namespace cugrade::harness

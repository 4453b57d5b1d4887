// Statistics of timing samples, shared by the harnesses (which decide when to stop sampling) and the tests.
// Plain C++: no CUDA here.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace cugrade::statistics {

inline double median(std::vector<double> values) {
    if (values.empty()) {
        return 0.0;
    }
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// The relative standard error of the median: sqrt(pi/2) * sigma / sqrt(n) / median, with sigma estimated robustly as
// 1.4826 times the median absolute deviation, so that a few disturbed samples do not inflate it.
inline double median_relative_error(const std::vector<double>& values) {
    if (values.size() < 2) {
        return INFINITY;
    }
    const double m = median(values);
    std::vector<double> deviations;
    deviations.reserve(values.size());
    for (const double v : values) {
        deviations.push_back(std::abs(v - m));
    }
    const double sigma = 1.4826 * median(deviations);
    return m > 0.0 ? 1.2533 * sigma / std::sqrt(static_cast<double>(values.size())) / m : INFINITY;
}

// Whether `value`, known to within `uncertainty`, could lie on either side of one of the boundaries.
inline bool near_any(double value, double uncertainty, const std::vector<double>& boundaries) {
    return std::any_of(boundaries.begin(), boundaries.end(),
                       [&](double b) { return std::abs(value - b) <= uncertainty; });
}

}  // namespace cugrade::statistics

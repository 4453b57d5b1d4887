// Catch2 v2 (Debian 12) and v3 (Ubuntu 24.04) under one include.
#pragma once

#include <string>

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;
inline auto contains_text(const std::string& text) { return Catch::Matchers::ContainsSubstring(text); }
#else
#include <catch2/catch.hpp>
inline auto contains_text(const std::string& text) { return Catch::Matchers::Contains(text); }
#endif

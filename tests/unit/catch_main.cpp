// Catch2 v2 needs its main compiled once; v3 links Catch2WithMain instead.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

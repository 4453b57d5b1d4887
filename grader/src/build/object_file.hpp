// An object file's sections and symbols (base/symbols.hpp), read with the toolchain's readelf.
#pragma once

#include <filesystem>

#include "base/symbols.hpp"
#include "build/toolchain.hpp"

namespace cugrade {

// Runs readelf on `path`. Throws std::runtime_error when it fails.
ObjectFile read_object(const std::filesystem::path& path, const Toolchain& toolchain);

}  // namespace cugrade

// Who declares a name, asked of the compiler (name_probe.hpp).
#include "authoring/name_probe.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <regex>

#include "build/course_tools.hpp"
#include "base/error.hpp"
#include "base/file_io.hpp"
#include "base/scratch_dir.hpp"

namespace cugrade {
namespace fs = std::filesystem;

namespace {

constexpr double probe_seconds = 300;
constexpr const char* macro_marker = "cugrade_probe_found_a_macro";

std::string included_headers() {
    std::string text;
    for (const auto& header : probe_headers()) {
        text += fmt::format("#include <{}>\n", header);
    }
    return text;
}

// Fails exactly when something else named NAME is visible at global scope, whatever it is: the probe's own variable,
// brought there by a using-directive, makes a use of NAME ambiguous beside any function, variable, type, template or
// namespace of that name; a macro stops it at #error.
std::string verdict_probe(const std::string& name) {
    return included_headers() + fmt::format(R"(#if defined({0})
#error {1}
#endif
namespace cugrade_probe {{
struct unique {{}};
unique {0};
}}
using namespace cugrade_probe;
void cugrade_probe_use() {{ (void){0}; }}
)",
                                            name, macro_marker);
}

// Fails for a name already declared, the compiler saying where: a typedef of the probe's own clashes with a class
// (the class's definition is named), the variable after it with a function or a variable (their declaration is
// named), and a #define with a macro (its definition is named).
std::string locating_probe(const std::string& name) {
    return included_headers() + fmt::format(R"(#if defined({0})
#define {0} cugrade_probe_macro
#else
struct cugrade_probe_unique {{}};
typedef cugrade_probe_unique {0};
cugrade_probe_unique {0};
#endif
)",
                                            name);
}

ProcessResult compile_probe(const std::string& source, const Toolchain& toolchain, const fs::path& dir,
                            const std::string& file) {
    write_file(dir / file, source);
    // --cuda: the host and device front ends see the whole file; nothing is assembled or linked.
    std::vector<std::string> argv = {toolchain.nvcc, "-std=c++20", "--cuda", file, "-o", file + ".ii"};
    for (const auto& include : toolchain.include_dirs) {
        argv.push_back("-I" + include.string());
    }
    return run_tool(argv, dir, probe_seconds);
}

bool ambiguous(const std::string& output, const std::string& name) {
    return output.find("\"" + name + "\" is ambiguous") != std::string::npos ||
           output.find("::" + name + "\" is ambiguous") != std::string::npos;
}

// The header where the compiler says an earlier declaration or definition is, other than the probe itself.
std::optional<fs::path> declaring_file(const std::string& output, const std::string& probe) {
    static const std::regex declared(R"~(\((?:declared|previous definition) at line \d+ of "?([^")\n]+)"?\))~");
    static const std::regex defined(
        R"~((?:^|\n)([^\s:][^:\n]*):\d+(?::\d+)?: note: this is the location of the previous definition)~");
    for (const auto* pattern : {&declared, &defined}) {
        for (std::sregex_iterator it(output.begin(), output.end(), *pattern), end; it != end; ++it) {
            const fs::path file = (*it)[1].str();
            if (file.filename() != probe) {
                return file;
            }
        }
    }
    return std::nullopt;
}

// The library `file` belongs to, and its path below its include folder ("unistd.h", "bits/stl_algobase.h").
NameOwner owner_of(const fs::path& file, const Toolchain& toolchain) {
    std::error_code ec;
    const std::string text = file.lexically_normal().string();
    const auto include = text.rfind("/include/");
    std::string header = include == std::string::npos ? file.filename().string() : text.substr(include + 9);
    const auto first_part = [&header] { return header.substr(0, header.find('/')); };
    const auto drop_first_part = [&header] {
        header = header.find('/') == std::string::npos ? header : header.substr(header.find('/') + 1);
    };
    NameOwner owner;
    if (!toolchain.toolkit_root.empty() &&
        lies_under(fs::weakly_canonical(file, ec), fs::weakly_canonical(toolchain.toolkit_root, ec))) {
        owner.library = "CUDA";
    } else if (first_part() == "c++") {
        owner.library = "the C++ library";
        drop_first_part();
        drop_first_part();  // the compiler's version: c++/12/
    } else {
        owner.library = "the C library";
        if (first_part().find("-linux-") != std::string::npos) {
            drop_first_part();  // the multiarch folder: x86_64-linux-gnu/
        }
    }
    owner.header = header;
    return owner;
}

}  // namespace

const std::vector<std::string>& probe_headers() {
    static const std::vector<std::string> headers = {
        // C++, and the C library as C++ has it
        "algorithm", "array", "atomic", "cassert", "cctype", "cerrno", "cfloat", "chrono", "cinttypes", "climits",
        "clocale", "cmath", "csetjmp", "csignal", "cstdarg", "cstddef", "cstdint", "cstdio", "cstdlib", "cstring",
        "ctime", "cwchar", "cwctype", "exception", "fstream", "functional", "initializer_list", "iterator", "map",
        "memory", "mutex", "numeric", "optional", "random", "sstream", "stdexcept", "string", "string_view", "tuple",
        "type_traits", "unordered_map", "utility", "variant", "vector",
        // C, POSIX and Linux
        "dlfcn.h", "errno.h", "fcntl.h", "link.h", "linux/audit.h", "linux/filter.h", "linux/seccomp.h", "math.h",
        "pthread.h", "sched.h", "stddef.h", "sys/mman.h", "sys/prctl.h", "sys/socket.h", "sys/syscall.h", "ucontext.h",
        "unistd.h",
        // CUDA
        "cuda.h", "cuda_occupancy.h", "cuda_runtime.h", "cuda_runtime_api.h"};
    return headers;
}

std::optional<NameOwner> name_owner(const std::string& name, const Toolchain& toolchain) {
    const ScratchDir dir("new");
    const ProcessResult verdict = compile_probe(verdict_probe(name), toolchain, dir.path(), "verdict.cu");
    if (verdict.status.success()) {
        return std::nullopt;
    }
    const bool macro = verdict.output.find(macro_marker) != std::string::npos;
    if (!macro && !ambiguous(verdict.output, name)) {
        throw UsageError(command_failure(
            verdict, fmt::format("cannot check the name '{}' against the C, C++ and CUDA headers: nvcc", name)));
    }
    const ProcessResult located = compile_probe(locating_probe(name), toolchain, dir.path(), "locate.cu");
    NameOwner owner;
    if (const auto file = declaring_file(located.output, "locate.cu")) {
        owner = owner_of(*file, toolchain);
    }
    owner.macro = macro;
    return owner;
}

}  // namespace cugrade

#include "cugrade/inspect.hpp"

#include <cxxabi.h>
#include <fmt/format.h>
#include <fnmatch.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

#include "cugrade/error.hpp"
#include "cugrade/process.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

constexpr double tool_seconds = 60.0;

struct Library {
    const char* name;
    const char* display;
    std::vector<const char*> namespaces;  // C++: a demangled name starting with one of these
    std::vector<const char*> prefixes;    // C: a name starting with one of these
    const char* source_hint;              // what to look for in the source, for the line
};

const std::vector<Library>& libraries() {
    static const std::vector<Library> all = {
        {"cub", "CUB", {"cub::"}, {}, "cub"},
        {"thrust", "Thrust", {"thrust::"}, {}, "thrust"},
        {"cublas", "cuBLAS", {}, {"cublas"}, "cublas"},
        {"cudnn", "cuDNN", {}, {"cudnn"}, "cudnn"},
        {"cusparse", "cuSPARSE", {}, {"cusparse"}, "cusparse"},
        {"cusolver", "cuSOLVER", {}, {"cusolver"}, "cusolver"},
        {"cufft", "cuFFT", {}, {"cufft"}, "cufft"},
        {"nccl", "NCCL", {}, {"nccl"}, "nccl"},
        {"cutlass", "CUTLASS", {"cutlass::", "cute::"}, {}, "cutlass"},
    };
    return all;
}

// Function families with the reason a submission may not call them.
struct FunctionRule {
    std::vector<const char*> names;  // globs
    const char* reason;
};

const std::vector<FunctionRule>& function_rules() {
    static const std::vector<FunctionRule> all = {
        {{"fork", "vfork", "clone", "clone3", "execve", "execveat", "execv", "execvp", "execvpe", "execl", "execlp",
          "execle", "system", "popen", "posix_spawn", "posix_spawnp", "syscall", "ptrace", "kill", "setsid",
          "setpgid", "daemon"},
         "a submission starts no processes"},
        {{"socket", "connect", "bind", "listen", "accept", "accept4", "getaddrinfo", "gethostbyname"},
         "a submission has no network"},
        {{"fopen", "fopen64", "freopen", "freopen64", "open", "open64", "openat", "openat64", "creat", "creat64",
          "opendir"},
         "a submission reads and writes no files"},
        {{"dlopen", "dlmopen", "dlsym", "dlvsym", "cudaGetDriverEntryPoint*", "cuGetProcAddress*"},
         "a submission calls only what it links"},
        {{"cudaStreamCreate*", "cuStreamCreate*"}, "launch every kernel on the stream you are given"},
        {{"cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cudaMallocManaged", "cuMemHostAlloc",
          "cuMemAllocHost*", "cuMemHostRegister*", "cuMemAllocManaged"},
         "a submission computes on the GPU, in the memory it is given"},
    };
    return all;
}

std::string demangle(const std::string& name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                std::free);
    return status == 0 && text ? std::string(text.get()) : name;
}

// "cub::CUB_300000_SM_900::DeviceReduce::Sum<float*, float*>(...)" -> "cub::DeviceReduce::Sum"
std::string short_name(const std::string& demangled) {
    std::string name = std::regex_replace(demangled, std::regex(R"(::[A-Z]+_[0-9]+_SM_[0-9_]+(NS)?::)"), "::");
    const auto cut = name.find_first_of("<(");
    return cut == std::string::npos ? name : name.substr(0, cut);
}

std::string run_or_throw(const std::vector<std::string>& argv, const std::string& what) {
    ProcessOptions options;
    options.argv = argv;
    options.output_limit = 64 << 20;
    const ProcessResult result = run_process(options, std::chrono::duration<double>(tool_seconds));
    if (!result.status.success()) {
        throw std::runtime_error(fmt::format("{} {}:\n{}", what, result.status.describe(), result.output));
    }
    return result.output;
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The first line of the source that matches, as "PATH:LINE", or PATH alone.
class SourceLines {
public:
    // Comments are blanked: a name in a comment is not where the code uses it.
    SourceLines(const fs::path& source, std::string shown) : shown_(std::move(shown)) {
        std::istringstream in(read_text(source));
        bool in_block = false;
        for (std::string line; std::getline(in, line);) {
            std::string code;
            for (std::size_t i = 0; i < line.size(); ++i) {
                if (in_block) {
                    if (line.compare(i, 2, "*/") == 0) {
                        in_block = false;
                        ++i;
                    }
                } else if (line.compare(i, 2, "//") == 0) {
                    break;
                } else if (line.compare(i, 2, "/*") == 0) {
                    in_block = true;
                    ++i;
                } else {
                    code += line[i];
                }
            }
            lines_.push_back(code);
        }
    }

    std::string where(const std::regex& pattern) const {
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            if (std::regex_search(lines_[i], pattern)) {
                return fmt::format("{}:{}", shown_, i + 1);
            }
        }
        return shown_;
    }

    std::string where_word(const std::string& word) const {
        return where(std::regex(R"((^|[^A-Za-z0-9_]))" + escape(word) + R"(($|[^A-Za-z0-9_]))"));
    }

private:
    static std::string escape(const std::string& text) {
        return std::regex_replace(text, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
    }
    std::string shown_;
    std::vector<std::string> lines_;
};

bool matches(const std::string& glob, const std::string& name) { return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; }

const char* reason_for(const std::string& glob) {
    for (const auto& rule : function_rules()) {
        for (const char* name : rule.names) {
            if (glob == name) {
                return rule.reason;
            }
        }
    }
    return "this exercise forbids it";
}

// Functions in .init_array and friends: code the loader runs before main. nvcc registers the device code that way
// (__sti____cudaRegisterAll); anything else is the student's.
std::vector<std::string> early_functions(const fs::path& object, const Toolchain& toolchain) {
    const std::string relocations = run_or_throw({toolchain.readelf, "-rW", object.string()}, "readelf failed:");
    const std::string table = run_or_throw({toolchain.objdump, "-t", object.string()}, "objdump failed:");
    // objdump -t: "0000000000000439 l     F .text  0000000000000020 _GLOBAL__sub_I_sum"
    std::map<std::pair<std::string, unsigned long long>, std::string> functions;
    static const std::regex entry(R"(^([0-9a-fA-F]+)\s.*\sF\s+(\S+)\s+[0-9a-fA-F]+\s+(\S+)\s*$)");
    std::istringstream table_lines(table);
    for (std::string line; std::getline(table_lines, line);) {
        std::smatch m;
        if (std::regex_match(line, m, entry)) {
            functions[{m[2], std::stoull(m[1], nullptr, 16)}] = m[3];
        }
    }
    std::vector<std::string> early;
    bool in_constructors = false;
    static const std::regex section(R"(^Relocation section '\.rela?(\.init_array|\.ctors|\.preinit_array)\S*')");
    static const std::regex target(R"(\s([^\s]+) \+ ([0-9a-fA-F]+)\s*$)");
    std::istringstream lines(relocations);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("Relocation section", 0) == 0) {
            in_constructors = std::regex_search(line, section);
            continue;
        }
        std::smatch m;
        if (!in_constructors || !std::regex_search(line, m, target)) {
            continue;
        }
        const std::string base = m[1];
        const auto offset = std::stoull(m[2], nullptr, 16);
        const auto found = functions.find({base, offset});
        const std::string name = found != functions.end() ? found->second : offset == 0 ? base : base + "+" + std::string(m[2]);
        if (name.find("__sti____cudaRegisterAll") == std::string::npos) {
            early.push_back(name);
        }
    }
    return early;
}

}  // namespace

std::vector<Symbol> parse_nm(const std::string& output) {
    std::vector<Symbol> symbols;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        // "0000000000000082 T sum" or "                 U cudaLaunchKernel"
        std::istringstream fields(line);
        std::vector<std::string> parts;
        for (std::string part; fields >> part;) {
            parts.push_back(part);
        }
        if (parts.size() < 2 || parts[parts.size() - 2].size() != 1) {
            continue;
        }
        std::string name = parts.back();
        name = name.substr(0, name.find('@'));  // "malloc@GLIBC_2.2.5"
        symbols.push_back({name, parts[parts.size() - 2][0]});
    }
    return symbols;
}

const std::vector<std::string>& known_libraries() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> all;
        for (const auto& library : libraries()) {
            all.push_back(library.name);
        }
        return all;
    }();
    return names;
}

std::vector<std::string> default_forbidden_libraries() { return known_libraries(); }

std::vector<std::string> default_forbidden_functions() {
    std::vector<std::string> all;
    for (const auto& rule : function_rules()) {
        all.insert(all.end(), rule.names.begin(), rule.names.end());
    }
    return all;
}

ProgramSymbols read_program_symbols(const fs::path& file) {
    ProgramSymbols symbols;
    std::istringstream lines(read_text(file));
    for (std::string line; std::getline(lines, line);) {
        if (line.size() > 2) {
            (line[0] == 'U' ? symbols.undefined : symbols.defined).insert(line.substr(2));
        }
    }
    return symbols;
}

Inspection inspect_submission(const BuildResult& build, const fs::path& shown,
                              const std::vector<std::string>& entry_points, const ForbiddenApis& forbidden,
                              const Toolchain& toolchain) {
    Inspection inspection;
    const SourceLines source(build.source, shown.string());
    const std::vector<Symbol> symbols =
        parse_nm(run_or_throw({toolchain.nm, build.object.string()}, "nm failed on the submission:"));
    const ProgramSymbols program = read_program_symbols(build.program_symbols);
    const auto is_entry = [&](const std::string& name) {
        return std::find(entry_points.begin(), entry_points.end(), name) != entry_points.end();
    };
    std::string entries;
    for (const auto& entry : entry_points) {
        entries += (entries.empty() ? "" : ", ") + entry + "()";
    }

    std::set<std::string> reported;
    const auto add = [&](std::string rule, std::string symbol, std::string message) {
        if (reported.insert(rule + " " + symbol).second) {
            inspection.findings.push_back({std::move(rule), std::move(symbol), std::move(message)});
        }
    };

    // What it defines: a definition of a name the program already has would replace the program's own. Weak
    // definitions of C++ names are the same inline code from the same headers (templates), so they may coincide.
    for (const auto& symbol : symbols) {
        // Names with a dot are the compiler's own (DW.ref.__gxx_personality_v0), never the student's.
        if (!symbol.defined() || !symbol.global() || is_entry(symbol.name) ||
            symbol.name.find('.') != std::string::npos) {
            continue;
        }
        const bool cpp = symbol.name.rfind("_Z", 0) == 0;
        const bool taken = program.defined.count(symbol.name) != 0 || program.undefined.count(symbol.name) != 0;
        if (taken && !(symbol.weak() && cpp)) {
            const std::string name = cpp ? short_name(demangle(symbol.name)) : symbol.name;
            const std::string bare = name.substr(name.rfind(':') == std::string::npos ? 0 : name.rfind(':') + 1);
            add("defines", name,
                fmt::format("{}: defines {}, which the grader's program already has: a submission may define only "
                            "{} and its own helpers",
                            source.where_word(bare), name, entries));
        }
    }

    // What it uses.
    const auto libraries_forbidden = forbidden.libraries.value_or(default_forbidden_libraries());
    const auto functions_forbidden = forbidden.functions.value_or(default_forbidden_functions());
    for (const auto& library : libraries()) {
        if (std::find(libraries_forbidden.begin(), libraries_forbidden.end(), library.name) ==
            libraries_forbidden.end()) {
            continue;
        }
        // Of every symbol that shows the library, name the one a person would recognise: a public function
        // (not a guard variable or a detail:: kernel), the shortest.
        std::string named;
        int named_rank = 0;
        for (const auto& symbol : symbols) {
            const std::string readable = demangle(symbol.name);
            int rank = 0;
            for (const char* space : library.namespaces) {
                if (readable.rfind(space, 0) == 0) {
                    rank = std::max(rank, readable.find("::detail::") == std::string::npos ? 3 : 2);
                } else if (readable.find(space) != std::string::npos) {
                    rank = std::max(rank, 1);
                }
            }
            for (const char* prefix : library.prefixes) {
                rank = symbol.name.rfind(prefix, 0) == 0 ? 3 : rank;
            }
            const std::string candidate = rank == 3 || rank == 2 ? short_name(readable) : readable;
            if (rank > named_rank || (rank == named_rank && rank > 0 && candidate.size() < named.size())) {
                named = candidate;
                named_rank = rank;
            }
        }
        if (named_rank > 0) {
            add("forbidden-library", library.display,
                fmt::format("{}: uses {} ({}), which this exercise forbids: write the kernels yourself",
                            source.where(std::regex(std::string(library.source_hint), std::regex::icase)),
                            library.display, named_rank == 1 ? "in " + short_name(named) : named));
        }
    }
    for (const auto& symbol : symbols) {
        if (symbol.type != 'U') {
            continue;
        }
        for (const auto& glob : functions_forbidden) {
            if (matches(glob, symbol.name)) {
                add("forbidden-function", symbol.name + "()",
                    fmt::format("{}: calls {}(), which submissions may not use: {}", source.where_word(symbol.name),
                                symbol.name, reason_for(glob)));
                break;
            }
        }
    }

    // When it runs.
    for (const auto& function : early_functions(build.object, toolchain)) {
        const bool global_object = function.rfind("_GLOBAL__sub_I", 0) == 0;
        const std::string name = global_object ? "the constructor of a global object" : short_name(demangle(function)) + "()";
        add("runs-before-main", name,
            fmt::format("{}: runs code before main ({}): a submission's code may run only when the grader calls {}",
                        global_object ? shown.string() : source.where_word(short_name(demangle(function))), name,
                        entries));
    }
    return inspection;
}

}  // namespace cugrade

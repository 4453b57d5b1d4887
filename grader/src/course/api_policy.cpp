#include "course/api_policy.hpp"

#include "base/symbols.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace cugrade {
namespace {

bool matches(const std::string& glob, const std::string& name) { return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; }

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
    return std::any_of(globs.begin(), globs.end(), [&](const std::string& glob) { return matches(glob, name); });
}

// Families a submission may not call, each with the reason the report gives.
struct Family {
    std::vector<std::string> names;  // globs
    const char* reason;
};

const std::vector<Family>& refused_families() {
    static const std::vector<Family> all = {
        {{"fork",    "vfork",  "clone",   "clone3", "execve",    "execveat", "execv", "execvp",
          "execvpe", "execl",  "execlp",  "execle", "fexecve",   "system",   "popen", "posix_spawn*",
          "ptrace",  "setsid", "setpgid", "daemon", "pthread_*", "thrd_*"},
         "a submission starts no processes or threads"},
        {{"kill", "tgkill", "tkill", "raise", "sigqueue", "signal", "sigaction", "alarm", "setitimer"},
         "a submission sends and catches no signals"},
        {{"syscall"}, "a submission makes no raw system calls"},
        {{"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "send*", "recv*", "getaddrinfo",
          "gethostbyname*"},
         "a submission has no network"},
        {{"fopen*",  "freopen*",  "fdopen", "open",       "open64",    "openat",  "openat64", "creat",    "creat64",
          "opendir", "fdopendir", "read",   "write",      "pread*",    "pwrite*", "readv",    "writev",   "stat*",
          "lstat*",  "fstat*",    "access", "faccessat*", "readlink*", "unlink*", "rename*",  "mkdir*",   "rmdir",
          "chdir",   "getcwd",    "dup*",   "close",      "ioctl",     "fcntl*",  "mkstemp*", "tmpfile*", "remove"},
         "a submission reads and writes no files"},
        {{"dlopen", "dlmopen", "dlsym", "dlvsym", "dlinfo", "dladdr*", "dl_iterate_phdr", "cudaGetDriverEntryPoint*",
          "cuGetProcAddress*", "cu[A-Z]*"},
         "a submission calls only the CUDA runtime, not the driver or anything it loads itself"},
        {{"mmap*", "munmap", "mprotect", "pkey_*", "madvise", "mremap", "brk", "sbrk", "process_vm_*", "getauxval",
          "backtrace*", "__libc_*"},
         "a submission does not inspect or change its process's memory"},
        {{"cudaStreamCreate*", "cuStreamCreate*"}, "launch every kernel on the stream you are given"},
        {{"cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cudaHostGetDevicePointer", "cudaMallocManaged",
          "cudaMemAdvise*", "cudaMemPrefetchAsync*", "cudaLaunchHostFunc", "cudaStreamAddCallback"},
         "a submission computes on the GPU, in the memory it is given"},
        {{"cudaDeviceReset", "cudaSetDevice*", "cudaDeviceSetLimit", "cudaDeviceSetCacheConfig",
          "cudaDeviceSetSharedMemConfig", "cudaIpc*", "cudaDeviceEnablePeerAccess", "cudaDeviceDisablePeerAccess",
          "cudaProfilerStart", "cudaProfilerStop", "cudaGraph*", "cudaStreamBeginCapture*", "cudaThreadExit"},
         "a submission leaves the device, its context and its other users alone"},
    };
    return all;
}

// What every exercise may call: the CUDA runtime as the contracts use it, nvcc's own calls, the C library's printing,
// strings, conversions and allocation, the C++ runtime.
const std::vector<std::string>& allowed_by_default() {
    static const std::vector<std::string> all = {
        // CUDA runtime: errors, launches, function attributes, occupancy, device memory, queries, events.
        "cudaGetLastError",
        "cudaPeekAtLastError",
        "cudaGetErrorString",
        "cudaGetErrorName",
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaFuncSetAttribute",
        "cudaFuncGetAttributes",
        "cudaFuncSetCacheConfig",
        "cudaFuncGetName",
        "cudaOccupancy*",
        "cudaMemset",
        "cudaMemsetAsync",
        "cudaMemset2D",
        "cudaMemset2DAsync",
        "cudaMemcpy",
        "cudaMemcpyAsync",
        "cudaMemcpy2D",
        "cudaMemcpy2DAsync",
        "cudaMemcpyToSymbol",
        "cudaMemcpyToSymbolAsync",
        "cudaMemcpyFromSymbol",
        "cudaMemcpyFromSymbolAsync",
        "cudaGetSymbolAddress",
        "cudaGetSymbolSize",
        "cudaMalloc",
        "cudaFree",
        "cudaMallocAsync",
        "cudaFreeAsync",
        "cudaMallocPitch",
        "cudaMemGetInfo",
        "cudaPointerGetAttributes",
        "cudaGetDevice",
        "cudaGetDeviceCount",
        "cudaGetDeviceProperties",
        "cudaGetDeviceProperties_v2",
        "cudaDeviceGetAttribute",
        "cudaDeviceGetLimit",
        "cudaDriverGetVersion",
        "cudaRuntimeGetVersion",
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaStreamQuery",
        "cudaStreamWaitEvent",
        "cudaEventCreate",
        "cudaEventCreateWithFlags",
        "cudaEventRecord",
        "cudaEventRecordWithFlags",
        "cudaEventSynchronize",
        "cudaEventQuery",
        "cudaEventElapsedTime",
        "cudaEventElapsedTime_v2",
        "cudaEventDestroy",
        // What nvcc's generated code calls: registration of the device code, kernel launches.
        "__cuda[A-Z]*",
        "__fatbinwrap*",
        "atexit",
        "__cxa_atexit",
        "__dso_handle",
        // The C++ runtime: exceptions, guards of local statics, operator new and delete (mangled, below).
        "__cxa_*",
        "__gxx_personality_v0",
        "_Unwind_Resume",
        "_Unwind_*",
        "__stack_chk_fail",
        "_GLOBAL_OFFSET_TABLE_",
        "__errno_location",
        "__assert_fail",
        "__cxa_pure_virtual",
        // Printing, to standard output and error.
        "printf",
        "fprintf",
        "vprintf",
        "vfprintf",
        "sprintf",
        "snprintf",
        "vsprintf",
        "vsnprintf",
        "puts",
        "fputs",
        "putchar",
        "fputc",
        "putc",
        "fwrite",
        "fflush",
        "perror",
        "stdout",
        "stderr",
        "__printf_chk",
        "__fprintf_chk",
        "__sprintf_chk",
        "__snprintf_chk",
        "__vprintf_chk",
        "__vfprintf_chk",
        "__vsnprintf_chk",
        "__vsprintf_chk",
        "__fwrite_chk",
        // Strings and memory.
        "memcpy",
        "memmove",
        "memset",
        "memcmp",
        "memchr",
        "strlen",
        "strnlen",
        "strcmp",
        "strncmp",
        "strcpy",
        "strncpy",
        "strcat",
        "strncat",
        "strchr",
        "strrchr",
        "strstr",
        "strspn",
        "strcspn",
        "strpbrk",
        "strerror",
        "stpcpy",
        "__memcpy_chk",
        "__memmove_chk",
        "__memset_chk",
        "__strcpy_chk",
        "__strncpy_chk",
        "__strcat_chk",
        "__stpcpy_chk",
        // Conversions, sorting, random numbers, allocation, ending the program.
        "atoi",
        "atol",
        "atoll",
        "atof",
        "strtol",
        "strtoll",
        "strtoul",
        "strtoull",
        "strtof",
        "strtod",
        "strtold",
        "__isoc23_strto*",
        "sscanf",
        "__isoc99_sscanf",
        "__isoc23_sscanf",
        "abs",
        "labs",
        "llabs",
        "div",
        "ldiv",
        "qsort",
        "bsearch",
        "rand",
        "srand",
        "rand_r",
        "malloc",
        "calloc",
        "realloc",
        "free",
        "aligned_alloc",
        "posix_memalign",
        "abort",
        "exit",
        "getenv",
        "__ctype_b_loc",
        "__ctype_tolower_loc",
        "__ctype_toupper_loc",
        "tolower",
        "toupper",
        "isalpha",
        "isdigit",
        "isspace",
        "isalnum",
        "isupper",
        "islower",
        // Clocks.
        "clock",
        "time",
        "clock_gettime",
        "gettimeofday",
        "difftime",
        // Math that the C library itself provides (the math library's are allowed as a whole).
        "ldexp*",
        "frexp*",
        "modf*",
        "scalbn*",
        "copysign*",
        "finite*",
        "isinf*",
        "isnan*",
        "__isinf*",
        "__isnan*",
        "__finite*",
        "__signbit*",
        "__fpclassify*",
    };
    return all;
}

// Parts of the C++ standard library that reach files, processes or threads, each with its reason.
struct CppFamily {
    std::vector<const char*> prefixes;  // of the demangled name
    const char* reason;
};
const std::vector<CppFamily>& refused_cpp() {
    static const std::vector<CppFamily> all = {
        {{"std::filesystem::", "std::__fs::", "std::experimental::filesystem::", "std::basic_filebuf",
          "std::basic_ifstream", "std::basic_ofstream", "std::basic_fstream", "std::__basic_file",
          "__gnu_cxx::stdio_filebuf", "__gnu_cxx::stdio_sync_filebuf"},
         "a submission reads and writes no files"},
        {{"std::thread", "std::jthread", "std::__future_base", "std::async", "std::this_thread::"},
         "a submission starts no processes or threads"},
    };
    return all;
}

}  // namespace

const std::vector<KnownLibrary>& library_catalogue() {
    static const std::vector<KnownLibrary> all = {
        // CCCL finds the driver at run time and waits politely: allowing CUB or Thrust allows that.
        {"cub",
         "CUB",
         {"cub::"},
         {},
         "cub",
         {"dlopen", "dlsym", "dlclose", "dlerror", "sched_yield", "cudaSetDevice"},
         {"cub/"},
         {"thrust"}},
        {"thrust",
         "Thrust",
         {"thrust::"},
         {},
         "thrust",
         {"dlopen", "dlsym", "dlclose", "dlerror", "sched_yield", "cudaSetDevice", "cudaStreamCreate*",
          "cudaStreamDestroy"},
         {"thrust/"},
         {"cub"}},
        {"cublas", "cuBLAS", {}, {"cublas"}, "cublas", {}, {"cublas*.h"}},
        {"cudnn", "cuDNN", {}, {"cudnn"}, "cudnn", {}, {"cudnn*.h"}},
        {"cusparse", "cuSPARSE", {}, {"cusparse"}, "cusparse", {}, {"cusparse*.h"}},
        {"cusolver", "cuSOLVER", {}, {"cusolver"}, "cusolver", {}, {"cusolver*.h"}},
        {"cufft", "cuFFT", {}, {"cufft"}, "cufft", {}, {"cufft*.h"}},
        {"nccl", "NCCL", {}, {"nccl"}, "nccl", {}, {"nccl*.h", "nccl_device/"}},
        {"cutlass", "CUTLASS", {"cutlass::", "cute::"}, {}, "cutlass", {}, {"cutlass/", "cute/"}},
    };
    return all;
}

LibraryHeader library_of_header(const std::string& path) {
    std::vector<std::string> parts;
    for (std::size_t start = 0; start <= path.size();) {
        const std::size_t slash = std::min(path.find('/', start), path.size());
        parts.push_back(path.substr(start, slash - start));
        start = slash + 1;
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const bool last = i + 1 == parts.size();
        for (const auto& library : library_catalogue()) {
            for (const auto& pattern : library.headers) {
                const bool folder = pattern.back() == '/';
                if (folder == last || !matches(folder ? pattern.substr(0, pattern.size() - 1) : pattern, parts[i])) {
                    continue;
                }
                std::string name = parts[i];
                for (std::size_t j = i + 1; j < parts.size(); ++j) {
                    name += "/" + parts[j];
                }
                return {&library, name};
            }
        }
    }
    return {};
}

const std::vector<std::string>& known_libraries() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> all;
        for (const auto& library : library_catalogue()) {
            all.push_back(library.name);
        }
        return all;
    }();
    return names;
}

ApiPolicy::ApiPolicy(const ApiRules& rules, std::set<std::string> math_library)
    : rules_(rules), math_library_(std::move(math_library)) {
    for (const auto& library : library_catalogue()) {
        if (!forbids_library(library.name)) {
            rules_.allowed_functions.insert(rules_.allowed_functions.end(), library.needs.begin(), library.needs.end());
        }
    }
}

bool ApiPolicy::forbids_library(const std::string& library) const {
    const auto listed = [&](const std::vector<std::string>& names) {
        return std::find(names.begin(), names.end(), library) != names.end();
    };
    return listed(rules_.forbidden_libraries) || !listed(rules_.allowed_libraries);
}

CallVerdict ApiPolicy::judge_call(const std::string& name) const {
    if (matches_any(rules_.forbidden_functions, name)) {
        return {false, "this exercise forbids it"};
    }
    if (matches_any(rules_.allowed_functions, name)) {
        return {};
    }
    for (const auto& family : refused_families()) {
        if (matches_any(family.names, name)) {
            return {false, family.reason};
        }
    }
    if (matches_any(allowed_by_default(), name) || math_library_.count(name) != 0) {
        return {};
    }
    if (name.rfind("_Z", 0) == 0) {
        // The C++ standard library, but for what reaches files, processes and threads.
        const std::string readable = demangle(name);
        for (const auto& family : refused_cpp()) {
            for (const char* prefix : family.prefixes) {
                if (readable.find(prefix) != std::string::npos) {
                    return {false, family.reason};
                }
            }
        }
        return {};
    }
    return {false, "it is not among the functions a CUDA exercise needs (docs/rubric.md lists them); an instructor "
                   "can allow it in the rubric"};
}

}  // namespace cugrade

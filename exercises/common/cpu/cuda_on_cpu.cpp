#include "cpu/cuda_on_cpu.hpp"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol.hpp"

namespace cugrade::cpu {

namespace {

// CUGRADE_CPU_SCHEDULE: forward (the default), reverse, or shuffled:SEED.
LaunchOptions schedule_of_this_run() {
    LaunchOptions options;
    const char* chosen = std::getenv("CUGRADE_CPU_SCHEDULE");
    const std::string schedule = chosen != nullptr ? chosen : "forward";
    if (schedule == "reverse") {
        options.schedule = Schedule::reverse;
    } else if (schedule.rfind("shuffled", 0) == 0) {
        options.schedule = Schedule::shuffled;
        const auto colon = schedule.find(':');
        options.seed = colon == std::string::npos ? 0 : std::strtoull(schedule.c_str() + colon + 1, nullptr, 10);
    }
    return options;
}

struct Allocation {
    std::uintptr_t begin = 0;  // what cudaMalloc returned
    std::size_t bytes = 0;
    void* mapping = nullptr;  // its pages, with an inaccessible one on each side
    std::size_t mapped = 0;
    bool borrowed = false;  // mapped by the runner for a call: its pages around are not its own (map_array)
};

// Every array cudaMalloc handed out and cudaFree has not taken back, by where it begins.
std::map<std::uintptr_t, Allocation>& allocations() {
    thread_local std::map<std::uintptr_t, Allocation> live;
    return live;
}

std::size_t page_bytes() {
    static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return page;
}

// Where an address that faulted lies against the arrays: just past the end of one, just before the start of one, or
// far from every array.
nlohmann::json place_of(std::uintptr_t address) {
    const std::size_t page = page_bytes();
    for (const auto& [begin, allocation] : allocations()) {
        const std::uintptr_t end = begin + allocation.bytes;
        if (address >= end && address < end + page) {
            return {{"outside", "after"}, {"distance", address - end}, {"allocation", allocation.bytes}};
        }
        const auto first_page = reinterpret_cast<std::uintptr_t>(allocation.mapping) + page;
        if (address < begin && address >= first_page - page) {
            return {{"outside", "before"}, {"distance", begin - address}, {"allocation", allocation.bytes}};
        }
    }
    return {{"outside", "far"}};
}

// The instruction's address in the file it was loaded from, which addr2line reads (PIE or not).
std::uintptr_t in_file(std::uintptr_t instruction) {
    struct Search {
        std::uintptr_t instruction;
        std::uintptr_t found = 0;
    } search{instruction};
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            auto* s = static_cast<Search*>(data);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const auto& segment = info->dlpi_phdr[i];
                const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
                if (segment.p_type == PT_LOAD && s->instruction >= start && s->instruction < start + segment.p_memsz) {
                    s->found = s->instruction - info->dlpi_addr;
                    return 1;
                }
            }
            return 0;
        },
        &search);
    return search.found;
}

std::string dims(const Dim3& d) {
    return std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z);
}

// What cudaGetErrorString says of a memory fault: in words, then the facts for the grader
// (grader/src/cpu/cpu_fault.cpp), which adds the line from the instruction's address.
std::string describe(const MemoryFault& fault, const char* kernel_name) {
    const AccessFault& f = fault.fault;
    const char* access = f.access == AccessFault::Access::read    ? "read"
                         : f.access == AccessFault::Access::write ? "write"
                                                                  : "access";
    const nlohmann::json place = place_of(f.address);
    std::string words = std::string("a ") + access + " ";
    if (place["outside"] == "after") {
        words += std::to_string(place["distance"].get<std::size_t>()) + " bytes past the end of an array of " +
                 std::to_string(place["allocation"].get<std::size_t>()) + " bytes";
    } else if (place["outside"] == "before") {
        words += std::to_string(place["distance"].get<std::size_t>()) + " bytes before the start of an array of " +
                 std::to_string(place["allocation"].get<std::size_t>()) + " bytes";
    } else {
        words += "of an address far from every array";
    }
    words += std::string(" in ") + kernel_name + ", thread (" + dims(f.thread) + ") of block (" + dims(f.block) + ")";
    nlohmann::json facts = place;
    facts["access"] = access;
    facts["kernel"] = kernel_name;
    facts["thread"] = dims(f.thread);
    facts["block"] = dims(f.block);
    facts["instruction"] = in_file(f.instruction);
    return words + " " + protocol::cpu_fault_marker + facts.dump() + "]";
}

// Where the arrays' pages go: far from where the kernel puts a program, its heap and its libraries, so that the runner
// finds the same addresses free (x86-64 and arm64 with 48-bit addresses; elsewhere the kernel's choice).
constexpr std::uintptr_t device_addresses = std::uintptr_t{0x2000} << 32;

// `bytes` of inaccessible pages in the device's range, or anywhere the kernel chooses where that range is taken or
// beyond this machine's addresses.
void* reserve_pages(std::size_t bytes) {
    static std::uintptr_t next = device_addresses;
    constexpr int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_FIXED_NOREPLACE
    for (int tries = 0; tries < 16; ++tries) {
        void* wanted = reinterpret_cast<void*>(next);
        void* got = mmap(wanted, bytes, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
        if (got == wanted) {
            next += bytes;
            return got;
        }
        if (got != MAP_FAILED) {
            munmap(got, bytes);  // a kernel without MAP_FIXED_NOREPLACE took the address as a hint
            break;
        }
        if (errno != EEXIST) {
            break;
        }
        next += bytes;
    }
#endif
    void* anywhere = mmap(nullptr, bytes, PROT_NONE, flags, -1, 0);
    return anywhere;
}

std::uintptr_t page_floor(std::uintptr_t address) { return address / page_bytes() * page_bytes(); }
std::uintptr_t page_ceil(std::uintptr_t address) { return page_floor(address + page_bytes() - 1); }

}  // namespace

DeviceArray array_holding(std::uintptr_t address) {
    auto found = allocations().upper_bound(address);
    if (found == allocations().begin()) {
        return {};
    }
    --found;
    const Allocation& allocation = found->second;
    if (address >= allocation.begin + allocation.bytes) {
        return {};
    }
    return {allocation.begin, allocation.bytes};
}

std::string map_array(const DeviceArray& array) {
    if (array.bytes == 0 || array.begin + array.bytes + page_bytes() < array.begin) {
        return "an empty or impossible array";
    }
    const std::uintptr_t first = page_floor(array.begin);
    const std::size_t length = page_ceil(array.begin + array.bytes) - first;
    void* wanted = reinterpret_cast<void*>(first);
#ifdef MAP_FIXED_NOREPLACE
    void* got = mmap(wanted, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
#else
    void* got = mmap(wanted, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#endif
    if (got != wanted) {
        const int error = errno;
        if (got != MAP_FAILED) {
            munmap(got, length);
        }
        return "the pages of an array of " + std::to_string(array.bytes) + " bytes at " + std::to_string(array.begin) +
               " are taken in the submission's process" +
               (got == MAP_FAILED ? ": " + std::string(strerror(error)) : "");
    }
    const std::size_t page = page_bytes();
    allocations()[array.begin] = {array.begin, array.bytes, static_cast<char*>(got) - page, length + 2 * page, true};
    return "";
}

void unmap_array(std::uintptr_t begin) {
    const auto found = allocations().find(begin);
    if (found == allocations().end() || !found->second.borrowed) {
        return;
    }
    const std::size_t page = page_bytes();
    munmap(static_cast<char*>(found->second.mapping) + page, found->second.mapped - 2 * page);
    allocations().erase(found);
}

cudaError_t allocate(void** pointer, std::size_t bytes) {
    *pointer = nullptr;
    if (sticky_error() != cudaSuccess) {
        return sticky_error();
    }
    const std::size_t size = std::max<std::size_t>(bytes, 1);
    const std::size_t page = page_bytes();
    const std::size_t data_pages = (size + page - 1) / page;
    const std::size_t mapped = (data_pages + 2) * page;
    void* mapping = reserve_pages(mapped);
    if (mapping == MAP_FAILED) {
        return cudaErrorMemoryAllocation;
    }
    auto* first = static_cast<char*>(mapping) + page;
    if (mprotect(first, data_pages * page, PROT_READ | PROT_WRITE) != 0) {
        munmap(mapping, mapped);
        return cudaErrorMemoryAllocation;
    }
    // The array ends where the inaccessible page after it begins; it starts aligned as far as its size allows (an
    // array of 1025 floats, to 4 bytes).
    const std::size_t alignment = std::min<std::size_t>(size & (~size + 1), 256);
    const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(first) + data_pages * page;
    const std::uintptr_t begin = (end - size) / alignment * alignment;
    allocations()[begin] = {begin, size, mapping, mapped, false};
    *pointer = reinterpret_cast<void*>(begin);
    return cudaSuccess;
}

cudaError_t release(void* pointer) {
    if (pointer == nullptr) {
        return sticky_error();
    }
    const auto found = allocations().find(reinterpret_cast<std::uintptr_t>(pointer));
    if (found == allocations().end() || found->second.borrowed) {
        return sticky_error() != cudaSuccess ? sticky_error() : cudaErrorInvalidValue;
    }
    munmap(found->second.mapping, found->second.mapped);
    allocations().erase(found);
    return sticky_error();
}

SubmissionCall& submission_call() {
    thread_local SubmissionCall call;
    return call;
}

cudaError_t& sticky_error() {
    thread_local cudaError_t error = cudaSuccess;
    return error;
}

std::string& last_fault() {
    thread_local std::string fault;
    return fault;
}

const char* error_string(cudaError_t error) {
    thread_local std::string text;
    text = error == cudaErrorLaunchFailure && !last_fault().empty() ? "unspecified launch failure: " + last_fault()
           : error == cudaErrorIllegalAddress && !last_fault().empty()
               ? "an illegal memory access was encountered: " + last_fault()
               : std::string(error_name(error));
    return text.c_str();
}

cudaError_t& last_error() {
    thread_local cudaError_t error = cudaSuccess;
    return error;
}

const char* error_name(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
        case cudaErrorLaunchTimeout: return "cudaErrorLaunchTimeout";
        case cudaErrorAssert: return "cudaErrorAssert";
        case cudaErrorHardwareStackError: return "cudaErrorHardwareStackError";
        case cudaErrorIllegalInstruction: return "cudaErrorIllegalInstruction";
        case cudaErrorMisalignedAddress: return "cudaErrorMisalignedAddress";
        case cudaErrorInvalidAddressSpace: return "cudaErrorInvalidAddressSpace";
        case cudaErrorInvalidPc: return "cudaErrorInvalidPc";
        case cudaErrorNotSupported: return "cudaErrorNotSupported";
    }
    return "cudaErrorUnknown";
}

void launch_on_cpu(const char* kernel_name, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
                   const std::function<void()>& kernel) {
    if (sticky_error() != cudaSuccess) {
        return;  // a context that a fault spoiled runs nothing more
    }
    const std::size_t threads = std::size_t{block.x} * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
        grid.z > 65535) {
        last_error() = cudaErrorInvalidConfiguration;
        return;
    }
    LaunchOptions options = schedule_of_this_run();
    options.dynamic_shared_bytes = dynamic_shared_bytes;
    // What the GPU would make of a fault: an error that ends the context, said with what went wrong.
    try {
        launch({grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, options, kernel);
    } catch (const MemoryFault& fault) {
        sticky_error() = cudaErrorIllegalAddress;
        last_fault() = describe(fault, kernel_name);
    } catch (const KernelFault& fault) {
        sticky_error() = cudaErrorLaunchFailure;
        last_fault() = fault.what();
    }
}

}  // namespace cugrade::cpu

// Forges the grader's records with every token it can find, then, in the large cases, exits as if it had finished.
// It computes nothing (result[0] = 0, while every sum of the rubric's inputs is at least 0.5). In each call it reads
// its own environment and every writable mapping of its process (raw system calls, nothing for a symbol check to see;
// on x86-64), takes every run of 32 lowercase hexadecimal digits as a candidate token, and writes result records
// claiming every case passed, each with every candidate, to every descriptor from 0 to 1023 that is a pipe, socket
// or file: among them its channel to the grader's checker. From n = 1048576 it then ends its process with status 0.
// The token lives only in the checker's process and its records travel on a channel the submission never holds:
// the small cases must fail as wrong answers, the large ones as early exits.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>

#include "sum.h"

namespace {

#if defined(__x86_64__)
long raw_syscall(long number, long a, long b, long c) {
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(number), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
constexpr long sys_read = 0, sys_write = 1, sys_open = 2, sys_close = 3, sys_fstat = 5, sys_exit_group = 231;
#else
long raw_syscall(long, long, long, long) { return -1; }
constexpr long sys_read = 0, sys_write = 0, sys_open = 0, sys_close = 0, sys_fstat = 0, sys_exit_group = 0;
#endif

constexpr std::size_t token_length = 32;
constexpr int max_candidates = 64;
char candidates[max_candidates][token_length + 1];
int candidate_count = 0;

bool hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Every run of exactly 32 hexadecimal digits in [begin, end).
void collect(const char* begin, const char* end) {
    const char* run = begin;
    for (const char* p = begin; p <= end; ++p) {
        if (p < end && hex_digit(*p)) {
            continue;
        }
        if (p - run == static_cast<long>(token_length) && candidate_count < max_candidates) {
            std::memcpy(candidates[candidate_count], run, token_length);
            candidates[candidate_count++][token_length] = '\0';
        }
        run = p + 1;
    }
}

long read_file(const char* path, char* buffer, std::size_t size) {
    const long fd = raw_syscall(sys_open, reinterpret_cast<long>(path), O_RDONLY, 0);
    if (fd < 0) {
        return 0;
    }
    long total = 0;
    for (long got; total < static_cast<long>(size) &&
                   (got = raw_syscall(sys_read, fd, reinterpret_cast<long>(buffer + total), size - total)) > 0;) {
        total += got;
    }
    raw_syscall(sys_close, fd, 0, 0);
    return total;
}

unsigned long parse_hex(const char*& p) {
    unsigned long value = 0;
    for (; hex_digit(*p); ++p) {
        value = value * 16 + static_cast<unsigned long>(*p <= '9' ? *p - '0' : *p - 'a' + 10);
    }
    return value;
}

char text[1 << 20];

void find_candidates() {
    candidate_count = 0;
    collect(text, text + read_file("/proc/self/environ", text, sizeof text));
    const long length = read_file("/proc/self/maps", text, sizeof text - 1);
    text[length < 0 ? 0 : length] = '\0';
    for (const char* line = text; *line != '\0';) {
        const char* p = line;
        const unsigned long begin = parse_hex(p);
        ++p;  // '-'
        const unsigned long end = parse_hex(p);
        ++p;  // ' '
        const bool readable_and_writable = p[0] == 'r' && p[1] == 'w';
        const char* next = std::strchr(line, '\n');
        const bool special = std::strstr(line, "[vvar") != nullptr && (next == nullptr || std::strstr(line, "[vvar") < next);
        // This buffer is skipped: it holds what was just read, not the process's memory.
        const bool own_buffer = begin <= reinterpret_cast<unsigned long>(text) &&
                                reinterpret_cast<unsigned long>(text) < end;
        if (readable_and_writable && !special && !own_buffer) {
            collect(reinterpret_cast<const char*>(begin), reinterpret_cast<const char*>(end));
        }
        if (next == nullptr) {
            break;
        }
        line = next + 1;
    }
}

const char* const case_names[] = {"basic/n=1/positive",     "basic/n=1000/positive",    "basic/n=65537/positive",
                                  "basic/n=1048576/positive", "hidden/n=4194304/positive", "speed/n=16777216/positive"};

void forge_everywhere() {
    char record[512];
    for (int fd = 0; fd < 1024; ++fd) {
        struct stat info {};
        if (raw_syscall(sys_fstat, fd, reinterpret_cast<long>(&info), 0) != 0 ||
            !(S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode) || S_ISREG(info.st_mode))) {
            continue;
        }
        for (int c = 0; c < candidate_count; ++c) {
            for (const char* name : case_names) {
                std::strcpy(record, "{\"event\":\"result\",\"case\":\"");
                std::strcat(record, name);
                std::strcat(record, "\",\"status\":\"passed\",\"detail\":\"\",\"measurements\":{},\"token\":\"");
                std::strcat(record, candidates[c]);
                std::strcat(record, "\",\"work\":[]}\n");
                raw_syscall(sys_write, fd, reinterpret_cast<long>(record), static_cast<long>(std::strlen(record)));
            }
        }
    }
}

}  // namespace

void sum(const float*, std::size_t n, float* result, float*, cudaStream_t stream) {
    find_candidates();
    forge_everywhere();
    if (n >= 1048576) {
        raw_syscall(sys_exit_group, 0, 0, 0);
    }
    cudaMemsetAsync(result, 0, sizeof(float), stream);
}

#include "diagnose/speed_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "base/kernel_name.hpp"
#include "build/object_file.hpp"
#include "profile_metrics.hpp"

namespace cugrade {
namespace {

// What the hints read (profile_metrics.hpp), all of it asked of Nsight Compute.
std::string profiler_metric_list() {
    std::string list;
    const auto add = [&](const auto& names) {
        for (const char* name : names) {
            if (!list.empty()) {
                list += ',';
            }
            list += name;
        }
    };
    add(profile_metrics::counters);
    add(profile_metrics::patched);
    add(profile_metrics::launch);
    return list;
}

// One CSV record; quotes around fields, "" for a quote inside one.
std::vector<std::string> csv_fields(const std::string& line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
            fields.back() += '"';
            ++i;
        } else if (c == '"') {
            quoted = !quoted;
        } else if (c == ',' && !quoted) {
            fields.emplace_back();
        } else if (c != '\r') {
            fields.back() += c;
        }
    }
    return fields;
}

// "1,677,868.80" -> 1677868.8; nothing for text ("PolicySpread"), an empty field, or what is not a finite number (a
// metric the profiler could not collect, "nan").
std::optional<double> number(std::string text) {
    text.erase(std::remove(text.begin(), text.end(), ','), text.end());
    if (text.empty()) {
        return std::nullopt;
    }
    std::size_t used = 0;
    try {
        const double value = std::stod(text, &used);
        return used == text.size() && std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// One thing that slows the kernels down: how much of their time it likely costs (to put the likeliest first), what
// shows it, and what to do.
struct Finding {
    double weight;
    std::string topic;     // diagnosis_topics
    std::string category;  // the same words for every submission
    std::string cause;
    std::string fix;
};

std::string share(double part, double whole) { return fmt::format("{:.0f}%", whole > 0 ? 100.0 * part / whole : 0.0); }

}  // namespace

double KernelProfile::metric(const std::string& name) const {
    const auto found = metrics.find(name);
    return found == metrics.end() ? 0.0 : found->second;
}

std::vector<std::string> profiler_command(const std::string& ncu, const std::filesystem::path& report_file) {
    const std::string metrics = profiler_metric_list();
    return {ncu,
            "--clock-control",
            "none",
            "--target-processes",
            "application-only",
            "--nvtx",
            "--nvtx-include",
            "submission/",
            "--csv",
            "--page",
            "raw",
            "--print-units",
            "base",
            "--log-file",
            report_file.string(),
            "--metrics",
            metrics};
}

std::vector<KernelProfile> read_profile(const std::string& csv) {
    std::istringstream lines(csv);
    std::vector<std::string> header;
    std::vector<KernelProfile> launches;
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.rfind("==", 0) == 0) {
            continue;  // the profiler's own messages
        }
        const auto fields = csv_fields(line);
        if (header.empty()) {
            if (fields.front() == "ID") {
                header = fields;
            }
            continue;
        }
        if (fields.size() != header.size() || !number(fields.front())) {
            continue;  // the units' row, or the program's own output
        }
        KernelProfile launch;
        for (std::size_t i = 0; i < header.size(); ++i) {
            if (header[i] == "Kernel Name") {
                launch.name = kernel_name(fields[i]);
            } else if (header[i].find("__") != std::string::npos) {
                if (const auto value = number(fields[i])) {
                    launch.metrics[header[i]] = *value;
                }
            }
        }
        launches.push_back(std::move(launch));
    }
    if (header.empty()) {
        throw std::runtime_error("no kernel table in the profiler's report");
    }
    return launches;
}

std::vector<KernelProfile> read_counter_profile(const nlohmann::json& launches) {
    if (!launches.is_array()) {
        throw std::runtime_error("the harness's profile has no launches");
    }
    std::vector<KernelProfile> profiled;
    for (const auto& launch : launches) {
        if (!launch.is_object() || !launch.value("name", nlohmann::json()).is_string() ||
            !launch.value("metrics", nlohmann::json()).is_object()) {
            throw std::runtime_error("the harness's profile is not a list of launches");
        }
        KernelProfile kernel;
        // The device name ("_Z13one_block_sumPKfmPf") as Nsight Compute prints it: "one_block_sum".
        kernel.name = kernel_name(demangle(launch["name"].get<std::string>()));
        for (const auto& [name, value] : launch["metrics"].items()) {
            if (value.is_number()) {
                kernel.metrics[name] = value.get<double>();
            }
        }
        profiled.push_back(std::move(kernel));
    }
    return profiled;
}

std::string describe_profile(const std::vector<KernelProfile>& launches) {
    std::string text;
    for (const auto& launch : launches) {
        text += launch.name + ":";
        for (const auto& [name, value] : launch.metrics) {
            text += fmt::format(" {}={:g}", name, value);
        }
        text += "\n";
    }
    return text;
}

namespace {

// The launches of one kernel count as one: their times and counts added up, the rest (shares, ratios, the launch's
// shape) from the longest of them. How many launches there were is kept for the launch count.
std::vector<KernelProfile> merged_launches(const std::vector<KernelProfile>& profiled) {
    std::vector<KernelProfile> launches;
    for (const auto& launch : profiled) {
        const auto same = std::find_if(launches.begin(), launches.end(),
                                       [&](const KernelProfile& k) { return k.name == launch.name; });
        if (same == launches.end()) {
            launches.push_back(launch);
            continue;
        }
        const bool longer = launch.metric("gpu__time_duration.sum") > same->metric("gpu__time_duration.sum");
        KernelProfile merged = longer ? launch : *same;
        for (const auto& [name, value] : launch.metrics) {
            if (name.size() > 4 && name.compare(name.size() - 4, 4, ".sum") == 0) {
                merged.metrics[name] = same->metric(name) + value;
            }
        }
        *same = std::move(merged);
    }
    return launches;
}

// What all the kernels together took and moved.
struct Totals {
    double total_ns = 0.0;
    double dram_bytes = 0.0;
};

Totals totals_of(const std::vector<KernelProfile>& launches) {
    Totals totals;
    for (const auto& k : launches) {
        totals.total_ns += k.metric("gpu__time_duration.sum");
        totals.dram_bytes += k.metric("dram__bytes_read.sum") + k.metric("dram__bytes_write.sum");
    }
    return totals;
}

// One kernel as its findings see it: its share of the time, and how they name it.
struct KernelPart {
    const KernelProfile& profile;
    double part;
    std::string where;
};

void add(std::vector<Finding>& findings, std::optional<Finding> finding) {
    if (finding) {
        findings.push_back(std::move(*finding));
    }
}

std::optional<Finding> idle_sms(const KernelPart& kernel) {
    const auto& k = kernel.profile;
    const double sms = k.metric("launch__sm_count");
    const double blocks = k.metric("launch__grid_size");
    const double elapsed = k.metric("sm__cycles_elapsed.avg");
    const double busy = elapsed > 0 ? k.metric("sm__cycles_active.avg") / elapsed : 1.0;
    if (!(sms > 0 && blocks > 0 && blocks < sms && busy < 0.5)) {
        return std::nullopt;
    }
    return Finding{kernel.part * (1.0 - busy), "grid", "too few blocks: idle SMs",
                   fmt::format("{} runs {} block{} on a GPU of {} SMs: {} of {} SMs busy", kernel.where, blocks,
                               blocks == 1 ? "" : "s", sms, blocks, sms),
                   "launch enough blocks to fill every SM, several per SM (a grid-stride loop over n "
                   "with about 4 x SMs blocks), and combine the blocks' partial results"};
}

std::optional<Finding> atomic_per_element(const KernelPart& kernel, double elements) {
    const double atomics = kernel.profile.metric("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum") +
                           kernel.profile.metric("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum");
    if (!(elements > 0 && atomics * 32.0 >= elements / 2.0)) {
        return std::nullopt;
    }
    return Finding{kernel.part * 0.9, "atomics", "an atomic per element",
                   fmt::format("{} issues {:.0f} atomic instructions on global memory, one per warp "
                               "for every {:.0f} elements: atomics on one address serialise",
                               kernel.where, atomics, 32.0 * std::max(1.0, elements / (32.0 * atomics))),
                   "add within the block first (shared memory or warp shuffles), then one atomicAdd "
                   "per block"};
}

// `op` "ld" or "st", `words` "loads" or "stores".
std::optional<Finding> uncoalesced_accesses(const KernelPart& kernel, const char* op, const char* words,
                                            const KernelAccessWidths& access_widths) {
    const auto& k = kernel.profile;
    const std::string& where = kernel.where;
    const double all_sectors = k.metric("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") +
                               k.metric("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum");
    const double requests = k.metric(fmt::format("l1tex__t_requests_pipe_lsu_mem_global_op_{}.sum", op));
    const double sectors = k.metric(fmt::format("l1tex__t_sectors_pipe_lsu_mem_global_op_{}.sum", op));
    // The share of each 32-byte sector's bytes that the threads asked for: 100% when a warp's accesses are
    // consecutive, whatever their width. Without it (an older profiler), sectors per request: a warp's 32
    // consecutive floats are 4 sectors, its 32 float4s 16, so more than 16 is uncoalesced at any width.
    const double used_pct = k.metric(fmt::format("smsp__sass_average_data_bytes_per_sector_mem_global_op_{}.pct", op));
    // Without it (the checker's counters), the kernel's widest access of this kind, from its code: a warp's
    // request of that width asks for width x 32 bytes, that many 32-byte sectors when coalesced. Requests of
    // narrower accesses in the same kernel need fewer, so the share told from it is at most what was used.
    const auto widths = access_widths.find(k.name);
    const int width = widths == access_widths.end() ? 0
                      : std::string(op) == "ld"     ? widths->second.widest_load_bytes
                                                    : widths->second.widest_store_bytes;
    const double at_most_used_pct =
        width > 0 && requests > 0 && sectors > 0 ? std::min(100.0, 100.0 * width / (sectors / requests)) : 0.0;
    const double used_share_pct = used_pct > 0 ? used_pct : at_most_used_pct;  // 0: not known
    const bool uncoalesced = used_share_pct > 0 ? used_share_pct < 50.0 : requests > 0 && sectors / requests > 16.5;
    // One float per block (a partial sum) fills an eighth of its sector, and costs nothing: only accesses of
    // several sectors each that are a tenth of the kernel's global traffic or more count.
    const bool matters = requests > 0 && sectors / requests >= 2.0 && sectors >= 0.1 * all_sectors;
    if (!(uncoalesced && matters)) {
        return std::nullopt;
    }
    const double waste =
        used_share_pct > 0 ? 1.0 - used_share_pct / 100.0 : std::min(1.0, (sectors / requests - 4.0) / 28.0);
    std::string cause;
    if (used_pct > 0) {
        cause = fmt::format("global {} of {} are uncoalesced: {:.0f}% of each 32-byte sector they fetch "
                            "is used ({:.1f} sectors per warp request)",
                            words, where, used_pct, sectors / requests);
    } else if (at_most_used_pct > 0) {
        cause = fmt::format("global {} of {} are uncoalesced: {:.1f} sectors of 32 bytes per warp request, "
                            "where its {}-byte {} need {}: at most {:.0f}% of each sector is used",
                            words, where, sectors / requests, width, words, width, at_most_used_pct);
    } else {
        cause = fmt::format("global {} of {} are uncoalesced: {:.1f} sectors of 32 bytes per warp request, "
                            "where 4 serve 32 consecutive floats",
                            words, where, sectors / requests);
    }
    return Finding{kernel.part * waste, "coalescing", fmt::format("uncoalesced global {}", words), cause,
                   "let consecutive threads (threadIdx.x) touch consecutive addresses; for a "
                   "strided access, go through a tile in shared memory"};
}

// `op` "ld" or "st", `words` "loads" or "stores".
std::optional<Finding> bank_conflicts(const KernelPart& kernel, const char* op, const char* words) {
    const double wavefronts =
        kernel.profile.metric(fmt::format("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum", op));
    const double instructions = kernel.profile.metric(fmt::format("smsp__inst_executed_op_shared_{}.sum", op));
    if (!(instructions > 0 && wavefronts / instructions >= 4.0)) {
        return std::nullopt;
    }
    const double ways = wavefronts / instructions;
    return Finding{kernel.part * 0.8 * (1.0 - 1.0 / ways), "bank_conflicts", "shared-memory bank conflicts",
                   fmt::format("shared-memory {} of {} have {:.1f}-way bank conflicts", words, kernel.where, ways),
                   "threads of a warp hit the same bank: pad a 2-D tile to TILE+1 columns, or index "
                   "so that consecutive threads use consecutive words"};
}

std::optional<Finding> divergent_warps(const KernelPart& kernel) {
    const double threads = kernel.profile.metric("smsp__thread_inst_executed_per_inst_executed.ratio");
    if (!(threads > 0 && threads < 24.0)) {
        return std::nullopt;
    }
    return Finding{kernel.part * (1.0 - threads / 32.0), "divergence", "divergent warps",
                   fmt::format("warps of {} run with {:.1f} of 32 threads active on average", kernel.where, threads),
                   "branches split warps (an if on threadIdx.x % (2 * s), say): keep the active "
                   "threads contiguous, so whole warps take the same branch"};
}

double kernel_dram_bytes(const KernelProfile& k) {
    return k.metric("dram__bytes_read.sum") + k.metric("dram__bytes_write.sum");
}

std::optional<Finding> local_memory(const KernelPart& kernel) {
    const auto& k = kernel.profile;
    const double local_bytes = k.metric("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum") +
                               k.metric("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum");
    const double kernel_dram = kernel_dram_bytes(k);
    if (!(kernel_dram > 0 && local_bytes > 0.1 * kernel_dram)) {
        return std::nullopt;
    }
    return Finding{kernel.part * std::min(0.8, local_bytes / kernel_dram), "occupancy",
                   "local memory: spilled registers",
                   fmt::format("{} moves {:.0f} MB through local memory ({:.0f} registers per thread): "
                               "registers spilled, or an array indexed at run time",
                               kernel.where, local_bytes / 1e6, k.metric("launch__registers_per_thread")),
                   "keep per-thread arrays small and indexed by constants (unrolled loops), or give the "
                   "compiler more registers with fewer threads per block (__launch_bounds__)"};
}

std::optional<Finding> low_occupancy(const KernelPart& kernel) {
    const auto& k = kernel.profile;
    const double achieved = k.metric("sm__warps_active.avg.pct_of_peak_sustained_active");
    const double theoretical = k.metric("sm__maximum_warps_per_active_cycle_pct");
    if (!(theoretical > 0 && theoretical < 50.0 && achieved < 40.0)) {
        return std::nullopt;
    }
    const std::vector<std::pair<std::string, double>> limits = {
        {fmt::format("registers ({:.0f} per thread)", k.metric("launch__registers_per_thread")),
         k.metric("launch__occupancy_limit_registers")},
        {fmt::format("shared memory ({:.0f} bytes per block)", k.metric("launch__shared_mem_per_block")),
         k.metric("launch__occupancy_limit_shared_mem")},
        {fmt::format("the block size ({:.0f} threads)", k.metric("launch__block_size")),
         k.metric("launch__occupancy_limit_warps")},
        {"blocks per SM", k.metric("launch__occupancy_limit_blocks")}};
    const auto limiter = std::min_element(limits.begin(), limits.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
    return Finding{kernel.part * 0.5 * (1.0 - achieved / 100.0), "occupancy", "low occupancy",
                   fmt::format("{} keeps {:.0f}% of the SM's warps busy (at most {:.0f}%, limited by {})", kernel.where,
                               achieved, theoretical, limiter->first),
                   "fewer registers or less shared memory per block, or blocks of 128 to 512 threads, "
                   "let more warps hide the memory's latency"};
}

// Narrow loads, each thread's next load waiting on its last: coalesced, on every SM, with nothing else wrong (the
// caller asks only then), yet far from the copy's bandwidth.
std::optional<Finding> narrow_loads(const KernelPart& kernel, double gbps, double copy_gbps) {
    const auto& k = kernel.profile;
    const double sms = k.metric("launch__sm_count");
    const double blocks = k.metric("launch__grid_size");
    const double load_requests = k.metric("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum");
    const double load_sectors = k.metric("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
    if (!(blocks >= sms && copy_gbps > 0 && gbps < 0.85 * copy_gbps && load_requests > 0 &&
          load_sectors / load_requests <= 4.5 && load_sectors * 32.0 > 0.5 * kernel_dram_bytes(k))) {
        return std::nullopt;
    }
    return Finding{kernel.part * 0.6 * (1.0 - gbps / copy_gbps), "vector_loads", "narrow loads, few in flight",
                   fmt::format("{} loads 4 bytes per thread at a time ({:.1f} sectors per warp request) "
                               "and reaches {} of the copy's bandwidth: too few bytes in flight",
                               kernel.where, load_sectors / load_requests, share(gbps, copy_gbps)),
                   "load 16 bytes per thread (float4, at an aligned start) or several independent "
                   "elements per loop iteration, so that more loads are in flight at once"};
}

std::vector<Finding> kernel_findings(const KernelPart& kernel, const SpeedTestFigures& test, double gbps) {
    std::vector<Finding> findings;
    add(findings, idle_sms(kernel));
    add(findings, atomic_per_element(kernel, test.elements));
    for (const auto& [op, words] : {std::pair{"ld", "loads"}, std::pair{"st", "stores"}}) {
        add(findings, uncoalesced_accesses(kernel, op, words, test.access_widths));
        add(findings, bank_conflicts(kernel, op, words));
    }
    add(findings, divergent_warps(kernel));
    add(findings, local_memory(kernel));
    add(findings, low_occupancy(kernel));
    if (findings.empty()) {
        add(findings, narrow_loads(kernel, gbps, test.copy_gbps));
    }
    return findings;
}

// Each kernel's findings count by its share of the time; a kernel of a tenth of it cannot be why the whole is slow (a
// final one-block pass over the partials, say).
std::vector<Finding> findings_by_kernel(const std::vector<KernelProfile>& launches, const Totals& totals,
                                        const SpeedTestFigures& test, double gbps) {
    std::vector<Finding> findings;
    for (const auto& k : launches) {
        const double time = k.metric("gpu__time_duration.sum");
        const double part = time / totals.total_ns;
        if (part < 0.1) {
            continue;
        }
        const std::string where =
            launches.size() == 1 ? k.name : fmt::format("{} ({} of the time)", k.name, share(time, totals.total_ns));
        for (auto& finding : kernel_findings({k, part, where}, test, gbps)) {
            findings.push_back(std::move(finding));
        }
    }
    return findings;
}

// Bytes beyond what the exercise must move: passes that write data out and read it back.
std::optional<Finding> excess_traffic(double dram_bytes, double minimum_bytes) {
    if (!(minimum_bytes > 0 && dram_bytes > 1.4 * minimum_bytes)) {
        return std::nullopt;
    }
    return Finding{
        0.9 * (1.0 - minimum_bytes / dram_bytes), "traffic", "more memory traffic than needed",
        fmt::format("the kernels move {:.0f} MB where the exercise needs {:.0f} MB: {:.1f}x the "
                    "minimum, each element read or written about {:.0f} times",
                    dram_bytes / 1e6, minimum_bytes / 1e6, dram_bytes / minimum_bytes, dram_bytes / minimum_bytes),
        "read each input once and write each output once: keep partial results on chip and pass "
        "only the blocks' totals between passes, or do it in one pass"};
}

// Launches cost a few microseconds each, whatever they do.
std::optional<Finding> many_launches(std::size_t launch_count, double total_ns) {
    const double launch_ns = 3000.0 * static_cast<double>(launch_count);
    if (!(launch_count >= 4 && launch_ns > 0.2 * total_ns)) {
        return std::nullopt;
    }
    return Finding{std::min(0.9, launch_ns / std::max(1.0, total_ns + launch_ns)), "launches", "many short launches",
                   fmt::format("{} kernel launches per call, {:.1f} us each on average: each launch costs "
                               "about 3 us of its own",
                               launch_count, total_ns / 1000.0 / static_cast<double>(launch_count)),
                   "do more per launch: fewer levels (a wider tree per block), or one pass that combines "
                   "the blocks' results"};
}

// What can explain only a twentieth of the time is not why the kernels are slow.
std::vector<Finding> likeliest_first(std::vector<Finding> findings) {
    std::erase_if(findings, [](const Finding& f) { return f.weight < 0.05; });
    std::stable_sort(findings.begin(), findings.end(),
                     [](const Finding& a, const Finding& b) { return a.weight > b.weight; });
    return findings;
}

Diagnosis speed_diagnosis_of(const std::vector<Finding>& findings, const SpeedTestFigures& test, const Totals& totals,
                             double gbps) {
    const double dram_bytes = totals.dram_bytes, copy_gbps = test.copy_gbps;
    Diagnosis diagnosis;
    diagnosis.kind = "speed";
    const std::string bandwidth =
        copy_gbps > 0 ? fmt::format("the kernels moved {:.0f} MB at {:.0f} GB/s: {} of the copy's {:.0f} GB/s",
                                    dram_bytes / 1e6, gbps, share(gbps, copy_gbps), copy_gbps)
                      : fmt::format("the kernels moved {:.0f} MB at {:.0f} GB/s", dram_bytes / 1e6, gbps);
    if (findings.empty()) {
        diagnosis.summary = test.source + ": " + bandwidth + "; nothing stands out in how the kernels use the GPU";
        diagnosis.category = "slow, with nothing standing out";
        diagnosis.hint = "move fewer bytes or make fewer passes over the data; compare the number of kernel launches "
                         "and passes with the README's fastest design";
    } else {
        diagnosis.summary = test.source + ": " + findings.front().cause;
        diagnosis.category = findings.front().category;
        diagnosis.topic = findings.front().topic;
        diagnosis.hint = findings.front().fix;
        for (std::size_t i = 1; i < findings.size() && i < 4; ++i) {
            diagnosis.evidence.push_back(findings[i].cause);
        }
        diagnosis.evidence.push_back(bandwidth);
    }
    return diagnosis;
}

}  // namespace

std::optional<Diagnosis> speed_diagnosis(const std::vector<KernelProfile>& profiled, const SpeedTestFigures& test) {
    if (profiled.empty()) {
        return std::nullopt;
    }
    const std::vector<KernelProfile> launches = merged_launches(profiled);
    const Totals totals = totals_of(launches);
    if (totals.total_ns <= 0) {
        return std::nullopt;  // the profile measured no time: nothing can be said of where it went
    }
    const double gbps = totals.dram_bytes / totals.total_ns;  // bytes per ns = GB/s
    std::vector<Finding> findings = findings_by_kernel(launches, totals, test, gbps);
    add(findings, excess_traffic(totals.dram_bytes, test.minimum_bytes));
    add(findings, many_launches(profiled.size(), totals.total_ns));
    return speed_diagnosis_of(likeliest_first(std::move(findings)), test, totals, gbps);
}

}  // namespace cugrade

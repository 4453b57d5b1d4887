#include "inspect/inspect.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "inspect/arithmetic_check.hpp"
#include "build/cache.hpp"
#include "course/api_policy.hpp"
#include "inspect/host_copies.hpp"
#include "build/included_headers.hpp"
#include "build/link_object.hpp"
#include "build/object_file.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// The first line of the source that matches, as "PATH:LINE", or PATH alone.
class SourceLines {
public:
    // Comments are blanked: a name in a comment is not where the code uses it.
    SourceLines(const std::string& source, std::string shown) : text_(source), shown_(std::move(shown)) {
        std::istringstream in(source);
        bool in_block = false;
        for (std::string line; std::getline(in, line);) {
            lines_.push_back(code_without_comments(line, in_block));
        }
    }

    const std::string& file() const { return shown_; }
    const std::string& text() const { return text_; }

    std::string where(const std::regex& pattern) const {
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            if (std::regex_search(lines_[i], pattern)) {
                return fmt::format("{}:{}", shown_, i + 1);
            }
        }
        return shown_;
    }

    std::string where_word(const std::string& word) const {
        const std::string bare = word.substr(word.rfind(':') == std::string::npos ? 0 : word.rfind(':') + 1);
        return where(std::regex(R"((^|[^A-Za-z0-9_]))" + escape(bare) + R"(($|[^A-Za-z0-9_]))"));
    }

private:
    static std::string escape(const std::string& text) {
        return std::regex_replace(text, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
    }
    std::string text_;
    std::string shown_;
    std::vector<std::string> lines_;
};

// program-symbols.txt (build.cpp's record_program_symbols).
struct ProgramSymbols {
    std::set<std::string> defined;                // D
    std::set<std::string> runner_weak;            // W
    std::set<std::string> undefined;              // U
    std::map<std::string, std::string> exported;  // X: name -> the library that exports it
    std::set<std::string> math;                   // what the math library exports
};

ProgramSymbols read_program_symbols(const fs::path& file) {
    ProgramSymbols symbols;
    std::istringstream lines(read_file(file));
    for (std::string line; std::getline(lines, line);) {
        if (line.size() < 3) {
            continue;
        }
        const std::string rest = line.substr(2);
        switch (line[0]) {
            case 'D': symbols.defined.insert(rest); break;
            case 'W': symbols.runner_weak.insert(rest); break;
            case 'U': symbols.undefined.insert(rest); break;
            case 'X': {
                const auto space = rest.find(' ');
                const std::string library = rest.substr(0, space);
                const std::string name = rest.substr(space + 1);
                symbols.exported.emplace(name, library);
                if (library.rfind("libm.so", 0) == 0) {
                    symbols.math.insert(name);
                }
                break;
            }
            default: break;
        }
    }
    return symbols;
}

std::string describe_library(const std::string& soname) {
    static const std::vector<std::pair<const char*, const char*>> names = {
        {"libc.so", "the C library"},       {"libstdc++.so", "the C++ library"},
        {"libm.so", "the math library"},    {"libgcc_s.so", "the compiler's runtime"},
        {"ld-linux", "the dynamic loader"}, {"libcuda.so", "the CUDA driver"},
    };
    for (const auto& [prefix, name] : names) {
        if (soname.rfind(prefix, 0) == 0) {
            return fmt::format("{} ({})", name, soname);
        }
    }
    return soname;
}

// Sections compilers make for ordinary code: anything else was asked for by hand (a section attribute, assembly).
bool ordinary_section(const std::string& name) {
    static const std::vector<std::string> globs = {".text",
                                                   ".text.*",
                                                   ".data",
                                                   ".data.*",
                                                   ".bss",
                                                   ".bss.*",
                                                   ".rodata",
                                                   ".rodata.*",
                                                   ".tdata",
                                                   ".tdata.*",
                                                   ".tbss",
                                                   ".tbss.*",
                                                   ".init_array",
                                                   ".init_array.*",
                                                   ".fini_array",
                                                   ".fini_array.*",
                                                   ".eh_frame",
                                                   ".gcc_except_table",
                                                   ".gcc_except_table.*",
                                                   ".group",
                                                   ".rela.*",
                                                   ".rel.*",
                                                   ".symtab",
                                                   ".symtab_shndx",
                                                   ".strtab",
                                                   ".shstrtab",
                                                   ".comment",
                                                   ".note.GNU-stack",
                                                   ".note.gnu.property",
                                                   ".nv_fatbin",
                                                   ".nvFatBinSegment",
                                                   "__nv_module_id",
                                                   ".nv.*",
                                                   ".debug_*"};
    return std::any_of(globs.begin(), globs.end(),
                       [&](const std::string& glob) { return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; });
}

// Sections whose code the loader runs around main.
bool early_section(const std::string& name) {
    for (const char* early : {".init", ".fini", ".preinit_array", ".ctors", ".dtors", ".init_array", ".fini_array"}) {
        if (name == early || name.rfind(std::string(early) + ".", 0) == 0) {
            return true;
        }
    }
    return false;
}

// The output sections of the linked program that hold something of the submission's object, from the linker's map.
std::set<std::string> submission_sections_in_program(const fs::path& map_file) {
    std::set<std::string> found;
    std::istringstream lines(read_file(map_file));
    bool in_map = false;
    std::string output_section;
    std::string pending_input;  // an input section whose address, size and file are on the next line
    static const std::regex output_line(R"(^(\S+)(\s+0x[0-9a-fA-F]+\s+0x[0-9a-fA-F]+)?\s*$)");
    static const std::regex input_line(R"(^ (\S+)\s+0x[0-9a-fA-F]+\s+0x([0-9a-fA-F]+)\s+(\S.*)$)");
    static const std::regex continued(R"(^\s+0x[0-9a-fA-F]+\s+0x([0-9a-fA-F]+)\s+(\S.*)$)");
    static const std::regex input_name(R"(^ (\S+)\s*$)");
    const auto record = [&](const std::string& size, const std::string& file) {
        if (std::stoull(size, nullptr, 16) > 0 && file.find("submission-linked.o") != std::string::npos) {
            found.insert(output_section);
        }
    };
    for (std::string line; std::getline(lines, line);) {
        if (!in_map) {
            in_map = line.rfind("Linker script and memory map", 0) == 0;
            continue;
        }
        std::smatch m;
        if (!pending_input.empty() && std::regex_match(line, m, continued)) {
            record(m[1], m[2]);
            pending_input.clear();
            continue;
        }
        pending_input.clear();
        if (std::regex_match(line, m, input_line)) {
            record(m[2], m[3]);
        } else if (std::regex_match(line, m, input_name) && m[1].str().front() != '*') {
            pending_input = m[1];
        } else if (std::regex_match(line, m, output_line)) {
            output_section = m[1];
        }
    }
    return found;
}

// The rules on libraries: the exercise's contract is the base, its rubric adds to what is allowed or refused.
ApiRules library_rules(const Exercise& exercise, const ApiRules& rubric) {
    ApiRules rules = rubric;
    const auto& allowed = exercise.rules.allowed_libraries;
    rules.allowed_libraries.insert(rules.allowed_libraries.end(), allowed.begin(), allowed.end());
    return rules;
}

// Why a library is refused, to end a message: the contract's words, where the contract is what refuses it.
std::string library_refusal(const Exercise& exercise, const KnownLibrary& library) {
    const auto& allowed = exercise.rules.allowed_libraries;
    if (std::find(allowed.begin(), allowed.end(), library.name) != allowed.end()) {
        return "which this exercise's rubric forbids: write the kernels yourself";
    }
    if (exercise.rules.libraries_words.empty()) {
        return "which this exercise forbids: write the kernels yourself";
    }
    return fmt::format("which this exercise forbids (\"{}\"): write the kernels yourself",
                       exercise.rules.libraries_words);
}

using AddFinding = std::function<void(std::string, std::string, std::string)>;

// What it uses, first: libraries by the headers its own lines included. Returns the libraries judged so, those any
// of its headers belong to (none where the build kept no dependency list).
std::set<std::string> add_included_library_findings(const BuildResult& build, const SourceLines& source,
                                                    const Exercise& exercise, const ApiPolicy& policy,
                                                    const AddFinding& add) {
    if (build.dependencies.empty()) {
        return {};
    }
    const auto libraries = included_libraries(read_dependency_list(build.dependencies), source.text());
    if (!libraries) {
        return {};
    }
    for (const auto& found : libraries->included) {
        if (!policy.forbids_library(found.library->name)) {
            continue;
        }
        std::string what;
        if (!found.directive) {
            what = fmt::format("{}: includes <{}> ({})", source.file(), found.header, found.library->display);
        } else if (found.named) {
            what = fmt::format("{}:{}: includes {} ({})", source.file(), found.directive->line,
                               found.directive->written, found.library->display);
        } else {
            what = fmt::format("{}:{}: includes {} and through it <{}> ({})", source.file(), found.directive->line,
                               found.directive->written, found.header, found.library->display);
        }
        add("forbidden-library", found.library->display,
            fmt::format("{}, {}", what, library_refusal(exercise, *found.library)));
    }
    return libraries->present;
}

// Then, for a library none of its headers brought in (declared by hand): its names in any symbol, defined or used.
void add_library_name_findings(const SourceLines& source, const Exercise& exercise, const ApiPolicy& policy,
                               const ObjectFile& object, const std::set<std::string>& judged, const AddFinding& add) {
    for (const auto& library : library_catalogue()) {
        if (!policy.forbids_library(library.name) || judged.count(library.name) != 0) {
            continue;
        }
        // Of every symbol that shows the library, name the one a person would recognise: a public function
        // (not a guard variable or a detail:: kernel), the shortest.
        std::string named;
        int named_rank = 0;
        for (const auto& symbol : object.symbols) {
            const std::string full = demangle(symbol.name);
            int rank = 0;
            for (const auto& space : library.namespaces) {
                if (full.rfind(space, 0) == 0) {
                    rank = std::max(rank, full.find("::detail::") == std::string::npos ? 3 : 2);
                } else if (full.find(space) != std::string::npos) {
                    rank = std::max(rank, 1);
                }
            }
            for (const auto& prefix : library.prefixes) {
                rank = symbol.name.rfind(prefix, 0) == 0 ? 3 : rank;
            }
            const std::string candidate = rank == 3 || rank == 2 ? short_name(full) : full;
            if (rank > named_rank || (rank == named_rank && rank > 0 && candidate.size() < named.size())) {
                named = candidate;
                named_rank = rank;
            }
        }
        if (named_rank > 0) {
            // A C function by its name (unless a macro of its header renamed it), else the library's name.
            std::string where = library.prefixes.empty() ? source.file() : source.where_word(named);
            if (where == source.file()) {
                where = source.where(std::regex(library.source_hint, std::regex::icase));
            }
            add("forbidden-library", library.display,
                fmt::format("{}: uses {} ({}), {}", where, library.display,
                            named_rank == 1 ? "in " + short_name(named) : named, library_refusal(exercise, library)));
        }
    }
}

void add_library_findings(const BuildResult& build, const SourceLines& source, const Exercise& exercise,
                          const ApiPolicy& policy, const ObjectFile& object, const AddFinding& add) {
    const std::set<std::string> judged = add_included_library_findings(build, source, exercise, policy, add);
    add_library_name_findings(source, exercise, policy, object, judged, add);
}

// What both inspections read: the source, the object, the names the program has, and what the rules allow.
struct Subject {
    SourceLines source;
    ObjectFile object;
    ProgramSymbols program;
    ApiPolicy policy;
};

Subject read_subject(const BuildResult& build, const SubmissionFile& submission, const Exercise& exercise,
                     const ApiRules& rules, const Toolchain& toolchain) {
    SourceLines source(submission.bytes, submission.shown.string());
    ObjectFile object = read_object(build.object, toolchain);
    ProgramSymbols program = read_program_symbols(build.program_symbols);
    ApiPolicy policy(library_rules(exercise, rules), program.math);
    return {std::move(source), std::move(object), std::move(program), std::move(policy)};
}

// The findings of an inspection, each rule and symbol once.
class Findings {
public:
    AddFinding adder() {
        return [this](std::string rule, std::string symbol, std::string message) {
            if (reported_.insert(rule + " " + symbol).second) {
                inspection_.findings.push_back({std::move(rule), std::move(symbol), std::move(message)});
            }
        };
    }
    Inspection take() { return std::move(inspection_); }

private:
    Inspection inspection_;
    std::set<std::string> reported_;
};

// What it is made of.
void add_section_findings(const Subject& subject, const std::string& only_when_called, const AddFinding& add) {
    const SourceLines& source = subject.source;
    for (const auto& section : subject.object.sections) {
        if (ordinary_section(section.name)) {
            continue;
        }
        const std::string where = source.where(std::regex(R"(section|\.incbin|asm)"));
        if (early_section(section.name)) {
            add("runs-before-main", section.name,
                fmt::format("{}: puts code in {}, which the loader runs around main: {}", where, section.name,
                            only_when_called));
        } else {
            add("section", section.name,
                fmt::format("{}: makes a section named {}, which compilers do not make for ordinary code: write the "
                            "exercise in plain CUDA C++",
                            where, section.name));
        }
    }
    for (const auto& symbol : subject.object.symbols) {
        if (symbol.type == "IFUNC" && symbol.defined()) {
            add("runs-before-main", readable_name(symbol.name),
                fmt::format("{}: defines {} as an indirect function, whose resolver the loader runs before main: {}",
                            source.where_word(readable_name(symbol.name)), readable_name(symbol.name),
                            only_when_called));
        }
    }
}

// What it defines: its entry points and names of its own. A name the program already has would be linked in place of
// the program's own, unless it is the compiler's instantiation of inline code that the runner also has (the runner's
// copy, first in the link, is the one kept).
void add_definition_findings(const Subject& subject, const std::vector<std::string>& entry_points,
                             const std::string& entries, const AddFinding& add) {
    const SourceLines& source = subject.source;
    const ProgramSymbols& program = subject.program;
    const auto is_entry = [&](const std::string& name) {
        return std::find(entry_points.begin(), entry_points.end(), name) != entry_points.end();
    };
    for (const auto& symbol : subject.object.symbols) {
        if (!symbol.defined() || !symbol.global() || symbol.type == "FILE" || symbol.type == "SECTION" ||
            is_entry(symbol.name)) {
            continue;
        }
        const bool instantiation = symbol.comdat && symbol.binding != "GLOBAL";
        const std::string name = readable_name(symbol.name);
        if (program.defined.count(symbol.name) != 0 || program.undefined.count(symbol.name) != 0) {
            if (!(instantiation && program.runner_weak.count(symbol.name) != 0)) {
                add("defines", name,
                    fmt::format("{}: defines {}, which the grader's program already has: a submission may define "
                                "only {} and its own helpers",
                                source.where_word(name), name, entries));
            }
            continue;
        }
        const auto library = program.exported.find(symbol.name);
        if (library != program.exported.end() && !instantiation && symbol.type != "OBJECT" && symbol.type != "TLS") {
            add("defines", name,
                fmt::format("{}: defines {}, which {} already has: a submission may define only {} and its own "
                            "helpers",
                            source.where_word(name), name, describe_library(library->second), entries));
        }
    }
}

// And functions: every name it needs from elsewhere, weak references too.
void add_call_findings(const Subject& subject, const AddFinding& add) {
    for (const auto& symbol : subject.object.symbols) {
        if (symbol.defined() || !symbol.global()) {
            continue;
        }
        if (const CallVerdict verdict = subject.policy.judge_call(symbol.name); !verdict.allowed) {
            const std::string name = readable_name(symbol.name);
            add("forbidden-function", name + "()",
                fmt::format("{}: calls {}(), which submissions may not use: {}", subject.source.where_word(name), name,
                            verdict.reason));
        }
    }
}

// What its host code copies (host_copies.hpp).
void add_host_copy_findings(const Subject& subject, const Exercise& exercise, const AddFinding& add) {
    const SourceLines& source = subject.source;
    const auto first_use = [&](const std::string& name) {
        const std::string where = source.where_word(name);
        return where == source.file() ? std::string() : where;
    };
    for (auto& finding : host_copy_findings(exercise.rules, subject.object, first_use, source.file())) {
        add(finding.rule, finding.symbol, finding.message);
    }
}

// When it runs, as the linked program says: nothing of the submission among what the loader runs around main.
void add_link_map_findings(const BuildResult& build, const SourceLines& source, const std::string& only_when_called,
                           const AddFinding& add) {
    if (!build.link_map.empty()) {
        for (const auto& section : submission_sections_in_program(build.link_map)) {
            if (early_section(section)) {
                add("runs-before-main", section,
                    fmt::format("{}: puts code in {}, which the loader runs around main: {}", source.file(), section,
                                only_when_called));
            }
        }
    }
}

}  // namespace

Inspection inspect_libraries(const BuildResult& build, const SubmissionFile& submission, const Exercise& exercise,
                             const ApiRules& rules, const Toolchain& toolchain) {
    const Subject subject = read_subject(build, submission, exercise, rules, toolchain);
    Findings findings;
    add_library_findings(build, subject.source, exercise, subject.policy, subject.object, findings.adder());
    return findings.take();
}

Inspection inspect_submission(const BuildResult& build, const SubmissionFile& submission, const Exercise& exercise,
                              const ApiRules& rules, const Toolchain& toolchain) {
    const Subject subject = read_subject(build, submission, exercise, rules, toolchain);
    std::string entries;
    for (const auto& entry : exercise.entry_points) {
        entries += (entries.empty() ? "" : ", ") + entry + "()";
    }
    Findings findings;
    const AddFinding add = findings.adder();
    const std::string only_when_called =
        fmt::format("a submission's code may run only when the grader calls {}", entries);
    add_section_findings(subject, only_when_called, add);
    add_definition_findings(subject, exercise.entry_points, entries, add);
    add_library_findings(build, subject.source, exercise, subject.policy, subject.object, add);
    add_call_findings(subject, add);
    add_host_copy_findings(subject, exercise, add);
    add_link_map_findings(build, subject.source, only_when_called, add);
    // What its device code computes with, against the contract's arithmetic rule.
    for (auto& finding : check_arithmetic(build.object, submission, exercise.rules, toolchain.cuobjdump)) {
        add(finding.rule, finding.symbol, std::move(finding.message));
    }
    return findings.take();
}

}  // namespace cugrade

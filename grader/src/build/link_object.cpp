#include "build/link_object.hpp"

#include <elf.h>

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sandbox/process.hpp"

namespace cugrade {
namespace fs = std::filesystem;
namespace {

// Every defined symbol that is not local becomes STV_HIDDEN, in place, in an ELF64 little-endian relocatable file.
void hide_definitions(const fs::path& path) {
    std::string bytes;
    {
        std::ifstream in(path, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        bytes = text.str();
    }
    const auto fail = [&](const char* why) {
        throw std::runtime_error(fmt::format("cannot prepare '{}' for linking: {}", path.string(), why));
    };
    if (bytes.size() < sizeof(Elf64_Ehdr)) {
        fail("too short for an ELF file");
    }
    Elf64_Ehdr header;
    std::memcpy(&header, bytes.data(), sizeof header);
    if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
        header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_type != ET_REL) {
        fail("not a 64-bit little-endian relocatable ELF file");
    }
    if (header.e_shentsize != sizeof(Elf64_Shdr) ||
        header.e_shoff + std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr) > bytes.size()) {
        fail("its section headers lie outside the file");
    }
    for (unsigned i = 0; i < header.e_shnum; ++i) {
        Elf64_Shdr section;
        std::memcpy(&section, bytes.data() + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof section);
        if (section.sh_type != SHT_SYMTAB) {
            continue;
        }
        if (section.sh_entsize != sizeof(Elf64_Sym) || section.sh_offset + section.sh_size > bytes.size()) {
            fail("its symbol table lies outside the file");
        }
        for (std::uint64_t offset = 0; offset + sizeof(Elf64_Sym) <= section.sh_size; offset += sizeof(Elf64_Sym)) {
            Elf64_Sym symbol;
            char* at = bytes.data() + section.sh_offset + offset;
            std::memcpy(&symbol, at, sizeof symbol);
            const unsigned binding = ELF64_ST_BIND(symbol.st_info);
            if (symbol.st_shndx == SHN_UNDEF || binding == STB_LOCAL) {
                continue;
            }
            symbol.st_other = static_cast<unsigned char>((symbol.st_other & ~0x3u) | STV_HIDDEN);
            std::memcpy(at, &symbol, sizeof symbol);
        }
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    out.flush();
    if (!out) {
        fail("cannot write it");
    }
}

}  // namespace

void prepare_for_link(const fs::path& object, const ObjectFile& contents, const fs::path& output,
                      const Toolchain& toolchain) {
    std::vector<std::string> argv = {toolchain.objcopy};
    for (const auto& section : contents.sections) {
        const bool init = section.name == ".init_array" || section.name.rfind(".init_array.", 0) == 0;
        const bool fini = section.name == ".fini_array" || section.name.rfind(".fini_array.", 0) == 0;
        if (init || fini) {
            argv.push_back(fmt::format("--rename-section={}={}", section.name,
                                       init ? submission_init_section : submission_fini_section));
        }
    }
    argv.insert(argv.end(), {object.string(), output.string()});
    ProcessOptions options;
    options.argv = argv;
    const ProcessResult result = run_process(options, std::chrono::seconds(60));
    if (!result.status.success()) {
        throw std::runtime_error(
            fmt::format("objcopy failed on '{}' ({}):\n{}", object.string(), result.status.describe(), result.output));
    }
    hide_definitions(output);
}

}  // namespace cugrade

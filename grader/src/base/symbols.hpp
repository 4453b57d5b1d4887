// What an ELF object file holds, as readelf lists it (its sections, its symbols and which sections belong to COMDAT
// groups: the compiler's inline and template instantiations, of which the linker keeps one copy), what `nm` lists,
// and a symbol's name as a person reads it. Plain data: build/object_file.hpp reads them from a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cugrade {

struct ObjectSection {
    unsigned index = 0;
    std::string name;
    std::string type;  // "PROGBITS", "INIT_ARRAY", ...
    std::uint64_t size = 0;
    bool comdat = false;  // a member of a COMDAT group
};

struct ObjectSymbol {
    std::string name;
    std::string type;        // "FUNC", "OBJECT", "NOTYPE", "IFUNC", "TLS", ...
    std::string binding;     // "LOCAL", "GLOBAL", "WEAK", "UNIQUE"
    std::string visibility;  // "DEFAULT", "HIDDEN", ...
    std::string section;     // "UND", "ABS", "COM", or the defining section's index
    bool comdat = false;     // defined in a section of a COMDAT group

    bool defined() const { return section != "UND"; }
    bool global() const { return binding != "LOCAL"; }
};

struct ObjectFile {
    std::vector<ObjectSection> sections;
    std::vector<ObjectSymbol> symbols;  // the symbol table's named entries, in order
};

// One line of `nm` output: a name and its type letter.
struct Symbol {
    std::string name;
    char type = '?';
    bool defined() const { return type != 'U' && type != 'w' && type != 'v'; }
    bool global() const { return (type >= 'A' && type <= 'Z') || type == 'u' || type == 'i'; }
    bool weak() const { return type == 'W' || type == 'V'; }
};
std::vector<Symbol> parse_nm(const std::string& output);  // symbol versions ("@GLIBC_2.2.5") dropped

// A symbol's name as a person reads it: C names as they are; C++ names demangled (`demangle`), and shortened to the
// qualified name without arguments or CCCL's versioned namespaces (`readable_name`: "cub::DeviceReduce::Sum").
std::string demangle(const std::string& name);
std::string short_name(const std::string& demangled);
std::string readable_name(const std::string& name);

}  // namespace cugrade

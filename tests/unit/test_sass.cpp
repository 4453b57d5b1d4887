// What the grader reads of a submission's machine code (`cuobjdump -sass` listings).
#include <string>

#include "catch.hpp"
#include "inspect/sass_listing.hpp"
#include "inspect/shared_memory_use.hpp"

namespace cugrade {
namespace {

// A listing with one kernel whose instructions are `body`, each line as cuobjdump prints it.
std::string listing_of(const std::string& body) {
    return "\n\tcode for sm_90\n\t\tFunction : _Z6kernelPKfPfm\n"
           "\t.headerflags\t@\"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90\"\n" +
           body + "\t\t..........\n";
}

std::string instruction(const std::string& text) {
    return "        /*0080*/                   " + text + " ;                          /* 0x0000000402047981 */\n";
}

TEST_CASE("a listing is read as its functions' opcodes, predicates and operands left out") {
    const auto functions = read_sass(listing_of(instruction("LDC R1, c[0x0][0x28]") +
                                                instruction("@!P1 LDG.E.128.CONSTANT R4, desc[UR4][R2.64]") +
                                                instruction("@UPT STG.E desc[UR4][R6.64], R9") + instruction("EXIT")));
    REQUIRE(functions.size() == 1);
    CHECK(functions[0].name == "_Z6kernelPKfPfm");
    CHECK(functions[0].opcodes == std::vector<std::string>{"LDC", "LDG.E.128.CONSTANT", "STG.E", "EXIT"});
    CHECK(read_sass("cuobjdump: fatal: nothing to dump").empty());
    CHECK(opcode_is("LDG.E.128", "LDG"));
    CHECK_FALSE(opcode_is("LDGSTS.E.BYPASS.128", "LDG"));
}

TEST_CASE("kernels that can touch shared memory are told from those that cannot, and not knowing is touching") {
    const std::string global_only = instruction("LDG.E R2, desc[UR4][R2.64]") + instruction("FADD R5, R2, R4") +
                                    instruction("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R6.64], R5") +
                                    instruction("STG.E desc[UR4][R6.64], R9") +
                                    instruction("BAR.SYNC.DEFER_BLOCKING 0x0") +
                                    instruction("SHFL.DOWN PT, R3, R2, 0x10, 0x1f") + instruction("EXIT");
    CHECK_FALSE(sass_may_touch_shared_memory(listing_of(global_only)));
    for (const std::string reach :
         {"LDS R10, [R11]", "STS [R3], R2", "ATOMS.ADD RZ, [R0], R5", "LDSM.16.M88.4 R4, [R2]",
          "LDGSTS.E.BYPASS.128 [R7], desc[UR4][R2.64]", "LD.E R2, [R4.64]", "ST.E [R4.64], R2",
          "RED.E.ADD.F32.FTZ.RN.STRONG.GPU [R2.64], R5", "ATOM.E.ADD PT, R5, [R2.64], R4",
          "SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR4], RZ", "UBLKCP.S.G [UR4], [UR6], UR8", "UTMALDG.2D [UR8], [UR4]",
          "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24"}) {
        INFO(reach);
        CHECK(sass_may_touch_shared_memory(listing_of(global_only + instruction(reach))));
    }
    // No machine code to read (PTX alone, an error): it may.
    CHECK(sass_may_touch_shared_memory("cuobjdump: fatal: nothing to dump"));
    CHECK(may_touch_shared_memory(std::nullopt));
    CHECK(may_touch_shared_memory(sass_listing_of("", "device-code.fatbin")));
    CHECK(may_touch_shared_memory(sass_listing_of("/nonexistent/cuobjdump", "device-code.fatbin")));
}

}  // namespace
}  // namespace cugrade

// Text from untrusted places made safe for each place it goes (text_safety.hpp): a terminal, a line of key.txt, a
// spreadsheet's cell, a Markdown line.
#include "catch.hpp"
#include "base/text_safety.hpp"

namespace {

using namespace cugrade;

const std::string replacement = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("terminal text: no escape, bell or C1 control; lines and tabs kept; invalid UTF-8 replaced") {
    CHECK(terminal_text("\x1b]0;pwned\x07name") == replacement + "]0;pwned" + replacement + "name");
    CHECK(terminal_text("\x1b[31mred") == replacement + "[31mred");
    CHECK(terminal_text("a\tb\nc\rd\x7f") == "a\tb\nc" + replacement + "d" + replacement);
    CHECK(terminal_text("\xC2\x9B"
                        "2J") == replacement + "2J");  // CSI as one C1 character
    CHECK(terminal_text("caf\xC3\xA9 \xff\xfe") == "caf\xC3\xA9 " + replacement + replacement);
}

TEST_CASE("line text: every control character replaced, newline and tab too, so that it stays one line") {
    CHECK(line_text("sum.cu\n  other.cu 5") == "sum.cu" + replacement + "  other.cu 5");
    CHECK(line_text("a\tb\r\x1b\x07") == "a" + replacement + "b" + replacement + replacement + replacement);
    CHECK(line_text("Zoë \xff") == "Zoë " + replacement);
    CHECK(line_text("plain text, kept") == "plain text, kept");
}

TEST_CASE("a spreadsheet cell never begins a formula; a number cugrade writes stays a number") {
    CHECK(spreadsheet_cell("=HYPERLINK(\"http://x\",\"y\")") == "'=HYPERLINK(\"http://x\",\"y\")");
    CHECK(spreadsheet_cell("+cmd|' /C calc'!A0") == "'+cmd|' /C calc'!A0");
    CHECK(spreadsheet_cell("@SUM(1+1)") == "'@SUM(1+1)");
    CHECK(spreadsheet_cell("-2+3") == "'-2+3");
    CHECK(spreadsheet_cell("-") == "'-");
    CHECK(spreadsheet_cell("-1.") == "'-1.");
    CHECK(spreadsheet_cell("+1") == "'+1");
    // Tab and carriage return are U+FFFD, which no spreadsheet reads as a formula.
    CHECK(spreadsheet_cell("\t=1+1") == replacement + "=1+1");
    CHECK(spreadsheet_cell("\r=1+1") == replacement + "=1+1");
    CHECK(spreadsheet_cell("two\nlines") == "two" + replacement + "lines");
    CHECK(spreadsheet_cell("\x1b]0;pwned\x07") == replacement + "]0;pwned" + replacement);
    CHECK(spreadsheet_cell("\xff\xfe") == replacement + replacement);
    // Numbers, negative ones included, and ordinary text are left alone.
    for (const std::string kept : {"-1.5", "-3", "0", "67.95", "", "Ada, Countess", "a=b", "alice@x.edu", "'quoted"}) {
        CHECK(spreadsheet_cell(kept) == kept);
    }
}

TEST_CASE("markdown text: one line that opens no markup, heading, list or table cell") {
    CHECK(markdown_text("# pwned") == "\\# pwned");
    CHECK(markdown_text("a | b") == "a \\| b");
    CHECK(markdown_text("line\n# heading") == "line" + replacement + "# heading");
    CHECK(markdown_text("[x](http://evil) <img src=x> **b** _i_ `c` ~s~ &amp; \\") ==
          "\\[x\\](http://evil) \\<img src=x\\> \\*\\*b\\*\\* \\_i\\_ \\`c\\` \\~s\\~ \\&amp; \\\\");
    CHECK(markdown_text("- item") == "\\- item");
    CHECK(markdown_text("+ item") == "\\+ item");
    CHECK(markdown_text("=====") == "\\=====");
    CHECK(markdown_text("12. item") == "12\\. item");
    CHECK(markdown_text("1) item") == "1\\) item");
    CHECK(markdown_text("sum: graded sum.cu; also found hw1/sum.cu, not graded") ==
          "sum: graded sum.cu; also found hw1/sum.cu, not graded");
    CHECK(markdown_text("\x1b[31m\xff") == replacement + "\\[31m" + replacement);
}

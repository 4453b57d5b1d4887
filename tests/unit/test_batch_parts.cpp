// The parts of `cugrade grade` that need no GPU and no nvcc: CSV, the roster, finding a class's submissions,
// results written whole, and the exports' formats.
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "fresh_folder.hpp"
#include "batch/class_layout.hpp"
#include "base/csv.hpp"
#include "base/error.hpp"
#include "report/exports.hpp"
#include "base/file_io.hpp"
#include "batch/gradebook.hpp"
#include "course/course_file.hpp"
#include "course/exercise_choice.hpp"
#include "course/late_policy.hpp"
#include "batch/results_store.hpp"
#include "batch/roster.hpp"
#include "base/staging.hpp"
#include "batch/student_locks.hpp"
#include "batch/submission_queue.hpp"
#include "batch/batch.hpp"
#include "course/course_locator.hpp"

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

fs::path fresh(const std::string& name) { return fresh_folder("batch", name); }

void touch(const fs::path& file, const std::string& text = "x\n") {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

}  // namespace

TEST_CASE("csv: quoted commas, doubled quotes, line breaks and CRLF round trip") {
    const std::vector<std::string> fields = {"bob", "Bob, B", "say \"hi\"", "two\nlines", ""};
    const std::string text = "bob,\"Bob, B\",\"say \"\"hi\"\"\",\"two\nlines\",\r\na,b\r\n";
    const auto rows = csv::parse(text);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0] == fields);
    CHECK(rows[1] == std::vector<std::string>{"a", "b"});
    // Written, a line break is U+FFFD (one line a student): spreadsheet_cell.
    CHECK(csv::row(fields) + csv::row({"a", "b"}) ==
          "bob,\"Bob, B\",\"say \"\"hi\"\"\",two\xEF\xBF\xBDlines,\r\na,b\r\n");
    CHECK(csv::parse("\xEF\xBB\xBFid\n\nx\n") == std::vector<std::vector<std::string>>{{"id"}, {"x"}});
    CHECK_THROWS_WITH(csv::parse("a\n\"open,b\n"), "line 2: a quoted field is never closed");
}

TEST_CASE("csv: every field written is a spreadsheet cell, quoted where it holds a comma or a quote") {
    CHECK(csv::row({"=HYPERLINK(\"http://x\",\"y\")", "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "-1.5", "\t1"}) ==
          "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",'+cmd|' /C calc'!A0,'@SUM(1+1),'-2+3,-1.5,\xEF\xBF\xBD"
          "1\r\n");
    const auto read = csv::parse(csv::row({"\x1b]0;pwned\x07", "\xff\xfe", "=1,2"}));
    REQUIRE(read.size() == 1);
    CHECK(read[0] == std::vector<std::string>{"\xEF\xBF\xBD]0;pwned\xEF\xBF\xBD", "\xEF\xBF\xBD\xEF\xBF\xBD", "'=1,2"});
}

TEST_CASE("a roster names its columns in any order and case, and says what is wrong with it, where") {
    const fs::path dir = fresh("roster");
    write_file(dir / "ok.csv", "Email,Student ID,Section,Full Name\nalice@x.edu,alice,1,Alice A\nbob@x.edu, bob ,2,\n");
    const auto roster = read_roster(dir / "ok.csv").entries;
    REQUIRE(roster.size() == 2);
    CHECK(roster[0].id == "alice");
    CHECK(roster[0].name == "Alice A");
    CHECK(roster[0].email == "alice@x.edu");
    CHECK(roster[1].id == "bob");
    CHECK(roster[1].section == "2");

    write_file(dir / "no-id.csv", "name,email\nAlice,a@x\n");
    CHECK_THROWS_WITH(read_roster(dir / "no-id.csv"),
                      "roster '" + (dir / "no-id.csv").string() +
                          "':1: no id column: name one id, student_id, sid, login or username");
    write_file(dir / "twice.csv", "id\nalice\nbob\nalice\n");
    CHECK_THROWS_WITH(read_roster(dir / "twice.csv"),
                      "roster '" + (dir / "twice.csv").string() + "':4: id 'alice' is listed twice");
    write_file(dir / "empty-id.csv", "id,name\n,Nobody\n");
    CHECK_THROWS_AS(read_roster(dir / "empty-id.csv"), UsageError);
}

TEST_CASE("a roster with two id columns is refused; an id no folder can have is left out and said") {
    const fs::path dir = fresh("roster-ids");
    write_file(dir / "id-and-sid.csv", "id,name,sid\nalice,Alice A,1001\n");
    CHECK_THROWS_WITH(read_roster(dir / "id-and-sid.csv"),
                      "roster '" + (dir / "id-and-sid.csv").string() +
                          "':1: two id columns, 'id' (column 1) and 'sid' (column 3): remove or rename one of them");
    write_file(dir / "id-twice.csv", "ID,Name,ID\nalice,Alice A,alice\n");
    CHECK_THROWS_WITH(read_roster(dir / "id-twice.csv"),
                      "roster '" + (dir / "id-twice.csv").string() +
                          "':1: two id columns, 'ID' (column 1) and 'ID' (column 3): remove or rename one of them");
    // Two name columns are not a question of who is who: the first is read.
    write_file(dir / "names.csv", "id,name,full name\nalice,Alice A,Alice Anne A\n");
    CHECK(read_roster(dir / "names.csv").entries.at(0).name == "Alice A");

    write_file(dir / "unusable.csv",
               "id,name\nalice,Alice A\nann lee,Ann Lee\n=cmd(),Formula\nzo\xC3\xAB,Zo\xC3\xAB\nbob,Bob\n");
    const Roster roster = read_roster(dir / "unusable.csv");
    REQUIRE(roster.entries.size() == 2);
    CHECK(roster.entries[0].id == "alice");
    CHECK(roster.entries[1].id == "bob");
    const std::string where = "roster '" + (dir / "unusable.csv").string() + "':";
    const std::string rule = " is not usable as a student id (letters, digits and - _ . @ +, starting with a letter, "
                             "digit or _): row left out";
    CHECK(roster.warnings == std::vector<std::string>{where + "3: id 'ann lee'" + rule, where + "4: id '=cmd()'" + rule,
                                                      where + "5: id 'zo\xC3\xAB'" + rule});
}

TEST_CASE("a folder of student folders: files one folder too deep or with a near name are found, not graded") {
    const fs::path root = fresh("layout");
    touch(root / "alice" / "sum.cu");
    touch(root / "alice" / "old" / "sum.cu");
    touch(root / "bob" / "hw1" / "sum.cu");
    touch(root / "carol" / "Sum.cu");
    touch(root / "dave" / "sum.cpp");
    touch(root / "notes.txt");
    fs::create_directories(root / ".hidden");
    fs::create_directories(root / "=cmd");
    const ClassLayout layout = read_class_layout(root, {{"sum", "sum.cu"}});
    CHECK(layout.kind == "folders");
    REQUIRE(layout.students.size() == 4);
    CHECK(layout.students[0].id == "alice");
    CHECK(layout.students[0].files[0].present);
    CHECK(layout.students[0].files[0].near_misses == std::vector<std::string>{"old/sum.cu"});
    CHECK_FALSE(layout.students[1].files[0].present);
    CHECK(layout.students[1].files[0].near_misses == std::vector<std::string>{"hw1/sum.cu"});
    CHECK(layout.students[2].files[0].near_misses == std::vector<std::string>{"Sum.cu"});
    CHECK(layout.students[3].files[0].near_misses == std::vector<std::string>{"sum.cpp"});
    CHECK(layout.ignored ==
          std::vector<std::string>{"=cmd: not usable as a student id (letters, digits and - _ . @ +, starting with a "
                                   "letter, digit or _)",
                                   "notes.txt: a file, not a student's folder"});
    CHECK_THROWS_AS(read_class_layout(root / "notes.txt", {}), UsageError);
}

TEST_CASE("an unpacked class: a folder that only wraps it is passed and said, a lone student's folder is kept") {
    const fs::path dir = fresh("unwrap");
    const std::vector<std::pair<std::string, std::string>> files = {{"sum", "sum.cu"}};
    const auto unwrap = [&](const std::string& name) { return unwrapped_class(dir / name, name + ".zip", files); };

    touch(dir / "class" / "hw1" / "alice" / "sum.cu");
    touch(dir / "class" / "hw1" / "bob" / "sum.cu");
    touch(dir / "class" / ".DS_Store");
    touch(dir / "class" / "._hw1");
    ClassRoot root = unwrap("class");
    CHECK(root.folder == dir / "class" / "hw1");
    CHECK(root.warnings ==
          std::vector<std::string>{
              "unpacked 'class.zip': its folder 'hw1/' holds the class; '.DS_Store', '._hw1' ignored"});

    touch(dir / "nested" / "export" / "hw1" / "alice" / "hw1" / "sum.cu");  // alice's file one folder too deep
    touch(dir / "nested" / "export" / "hw1" / "bob" / "sum.cu");
    touch(dir / "nested" / "export" / "Thumbs.db");
    root = unwrap("nested");
    CHECK(root.folder == dir / "nested" / "export" / "hw1");
    CHECK(root.warnings == std::vector<std::string>{
                               "unpacked 'nested.zip': its folder 'export/hw1/' holds the class; 'export/Thumbs.db' "
                               "ignored"});

    touch(dir / "one" / "alice" / "sum.cu");
    touch(dir / "one" / "alice" / "old" / "sum.cu");
    root = unwrap("one");
    CHECK(root.folder == dir / "one");
    CHECK(root.warnings == std::vector<std::string>{
                               "unpacked 'one.zip': its only folder 'alice/' is read as a student's folder: it holds "
                               "sum.cu"});

    touch(dir / "clone" / "hw1-alice" / ".git" / "HEAD");
    touch(dir / "clone" / "hw1-alice" / "src" / "sum.cu");
    CHECK(unwrap("clone").warnings ==
          std::vector<std::string>{"unpacked 'clone.zip': its only folder 'hw1-alice/' is read as a student's "
                                   "folder: it is a git clone"});

    touch(dir / "gradescope" / "submissions" / "submission_metadata.yml");
    touch(dir / "gradescope" / "submissions" / "submission_1" / "sum.cu");
    CHECK(unwrap("gradescope").folder == dir / "gradescope" / "submissions");

    touch(dir / "readme" / "hw1" / "alice" / "sum.cu");
    touch(dir / "readme" / "README.txt");
    root = unwrap("readme");
    CHECK(root.folder == dir / "readme");
    CHECK(root.warnings == std::vector<std::string>{
                               "unpacked 'readme.zip': not unwrapped: 'README.txt' beside its folder 'hw1/', so 'hw1' "
                               "is read as a student's folder; if 'hw1/' holds the class, grade '" +
                               (dir / "readme" / "hw1").string() + "' instead"});

    touch(dir / "flat" / "alice" / "sum.cu");
    touch(dir / "flat" / "bob" / "sum.cu");
    root = unwrap("flat");
    CHECK(root.folder == dir / "flat");
    CHECK(root.warnings.empty());
}

TEST_CASE("GitHub Classroom clones: the id is the name after the assignment's prefix, the time the last commit's") {
    const fs::path root = fresh("classroom");
    for (const char* user : {"alice", "bob-smith"}) {
        const fs::path clone = root / (std::string("hw1-sum-") + user);
        touch(clone / "sum.cu");
        const std::string git = "git -C '" + clone.string() + "' -c user.name=t -c user.email=t@x ";
        const int status = std::system((git + "init -q && " + git + "add sum.cu && GIT_COMMITTER_DATE=" +
                                        "'2026-03-01T12:00:00+00:00' " + git + "commit -q -m hw")
                                           .c_str());
        REQUIRE(status == 0);  // git makes the clones, as GitHub Classroom does
    }
    const ClassLayout layout = read_class_layout(root, {{"sum", "sum.cu"}});
    CHECK(layout.kind == "github-classroom");
    REQUIRE(layout.students.size() == 2);
    CHECK(layout.students[0].id == "alice");
    CHECK(layout.students[1].id == "bob-smith");
    REQUIRE(layout.students[0].submitted_at);
    CHECK(*layout.students[0].submitted_at == "2026-03-01T12:00:00+00:00");
}

namespace {

// The pid of a process that has ended.
pid_t ended_pid() {
    const pid_t child = ::fork();
    if (child == 0) {
        ::_exit(0);
    }
    ::waitpid(child, nullptr, 0);
    return child;
}

}  // namespace

TEST_CASE("a student's results are replaced whole; a killed batch's staging folders are removed, a live one's kept") {
    const fs::path results = fresh("store");
    const fs::path killed =
        results / "students" / fmt::format(".staging-{}-{}-0123-alice", machine_name(), ended_pid());
    const fs::path live = results / "students" / fmt::format(".staging-{}-{}-0123-bob", machine_name(), ::getppid());
    const fs::path other_machine = results / "students" / ".staging-node17-4242-0123-carol";
    for (const auto& folder : {killed, live, other_machine}) {
        fs::create_directories(folder);
        touch(folder / "results.json", "half");
    }
    const ResultsStore store(results);
    CHECK_FALSE(fs::exists(killed));
    CHECK(fs::exists(live));           // another batch on this machine, still writing
    CHECK(fs::exists(other_machine));  // another machine's, recent: it may still be writing
    fs::remove_all(live);
    fs::remove_all(other_machine);
    CHECK_FALSE(store.key("alice"));
    store.write("alice", "key 1", {{"results.json", "first"}});
    CHECK(store.key("alice") == "key 1");
    store.write("alice", "key 2", {{"results.json", "second"}});
    CHECK(store.key("alice") == "key 2");
    CHECK(read_file(results / "students" / "alice" / "results.json") == "second");
    CHECK(store.ids() == std::vector<std::string>{"alice"});
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(results / "students")) {
        ++entries;
    }
    CHECK(entries == 1);  // the replaced folder is gone
}

TEST_CASE("exports show hidden cases by verdict and points only") {
    Report report;
    ExerciseReport exercise;
    exercise.exercise = "sum";
    exercise.build.ok = true;
    ScoredCase visible;
    visible.plan.id = "edges/n=1/integers";
    visible.plan.max_points = 2;
    visible.status = Status::wrong_answer;
    visible.detail = "expected 1, got <2> & \x01";
    ScoredCase hidden;
    hidden.plan.id = "secret/n=4194304/uniform";
    hidden.plan.visibility = Visibility::hidden;
    hidden.plan.max_points = 3;
    hidden.points = 3;
    hidden.status = Status::passed;
    hidden.detail = "n = 4194304";
    hidden.diagnosis = Diagnosis{"memory",
                                 "compute-sanitizer memcheck: an out-of-bounds read in k at sum.cu:3",
                                 "found on secret/n=4194304/uniform",
                                 {"index 4194304 of an array of 4194304 elements"},
                                 "guard the load"};
    visible.diagnosis = Diagnosis{"memory",
                                  "compute-sanitizer memcheck: an out-of-bounds write in k at sum.cu:9",
                                  "found on edges/n=1/integers",
                                  {"index 1 of an array of 1 elements"},
                                  "guard the store"};
    exercise.cases = {visible, hidden};
    report.exercises.push_back(exercise);

    const auto gradescope = gradescope_results(report, {});
    CHECK(gradescope["score"] == 3.0);
    CHECK(gradescope["max_score"] == 5.0);
    REQUIRE(gradescope["tests"].size() == 2);
    CHECK(gradescope["tests"][0]["status"] == "failed");
    CHECK(gradescope["tests"][0]["visibility"] == "visible");
    CHECK(gradescope["tests"][1]["name"] == "sum hidden-1");
    CHECK(gradescope["tests"][1]["visibility"] == "after_published");
    CHECK(gradescope.dump().find("4194304") == std::string::npos);
    // Each test's output carries its diagnosis; a hidden one's without its evidence.
    CHECK(gradescope["tests"][0]["output"].get<std::string>().find(
              "\ncompute-sanitizer memcheck: an out-of-bounds write in k at sum.cu:9 (index 1 of an array of 1 "
              "elements)\nlikely: guard the store") != std::string::npos);
    CHECK(gradescope["tests"][1]["output"].get<std::string>().find("at sum.cu:3\nlikely: guard the load") !=
          std::string::npos);

    const std::string xml = junit_xml(report);
    CHECK(xml.find("<failure message=\"wrong_answer\">expected 1, got &lt;2&gt; &amp; </failure>") !=
          std::string::npos);
    CHECK(xml.find("4194304") == std::string::npos);
    CHECK(xml.find('\x01') == std::string::npos);

    const std::string md = feedback_markdown(report, {"a note"});
    CHECK(md.find("**3 / 5 points**") != std::string::npos);
    CHECK(md.find("\n- a note\n") != std::string::npos);
    CHECK(md.find("4194304") == std::string::npos);
}

TEST_CASE("feedback.md: a note naming a hostile file stays one list item, with no control character") {
    Report report;
    const std::string note = "sum: graded sum.cu; also found x\n# pwned | a/sum.cu\x1b]0;t\x07\xff, not graded";
    const std::string md = feedback_markdown(report, {note, "dot: no dot.cu in the folder"});
    CHECK(md.find("\n- sum: graded sum.cu; also found x\xEF\xBF\xBD# pwned \\| a/sum.cu\xEF\xBF\xBD\\]0;t\xEF\xBF\xBD"
                  "\xEF\xBF\xBD, not graded\n- dot: no dot.cu in the folder\n") != std::string::npos);
    CHECK(md.find('\x1b') == std::string::npos);
    CHECK(md.find("\n#", 1) == std::string::npos);  // the document's own heading is its only one
    const auto gradescope = gradescope_results(report, {note});
    CHECK(gradescope["output"].get<std::string>().rfind(
              "- sum: graded sum.cu; also found x\xEF\xBF\xBD# pwned | a/sum.cu\xEF\xBF\xBD]0;t", 0) == 0);
}

TEST_CASE("a Gradescope export: each submitter a row, named and timed by submission_metadata.yml") {
    const fs::path root = fresh("gradescope");
    touch(root / "submission_101" / "sum.cu");
    touch(root / "submission_102" / "hw" / "sum.cu");
    write_file(root / "submission_metadata.yml", "submission_101:\n"
                                                 "  :submitters:\n"
                                                 "  - :name: Alice A\n    :sid: '1001'\n    :email: alice@x.edu\n"
                                                 "  - :name: Bob B\n    :sid: ''\n    :email: bob@x.edu\n"
                                                 "  :created_at: 2026-03-02 10:00:00.000000000 -05:00\n"
                                                 "submission_102:\n"
                                                 "  :submitters:\n"
                                                 "  - :name: Carol C\n    :sid: '1003'\n    :email: carol@x.edu\n"
                                                 "  :created_at: 2026-03-01 09:00:00.000000000 -05:00\n"
                                                 "submission_999:\n"
                                                 "  :submitters:\n"
                                                 "  - :name: Ghost\n    :sid: '1009'\n");
    const ClassLayout layout = read_class_layout(root, {{"sum", "sum.cu"}});
    CHECK(layout.kind == "gradescope");
    REQUIRE(layout.students.size() == 3);
    CHECK(layout.students[0].id == "1001");
    CHECK(layout.students[0].name == "Alice A");
    CHECK(layout.students[0].files[0].present);
    CHECK(layout.students[1].id == "1003");
    CHECK(layout.students[1].files[0].near_misses == std::vector<std::string>{"hw/sum.cu"});
    CHECK(layout.students[2].id == "bob@x.edu");
    CHECK(layout.students[2].folder == root / "submission_101");
    REQUIRE(layout.students[2].submitted_at);
    CHECK(parse_time(*layout.students[2].submitted_at) == parse_time("2026-03-02T15:00:00Z"));
    CHECK(layout.ignored ==
          std::vector<std::string>{"submission_999: named in submission_metadata.yml, but not a folder of the export"});
}

TEST_CASE("a Gradescope record that cannot be read is skipped with its line; the others are graded") {
    const fs::path root = fresh("gradescope-malformed");
    for (const char* folder : {"submission_1", "submission_2", "submission_3", "submission_4", "submission_5",
                               "submission_6", "submission_7"}) {
        touch(root / folder / "sum.cu");
    }
    write_file(root / "submission_metadata.yml",
               "submission_1:\n"                                        // 1
               "  :submitters: [\"alice\"]\n"                           // 2
               "submission_2:\n"                                        // 3
               "  :submitters:\n"                                       // 4
               "  - bob\n"                                              // 5
               "  - :name: Carol C\n    :sid: '1003'\n"                 // 6, 7
               "submission_3:\n"                                        // 8
               "  :submitters:\n"                                       // 9
               "  - :name: {first: Dan}\n    :sid: '1004'\n"            // 10, 11
               "submission_4:\n"                                        // 12
               "  :created_at: {when: now}\n"                           // 13
               "  :submitters:\n  - :name: Erin E\n    :sid: '1005'\n"  // 14-16
               "submission_5: just text\n"                              // 17
               "? [submission_6]\n: {}\n"                               // 18, 19
               "submission_7:\n"                                        // 20
               "  :submitters:\n  - :name: Gina G\n    :sid: '1007'\n"  // 21-23
               "  :created_at: 2026-03-01 09:00:00.000000000 -05:00\n");
    const ClassLayout layout = read_class_layout(root, {{"sum", "sum.cu"}});
    REQUIRE(layout.students.size() == 2);
    CHECK(layout.students[0].id == "1003");
    CHECK(layout.students[0].folder == root / "submission_2");
    CHECK(layout.students[1].id == "1007");
    const std::string file = (root / "submission_metadata.yml").string();
    CHECK(layout.ignored ==
          std::vector<std::string>{
              "submission_1: " + file +
                  ":2: a submitter is not a map of :name, :sid and :email; that submitter is "
                  "not graded",
              "submission_2: " + file +
                  ":5: a submitter is not a map of :name, :sid and :email; that submitter is "
                  "not graded",
              "submission_3: " + file + ":10: a submitter's :name is not text; that submitter is not graded",
              "submission_4: " + file + ":13: its :created_at is not a time; its submitters are not graded",
              "submission_5: " + file +
                  ":17: the record is not a map of :submitters and :created_at; its "
                  "submitters are not graded",
              file + ":18: a submission whose folder is not a name; not graded"});
}

TEST_CASE("times with their zones, and a late policy's days and penalty") {
    CHECK(parse_time("1970-01-01T00:00:00Z") == 0);
    CHECK(parse_time("1970-01-01T01:00:00+01:00") == 0);
    CHECK(parse_time("1970-01-01 00:00:00.123456 -0130") == 5400);
    CHECK_FALSE(parse_time("1970-01-01T00:00:00"));  // no zone: ambiguous
    CHECK_FALSE(parse_time("yesterday"));

    const fs::path dir = fresh("late");
    write_file(dir / "course.yaml",
               "late:\n  due: 2026-03-01T23:59:00-05:00\n  grace_minutes: 15\n  penalty_per_day: 10\n"
               "  max_penalty: 25\n");
    const auto policy = load_course_file(dir / "course.yaml", {"sum"}).late;
    REQUIRE(policy);
    CHECK(lateness(*policy, "2026-03-02T00:10:00-05:00").days == 0);  // within the grace
    const Lateness one_day = lateness(*policy, "2026-03-02T00:20:00-05:00");
    CHECK(one_day.days == 1);
    CHECK(one_day.penalty_fraction == Approx(0.10));
    CHECK(lateness(*policy, "2026-03-09T12:00:00Z").penalty_fraction == Approx(0.25));  // capped
    CHECK(lateness(*policy, std::nullopt).days == 0);
    CHECK_FALSE(load_course_file(dir / "absent.yaml", {"sum"}).late);

    write_file(dir / "bad.yaml", "late:\n  due: tomorrow\n  penalty_per_day: 10\n");
    CHECK_THROWS_WITH(load_course_file(dir / "bad.yaml", {"sum"}),
                      contains_text("bad.yaml:2") && contains_text("due must be a time with its zone"));
}

TEST_CASE("course.yaml names the assignment's exercises, each a course's exercise, once") {
    const fs::path dir = fresh("assignment");
    const std::vector<std::string> course = {"dot", "minmax", "sum"};
    write_file(dir / "course.yaml", "exercises: [sum, minmax]\n");
    CHECK(load_course_file(dir / "course.yaml", course).exercises == std::vector<std::string>{"sum", "minmax"});
    CHECK(load_course_file(dir / "absent.yaml", course).exercises.empty());

    write_file(dir / "misspelt.yaml", "exercises:\n  - sum\n  - minmaks\n");
    CHECK_THROWS_WITH(load_course_file(dir / "misspelt.yaml", course),
                      contains_text("misspelt.yaml:3") &&
                          contains_text("no exercise 'minmaks' in the course (did you mean 'minmax'?)"));
    write_file(dir / "twice.yaml", "exercises: [sum, sum]\n");
    CHECK_THROWS_WITH(load_course_file(dir / "twice.yaml", course), contains_text("exercise 'sum' is named twice"));
    write_file(dir / "empty.yaml", "exercises: []\n");
    CHECK_THROWS_WITH(load_course_file(dir / "empty.yaml", course),
                      contains_text("empty.yaml:1:12: 'exercises' must be a non-empty list"));
    write_file(dir / "unknown.yaml", "exercise: [sum]\n");
    CHECK_THROWS_WITH(load_course_file(dir / "unknown.yaml", course), contains_text("unknown.yaml:1"));
}

TEST_CASE("course.yaml names the architecture the course grades on, as nvcc names it") {
    const fs::path dir = fresh("arch");
    write_file(dir / "course.yaml", "arch: sm_90\n");
    CHECK(load_course_file(dir / "course.yaml", {"sum"}).arch == "sm_90");
    CHECK(load_course_file(dir / "absent.yaml", {"sum"}).arch.empty());
    write_file(dir / "hopper.yaml", "exercises: [sum]\narch: hopper\n");
    CHECK_THROWS_WITH(load_course_file(dir / "hopper.yaml", {"sum"}),
                      contains_text("hopper.yaml:2:7") &&
                          contains_text("'arch' is the architecture of the GPUs the course grades on, as nvcc names it "
                                        "(sm_90), not 'hopper'"));
}

TEST_CASE("a class is graded on -e's exercises, else the assignment's, else those handed in") {
    const std::vector<std::string> course = {"dot", "minmax", "sum"};
    int asked = 0;
    const auto handed_in = [&](std::vector<std::string> names) {
        return [&asked, names] {
            ++asked;
            return names;
        };
    };
    const ExerciseChoice named = choose_exercises(course, {"sum", "dot", "sum"}, {"minmax"}, handed_in({"minmax"}));
    CHECK(named.names == std::vector<std::string>{"dot", "sum"});
    CHECK(describe(named) == "dot, sum (named by -e; not graded: minmax)");
    CHECK(describe(choose_exercises(course, {}, {"minmax"}, handed_in({"sum"}))) ==
          "minmax (the assignment in course.yaml; not graded: dot, sum)");
    CHECK(asked == 0);  // the class's folders are not read when the exercises are named
    CHECK(describe(choose_exercises(course, {}, {}, handed_in({"sum"}))) ==
          "sum (handed in by some student; not graded: dot, minmax)");
    CHECK(describe(choose_exercises(course, {}, {}, handed_in({}))) ==
          "dot, minmax, sum (every exercise of the course: no student handed in a file)");
}

TEST_CASE("a shard is I/N with I below N") {
    CHECK(parse_shard("0/4").index == 0);
    CHECK(parse_shard("3/4").count == 4);
    for (const char* bad : {"4/4", "1", "a/2", "1/0", "-1/3", "1/2x", ""}) {
        try {
            parse_shard(bad);
            FAIL("accepted " << bad);
        } catch (const UsageError& e) {
            CHECK(std::string(e.what()) == fmt::format("--shard {}: expected I/N with 0 <= I < N, such as 0/4", bad));
        }
    }
}

TEST_CASE("a student is locked by one batch at a time; a lock whose holder ended is taken over") {
    const fs::path results = fresh("locks");
    {
        StudentLocks first(results);
        StudentLocks second(results);
        CHECK(first.try_lock("alice"));
        CHECK_FALSE(second.try_lock("alice"));  // this process is alive: its lock holds
        CHECK(StudentLocks::held(results, "alice"));
        first.unlock("alice");
        CHECK_FALSE(StudentLocks::held(results, "alice"));
        CHECK(second.try_lock("alice"));
    }
    CHECK_FALSE(fs::exists(results / "locks" / "alice.lock"));  // released when its batch ends
    touch(results / "locks" / "bob.lock", fmt::format("{} {}\n", machine_name(), ended_pid()));
    CHECK_FALSE(StudentLocks::held(results, "bob"));
    // A batch killed while taking a lock leaves only the lock it was writing beside it, never a lock without holder.
    const fs::path half =
        results / "locks" / fmt::format(".staging-{}-{}-0123-carol.lock", machine_name(), ended_pid());
    touch(half, "");
    StudentLocks third(results);
    CHECK_FALSE(fs::exists(half));
    CHECK(third.try_lock("bob"));
    CHECK(third.try_lock("carol"));
    CHECK(read_file(results / "locks" / "carol.lock") == fmt::format("{} {}\n", machine_name(), ::getpid()));
}

TEST_CASE("a class is graded in submissions: student by student, each file a task, the last of a student's ends it") {
    // alice handed in exercises 0 and 2, bob nothing, carol exercise 1.
    SubmissionQueue queue({{0, 2}, {}, {1}});
    std::vector<std::pair<std::size_t, std::optional<std::size_t>>> order;
    while (const auto task = queue.next()) {
        order.emplace_back(task->student, task->exercise);
    }
    CHECK(order ==
          std::vector<std::pair<std::size_t, std::optional<std::size_t>>>{{0, 0}, {0, 2}, {1, std::nullopt}, {2, 1}});
    CHECK_FALSE(queue.next());
    CHECK_FALSE(queue.finish(0));
    CHECK(queue.finish(2));  // carol's only file
    CHECK(queue.finish(0));  // alice's second
    CHECK(queue.finish(1));  // bob's row of notes
    CHECK_FALSE(queue.finish(1));
}

TEST_CASE("a student is claimed once, by the first of their files; the others wait for its answer") {
    SubmissionQueue queue({{0, 1, 2}, {0, 1}});
    std::atomic<int> asked{0};
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    const auto slow_yes = [&] {
        ++asked;
        released.wait();
        return true;
    };
    auto first = std::async(std::launch::async, [&] { return queue.claimed(0, slow_yes); });
    while (asked == 0) {
        std::this_thread::yield();
    }
    auto second = std::async(std::launch::async, [&] { return queue.claimed(0, slow_yes); });
    CHECK(second.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);  // waits for the first
    release.set_value();
    CHECK(first.get());
    CHECK(second.get());
    CHECK(queue.claimed(0, slow_yes));
    CHECK(asked == 1);

    // Held by another batch: every file of theirs is skipped, the claim asked once.
    CHECK_FALSE(queue.claimed(1, [&] { return ++asked, false; }));
    CHECK_FALSE(queue.claimed(1, [&] { return ++asked, true; }));
    CHECK(asked == 2);
}

TEST_CASE("cugrade grade --status needs a results folder a batch started") {
    const fs::path results = fresh("no-batch");
    try {
        batch_status(results);
        FAIL("no error");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == fmt::format("'{}' holds no batch: no class.json (it is written when `cugrade "
                                                   "grade` starts)",
                                                   results.string()));
    }
    touch(results / "class.json", R"({"students": ["alice", "bob", "carol"]})");
    touch(results / "students" / "alice" / "row.json", R"({"status": "graded"})");
    touch(results / "students" / "bob" / "row.json", R"({"status": "build_failed"})");
    touch(results / "students" / "dave" / "row.json", R"({"status": "error"})");
    touch(results / "class.json", R"({"students": ["alice", "bob", "carol", "dave"]})");
    const BatchStatus status = batch_status(results);
    CHECK(status.done == std::vector<std::string>{"alice"});
    CHECK(status.build_failed == std::vector<std::string>{"bob"});
    CHECK(status.error == std::vector<std::string>{"dave"});
    CHECK(status.missing == std::vector<std::string>{"carol"});
    CHECK(status.total() == 4);
}

TEST_CASE("the course is --course, then CUGRADE_COURSE, then found from the current folder, then beside cugrade") {
    const fs::path root = fresh("courses");
    for (const char* course : {"given", "environment", "around/here", "install/share/cugrade/course"}) {
        fs::create_directories(root / course / "exercises");
        fs::create_directories(root / course / "rubrics");
    }
    fs::create_directories(root / "around/here/student/deeper");
    fs::create_directories(root / "install/bin");
    fs::create_directories(root / "nowhere");
    const fs::path installed = root / "install/bin/cugrade";
    touch(installed);
    const auto origin = [&](const std::string& option, const std::string& env, const fs::path& cwd) {
        const CourseChoice choice = find_course(option, env, cwd, installed);
        return choice.origin + ": " + choice.root.lexically_relative(root).string();
    };
    const fs::path deep = root / "around/here/student/deeper";
    CHECK(origin((root / "given").string(), (root / "environment").string(), deep) == "--course: given");
    CHECK(origin("", (root / "environment").string(), deep) == "CUGRADE_COURSE: environment");
    CHECK(origin("", "", deep) == "found from the current folder: around/here");
    CHECK(origin("", "", root / "nowhere") == "beside cugrade: install/share/cugrade/course");
    try {
        find_course((root / "nowhere").string(), "", deep, installed);
        FAIL("no error");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == fmt::format("--course '{}' is not a course: it needs exercises/ and rubrics/",
                                                   (root / "nowhere").string()));
    }
    try {
        find_course("", "", root / "nowhere", root / "nowhere" / "cugrade");
        FAIL("no error");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == "no course found: give --course DIR, set CUGRADE_COURSE, or run cugrade inside "
                                       "a course folder (one with exercises/ and rubrics/)");
    }
}

TEST_CASE("a gradebook row per student: each group's points, the roster's name, the late penalty, Canvas's total") {
    ExercisePlan sum;
    sum.exercise.name = "sum";
    sum.groups = {"edges", "speed"};
    sum.group_max = {{"edges", 60.0}, {"speed", 40.0}};
    sum.max_points = 100.0;
    const std::vector<ExercisePlan> plans = {sum};
    const auto row = [](const std::string& id, const std::string& status, double edges, double speed,
                        const nlohmann::json& submitted_at) {
        return nlohmann::json{
            {"id", id},
            {"name", "from the folder"},
            {"email", id + "@example.edu"},
            {"submitted_at", submitted_at},
            {"status", status},
            {"notes", status == "graded" ? nlohmann::json::array() : nlohmann::json::array({"sum: no sum.cu"})},
            {"exercises",
             {{"sum", {{"points", edges + speed}, {"max", 100.0}, {"groups", {{"edges", edges}, {"speed", speed}}}}}}}};
    };
    const std::vector<nlohmann::json> rows = {row("s1", "graded", 60.0, 15.5, "2026-03-02T10:00:00Z"),
                                              row("s2", "build_failed", 0.0, 0.0, nullptr)};
    const std::map<std::string, RosterEntry> roster = {{"s1", {"s1", "Ada, Countess", "ada@example.edu", "A"}}};
    const LatePolicy late{.due = *parse_time("2026-03-01T23:59:00Z"), .penalty_per_day = 10.0};
    const std::vector<RowFigures> figures = {figures_of(rows[0], plans, roster, late),
                                             figures_of(rows[1], plans, roster, late)};
    CHECK(figures[0].name == "Ada, Countess");  // the roster's name over the folder's
    CHECK(figures[0].late.days == 1);
    CHECK(figures[0].total == Approx(67.95));
    CHECK(figures[1].name == "from the folder");
    CHECK(figures[1].late.days == 0);  // no time: on time
    CHECK(gradebook_csv(plans, rows, figures) ==
          "id,name,email,section,submitted_at,late_days,sum:edges,sum:speed,sum,penalty,total,max,status,notes\r\n"
          "(points possible),,,,,,60,40,100,,100,100,,\r\n"
          "s1,\"Ada, Countess\",ada@example.edu,A,2026-03-02T10:00:00Z,1,60,15.5,75.5,7.55,67.95,100,graded,\r\n"
          "s2,from the folder,s2@example.edu,,,0,0,0,0,0,0,100,build_failed,sum: no sum.cu\r\n");
    CHECK(canvas_csv(plans, rows, figures, "Lab 1") == "Student,ID,SIS User ID,SIS Login ID,Section,Lab 1\r\n"
                                                       "Points Possible,,,,,100\r\n"
                                                       "\"Ada, Countess\",,s1,ada@example.edu,A,67.95\r\n"
                                                       "from the folder,,s2,s2@example.edu,,0\r\n");
    CHECK(counts_as_failed("build_failed"));
    CHECK(counts_as_failed("error"));
    CHECK_FALSE(counts_as_failed("graded"));
    CHECK_FALSE(counts_as_failed("missing"));
}

TEST_CASE("a gradebook's names, emails and sections from a roster or an export are cells, never formulas") {
    ExercisePlan sum;
    sum.exercise.name = "sum";
    sum.groups = {"edges"};
    sum.group_max = {{"edges", 10.0}};
    sum.max_points = 10.0;
    const nlohmann::json row = {{"id", "s1"},
                                {"name", "@SUM(1+1)"},
                                {"email", "-2+3"},
                                {"submitted_at", "\x1b]0;pwned\x07"},
                                {"status", "graded"},
                                {"notes", {"sum: also found \tx.cu, not graded"}},
                                {"exercises", {{"sum", {{"points", 2.5}, {"groups", {{"edges", 2.5}}}}}}}};
    const std::map<std::string, RosterEntry> roster = {
        {"s1", {"s1", "=HYPERLINK(\"http://x\",\"y\")", "+cmd|' /C calc'!A0", "\x1b[31m\xff\xfe"}}};
    const std::vector<RowFigures> figures = {figures_of(row, {sum}, roster, std::nullopt)};
    const auto gradebook = csv::parse(gradebook_csv({sum}, {row}, figures));
    REQUIRE(gradebook.size() == 3);
    CHECK(gradebook[2] == std::vector<std::string>{"s1", "'=HYPERLINK(\"http://x\",\"y\")", "'+cmd|' /C calc'!A0",
                                                   "\xEF\xBF\xBD[31m\xEF\xBF\xBD\xEF\xBF\xBD",
                                                   "\xEF\xBF\xBD]0;pwned\xEF\xBF\xBD", "0", "2.5", "2.5", "0", "2.5",
                                                   "10", "graded", "sum: also found \xEF\xBF\xBDx.cu, not graded"});
    const auto canvas = csv::parse(canvas_csv({sum}, {row}, figures, "=1+1"));
    REQUIRE(canvas.size() == 3);
    CHECK(canvas[0].back() == "'=1+1");
    CHECK(canvas[2] == std::vector<std::string>{"'=HYPERLINK(\"http://x\",\"y\")", "", "s1", "'+cmd|' /C calc'!A0",
                                                "\xEF\xBF\xBD[31m\xEF\xBF\xBD\xEF\xBF\xBD", "2.5"});
}

// Unpacking a class's archive: ordinary zips and tarballs unpack; paths out of the target, links and devices are
// left out and named; a bomb is stopped and leaves nothing behind. The archives are made with libarchive's writer.
#include <filesystem>
#include <string>
#include <vector>

#include "batch/archive.hpp"
#include "catch.hpp"
#include "fresh_folder.hpp"
#include "base/error.hpp"
#include "base/file_io.hpp"

#if CUGRADE_HAVE_LIBARCHIVE
#include <archive.h>
#include <archive_entry.h>

namespace {

using namespace cugrade;
namespace fs = std::filesystem;

struct Entry {
    std::string path;
    std::string content;
    mode_t type = AE_IFREG;
    std::string link;  // symbolic link target, or hard link name when `type` is 0
};

fs::path fresh(const std::string& name) { return fresh_folder("archive", name); }

void make_archive(const fs::path& file, const std::vector<Entry>& entries, bool zip) {
    archive* out = archive_write_new();
    if (zip) {
        archive_write_set_format_zip(out);
    } else {
        archive_write_set_format_pax_restricted(out);
        archive_write_add_filter_gzip(out);
    }
    REQUIRE(archive_write_open_filename(out, file.c_str()) == ARCHIVE_OK);
    for (const Entry& e : entries) {
        archive_entry* entry = archive_entry_new();
        archive_entry_set_pathname(entry, e.path.c_str());
        archive_entry_set_perm(entry, 0644);
        if (e.type == 0) {
            archive_entry_set_filetype(entry, AE_IFREG);
            archive_entry_set_hardlink(entry, e.link.c_str());
        } else {
            archive_entry_set_filetype(entry, e.type);
            if (e.type == AE_IFLNK) {
                archive_entry_set_symlink(entry, e.link.c_str());
            }
            archive_entry_set_size(entry, e.type == AE_IFREG ? static_cast<la_int64_t>(e.content.size()) : 0);
        }
        archive_write_header(out, entry);
        if (e.type == AE_IFREG && !e.content.empty()) {
            archive_write_data(out, e.content.data(), e.content.size());
        }
        archive_entry_free(entry);
    }
    archive_write_close(out);
    archive_write_free(out);
}

}  // namespace

TEST_CASE("a zip and a tarball of a class unpack whole") {
    const fs::path dir = fresh("ordinary");
    const std::vector<Entry> entries = {{"class/", "", AE_IFDIR},
                                        {"class/alice/sum.cu", "alice's sum\n"},
                                        {"class/bob/sum.cu", "bob's sum\n"},
                                        {"__MACOSX/class/._sum.cu", "resource fork"}};
    for (const bool zip : {true, false}) {
        const fs::path file = dir / (zip ? "class.zip" : "class.tar.gz");
        make_archive(file, entries, zip);
        CHECK(is_archive(file));
        const fs::path target = dir / (zip ? "from-zip" : "from-tar");
        const UnpackResult result = unpack_archive(file, target);
        CHECK(result.files == 2);
        CHECK(result.refused.empty());
        CHECK(read_file(target / "class" / "alice" / "sum.cu") == "alice's sum\n");
        CHECK(read_file(target / "class" / "bob" / "sum.cu") == "bob's sum\n");
        CHECK_FALSE(fs::exists(target / "__MACOSX"));
    }
    CHECK_FALSE(is_archive(dir / "sum.cu"));
}

TEST_CASE("paths out of the target, links and devices are left out and named") {
    const fs::path dir = fresh("hostile");
    make_archive(dir / "evil.tar.gz",
                 {{"../escaped.txt", "out"},
                  {"/tmp/cugrade-test-archive/absolute.txt", "out"},
                  {"class/../../escaped-too.txt", "out"},
                  {"class/alice/link.cu", "", AE_IFLNK, "/etc/passwd"},
                  {"class/alice/sum.cu", "the sum\n"},
                  {"class/alice/hard.cu", "", 0, "class/alice/sum.cu"},
                  {"class/alice/fifo", "", AE_IFIFO}},
                 false);
    const UnpackResult result = unpack_archive(dir / "evil.tar.gz", dir / "out");
    CHECK(result.files == 1);
    CHECK(read_file(dir / "out" / "class" / "alice" / "sum.cu") == "the sum\n");
    CHECK(result.refused ==
          std::vector<std::string>{"../escaped.txt: a path outside the archive's folder",
                                   "/tmp/cugrade-test-archive/absolute.txt: a path outside the archive's folder",
                                   "class/../../escaped-too.txt: a path outside the archive's folder",
                                   "class/alice/link.cu: a link", "class/alice/hard.cu: a link",
                                   "class/alice/fifo: not a file or a folder"});
    CHECK_FALSE(fs::exists(dir / "escaped.txt"));
    CHECK_FALSE(fs::exists(dir / "escaped-too.txt"));
    CHECK_FALSE(fs::exists(fs::temp_directory_path() / "cugrade-test-archive" / "absolute.txt"));
    CHECK_FALSE(fs::exists(dir / "out" / "class" / "alice" / "link.cu"));
}

TEST_CASE("a bomb is stopped at the size or file-count limit and leaves nothing behind") {
    const fs::path dir = fresh("bomb");
    make_archive(dir / "bomb.tar.gz", {{"a.bin", std::string(3 << 20, '\0')}, {"b.bin", std::string(3 << 20, '\0')}},
                 false);
    CHECK(fs::file_size(dir / "bomb.tar.gz") < 64 * 1024);  // megabytes of zeros compress to almost nothing
    UnpackLimits limits;
    limits.total_bytes = 4 << 20;
    CHECK_THROWS_WITH(unpack_archive(dir / "bomb.tar.gz", dir / "out", limits),
                      "the archive '" + (dir / "bomb.tar.gz").string() + "' unpacks to more than 4 MiB: refused");
    CHECK_FALSE(fs::exists(dir / "out"));

    limits = {};
    limits.file_bytes = 1 << 20;
    const UnpackResult cut = unpack_archive(dir / "bomb.tar.gz", dir / "cut", limits);
    CHECK(cut.refused == std::vector<std::string>{"a.bin: larger than 1 MiB", "b.bin: larger than 1 MiB"});
    CHECK_FALSE(fs::exists(dir / "cut" / "a.bin"));

    std::vector<Entry> many;
    for (int i = 0; i < 20; ++i) {
        many.push_back({"f" + std::to_string(i), "x"});
    }
    make_archive(dir / "many.zip", many, true);
    limits = {};
    limits.entries = 10;
    CHECK_THROWS_WITH(unpack_archive(dir / "many.zip", dir / "many", limits),
                      "the archive '" + (dir / "many.zip").string() +
                          "' holds more than 10 entries (files, folders and entries left out, each counted): refused");
    CHECK_FALSE(fs::exists(dir / "many"));
    CHECK_THROWS_AS(unpack_archive(dir / "bomb.tar.gz", dir / "bomb.tar.gz"), UsageError);  // the target exists
}

TEST_CASE("folders, the folders a path makes and entries left out count against the entries") {
    const fs::path dir = fresh("entries");
    UnpackLimits limits;
    limits.entries = 10;
    const auto refusal = [&](const std::string& name) {
        return "the archive '" + (dir / name).string() +
               "' holds more than 10 entries (files, folders and entries left out, each counted): refused";
    };
    std::vector<Entry> folders, deep, links, within;
    for (int i = 0; i < 11; ++i) {
        folders.push_back({"d" + std::to_string(i) + "/", "", AE_IFDIR});
        links.push_back({"l" + std::to_string(i), "", AE_IFLNK, "/etc/passwd"});
    }
    std::string path;
    for (int i = 0; i < 10; ++i) {
        path += "f" + std::to_string(i) + "/";
        within.push_back({path, "", AE_IFDIR});  // each folder named by its own entry: counted once
    }
    deep.push_back({path + "file", "x"});  // one entry, ten folders made for it
    const std::vector<std::pair<std::string, std::vector<Entry>>> bombs = {
        {"folders.zip", folders}, {"links.tar.gz", links}, {"deep.zip", deep}};
    for (const auto& [name, entries] : bombs) {
        make_archive(dir / name, entries, name.ends_with(".zip"));
        CHECK_THROWS_WITH(unpack_archive(dir / name, dir / "out", limits), refusal(name));
        CHECK_FALSE(fs::exists(dir / "out"));
    }
    make_archive(dir / "within.zip", within, true);
    const UnpackResult result = unpack_archive(dir / "within.zip", dir / "within", limits);
    CHECK(result.entries == 10);
    CHECK(fs::is_directory(dir / "within" / path));
}

TEST_CASE("a path too deep or too long is left out and named; the first hundred left out are named, the rest counted") {
    const fs::path dir = fresh("paths");
    std::string deep;
    for (int i = 0; i < 40; ++i) {
        deep += "d/";
    }
    const std::string long_name = "class/" + std::string(1100, 'n');
    std::vector<Entry> entries = {
        {deep + "sum.cu", "deep"}, {long_name, "long"}, {"./", "", AE_IFDIR}, {"./class/alice/sum.cu", "the sum\n"}};
    for (int i = 0; i < 150; ++i) {
        entries.push_back({"class/link" + std::to_string(i), "", AE_IFLNK, "/etc/passwd"});
    }
    make_archive(dir / "paths.tar.gz", entries, false);
    const UnpackResult result = unpack_archive(dir / "paths.tar.gz", dir / "out");
    CHECK(result.files == 1);
    CHECK(read_file(dir / "out" / "class" / "alice" / "sum.cu") == "the sum\n");
    CHECK_FALSE(fs::exists(dir / "out" / "d"));
    REQUIRE(result.refused.size() == named_refusals);
    CHECK(result.refused[0] == deep + "sum.cu: a path more than 32 names deep");
    CHECK(result.refused[1] == long_name + ": a path longer than 1024 bytes");
    CHECK(result.refused[2] == "class/link0: a link");
    CHECK(result.refused_unnamed == 52);
}

#endif

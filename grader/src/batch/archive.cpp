// Unpacking archives safely (archive.hpp).
#include "batch/archive.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <vector>

#include "base/error.hpp"
#include "sandbox/process.hpp"
#include "base/file_io.hpp"

#if CUGRADE_HAVE_LIBARCHIVE
#include <archive.h>
#include <archive_entry.h>
#endif

namespace cugrade {
namespace fs = std::filesystem;

bool is_archive(const fs::path& path) {
    std::string name = path.filename().string();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const char* suffix : {".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz"}) {
        const std::string s = suffix;
        if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
            return true;
        }
    }
    return false;
}

#if CUGRADE_HAVE_LIBARCHIVE
namespace {

// Why an entry's path is left out, or "" when `relative` is now that path made relative and plain (a folder's
// without its trailing slash): it would leave the target (absolute, "..", empty), or is too deep or too long.
std::string refused_path(const char* raw, const UnpackLimits& limits, fs::path& relative) {
    if (raw == nullptr) {
        return "a path outside the archive's folder";
    }
    if (std::strlen(raw) > limits.path_bytes) {
        return fmt::format("a path longer than {} bytes", limits.path_bytes);
    }
    relative = fs::path(raw).lexically_normal();
    if (!relative.empty() && !relative.has_filename()) {
        relative = relative.parent_path();  // "class/": the folder itself
    }
    if (relative.empty() || relative.is_absolute() || relative.has_root_name()) {
        return "a path outside the archive's folder";
    }
    std::size_t depth = 0;
    for (const auto& part : relative) {
        if (part == "..") {
            return "a path outside the archive's folder";
        }
        ++depth;
    }
    return depth > limits.path_depth ? fmt::format("a path more than {} names deep", limits.path_depth) : "";
}

struct ArchiveReader {
    archive* handle = archive_read_new();
    ~ArchiveReader() { archive_read_free(handle); }
};

// One archive unpacked into its target, entry by entry, within its limits. A limit passed removes the target and
// throws.
class Unpacker {
public:
    Unpacker(archive* reader, const fs::path& archive_path, const fs::path& target, const UnpackLimits& limits)
        : reader_(reader), archive_path_(archive_path), target_(target), limits_(limits) {}

    void unpack(archive_entry* entry) {
        count();
        const char* raw = archive_entry_pathname(entry);
        const std::string shown = raw != nullptr ? raw : "(no name)";
        fs::path relative;
        const mode_t type = archive_entry_filetype(entry);
        if (const std::string why = refused_path(raw, limits_, relative); !why.empty()) {
            leave_out(shown, why);
        } else if (archive_entry_hardlink(entry) != nullptr || type == AE_IFLNK) {
            leave_out(shown, "a link");
        } else if (relative.begin()->string() == "__MACOSX") {
            // the Finder's resource forks
        } else if (type == AE_IFDIR) {
            if (const std::string why = make_folders(relative, true); !why.empty()) {
                leave_out(shown, fmt::format("cannot be made ({})", why));
            }
        } else if (type != AE_IFREG) {
            leave_out(shown, "not a file or a folder");
        } else if (const std::string why = make_folders(relative.parent_path(), false); !why.empty()) {
            leave_out(shown, fmt::format("cannot be written ({})", why));
        } else {
            write_file(shown, target_ / relative);
        }
    }

    [[noreturn]] void fail(const std::string& why) {
        std::error_code ec;
        fs::remove_all(target_, ec);
        throw UsageError(fmt::format("the archive '{}' {}: refused", archive_path_.string(), why));
    }

    UnpackResult result;

private:
    void count() {
        if (++result.entries > limits_.entries) {
            fail(fmt::format("holds more than {} entries (files, folders and entries left out, each counted)",
                             limits_.entries));
        }
    }

    void leave_out(const std::string& shown, const std::string& why) {
        if (result.refused.size() < named_refusals) {
            result.refused.push_back(fmt::format("{}: {}", shown, why));
        } else {
            ++result.refused_unnamed;
        }
    }

    // Makes the folders of `relative` that do not exist yet, each counted as an entry but the entry's own (`own`:
    // `relative` is the path of a folder's entry). Says why one cannot be made, or "".
    std::string make_folders(const fs::path& relative, bool own) {
        fs::path at = target_;
        std::size_t part = 0;
        const auto parts = static_cast<std::size_t>(std::distance(relative.begin(), relative.end()));
        for (const auto& name : relative) {
            at /= name;
            ++part;
            std::error_code ec;
            const fs::file_status status = fs::symlink_status(at, ec);
            if (fs::is_directory(status)) {
                continue;
            }
            if (fs::exists(status)) {
                return fmt::format("'{}' is a file", at.lexically_relative(target_).string());
            }
            if (!fs::create_directory(at, ec)) {
                return ec.message();
            }
            if (!own || part < parts) {
                count();
            }
        }
        return "";
    }

    void write_file(const std::string& shown, const fs::path& destination) {
        // O_NOFOLLOW and O_EXCL: nothing already at that name (a link made by an earlier entry) is written through.
        const int fd = ::open(destination.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            leave_out(shown, fmt::format("cannot be written ({})", std::strerror(errno)));
            return;
        }
        ++result.files;
        std::uint64_t file_bytes = 0;
        for (la_ssize_t got; (got = archive_read_data(reader_, buffer_.data(), buffer_.size())) != 0;) {
            if (got < 0) {
                ::close(fd);
                fail(fmt::format("cannot be read at {}: {}", shown, archive_error_string(reader_)));
            }
            file_bytes += static_cast<std::uint64_t>(got);
            result.bytes += static_cast<std::uint64_t>(got);
            if (result.bytes > limits_.total_bytes) {
                ::close(fd);
                fail(fmt::format("unpacks to more than {} MiB", limits_.total_bytes >> 20));
            }
            if (file_bytes > limits_.file_bytes) {
                ::close(fd);
                std::error_code ec;
                fs::remove(destination, ec);
                --result.files;
                leave_out(shown, fmt::format("larger than {} MiB", limits_.file_bytes >> 20));
                return;
            }
            if (::write(fd, buffer_.data(), static_cast<std::size_t>(got)) != got) {
                ::close(fd);
                fail(fmt::format("cannot be written at {}: {}", shown, std::strerror(errno)));
            }
        }
        ::close(fd);
    }

    archive* reader_;
    const fs::path& archive_path_;
    const fs::path& target_;
    const UnpackLimits& limits_;
    std::vector<char> buffer_ = std::vector<char>(64 * 1024);
};

}  // namespace

UnpackResult unpack_archive(const fs::path& archive_path, const fs::path& target, const UnpackLimits& limits) {
    ArchiveReader reader;
    archive_read_support_filter_all(reader.handle);
    archive_read_support_format_zip(reader.handle);
    archive_read_support_format_tar(reader.handle);
    archive_read_support_format_gnutar(reader.handle);
    if (archive_read_open_filename(reader.handle, archive_path.c_str(), 64 * 1024) != ARCHIVE_OK) {
        throw UsageError(fmt::format("cannot read the archive '{}': {}", archive_path.string(),
                                     archive_error_string(reader.handle)));
    }
    std::error_code made;
    fs::create_directories(target.parent_path(), made);
    if (!fs::create_directory(target, made)) {
        throw UsageError(
            fmt::format("cannot unpack into '{}': {}", target.string(), made ? made.message() : "it exists already"));
    }
    Unpacker unpacker(reader.handle, archive_path, target, limits);
    archive_entry* entry = nullptr;
    while (true) {
        const int status = archive_read_next_header(reader.handle, &entry);
        if (status == ARCHIVE_EOF) {
            break;
        }
        if (status != ARCHIVE_OK && status != ARCHIVE_WARN) {
            unpacker.fail(fmt::format("cannot be read past entry {}: {}", unpacker.result.entries,
                                      archive_error_string(reader.handle)));
        }
        unpacker.unpack(entry);
    }
    return unpacker.result;
}

void pack_folder(const fs::path& folder, const fs::path& tarball) {
    std::vector<fs::path> entries;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        entries.push_back(entry.path());
    }
    std::sort(entries.begin(), entries.end());
    archive* writer = archive_write_new();
    const auto fail = [&](const std::string& what) {
        const std::string message = fmt::format("cannot write '{}': {}: {}", tarball.string(), what,
                                                archive_error_string(writer) ? archive_error_string(writer) : "");
        archive_write_free(writer);
        throw std::runtime_error(message);
    };
    archive_write_add_filter_gzip(writer);
    archive_write_set_options(writer, "gzip:!timestamp");  // no date in the gzip header either
    archive_write_set_format_pax_restricted(writer);
    if (archive_write_open_filename(writer, tarball.c_str()) != ARCHIVE_OK) {
        fail("cannot create it");
    }
    const fs::path top = folder.filename();
    for (const auto& path : entries) {
        const bool directory = fs::is_directory(path);
        const bool executable =
            !directory && (fs::status(path).permissions() & fs::perms::owner_exec) != fs::perms::none;
        const std::string bytes = directory ? std::string() : read_file(path);
        archive_entry* entry = archive_entry_new();
        archive_entry_set_pathname(entry, (top / path.lexically_relative(folder)).c_str());
        archive_entry_set_filetype(entry, directory ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(entry, directory || executable ? 0755 : 0644);
        archive_entry_set_size(entry, static_cast<la_int64_t>(bytes.size()));
        archive_entry_set_mtime(entry, 0, 0);
        const bool written = archive_write_header(writer, entry) == ARCHIVE_OK &&
                             (bytes.empty() || archive_write_data(writer, bytes.data(), bytes.size()) ==
                                                   static_cast<la_ssize_t>(bytes.size()));
        archive_entry_free(entry);
        if (!written) {
            fail(path.string());
        }
    }
    if (archive_write_close(writer) != ARCHIVE_OK) {
        fail("cannot finish it");
    }
    archive_write_free(writer);
}

#else

// Without libarchive, GNU tar and gzip do the same: names sorted, no dates, owners or users.
void pack_folder(const fs::path& folder, const fs::path& tarball) {
    ProcessOptions options;
    options.argv = {"tar",
                    "--sort=name",
                    "--mtime=@0",
                    "--owner=0",
                    "--group=0",
                    "--numeric-owner",
                    "--mode=go-w",
                    "-I",
                    "gzip -n",
                    "-cf",
                    tarball.string(),
                    "-C",
                    folder.parent_path().string(),
                    folder.filename().string()};
    const ProcessResult result = run_process(options, std::chrono::minutes(10));
    if (!result.status.success()) {
        throw UsageError(fmt::format("cannot write '{}': this cugrade was built without libarchive, and GNU tar {}:\n{}"
                                     "install libarchive-dev and build again",
                                     tarball.string(), result.status.describe(), result.output));
    }
}

UnpackResult unpack_archive(const fs::path& archive, const fs::path&, const UnpackLimits&) {
    throw UsageError(fmt::format("cannot read the archive '{}': this cugrade was built without libarchive; install "
                                 "libarchive-dev and build again, or unpack the archive and give its folder",
                                 archive.string()));
}

#endif

}  // namespace cugrade

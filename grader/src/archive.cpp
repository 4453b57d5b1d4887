// Unpacking archives safely (archive.hpp).
#include "archive.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "cugrade/error.hpp"
#include "cugrade/process.hpp"
#include "file_io.hpp"

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

// The entry's path made relative and plain, or "" when it would leave the target: absolute, "..", empty.
fs::path safe_relative(const char* raw) {
    if (raw == nullptr) {
        return {};
    }
    const fs::path path = fs::path(raw).lexically_normal();
    if (path.empty() || path.is_absolute() || path.has_root_name()) {
        return {};
    }
    for (const auto& part : path) {
        if (part == "..") {
            return {};
        }
    }
    return path;
}

struct ArchiveReader {
    archive* handle = archive_read_new();
    ~ArchiveReader() { archive_read_free(handle); }
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
        throw UsageError(fmt::format("cannot unpack into '{}': {}", target.string(),
                                     made ? made.message() : "it exists already"));
    }
    UnpackResult result;
    const auto fail = [&](const std::string& why) {
        std::error_code ec;
        fs::remove_all(target, ec);
        throw UsageError(fmt::format("the archive '{}' {}: refused", archive_path.string(), why));
    };
    archive_entry* entry = nullptr;
    std::vector<char> buffer(64 * 1024);
    while (true) {
        const int status = archive_read_next_header(reader.handle, &entry);
        if (status == ARCHIVE_EOF) {
            break;
        }
        if (status != ARCHIVE_OK && status != ARCHIVE_WARN) {
            fail(fmt::format("cannot be read past entry {}: {}", result.files, archive_error_string(reader.handle)));
        }
        const char* raw = archive_entry_pathname(entry);
        const std::string shown = raw != nullptr ? raw : "(no name)";
        const fs::path relative = safe_relative(raw);
        const mode_t type = archive_entry_filetype(entry);
        if (relative.empty()) {
            result.refused.push_back(fmt::format("{}: a path outside the archive's folder", shown));
            continue;
        }
        if (archive_entry_hardlink(entry) != nullptr || type == AE_IFLNK) {
            result.refused.push_back(fmt::format("{}: a link", shown));
            continue;
        }
        if (relative.begin()->string() == "__MACOSX") {
            continue;  // the Finder's resource forks
        }
        const fs::path destination = target / relative;
        std::error_code ec;
        if (type == AE_IFDIR) {
            fs::create_directories(destination, ec);
            continue;
        }
        if (type != AE_IFREG) {
            result.refused.push_back(fmt::format("{}: not a file or a folder", shown));
            continue;
        }
        if (++result.files > limits.files) {
            fail(fmt::format("holds more than {} files", limits.files));
        }
        fs::create_directories(destination.parent_path(), ec);
        // O_NOFOLLOW and O_EXCL: nothing already at that name (a link made by an earlier entry) is written through.
        const int fd = ::open(destination.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            result.refused.push_back(fmt::format("{}: cannot be written ({})", shown, std::strerror(errno)));
            continue;
        }
        std::uint64_t file_bytes = 0;
        bool cut = false;
        for (la_ssize_t got; (got = archive_read_data(reader.handle, buffer.data(), buffer.size())) != 0;) {
            if (got < 0) {
                ::close(fd);
                fail(fmt::format("cannot be read at {}: {}", shown, archive_error_string(reader.handle)));
            }
            file_bytes += static_cast<std::uint64_t>(got);
            result.bytes += static_cast<std::uint64_t>(got);
            if (result.bytes > limits.total_bytes) {
                ::close(fd);
                fail(fmt::format("unpacks to more than {} MiB", limits.total_bytes >> 20));
            }
            if (file_bytes > limits.file_bytes) {
                cut = true;
                break;
            }
            if (::write(fd, buffer.data(), static_cast<std::size_t>(got)) != got) {
                ::close(fd);
                fail(fmt::format("cannot be written at {}: {}", shown, std::strerror(errno)));
            }
        }
        ::close(fd);
        if (cut) {
            fs::remove(destination, ec);
            result.refused.push_back(fmt::format("{}: larger than {} MiB", shown, limits.file_bytes >> 20));
        }
    }
    return result;
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
        const bool executable = !directory && (fs::status(path).permissions() & fs::perms::owner_exec) != fs::perms::none;
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
    options.argv = {"tar",          "--sort=name", "--mtime=@0",  "--owner=0", "--group=0", "--numeric-owner",
                    "--mode=go-w",  "-I",          "gzip -n",     "-cf",       tarball.string(),
                    "-C",           folder.parent_path().string(), folder.filename().string()};
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

#include "topology_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

#include <riseml/common/small_file.hpp>

namespace riseml::placement {
namespace {

constexpr char header[] = "riseml-topology-cache 1\n";
constexpr off_t max_entry = 17 << 20;  // the helper's 16 MiB text and the key

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string entry_name(const std::string& slot) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a: spreads slots over file names, no security role
  for (const char c : slot) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "topology-%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string identity_of(const struct stat& st) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "dev=%llu ino=%llu size=%lld mtime=%lld.%09ld ctime=%lld.%09ld",
                static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino),
                static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
  return buf;
}

}  // namespace

std::string file_identity(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return {};
  return identity_of(st);
}

std::string file_identity(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {};
  return identity_of(st);
}

std::string TopologyCache::folder() const { return base_ + "/riseml-topology-" + std::to_string(geteuid()); }

namespace {

// The user's cache folder, opened without following links; -1 (and a note) when it is missing
// or is not this user's alone.
int open_folder(const std::string& dir, bool create, std::string& note) {
  if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    note = "cannot create the cache folder " + dir + ": " + std::strerror(errno);
    return -1;
  }
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) note = "cannot open the cache folder " + dir + ": " + std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    note = "the cache folder " + dir + " is not this user's alone (owner, or mode other than 0700): not used";
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::optional<std::string> TopologyCache::find(const std::string& slot, const std::string& key,
                                               std::string& note) const noexcept {
  try {
    const Fd dir(open_folder(folder(), false, note));
    if (dir.get() < 0) return std::nullopt;
    const Fd f(openat(dir.get(), entry_name(slot).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (f.get() < 0) return std::nullopt;  // not cached yet
    struct stat st;
    if (fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size > max_entry) {
      note = "ignoring the cache entry " + folder() + "/" + entry_name(slot) + " (not a file of this user's)";
      return std::nullopt;
    }
    // A read error leaves the entry short, which the header check below calls stale.
    const std::string data =
        read_small_file(f.get(), static_cast<std::size_t>(st.st_size)).value_or(std::string());
    const std::string key_line = "key " + std::to_string(key.size()) + "\n";
    const std::string want = header + key_line + key + "\n";
    if (data.compare(0, want.size(), want) != 0) {
      note = "the cache entry for this topology is stale";
      return std::nullopt;
    }
    return data.substr(want.size());
  } catch (const std::exception& e) {
    note = std::string("reading the topology cache failed: ") + e.what();
    return std::nullopt;
  }
}

bool TopologyCache::store(const std::string& slot, const std::string& key, const std::string& text,
                          std::string& note) const noexcept {
  try {
    const Fd dir(open_folder(folder(), true, note));
    if (dir.get() < 0) return false;
    const std::string data = header + ("key " + std::to_string(key.size()) + "\n") + key + "\n" + text;
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    const std::string tmp = ".new-" + std::to_string(getpid()) + "-" + std::to_string(stamp);
    bool ok = false;
    {
      const Fd f(openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (f.get() < 0) {
        note = "cannot write to the cache folder " + folder() + ": " + std::strerror(errno);
        return false;
      }
      std::size_t done = 0;
      while (done < data.size()) {
        const ssize_t n = write(f.get(), data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
      }
      ok = done == data.size();
    }
    if (ok && renameat(dir.get(), tmp.c_str(), dir.get(), entry_name(slot).c_str()) == 0) return true;
    note = "cannot write the cache entry in " + folder() + ": " + std::strerror(errno);
    unlinkat(dir.get(), tmp.c_str(), 0);
    return false;
  } catch (const std::exception& e) {
    note = std::string("writing the topology cache failed: ") + e.what();
    return false;
  }
}

}  // namespace riseml::placement

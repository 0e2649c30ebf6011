// atomic_file.hpp: the new content or the old, never a part; no temporary files left behind.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <riseml/common/atomic_file.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace riseml::test {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "riseml-common-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& p, const std::string& content) {
  std::ofstream(p, std::ios::binary) << content;
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(AtomicFile, WritesNewFileWithTheMode) {
  TempDir tmp;
  EXPECT_EQ(write_file_atomically((tmp / "a.sh").string(), "echo hi\n", 0755), "");
  EXPECT_EQ(read_file(tmp / "a.sh"), "echo hi\n");
  struct stat st {};
  ASSERT_EQ(stat((tmp / "a.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_EQ(entries(tmp.path()), 1u);
}

TEST(AtomicFile, DefaultModeIs0644) {
  TempDir tmp;
  EXPECT_EQ(write_file_atomically((tmp / "a").string(), "x"), "");
  struct stat st {};
  ASSERT_EQ(stat((tmp / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(AtomicFile, ReplacesExistingFile) {
  TempDir tmp;
  write_file(tmp / "a", std::string(10000, 'o'));
  EXPECT_EQ(write_file_atomically((tmp / "a").string(), "new"), "");
  EXPECT_EQ(read_file(tmp / "a"), "new");
  EXPECT_EQ(entries(tmp.path()), 1u);
}

TEST(AtomicFile, EmptyAndLargeContent) {
  TempDir tmp;
  EXPECT_EQ(write_file_atomically((tmp / "empty").string(), ""), "");
  EXPECT_EQ(read_file(tmp / "empty"), "");
  std::string big(3 << 20, 'b');
  EXPECT_EQ(write_file_atomically((tmp / "big").string(), big), "");
  EXPECT_EQ(read_file(tmp / "big"), big);
}

TEST(AtomicFile, RelativePathInTheCurrentFolder) {
  TempDir tmp;
  const fs::path before = fs::current_path();
  fs::current_path(tmp.path());
  std::string err = write_file_atomically("rel.txt", "r");
  fs::current_path(before);
  EXPECT_EQ(err, "");
  EXPECT_EQ(read_file(tmp / "rel.txt"), "r");
}

TEST(AtomicFile, MissingFolderReportsAndWritesNothing) {
  TempDir tmp;
  std::string err = write_file_atomically((tmp / "no" / "a").string(), "x");
  EXPECT_NE(err.find("cannot create a file in"), std::string::npos) << err;
  EXPECT_EQ(entries(tmp.path()), 0u);
}

TEST(AtomicFile, TargetIsADirectoryLeavesNoTemporaryFile) {
  TempDir tmp;
  fs::create_directory(tmp / "d");
  write_file(tmp / "d" / "inside", "keep");
  std::string err = write_file_atomically((tmp / "d").string(), "x");
  EXPECT_NE(err.find("replacing"), std::string::npos) << err;
  EXPECT_EQ(entries(tmp.path()), 1u) << "the temporary file was removed";
  EXPECT_EQ(read_file(tmp / "d" / "inside"), "keep");
}

}  // namespace
}  // namespace riseml::test

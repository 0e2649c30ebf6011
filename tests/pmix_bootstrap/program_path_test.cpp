#include "program_path.hpp"

#include <gtest/gtest.h>

namespace riseml::launch {
namespace {

TEST(ProgramPath, SearchesPathInOrder) {
  EXPECT_EQ(find_program("sh", "/nonexistent:/bin:/usr/bin"), "/bin/sh");
  EXPECT_EQ(find_program("sh", "/nonexistent"), std::nullopt);
}

TEST(ProgramPath, NamesWithASlashAreTakenAsPaths) {
  EXPECT_EQ(find_program("/bin/sh", ""), "/bin/sh");
  EXPECT_EQ(find_program("/etc/passwd", "/bin"), std::nullopt);  // not executable
  EXPECT_EQ(find_program("/bin", "/bin"), std::nullopt);         // a directory
}

TEST(ProgramPath, EmptyNameIsNotFound) {
  EXPECT_EQ(find_program("", "/bin"), std::nullopt);
}

}  // namespace
}  // namespace riseml::launch

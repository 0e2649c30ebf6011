// The per-user topology cache: a later step reads the cached text instead of starting the
// helper; a changed file, a changed helper or a damaged entry means reading again; the live
// node and failures are never cached; a cache folder that is not the user's alone is not used.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "read_topology.hpp"
#include "scratch_folder.hpp"
#include "topology_cache.hpp"
#include "topology_corpus.hpp"

namespace riseml::placement::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TopologyCache, GivesBackTheTextOnlyForTheSameKey) {
  ScratchFolder s;
  const TopologyCache cache(s.path());
  std::string note;
  EXPECT_FALSE(cache.find("slot", "key", note));
  EXPECT_EQ(note, "");  // no folder yet: nothing worth saying
  ASSERT_TRUE(cache.store("slot", "key", "text\n", note)) << note;
  EXPECT_EQ(cache.find("slot", "key", note).value_or("none"), "text\n");
  EXPECT_FALSE(cache.find("slot", "key2", note));
  EXPECT_EQ(note, "the cache entry for this topology is stale");
  EXPECT_FALSE(cache.find("other slot", "key", note));
  ASSERT_TRUE(cache.store("slot", "key2", "newer\n", note)) << note;  // replaces the slot's entry
  EXPECT_EQ(cache.find("slot", "key2", note).value_or("none"), "newer\n");
  EXPECT_FALSE(cache.find("slot", "key", note));
  EXPECT_EQ(cache.folder(), s.path() + "/riseml-topology-" + std::to_string(geteuid()));
  struct stat st;
  ASSERT_EQ(stat(cache.folder().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(cache.folder())) {
    ++entries;
    EXPECT_EQ(e.path().filename().string().rfind("topology-", 0), 0u) << e.path() << ": a temporary file was left";
  }
  EXPECT_EQ(entries, 1u);
}

TEST(TopologyCache, AFolderOthersCanWriteIsNotUsed) {
  ScratchFolder s;
  const TopologyCache cache(s.path());
  std::string note;
  ASSERT_TRUE(cache.store("slot", "key", "text\n", note));
  ASSERT_EQ(chmod(cache.folder().c_str(), 0777), 0);
  EXPECT_FALSE(cache.find("slot", "key", note));
  EXPECT_TRUE(has(note, "is not this user's alone")) << note;
  EXPECT_FALSE(cache.store("slot", "key", "text\n", note));
}

TEST(TopologyCache, ALinkedFolderIsNotFollowed) {
  ScratchFolder s, elsewhere;
  const TopologyCache real(elsewhere.path());
  std::string note;
  ASSERT_TRUE(real.store("slot", "key", "text\n", note));
  const TopologyCache cache(s.path());
  fs::create_directory_symlink(real.folder(), cache.folder());
  EXPECT_FALSE(cache.find("slot", "key", note));
  EXPECT_TRUE(has(note, "cannot open the cache folder")) << note;
  EXPECT_FALSE(cache.store("slot", "key", "text\n", note));
}

TEST(TopologyCache, AnUnwritableBaseIsOnlyANote) {
  const TopologyCache cache("/nonexistent/base");
  std::string note;
  EXPECT_FALSE(cache.store("slot", "key", "text\n", note));
  EXPECT_TRUE(has(note, "cannot create the cache folder /nonexistent/base/riseml-topology-")) << note;
}

// read_topology with a helper that counts its runs before running the real one.
class CachedReads : public ::testing::Test {
 protected:
  void SetUp() override {
    xml_ = scratch_.file("node.xml", read_file(RISEML_FIXTURE_TOPOLOGY));
    helper_ = counting_helper();
  }
  std::string counting_helper() {
    return scratch_.script("helper.sh", "echo run >> " + scratch_.path() + "/runs; exec " +
                                            std::string(RISEML_TOPOLOGY_HELPER) + " \"$@\"");
  }
  int runs() const {
    std::ifstream in(scratch_.path() + "/runs");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  NodeTopology read(const std::string& xml, const std::string& cache_base, std::vector<std::string>* notes = nullptr) {
    NodeTopology out;
    TopologyProblem problem;
    std::vector<std::string> n;
    EXPECT_TRUE(read_topology(TopologySource{xml, HelperRun{helper_, 30s}, cache_base}, out, problem, n))
        << problem.what << "; " << problem.fix;
    if (notes != nullptr) *notes = n;
    return out;
  }
  std::string cache_base() const { return scratch_.path() + "/cache"; }

  ScratchFolder scratch_;
  std::string xml_, helper_;
};

TEST_F(CachedReads, ALaterStepSkipsTheHelper) {
  ASSERT_EQ(mkdir(cache_base().c_str(), 0755), 0);
  std::vector<std::string> notes;
  const NodeTopology first = read(xml_, cache_base(), &notes);
  EXPECT_EQ(runs(), 1);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes[0], "read by " + helper_ + ", cached in " + cache_base() + "/riseml-topology-")) << notes[0];
  const NodeTopology second = read(xml_, cache_base(), &notes);
  EXPECT_EQ(runs(), 1);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes[0], "topology of " + xml_ + " from the cache")) << notes[0];
  EXPECT_EQ(second, first);
  EXPECT_EQ(second.source, xml_);
  NodeTopology expected = load_cached(RISEML_FIXTURE_TOPOLOGY);
  expected.source = xml_;
  EXPECT_EQ(second, expected);
}

TEST_F(CachedReads, AChangedFileOrHelperIsReadAgain) {
  ASSERT_EQ(mkdir(cache_base().c_str(), 0755), 0);
  read(xml_, cache_base());
  ASSERT_EQ(runs(), 1);
  // Same size and content, new times: cp -p over it, an editor's save, a restore from backup.
  std::this_thread::sleep_for(20ms);
  scratch_.file("node.xml", read_file(RISEML_FIXTURE_TOPOLOGY));
  read(xml_, cache_base());
  EXPECT_EQ(runs(), 2);
  read(xml_, cache_base());
  EXPECT_EQ(runs(), 2);
  std::this_thread::sleep_for(20ms);
  counting_helper();  // rewritten: a new riseml installed
  read(xml_, cache_base());
  EXPECT_EQ(runs(), 3);
}

TEST_F(CachedReads, ADamagedEntryIsReadAgainAndReplaced) {
  ASSERT_EQ(mkdir(cache_base().c_str(), 0755), 0);
  read(xml_, cache_base());
  const TopologyCache cache(cache_base());
  std::string entry;
  for (const auto& e : fs::directory_iterator(cache.folder())) entry = e.path().string();
  ASSERT_FALSE(entry.empty());
  std::stringstream text;
  text << std::ifstream(entry).rdbuf();
  const std::string good = text.str();
  ASSERT_TRUE(has(good, "\nriseml-topology 1\n")) << good;
  std::ofstream(entry, std::ios::trunc) << good.substr(0, good.find("\nriseml-topology 1\n") + 1) << "riseml-topology 1\ncore garbage\n";
  std::vector<std::string> notes;
  read(xml_, cache_base(), &notes);
  EXPECT_EQ(runs(), 2);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_TRUE(has(notes[0], "is unreadable (line 2: core: want pus= here)")) << notes[0];
  read(xml_, cache_base());
  EXPECT_EQ(runs(), 2);
}

TEST_F(CachedReads, TheLiveNodeAndAnOffCacheAreReadEveryTime) {
  ASSERT_EQ(mkdir(cache_base().c_str(), 0755), 0);
  read("", cache_base());
  read("", cache_base());
  EXPECT_EQ(runs(), 2);
  read(xml_, "");
  read(xml_, "");
  EXPECT_EQ(runs(), 4);
  EXPECT_FALSE(fs::exists(TopologyCache(cache_base()).folder()));
}

TEST_F(CachedReads, AFailureIsNotCached) {
  ASSERT_EQ(mkdir(cache_base().c_str(), 0755), 0);
  const std::string crash = scratch_.script("crash.sh", "echo run >> " + scratch_.path() + "/runs; kill -SEGV $$");
  for (int i = 0; i < 2; ++i) {
    NodeTopology out;
    TopologyProblem problem;
    std::vector<std::string> notes;
    EXPECT_FALSE(read_topology(TopologySource{xml_, HelperRun{crash, 30s}, cache_base()}, out, problem, notes));
    EXPECT_TRUE(has(problem.what, "hwloc crashed reading " + xml_)) << problem.what;
  }
  EXPECT_EQ(runs(), 2);
  const std::string folder = TopologyCache(cache_base()).folder();
  EXPECT_TRUE(!fs::exists(folder) || fs::is_empty(folder));
}

}  // namespace
}  // namespace riseml::placement::test

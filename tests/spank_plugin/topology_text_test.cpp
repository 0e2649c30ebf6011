// The text riseml-topology prints and the plugin reads back: every real topology survives the
// trip unchanged, names with odd bytes too, and the parser refuses anything the writer would
// not have written, naming the line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology_corpus.hpp"
#include "topology_text.hpp"

namespace riseml::placement::test {
namespace {

TEST(TopologyText, EveryRealTopologyRoundTrips) {
  ASSERT_EQ(corpus_problem(), "");
  auto files = corpus_files();
  files["testbed-fixture"] = RISEML_FIXTURE_TOPOLOGY;
  for (const auto& [name, path] : files) {
    const NodeTopology& topo = load_cached(path);
    const std::string text = write_topology_text(topo);
    NodeTopology back;
    std::string error;
    ASSERT_TRUE(parse_topology_text(text, back, error)) << name << ": " << error;
    EXPECT_TRUE(back.source.empty()) << "the reader sets the source";
    back.source = topo.source;
    EXPECT_EQ(back, topo) << name;
    EXPECT_EQ(write_topology_text(back), text) << name;
  }
}

NodeTopology small_node() {
  NodeTopology t;
  t.cores = {Core{{0, 2}, {1, 2, 3}}, Core{{1}, {1, 2, 4}}};
  t.numa_nodes = {NumaNode{0, {0, 1, 2}}, NumaNode{7, {}}};
  t.gpus = {Gpu{"0000:07:00.0", GpuVendor::amd, "GPU-1", "rsmi0", {0, 2}, 3, {1, 9}},
            Gpu{"0000:08:00.0", GpuVendor::nvidia, "", "", {}, 0, {1, 10}}};
  t.nics = {Nic{"mlx5_0", "0000:09:00.0", {1, 2}, {"ib0", "ib1"}, {1, 11}},
            Nic{"hfi1_0", "0000:0a:00.0", {}, {}, {1, 12}}};
  t.netifs = {NetInterface{"eth0", false, 1.25, {1, 13}}, NetInterface{"ib0", true, 0, {1, 11, 14}}};
  return t;
}

TEST(TopologyText, NamesWithOddBytesAreEscapedAndComeBack) {
  NodeTopology t = small_node();
  t.nics[0].name = "a b,c%d=e\n\xff";
  t.nics[0].netdevs = {"ib 0", "x,y"};
  t.gpus[0].uuid = "-";
  const std::string text = write_topology_text(t);
  EXPECT_NE(text.find("name=a%20b%2Cc%25d=e%0A%FF "), std::string::npos) << text;
  EXPECT_NE(text.find("netdevs=ib%200,x%2Cy "), std::string::npos) << text;
  NodeTopology back;
  std::string error;
  ASSERT_TRUE(parse_topology_text(text, back, error)) << error;
  EXPECT_EQ(back, t);
}

TEST(TopologyText, NamelessDevicesAreLeftOutOfLists) {
  NodeTopology t = small_node();
  t.nics[0].netdevs = {"", "ib1", ""};
  NodeTopology back;
  std::string error;
  ASSERT_TRUE(parse_topology_text(write_topology_text(t), back, error)) << error;
  EXPECT_EQ(back.nics[0].netdevs, std::vector<std::string>{"ib1"});
}

struct Bad {
  std::string text;
  std::string says;
};

TEST(TopologyText, RefusesAnythingTheWriterWouldNotWrite) {
  const std::string head = "riseml-topology 1\n";
  const std::string core = "core pus=0 path=1\n";
  const std::string gpu = "gpu bus=0000:07:00.0 vendor=nvidia uuid= os= local= order=0 path=1,2\n";
  const std::string nic = "nic name=mlx5_0 bus=0000:08:00.0 ports=1 netdevs=ib0 path=1,3\n";
  auto with = [&](const std::string& line) { return head + core + line + "end\n"; };
  const std::vector<Bad> cases = {
      {"", "line 0: empty"},
      {"riseml-topology 2\n" + core + "end\n", "line 1: format version '2', this riseml reads 1"},
      {"<?xml version=\"1.0\"?>\n", "line 1: not riseml-topology output"},
      {head + core, "no 'end' record (output cut short?)"},
      {head + core + "end", "line 3: the last line has no newline"},
      {head + core + "co", "the last line has no newline"},
      {head + core + "end\n" + core, "line 4: text after 'end'"},
      {head + core + "end\n\n", "line 4: text after 'end'"},
      {head + "end\n", "line 2: no core before 'end'"},
      {head + "numa index=0 pus=0\n" + core + "end\n", "line 3: records out of order"},
      {head + core + nic + gpu + "end\n", "line 4: records out of order"},
      {head + "frobnicate x=1\n" + core + "end\n", "line 2: unknown record 'frobnicate'"},
      {head + "core pus=0,0 path=1\nend\n", "line 2: CPU 0 in two cores"},
      {head + core + "core pus=1,0 path=2\nend\n", "line 3: CPU 0 in two cores"},
      {head + "core pus= path=1\nend\n", "core without CPUs"},
      {head + "core pus=0 path=\nend\n", "empty path"},
      {head + "core pus=01 path=1\nend\n", "bad cpu number"},
      {head + "core pus=4294967296 path=1\nend\n", "bad cpu number"},
      {head + "core pus=-1 path=1\nend\n", "bad cpu number"},
      {head + "core pus=+1 path=1\nend\n", "bad cpu number"},
      {head + "core pus=0, path=1\nend\n", "bad cpu number"},
      {head + "core pus=0 path=18446744073709551616\nend\n", "bad path"},
      {head + "core path=1 pus=0\nend\n", "core: want pus= here"},
      {head + "core pus=0\nend\n", "core: missing path="},
      {head + "core pus=0 path=1 extra=1\nend\n", "unexpected text after the last key"},
      {head + "core pus=0 path=1 \nend\n", "unexpected text after the last key"},
      {head + "core pus=0  path=1\nend\n", "want path= here"},
      {head + "core pus=0 path=1\r\nend\n", "bad path"},
      {head + std::string("core pus=0 path=1\0\nend\n", 23), "bad path"},
      {with("gpu bus=0000:07:00.0 vendor=intel uuid= os= local= order=0 path=1\n"), "vendor is neither"},
      {with("gpu bus= vendor=nvidia uuid= os= local= order=0 path=1\n"), "bus is empty"},
      {with("gpu bus=%41 vendor=nvidia uuid= os= local= order=0 path=1\n"), "needless or NUL %XX escape in bus"},
      {with("nic name=mlx5%5f0 bus=b ports= netdevs= path=1\n"), "bad %XX escape in name"},
      {with("nic name=mlx5%2 bus=b ports= netdevs= path=1\n"), "bad %XX escape in name"},
      {with("nic name=a%00b bus=b ports= netdevs= path=1\n"), "needless or NUL %XX escape in name"},
      {with("nic name=a\x01 bus=b ports= netdevs= path=1\n"), "unescaped byte in name"},
      {with("nic name=\xc3\xa9 bus=b ports= netdevs= path=1\n"), "unescaped byte in name"},
      {with("nic name=a bus=b ports= netdevs=ib0,,ib1 path=1\n"), "netdevs is empty"},
      {with("nic name=a bus=b ports= netdevs=ib0, path=1\n"), "netdevs is empty"},
      {with("netif name=eth0 ipoib=2 speed=0 path=1\n"), "ipoib is neither 0 nor 1"},
      {with("netif name=eth0 ipoib=0 speed=nan path=1\n"), "bad speed"},
      {with("netif name=eth0 ipoib=0 speed=inf path=1\n"), "bad speed"},
      {with("netif name=eth0 ipoib=0 speed=1e400 path=1\n"), "bad speed"},
      {with("netif name=eth0 ipoib=0 speed=-0 path=1\n"), "bad speed"},
      {with("netif name=eth0 ipoib=0 speed=1.50 path=1\n"), "bad speed"},
      {with("netif name=eth0 ipoib=0 speed= path=1\n"), "bad speed"},
      {with("end x\n"), "unknown record 'end'"},
  };
  for (const Bad& c : cases) {
    NodeTopology out = small_node();
    std::string error;
    EXPECT_FALSE(parse_topology_text(c.text, out, error)) << c.text;
    EXPECT_NE(error.find(c.says), std::string::npos) << "want '" << c.says << "', got '" << error << "' for\n" << c.text;
    EXPECT_EQ(error.rfind("line ", 0), 0u) << error;
    EXPECT_EQ(out, small_node()) << "the output is untouched on error";
    for (const char ch : error) EXPECT_TRUE(ch >= 0x20 && ch <= 0x7e) << "unprintable byte in: " << error;
  }
}

TEST(TopologyText, AcceptsTheMinimalTopology) {
  NodeTopology out;
  std::string error;
  ASSERT_TRUE(parse_topology_text("riseml-topology 1\ncore pus=0 path=1\nend\n", out, error)) << error;
  ASSERT_EQ(out.cores.size(), 1u);
  EXPECT_EQ(out.cores[0].pus, std::vector<unsigned>{0});
  EXPECT_TRUE(out.gpus.empty());
}

}  // namespace
}  // namespace riseml::placement::test

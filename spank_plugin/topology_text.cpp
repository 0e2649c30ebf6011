#include "topology_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <unordered_set>
#include <vector>

namespace riseml::placement {
namespace {

constexpr char header_word[] = "riseml-topology";

bool needs_escape(unsigned char c) { return c < 0x21 || c > 0x7e || c == '%' || c == ','; }

std::string escape(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (needs_escape(c)) {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

template <typename T>
std::string numbers(const std::vector<T>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

std::string names(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (s.empty()) continue;  // no way to write it in a list; a nameless device is of no use
    out += (out.empty() ? "" : ",") + escape(s);
  }
  return out;
}

std::string speed(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("0");
}

// ---- reading ----

struct Bad {  // thrown inside the parser only, caught in parse_topology_text
  std::string why;
};

[[noreturn]] void bad(std::string why) { throw Bad{std::move(why)}; }

std::uint64_t number(std::string_view s, std::uint64_t max, const char* what) {
  // Canonical only: digits, no sign, no leading zero (the writer's std::to_string).
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s.front() == '0')) bad(std::string("bad ") + what);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > max) bad(std::string("bad ") + what);
  return v;
}

template <typename T>
std::vector<T> number_list(std::string_view s, const char* what) {
  std::vector<T> out;
  if (s.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = s.find(',', start);
    const std::string_view part = s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    out.push_back(static_cast<T>(number(part, std::numeric_limits<T>::max(), what)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lower case is not what the writer writes
}

std::string name(std::string_view s, const char* what, bool may_be_empty) {
  if (s.empty() && !may_be_empty) bad(std::string(what) + " is empty");
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c != '%') {
      if (needs_escape(c)) bad(std::string("unescaped byte in ") + what);
      out += s[i];
      continue;
    }
    const int hi = i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) bad(std::string("bad %XX escape in ") + what);
    const auto decoded = static_cast<unsigned char>(hi * 16 + lo);
    // NUL cannot reach a C string intact; other bytes only escaped where they must be.
    if (decoded == 0 || !needs_escape(decoded)) bad(std::string("needless or NUL %XX escape in ") + what);
    out += static_cast<char>(decoded);
    i += 2;
  }
  return out;
}

std::vector<std::string> name_list(std::string_view s, const char* what) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = s.find(',', start);
    out.push_back(name(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start),
                       what, false));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

double speed_value(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || std::signbit(v) ||
      speed(v) != s) {
    bad("bad speed");
  }
  return v;
}

// One record: "kind key=value key=value", keys exactly those expected, in order.
class Record {
 public:
  Record(std::string_view line, std::initializer_list<const char*> keys) {
    std::size_t pos = line.find(' ');
    const std::string_view kind = line.substr(0, pos);
    for (const char* key : keys) {
      if (pos == std::string_view::npos) bad(std::string(kind) + ": missing " + key + "=");
      const std::size_t next = line.find(' ', pos + 1);
      const std::string_view token = line.substr(pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1);
      const std::string_view want(key);
      if (token.size() <= want.size() || token.substr(0, want.size()) != want || token[want.size()] != '=') {
        bad(std::string(kind) + ": want " + key + "= here");
      }
      values_.push_back(token.substr(want.size() + 1));
      pos = next;
    }
    if (pos != std::string_view::npos) bad(std::string(kind) + ": unexpected text after the last key");
  }
  std::string_view operator[](std::size_t i) const { return values_[i]; }

 private:
  std::vector<std::string_view> values_;
};

enum Kind { kind_core, kind_numa, kind_gpu, kind_nic, kind_netif, kind_end };

Kind kind_of(std::string_view line) {
  const std::string_view word = line.substr(0, line.find(' '));
  if (word == "core") return kind_core;
  if (word == "numa") return kind_numa;
  if (word == "gpu") return kind_gpu;
  if (word == "nic") return kind_nic;
  if (word == "netif") return kind_netif;
  if (word == "end" && line == "end") return kind_end;
  bad("unknown record '" + escape(word.substr(0, 40)) + "'");
}

TreePath path(std::string_view s) {
  TreePath p = number_list<std::uint64_t>(s, "path");
  if (p.empty()) bad("empty path");
  return p;
}

NodeTopology parse(std::string_view text, std::size_t& line_no) {
  NodeTopology topo;
  std::unordered_set<unsigned> seen_pus;
  Kind last = kind_core;
  bool ended = false;
  std::size_t pos = 0;
  line_no = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string_view::npos) bad("the last line has no newline (output cut short?)");
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (ended) bad("text after 'end'");
    if (line_no == 1) {
      const std::string want = std::string(header_word) + " " + std::to_string(topology_text_version);
      if (line == want) continue;
      if (line.substr(0, sizeof header_word) == std::string(header_word) + " ") {
        bad("format version '" + escape(line.substr(sizeof header_word, 20)) + "', this riseml reads " +
            std::to_string(topology_text_version));
      }
      bad("not riseml-topology output (want '" + want + "' first)");
    }
    const Kind kind = kind_of(line);
    if (kind < last) bad("records out of order (cores, numa, gpus, nics, netifs, end)");
    last = kind;
    switch (kind) {
      case kind_core: {
        Record r(line, {"pus", "path"});
        Core c{number_list<unsigned>(r[0], "cpu number"), path(r[1])};
        if (c.pus.empty()) bad("core without CPUs");
        for (unsigned pu : c.pus) {
          if (!seen_pus.insert(pu).second) bad("CPU " + std::to_string(pu) + " in two cores");
        }
        topo.cores.push_back(std::move(c));
        break;
      }
      case kind_numa: {
        Record r(line, {"index", "pus"});
        topo.numa_nodes.push_back(NumaNode{static_cast<unsigned>(number(r[0], std::numeric_limits<unsigned>::max(), "NUMA index")),
                                           number_list<unsigned>(r[1], "cpu number")});
        break;
      }
      case kind_gpu: {
        Record r(line, {"bus", "vendor", "uuid", "os", "local", "order", "path"});
        Gpu g;
        g.pci_bus_id = name(r[0], "bus", false);
        if (r[1] == "nvidia") {
          g.vendor = GpuVendor::nvidia;
        } else if (r[1] == "amd") {
          g.vendor = GpuVendor::amd;
        } else {
          bad("vendor is neither nvidia nor amd");
        }
        g.uuid = name(r[2], "uuid", true);
        g.os_name = name(r[3], "os", true);
        g.local_pus = number_list<unsigned>(r[4], "cpu number");
        g.locality_order = static_cast<unsigned>(number(r[5], std::numeric_limits<unsigned>::max(), "order"));
        g.path = path(r[6]);
        topo.gpus.push_back(std::move(g));
        break;
      }
      case kind_nic: {
        Record r(line, {"name", "bus", "ports", "netdevs", "path"});
        Nic n;
        n.name = name(r[0], "name", false);
        n.pci_bus_id = name(r[1], "bus", false);
        n.active_ports = number_list<unsigned>(r[2], "port");
        n.netdevs = name_list(r[3], "netdevs");
        n.path = path(r[4]);
        topo.nics.push_back(std::move(n));
        break;
      }
      case kind_netif: {
        Record r(line, {"name", "ipoib", "speed", "path"});
        NetInterface i;
        i.name = name(r[0], "name", false);
        if (r[1] != "0" && r[1] != "1") bad("ipoib is neither 0 nor 1");
        i.ipoib = r[1] == "1";
        i.link_speed = speed_value(r[2]);
        i.path = path(r[3]);
        topo.netifs.push_back(std::move(i));
        break;
      }
      case kind_end:
        if (topo.cores.empty()) bad("no core before 'end'");
        ended = true;
        break;
    }
  }
  if (line_no == 0) bad("empty");
  if (!ended) bad("no 'end' record (output cut short?)");
  return topo;
}

}  // namespace

std::string write_topology_text(const NodeTopology& t) {
  std::string out = std::string(header_word) + " " + std::to_string(topology_text_version) + "\n";
  for (const Core& c : t.cores) out += "core pus=" + numbers(c.pus) + " path=" + numbers(c.path) + "\n";
  for (const NumaNode& n : t.numa_nodes) {
    out += "numa index=" + std::to_string(n.os_index) + " pus=" + numbers(n.pus) + "\n";
  }
  for (const Gpu& g : t.gpus) {
    out += "gpu bus=" + escape(g.pci_bus_id) + " vendor=" + (g.vendor == GpuVendor::amd ? "amd" : "nvidia") +
           " uuid=" + escape(g.uuid) + " os=" + escape(g.os_name) + " local=" + numbers(g.local_pus) +
           " order=" + std::to_string(g.locality_order) + " path=" + numbers(g.path) + "\n";
  }
  for (const Nic& n : t.nics) {
    out += "nic name=" + escape(n.name) + " bus=" + escape(n.pci_bus_id) + " ports=" + numbers(n.active_ports) +
           " netdevs=" + names(n.netdevs) + " path=" + numbers(n.path) + "\n";
  }
  for (const NetInterface& i : t.netifs) {
    out += "netif name=" + escape(i.name) + " ipoib=" + (i.ipoib ? "1" : "0") + " speed=" + speed(i.link_speed) +
           " path=" + numbers(i.path) + "\n";
  }
  return out + "end\n";
}

bool parse_topology_text(std::string_view text, NodeTopology& out, std::string& error) noexcept {
  std::size_t line = 0;
  try {
    out = parse(text, line);
    return true;
  } catch (const Bad& b) {
    try {
      error = "line " + std::to_string(line) + ": " + b.why;
    } catch (...) {
    }
  } catch (const std::exception& e) {
    try {
      error = std::string("reading the topology text failed: ") + e.what();
    } catch (...) {
    }
  }
  return false;
}

}  // namespace riseml::placement

#include "agreement.hpp"

#include "naming.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

namespace riseml::engine {

namespace {

std::string format_scale(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Every rank's metadata is equal to the reference in full, which implies agreement in every
// aspect check_agreement compares: the common case (allreduces, broadcasts of one shape), decided
// without building the descriptions only a mismatch needs. Whatever may differ legitimately
// (allgather's first dimension, alltoall's splits) takes the full check.
// The scale factors compare bit for bit (0.0 and -0.0 are told apart, as their descriptions are).
bool identical_everywhere(const TableEntry& g, const TensorMeta& ref) {
  auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  return std::all_of(g.metas.begin(), g.metas.end(), [&](const MetaRef& m) {
    return !m || (*m == ref && bits(m->prescale) == bits(ref.prescale) &&
                  bits(m->postscale) == bits(ref.postscale));
  });
}

}  // namespace

bool is_ready(const TableEntry& g, const std::vector<bool>& joined) {
  for (std::size_t r = 0; r < joined.size(); ++r)
    if (!g.metas[r] && !joined[r]) return false;
  return true;
}

std::optional<CollectiveError> check_join_rule(const TableEntry& g, const std::vector<bool>& joined) {
  // Checked before the entry is ready, so that it fails at once on every rank that submitted
  // it: the others may never submit the same name (unnamed tensors are numbered per rank, and
  // the joined rank's count is behind), and waiting for them would hang.
  const TensorMeta& ref = reference(g);
  if (ref.kind == OpKind::allreduce || ref.kind == OpKind::barrier) return std::nullopt;
  std::vector<int> missing;
  for (std::size_t r = 0; r < joined.size(); ++r)
    if (joined[r] && !g.metas[r]) missing.push_back(static_cast<int>(r));
  if (missing.empty()) return std::nullopt;
  return CollectiveError(ErrorKind::mismatch,
                         "riseml: " + std::string(kind_name(ref.kind)) + " '" + g.name +
                             "' cannot run while " + rank_list(missing) +
                             (missing.size() == 1 ? " has" : " have") +
                             " joined (only allreduce goes on with joined ranks, as in "
                             "Horovod); finish it before join()",
                         missing.front());
}

std::optional<CollectiveError> check_agreement(const TableEntry& g) {
  const TensorMeta& ref = reference(g);
  if (identical_everywhere(g, ref)) return std::nullopt;
  // Compares one aspect over the ranks that submitted; on disagreement, names every value with
  // the ranks that gave it.
  auto aspect = [&](const char* what,
                    const std::function<std::string(const TensorMeta&)>& describe)
      -> std::optional<CollectiveError> {
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    for (std::size_t r = 0; r < g.metas.size(); ++r) {
      const auto& m = g.metas[r];
      if (!m) continue;
      std::string d = describe(*m);
      auto it = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == d; });
      if (it == groups.end())
        groups.push_back({d, {static_cast<int>(r)}});
      else
        it->second.push_back(static_cast<int>(r));
    }
    if (groups.size() <= 1) return std::nullopt;
    std::string msg = "riseml: mismatched " + std::string(what) + " for " +
                      std::string(kind_name(ref.kind)) + " '" + g.name + "': ";
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (i) msg += "; ";
      msg += rank_list(groups[i].second) + ": " + groups[i].first;
    }
    return CollectiveError(ErrorKind::mismatch, msg, groups[1].second.front());
  };
  if (auto e = aspect("operations", [](const TensorMeta& m) { return std::string(kind_name(m.kind)); }))
    return e;
  if (auto e = aspect("data types", [](const TensorMeta& m) { return std::string(to_string(m.dtype)); }))
    return e;
  if (auto e = aspect("memory (every rank must pass GPU tensors, or every rank host tensors)",
                      [](const TensorMeta& m) { return std::string(m.on_device ? "GPU" : "host"); }))
    return e;
  if (ref.kind == OpKind::allreduce || ref.kind == OpKind::reducescatter) {
    if (auto e = aspect("reduce operations", [](const TensorMeta& m) {
          return m.adasum ? std::string("adasum") : std::string(to_string(m.op));
        }))
      return e;
    if (auto e = aspect("scale factors", [](const TensorMeta& m) {
          return "prescale " + format_scale(m.prescale) + ", postscale " + format_scale(m.postscale);
        }))
      return e;
  }
  if (ref.kind == OpKind::broadcast) {
    if (auto e = aspect("root ranks", [](const TensorMeta& m) { return std::to_string(m.root); }))
      return e;
  }
  if (auto e = aspect("tensor counts",
                      [](const TensorMeta& m) { return std::to_string(m.shapes.size()); }))
    return e;
  if (ref.kind == OpKind::allgather || ref.kind == OpKind::alltoall)
    return aspect("shapes (all but the first dimension must agree)", [](const TensorMeta& m) {
      std::string all;
      for (const auto& shape : m.shapes) {
        std::string s = "[*";
        for (std::size_t i = 1; i < shape.size(); ++i) s += ", " + std::to_string(shape[i]);
        all += (all.empty() ? "" : " ") + s + "]";
      }
      return all;
    });
  return aspect("shapes", [](const TensorMeta& m) {
    std::string s;
    for (std::size_t i = 0; i < m.shapes.size(); ++i) s += (i ? " " : "") + describe_shape(m.shapes[i]);
    return s;
  });
}

bool busy_elsewhere(const TensorTable& table, const std::vector<int>& ranks,
                    const TableEntry& barrier) {
  for (const auto& [seq, g] : table) {
    if (&g == &barrier || g.finished() || reference(g).kind == OpKind::barrier) continue;
    for (int r : ranks)
      if (g.metas[static_cast<std::size_t>(r)]) return true;
  }
  return false;
}

}  // namespace riseml::engine

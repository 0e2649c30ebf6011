#include "agreement.hpp"

#include "naming.hpp"

#include <algorithm>
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

// Every rank's metadata equals the reference in every aspect check_agreement compares (the
// common case, checked without building the descriptions that only a mismatch needs).
bool plainly_agree(const TableEntry& g, const TensorMeta& ref) {
  const bool reduces = ref.kind == OpKind::allreduce || ref.kind == OpKind::reducescatter;
  const bool first_dim_free = ref.kind == OpKind::allgather || ref.kind == OpKind::alltoall;
  for (const auto& m : g.metas) {
    if (!m) continue;
    if (m->kind != ref.kind || m->dtype != ref.dtype || m->on_device != ref.on_device) return false;
    if (reduces && (m->adasum != ref.adasum || m->op != ref.op || m->prescale != ref.prescale ||
                    m->postscale != ref.postscale))
      return false;
    if (ref.kind == OpKind::broadcast && m->root != ref.root) return false;
    if (m->shapes.size() != ref.shapes.size()) return false;
    for (std::size_t t = 0; t < ref.shapes.size(); ++t) {
      const auto& a = m->shapes[t];
      const auto& b = ref.shapes[t];
      if (!first_dim_free ? a != b
                          : a.size() != b.size() || !std::equal(a.begin() + (a.empty() ? 0 : 1), a.end(),
                                                                b.begin() + (b.empty() ? 0 : 1)))
        return false;
    }
  }
  return true;
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
  if (plainly_agree(g, ref)) return std::nullopt;
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

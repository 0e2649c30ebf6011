#include "wire.hpp"

#include <riseml/collective_error.hpp>

#include <cstring>

namespace riseml::engine {

TensorMeta meta_of(const Request& r) {
  TensorMeta m;
  m.kind = r.kind;
  m.dtype = r.dtype;
  m.op = r.op;
  m.root = r.root;
  m.prescale = r.prescale;
  m.postscale = r.postscale;
  m.on_device = !r.tensors.empty() && r.tensors.front().device >= 0;
  m.adasum = r.adasum;
  m.splits = r.splits;
  m.shapes.reserve(r.tensors.size());
  for (const TensorArg& t : r.tensors) m.shapes.push_back(t.shape);
  return m;
}

bool describes(const TensorMeta& m, const Request& r) {
  if (m.kind != r.kind || m.dtype != r.dtype || m.op != r.op || m.root != r.root ||
      m.prescale != r.prescale || m.postscale != r.postscale || m.adasum != r.adasum ||
      m.on_device != (!r.tensors.empty() && r.tensors.front().device >= 0) || m.splits != r.splits ||
      m.shapes.size() != r.tensors.size())
    return false;
  for (std::size_t i = 0; i < m.shapes.size(); ++i)
    if (m.shapes[i] != r.tensors[i].shape) return false;
  return true;
}

std::string describe_shape(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::size_t element_count(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::size_t meta_bytes(const TensorMeta& meta) {
  std::size_t n = 0;
  for (const auto& s : meta.shapes) n += element_count(s);
  return n * element_size(meta.dtype);
}

namespace {

class Writer {
 public:
  template <typename T>
  void pod(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    pod(static_cast<std::uint32_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
  }
  std::vector<std::byte> out;
};

class Reader {
 public:
  Reader(const std::byte* d, std::size_t n, int rank) : data(d), size(n), from(rank) {}
  template <typename T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string str() {
    auto n = pod<std::uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(data + pos), n);
    pos += n;
    return s;
  }
  void need(std::size_t n) {
    if (size - pos < n)
      throw CollectiveError(ErrorKind::mismatch,
                            "riseml: malformed engine message from rank " + std::to_string(from) +
                                " (another riseml version?)",
                            from);
  }
  const std::byte* data;
  std::size_t size;
  std::size_t pos = 0;
  int from;
};

}  // namespace

std::vector<std::byte> encode(const Message& m) {
  Writer w;
  w.pod<std::uint8_t>(static_cast<std::uint8_t>((m.shutdown ? 1 : 0) | (m.join ? 2 : 0) | (m.stuck ? 4 : 0) | (m.leaving ? 8 : 0)));
  w.pod(static_cast<std::uint32_t>(m.stalled.size()));
  for (const auto& s : m.stalled) {
    w.pod(s.seq);
    w.str(s.name);
    w.str(s.message);
  }
  w.pod(static_cast<std::uint32_t>(m.entries.size()));
  for (const WireEntry& e : m.entries) {
    w.pod<std::uint8_t>(e.cached ? 1 : 0);
    if (e.cached) {
      w.pod(e.cache_id);
      continue;
    }
    w.str(e.name);
    w.pod(static_cast<std::uint8_t>(e.meta.kind));
    w.pod(static_cast<std::uint8_t>(e.meta.dtype));
    w.pod(static_cast<std::uint8_t>(e.meta.op));
    w.pod<std::uint8_t>(static_cast<std::uint8_t>((e.meta.on_device ? 1 : 0) |
                                                  (e.meta.adasum ? 2 : 0)));
    w.pod(e.meta.root);
    w.pod(e.meta.prescale);
    w.pod(e.meta.postscale);
    w.pod(static_cast<std::uint32_t>(e.meta.shapes.size()));
    for (const auto& shape : e.meta.shapes) {
      w.pod(static_cast<std::uint32_t>(shape.size()));
      for (std::int64_t d : shape) w.pod(d);
    }
    w.pod(static_cast<std::uint32_t>(e.meta.splits.size()));
    for (std::int64_t d : e.meta.splits) w.pod(d);
  }
  return std::move(w.out);
}

Message decode(const std::byte* data, std::size_t size, int from_rank) {
  Reader r(data, size, from_rank);
  Message m;
  auto flags = r.pod<std::uint8_t>();
  m.shutdown = (flags & 1) != 0;
  m.join = (flags & 2) != 0;
  m.stuck = (flags & 4) != 0;
  m.leaving = (flags & 8) != 0;
  auto nstalled = r.pod<std::uint32_t>();
  for (std::uint32_t i = 0; i < nstalled; ++i) {
    StallVerdict s;
    s.seq = r.pod<std::uint64_t>();
    s.name = r.str();
    s.message = r.str();
    m.stalled.push_back(std::move(s));
  }
  auto n = r.pod<std::uint32_t>();
  for (std::uint32_t i = 0; i < n; ++i) {
    WireEntry e;
    e.cached = r.pod<std::uint8_t>() != 0;
    if (e.cached) {
      e.cache_id = r.pod<std::uint32_t>();
    } else {
      e.name = r.str();
      const auto kind = r.pod<std::uint8_t>();
      const auto dtype = r.pod<std::uint8_t>();
      const auto op = r.pod<std::uint8_t>();
      if (kind > static_cast<std::uint8_t>(OpKind::alltoall) ||
          dtype > static_cast<std::uint8_t>(DataType::boolean) ||
          op > static_cast<std::uint8_t>(ReduceOp::product))
        r.need(r.size + 1);  // out of range: malformed
      e.meta.kind = static_cast<OpKind>(kind);
      e.meta.dtype = static_cast<DataType>(dtype);
      e.meta.op = static_cast<ReduceOp>(op);
      const auto bits = r.pod<std::uint8_t>();
      e.meta.on_device = (bits & 1) != 0;
      e.meta.adasum = (bits & 2) != 0;
      e.meta.root = r.pod<std::int32_t>();
      e.meta.prescale = r.pod<double>();
      e.meta.postscale = r.pod<double>();
      auto nshapes = r.pod<std::uint32_t>();
      for (std::uint32_t k = 0; k < nshapes; ++k) {
        auto ndims = r.pod<std::uint32_t>();
        r.need(static_cast<std::size_t>(ndims) * 8);
        std::vector<std::int64_t> shape;
        for (std::uint32_t d = 0; d < ndims; ++d) shape.push_back(r.pod<std::int64_t>());
        e.meta.shapes.push_back(std::move(shape));
      }
      auto nsplits = r.pod<std::uint32_t>();
      r.need(static_cast<std::size_t>(nsplits) * 8);
      for (std::uint32_t k = 0; k < nsplits; ++k) e.meta.splits.push_back(r.pod<std::int64_t>());
    }
    m.entries.push_back(std::move(e));
  }
  return m;
}

}  // namespace riseml::engine

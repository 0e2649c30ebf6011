#include "host_scatter.hpp"

#include "scaling.hpp"

#include <algorithm>
#include <cstring>

namespace riseml::engine {

namespace {

std::size_t row_elements(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= static_cast<std::size_t>(shape[i]);
  return n;
}

// Where rank r's rows of a `rows`-row reducescatter start.
std::int64_t scatter_offset(std::int64_t rows, int size, int r) {
  const std::int64_t base = rows / size, extra = rows % size;
  return base * r + std::min<std::int64_t>(r, extra);
}

}  // namespace

std::int64_t reducescatter_rows(std::int64_t rows, int size, int rank) {
  if (size <= 0 || rows < 0) return 0;
  return rows / size + (rank < rows % size ? 1 : 0);
}

std::size_t host_allgather(const ExecutionContext& cx, const TableEntry& g, LocalRequest* l) {
  const TensorMeta& m = reference(g);
  const std::size_t esize = element_size(m.dtype);
  const std::size_t tensors = m.shapes.size();
  const auto n = static_cast<std::size_t>(cx.size);
  // counts[r]: rank r's elements of every tensor, back to back.
  std::vector<std::size_t> counts(n, 0);
  std::vector<std::int64_t> rows(tensors, 0);
  for (std::size_t r = 0; r < n; ++r) {
    const auto& mr = g.metas[r];
    if (!mr) continue;
    for (std::size_t i = 0; i < tensors; ++i) {
      counts[r] += element_count(mr->shapes[i]);
      rows[i] += mr->shapes[i][0];
    }
  }
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  const std::byte dummy[8] = {};
  const void* in = dummy;
  std::vector<std::byte> packed;
  if (l && tensors == 1 && l->request.tensors[0].input) {
    in = l->request.tensors[0].input;
  } else if (l && tensors > 1) {
    packed.resize(counts[static_cast<std::size_t>(cx.rank)] * esize);
    std::size_t at = 0;
    for (std::size_t i = 0; i < tensors; ++i) {
      const std::size_t b = element_count(l->request.tensors[i].shape) * esize;
      if (b) std::memcpy(packed.data() + at, l->request.tensors[i].input, b);
      at += b;
    }
    in = packed.data();
  }
  std::vector<std::byte> all(std::max(total * esize, esize));
  cx.comm.allgatherv(in, all.data(), counts, m.dtype);
  all.resize(total * esize);
  if (!l) return total * esize;
  std::vector<std::vector<std::byte>> outputs(tensors);
  std::vector<std::vector<std::int64_t>> shapes(tensors);
  if (tensors == 1) {
    outputs[0] = std::move(all);
  } else {
    for (std::size_t i = 0; i < tensors; ++i) {
      std::size_t bytes = 0;
      for (std::size_t r = 0; r < n; ++r)
        if (g.metas[r]) bytes += element_count(g.metas[r]->shapes[i]) * esize;
      outputs[i].reserve(bytes);
    }
    std::size_t at = 0;
    for (std::size_t r = 0; r < n; ++r) {
      if (!g.metas[r]) continue;
      for (std::size_t i = 0; i < tensors; ++i) {
        const std::size_t b = element_count(g.metas[r]->shapes[i]) * esize;
        outputs[i].insert(outputs[i].end(), all.begin() + static_cast<std::ptrdiff_t>(at),
                          all.begin() + static_cast<std::ptrdiff_t>(at + b));
        at += b;
      }
    }
  }
  for (std::size_t i = 0; i < tensors; ++i) {
    shapes[i] = m.shapes[i];
    shapes[i][0] = rows[i];
  }
  l->handle->outputs = std::move(outputs);
  l->handle->output_shapes = std::move(shapes);
  return total * esize;
}

std::size_t host_reducescatter(const ExecutionContext& cx, const TableEntry& g, LocalRequest* l,
                               std::vector<std::byte>& fusion_buffer) {
  const TensorMeta& m = reference(g);
  const std::size_t esize = element_size(m.dtype);
  const std::size_t tensors = m.shapes.size();
  const auto n = static_cast<std::size_t>(cx.size);
  // Rank r's block: its rows of tensor 0, then of tensor 1, ...
  std::vector<std::size_t> counts(n, 0);
  std::size_t total = 0;
  for (const auto& shape : m.shapes) {
    const std::size_t row = row_elements(shape);
    for (std::size_t r = 0; r < n; ++r)
      counts[r] += static_cast<std::size_t>(reducescatter_rows(shape[0], cx.size, static_cast<int>(r))) * row;
    total += element_count(shape);
  }
  const std::size_t mine = counts[static_cast<std::size_t>(cx.rank)];
  if (!l) return total * esize;  // unreachable: a joined rank fails the agreement first
  const bool direct = tensors == 1 && m.prescale == 1.0;
  const void* in = l->request.tensors[0].input;
  if (!direct) {
    // Pack (and prescale) into the fusion buffer in rank-block order.
    fusion_buffer.resize(std::max(fusion_buffer.size(), total * esize));
    std::byte* at = fusion_buffer.data();
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < tensors; ++i) {
        const auto& shape = m.shapes[i];
        const std::size_t row = row_elements(shape);
        const auto first = static_cast<std::size_t>(scatter_offset(shape[0], cx.size, static_cast<int>(r)));
        const auto count = static_cast<std::size_t>(reducescatter_rows(shape[0], cx.size, static_cast<int>(r))) * row;
        if (count)
          scale_copy(static_cast<const std::byte*>(l->request.tensors[i].input) + first * row * esize,
                     at, count, m.dtype, m.prescale);
        at += count * esize;
      }
    }
    in = fusion_buffer.data();
  }
  std::vector<std::byte> block;
  void* out = l->request.tensors[0].output;
  if (tensors > 1 || out == nullptr) {
    block.resize(std::max(mine * esize, esize));
    out = block.data();
  }
  cx.comm.reduce_scatterv(in, out, counts, m.dtype, m.op);
  // Unpack this rank's rows (and postscale).
  const std::byte* from = static_cast<const std::byte*>(out);
  for (std::size_t i = 0; i < tensors; ++i) {
    const auto& shape = m.shapes[i];
    const auto count = static_cast<std::size_t>(reducescatter_rows(shape[0], cx.size, cx.rank)) * row_elements(shape);
    void* dst = l->request.tensors[i].output;
    if (count && (dst != from || m.postscale != 1.0)) scale_copy(from, dst, count, m.dtype, m.postscale);
    from += count * esize;
  }
  return total * esize;
}

std::size_t host_alltoall(const ExecutionContext& cx, const TableEntry& g, LocalRequest* l) {
  const TensorMeta& m = reference(g);
  const std::size_t esize = element_size(m.dtype);
  const auto n = static_cast<std::size_t>(cx.size);
  const std::size_t row = row_elements(m.shapes[0]);
  const auto me = static_cast<std::size_t>(cx.rank);
  if (!l) return 0;  // unreachable: a joined rank fails the agreement first
  std::vector<std::size_t> send(n), recv(n);
  std::vector<std::int64_t> received(n);
  std::int64_t rows = 0;
  for (std::size_t r = 0; r < n; ++r) {
    send[r] = static_cast<std::size_t>(l->request.splits[r]) * row;
    received[r] = g.metas[r]->splits[me];
    recv[r] = static_cast<std::size_t>(received[r]) * row;
    rows += received[r];
  }
  const std::size_t bytes = static_cast<std::size_t>(rows) * row * esize;
  std::vector<std::byte> out(std::max(bytes, esize));
  const std::byte dummy[8] = {};
  const void* in = l->request.tensors[0].input ? l->request.tensors[0].input : dummy;
  cx.comm.alltoallv(in, send, out.data(), recv, m.dtype);
  out.resize(bytes);
  std::vector<std::int64_t> shape = m.shapes[0];
  shape[0] = rows;
  l->handle->outputs = {std::move(out)};
  l->handle->output_shapes = {std::move(shape)};
  l->handle->received_splits = std::move(received);
  return bytes;
}

}  // namespace riseml::engine

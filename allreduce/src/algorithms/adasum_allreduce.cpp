// Adasum (Maleki et al., "Scaling Distributed Training with Adaptive Summation", MLSys 2021;
// Horovod's op=Adasum). Two partial results a, b of a tensor combine as
//   (1 - a.b / (2|a|^2)) a + (1 - a.b / (2|b|^2)) b     (coefficient 1 where |a|^2 == 0),
// with the dot products per tensor, accumulated in double.
//
// With n ranks and p the largest power of two <= n, rank r >= p first sends its vector to r - p,
// which combines the two. The p ranks then halve: at level d = 1, 2, 4, ... rank v swaps halves
// with v ^ d, and the 2d ranks that together hold the two sub-groups' vectors sum their partial
// a.b, a.a, b.b (recursive doubling among themselves) before each combines the half it keeps.
// Recursive doubling gathers the pieces back, and r - p sends the result to r.
//
// Every tensor is halved on its own, not the fused buffer as a whole: each piece, each partial
// dot product and each sum of them is then the same whatever tensors share the call, so a fused
// call gives the same bits as one call per tensor (an engine's fusion, which depends on timing,
// cannot change results). The pieces of several tensors travel packed in one message.
// float16/bfloat16 travel as they are; a combine computes in double and rounds once per level.
#include <bit>
#include <cstdint>
#include <cstring>

#include <riseml/half_float.hpp>
#include "../transport/exchange.hpp"
#include "algorithms.hpp"

namespace riseml {

namespace {

struct Float32 {
  using Storage = float;
  static double load(float x) { return x; }
  static float store(double v) { return static_cast<float>(v); }
};
struct Float64 {
  using Storage = double;
  static double load(double x) { return x; }
  static double store(double v) { return v; }
};
// Through float32, which holds every 16-bit value exactly; the one rounding to 16 bits that
// matters is the last (double -> float32 first cannot round differently except at exact ties).
struct Float16 {
  using Storage = std::uint16_t;
  static double load(std::uint16_t x) { return kernels::float16_to_float(x); }
  static std::uint16_t store(double v) { return kernels::float_to_float16(static_cast<float>(v)); }
};
struct BFloat16 {
  using Storage = std::uint16_t;
  static double load(std::uint16_t x) { return kernels::bfloat16_to_float(x); }
  static std::uint16_t store(double v) { return kernels::float_to_bfloat16(static_cast<float>(v)); }
};

// a.b, a.a, b.b of n elements, in this order (the order fixes the bits).
template <class E>
void dot_products(const std::byte* a_bytes, const std::byte* b_bytes, std::size_t n, double* dots) {
  const auto* a = reinterpret_cast<const typename E::Storage*>(a_bytes);
  const auto* b = reinterpret_cast<const typename E::Storage*>(b_bytes);
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const double x = E::load(a[k]), y = E::load(b[k]);
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  dots[0] = ab;
  dots[1] = aa;
  dots[2] = bb;
}

// out = ca a + cb b; out may be a or b.
template <class E>
void combine(std::byte* out_bytes, const std::byte* a_bytes, const std::byte* b_bytes,
             std::size_t n, double ca, double cb) {
  auto* out = reinterpret_cast<typename E::Storage*>(out_bytes);
  const auto* a = reinterpret_cast<const typename E::Storage*>(a_bytes);
  const auto* b = reinterpret_cast<const typename E::Storage*>(b_bytes);
  for (std::size_t k = 0; k < n; ++k) out[k] = E::store(ca * E::load(a[k]) + cb * E::load(b[k]));
}

// A zero vector adds nothing to project out: plain sum (and no 0/0).
double coefficient(double ab, double self) {
  return self == 0 ? 1.0 : 1.0 - ab / (2 * self);
}

struct Range {
  std::size_t lo, hi;
  std::size_t size() const { return hi - lo; }
};

// The part of a tensor of `count` elements rank v holds after `levels` halvings: bit j of v
// picks the upper half at level j.
Range piece(std::size_t count, int v, int levels) {
  Range r{0, count};
  for (int j = 0; j < levels; ++j) {
    const std::size_t mid = r.lo + r.size() / 2;
    if ((v >> j) & 1)
      r.lo = mid;
    else
      r.hi = mid;
  }
  return r;
}

class Adasum {
 public:
  Adasum(Context& c, const CallTag& tag, Group g, std::span<const std::size_t> counts,
         DataType type)
      : c_(c), tag_(tag), g_(g), counts_(counts), esize_(element_size(type)) {
    switch (type) {
      case DataType::float32:
        set_kernels<Float32>();
        break;
      case DataType::float64:
        set_kernels<Float64>();
        break;
      case DataType::float16:
        set_kernels<Float16>();
        break;
      case DataType::bfloat16:
        set_kernels<BFloat16>();
        break;
      default:
        throw CollectiveError(ErrorKind::invalid_argument, "Adasum needs floating point tensors");
    }
  }

  void run(const std::byte* in, std::byte* out) {
    const int n = g_.size(), i = g_.index;
    std::size_t total = 0, half = 0;
    for (std::size_t k : counts_) {
      total += k;
      half += k - k / 2;  // the larger half: the most any level moves per tensor
    }
    if (n == 1) {
      if (out != in && total) std::memcpy(out, in, total * esize_);
      return;
    }
    const int p = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
    const int extra = n - p;
    if (i >= p) {  // folded away: hand the vector over, get the result back
      exchange(c_, tag_, {g_.at(i - p), in, total * esize_}, {});
      exchange(c_, tag_, {}, {g_.at(i - p), total * esize_, out, {}});
      return;
    }
    // Scratch: 0 receives the partner's data, 1 packs what is sent, 2 the dot products (this
    // rank's and the partner's, 3 per tensor each).
    const std::size_t tensors = counts_.size();
    received_ = c_.scratch((i < extra ? total : half) * esize_, 0);
    packed_ = tensors > 1 ? c_.scratch(half * esize_, 1) : nullptr;
    dots_ = reinterpret_cast<double*>(c_.scratch(2 * 3 * tensors * sizeof(double), 2));
    peer_dots_ = dots_ + 3 * tensors;
    if (i < extra) {
      exchange(c_, tag_, {}, {g_.at(i + p), total * esize_, received_, {}});
      fold(in, out);
    } else if (out != in && total) {
      std::memcpy(out, in, total * esize_);
    }
    const int levels = std::countr_zero(static_cast<unsigned>(p));
    for (int level = 0; level < levels; ++level) halve(out, level);
    for (int level = levels - 1; level >= 0; --level) gather(out, level);
    if (i < extra) exchange(c_, tag_, {g_.at(i + p), out, total * esize_}, {});
  }

 private:
  template <class E>
  void set_kernels() {
    dot_products_ = &dot_products<E>;
    combine_ = &combine<E>;
  }

  // out = Adasum(in, the vector of rank i + p in received_), each tensor whole on this rank.
  void fold(const std::byte* in, std::byte* out) {
    std::size_t at = 0;
    for (std::size_t count : counts_) {
      const std::size_t off = at * esize_;
      double d[3];
      dot_products_(in + off, received_ + off, count, d);
      combine_(out + off, in + off, received_ + off, count, coefficient(d[0], d[1]),
               coefficient(d[0], d[2]));
      at += count;
    }
  }

  // Level `level` of the halving: keep one half of every tensor's piece, send the other half to
  // the partner, and combine the kept half with the partner's copy of it.
  void halve(std::byte* out, int level) {
    const int i = g_.index, d = 1 << level, partner = i ^ d;
    const bool lower = (i & d) == 0;  // this rank holds sub-group a, the partner b
    // The partner keeps exactly what this rank gives, and the other way round.
    const Message give = pack(out, partner, level + 1);
    const std::size_t keep_bytes = packed_size(i, level + 1);
    std::byte* theirs = received_;
    exchange(c_, tag_, {g_.at(partner), give.data, give.bytes},
             {g_.at(partner), keep_bytes, theirs, {}});

    std::size_t at = 0, packed_at = 0, t = 0;
    for (std::size_t count : counts_) {
      const Range keep = piece(count, i, level + 1);
      const std::byte* mine = out + (at + keep.lo) * esize_;
      const std::byte* other = theirs + packed_at * esize_;
      dot_products_(lower ? mine : other, lower ? other : mine, keep.size(), dots_ + 3 * t);
      at += count;
      packed_at += keep.size();
      ++t;
    }
    sum_dot_products(d);

    at = packed_at = t = 0;
    for (std::size_t count : counts_) {
      const Range keep = piece(count, i, level + 1);
      std::byte* mine = out + (at + keep.lo) * esize_;
      const std::byte* other = theirs + packed_at * esize_;
      const double* s = dots_ + 3 * t;
      combine_(mine, lower ? mine : other, lower ? other : mine, keep.size(),
               coefficient(s[0], s[1]), coefficient(s[0], s[2]));
      at += count;
      packed_at += keep.size();
      ++t;
    }
  }

  // Sums the dot products over the 2d ranks of this rank's group at level d (recursive
  // doubling). x + y == y + x bit for bit, so the whole group ends with the same sums.
  void sum_dot_products(int d) {
    const int i = g_.index;
    const std::size_t values = 3 * counts_.size();
    for (int e = 1; e <= d; e *= 2) {
      exchange(
          c_, tag_,
          {g_.at(i ^ e), reinterpret_cast<const std::byte*>(dots_), values * sizeof(double)},
          {g_.at(i ^ e), values * sizeof(double), reinterpret_cast<std::byte*>(peer_dots_), {}});
      for (std::size_t k = 0; k < values; ++k) dots_[k] += peer_dots_[k];
    }
  }

  // Undoes level `level`: send the pieces this rank computed, receive the partner's in place.
  void gather(std::byte* out, int level) {
    const int i = g_.index, partner = i ^ (1 << level);
    const Message mine = pack(out, i, level + 1);
    const std::size_t theirs_bytes = packed_size(partner, level + 1);
    if (counts_.size() == 1) {
      const Range r = piece(counts_[0], partner, level + 1);
      exchange(c_, tag_, {g_.at(partner), mine.data, mine.bytes},
               {g_.at(partner), theirs_bytes, out + r.lo * esize_, {}});
      return;
    }
    exchange(c_, tag_, {g_.at(partner), mine.data, mine.bytes},
             {g_.at(partner), theirs_bytes, received_, {}});
    std::size_t at = 0, packed_at = 0;
    for (std::size_t count : counts_) {
      const Range r = piece(count, partner, level + 1);
      if (r.size())
        std::memcpy(out + (at + r.lo) * esize_, received_ + packed_at * esize_, r.size() * esize_);
      at += count;
      packed_at += r.size();
    }
  }

  struct Message {
    const std::byte* data;
    std::size_t bytes;
  };

  // Rank v's pieces after `levels` halvings of every tensor, one after the other: in place when
  // there is one tensor, else copied into packed_.
  Message pack(const std::byte* out, int v, int levels) {
    if (counts_.size() == 1) {
      const Range r = piece(counts_[0], v, levels);
      return {out + r.lo * esize_, r.size() * esize_};
    }
    std::size_t at = 0, packed_at = 0;
    for (std::size_t count : counts_) {
      const Range r = piece(count, v, levels);
      if (r.size())
        std::memcpy(packed_ + packed_at * esize_, out + (at + r.lo) * esize_, r.size() * esize_);
      at += count;
      packed_at += r.size();
    }
    return {packed_, packed_at * esize_};
  }

  std::size_t packed_size(int v, int levels) const {
    std::size_t n = 0;
    for (std::size_t count : counts_) n += piece(count, v, levels).size();
    return n * esize_;
  }

  Context& c_;
  const CallTag& tag_;
  Group g_;
  std::span<const std::size_t> counts_;
  std::size_t esize_;
  void (*dot_products_)(const std::byte*, const std::byte*, std::size_t, double*) = nullptr;
  void (*combine_)(std::byte*, const std::byte*, const std::byte*, std::size_t, double,
                   double) = nullptr;
  std::byte* received_ = nullptr;
  std::byte* packed_ = nullptr;
  double* dots_ = nullptr;
  double* peer_dots_ = nullptr;
};

}  // namespace

void adasum_allreduce(Context& c, const CallTag& tag, Group g, const std::byte* in, std::byte* out,
                      std::span<const std::size_t> tensor_counts, DataType type) {
  Adasum(c, tag, g, tensor_counts, type).run(in, out);
}

}  // namespace riseml

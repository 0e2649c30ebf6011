// The kernels of kernels.hpp. The 16-bit conversions are the CPU reference
// (riseml/half_float.hpp, __host__ __device__ under nvcc) done on bits, not the
// CUDA intrinsics, so NaN payloads and every rounding match the CPU bit for bit.
//
// Speed (issue 35): every elementwise kernel moves 16 bytes per load and store (uint4: 4
// float32, 2 float64, 8 float16/bfloat16, 16 int8) over the 16-byte aligned body of its
// buffer, four vectors in flight per thread, and handles the unaligned head and the remainder
// element by element in the same launch. The grid is one full wave of the device (SM count x
// resident blocks per SM of that kernel, from cudaOccupancyMaxActiveBlocksPerMultiprocessor,
// cached per kernel and device) or less when there is less work; the threads stride over it.
// Packing sends the whole tensor table (up to kMaxFusedTensors) in the kernel's parameters
// (__grid_constant__, up to the 32 KiB of CUDA 12.1+), so 1024 tensors are one launch with no
// upload, no allocation, no staging area and nothing that waits on the device.
#include <riseml/collective_error.hpp>
#include <riseml/cuda/kernels.hpp>

#include <riseml/half_float.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace riseml::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // vectors loaded per thread before any is stored

using riseml::kernels::bfloat16_to_float;
using riseml::kernels::float16_to_float;
using riseml::kernels::float_to_bfloat16;
using riseml::kernels::float_to_float16;

struct ToF16 {
  __device__ float load(std::uint16_t h) const { return float16_to_float(h); }
  __device__ std::uint16_t store(float f) const { return float_to_float16(f); }
};
struct ToBF16 {
  __device__ float load(std::uint16_t h) const { return bfloat16_to_float(h); }
  __device__ std::uint16_t store(float f) const { return float_to_bfloat16(f); }
};

// Multiplies with __fmul_rn/__dmul_rn and divides with __fdiv_rn/__ddiv_rn: never contracted.
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }

// ---- per-element operations -------------------------------------------------------------

template <typename T, bool Divide>
struct FloatOp {  // float32 / float64
  T factor;
  __device__ T operator()(T x) const { return Divide ? div(x, factor) : mul(x, factor); }
};

template <typename Half, bool Divide>
struct HalfOp {  // float16 / bfloat16 bits: float32 math, one rounding
  float factor;
  __device__ std::uint16_t operator()(std::uint16_t x) const {
    const Half h;
    const float f = h.load(x);
    return h.store(Divide ? div(f, factor) : mul(f, factor));
  }
};

// Integer average: truncating division, as kernels::divide on the CPU. The divisor stays a
// 64-bit integer (a uint8 divisor would wrap at 256 ranks).
template <typename T>
struct DivideIntOp {
  long long divisor;
  __device__ T operator()(T x) const {
    return static_cast<T>(static_cast<long long>(x) / divisor);
  }
};

// Integer scaling, the CPU rule of engine/src/scaling.cpp (scale_integer): x * factor in
// double, truncated toward zero, saturated at the type's range, NaN -> 0.
template <typename T>
struct ScaleIntOp {
  double factor, lo, hi;  // lo/hi: the type's min and max as doubles
  T min, max;             // set on the host (numeric_limits is host-only under nvcc)
  __device__ T operator()(T x) const {
    const double v = trunc(__dmul_rn(static_cast<double>(x), factor));
    if (v != v) return T{0};
    if (v <= lo) return min;
    if (v >= hi) return max;
    return static_cast<T>(v);
  }
};

// ---- elementwise kernels: 16-byte body, scalar head and tail --------------------------------
//
// A functor K names Vec (what one vector step loads), V (elements per step), load(v) and
// store(v, x) for vector v of the aligned body, and scalar(i) for element i of the buffer.

template <typename T, typename Op>  // in place, one type
struct InPlace {
  static constexpr int V = 16 / sizeof(T);
  using Vec = uint4;
  T* p;
  uint4* body;  // p + head, 16-byte aligned
  Op op;
  __device__ Vec load(std::size_t v) const { return body[v]; }
  __device__ void store(std::size_t v, Vec x) const {
    T lanes[V];
    std::memcpy(lanes, &x, 16);
#pragma unroll
    for (int k = 0; k < V; ++k) lanes[k] = op(lanes[k]);
    std::memcpy(&x, lanes, 16);
    body[v] = x;
  }
  __device__ void scalar(std::size_t i) const { p[i] = op(p[i]); }
};

__device__ __forceinline__ std::uint32_t pair(std::uint16_t lo, std::uint16_t hi) {
  return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
}

template <typename Half>  // float32 -> 16 bits, 8 per step: two 16-byte loads, one store
struct Narrow {
  static constexpr int V = 8;
  struct Vec {
    uint4 a, b;
  };
  const float* in;
  std::uint16_t* out;
  const uint4* in_body;
  uint4* out_body;
  __device__ Vec load(std::size_t v) const { return {in_body[2 * v], in_body[2 * v + 1]}; }
  __device__ void store(std::size_t v, Vec x) const {
    const Half h;
    auto n = [&](std::uint32_t bits) { return h.store(__uint_as_float(bits)); };
    out_body[v] = make_uint4(pair(n(x.a.x), n(x.a.y)), pair(n(x.a.z), n(x.a.w)),
                             pair(n(x.b.x), n(x.b.y)), pair(n(x.b.z), n(x.b.w)));
  }
  __device__ void scalar(std::size_t i) const { out[i] = Half().store(in[i]); }
};

template <typename Half>  // 16 bits -> float32, 8 per step: one 16-byte load, two stores
struct Widen {
  static constexpr int V = 8;
  using Vec = uint4;
  const std::uint16_t* in;
  float* out;
  const uint4* in_body;
  uint4* out_body;
  __device__ Vec load(std::size_t v) const { return in_body[v]; }
  __device__ void store(std::size_t v, Vec x) const {
    const Half h;
    auto w = [&](std::uint32_t bits, int upper) {
      return __float_as_uint(h.load(static_cast<std::uint16_t>(upper ? bits >> 16 : bits)));
    };
    out_body[2 * v] = make_uint4(w(x.x, 0), w(x.x, 1), w(x.y, 0), w(x.y, 1));
    out_body[2 * v + 1] = make_uint4(w(x.z, 0), w(x.z, 1), w(x.w, 0), w(x.w, 1));
  }
  __device__ void scalar(std::size_t i) const { out[i] = Half().load(in[i]); }
};

// Vectors [0, vectors) of the body; elements [0, head) and [tail_start, tail_start + scalars -
// head) one by one. Grid-stride over both.
template <typename K>
__global__ void __launch_bounds__(kThreads)
    elementwise_kernel(const K k, std::size_t vectors, std::size_t head, std::size_t tail_start,
                       std::size_t scalars) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t first = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  // kUnroll vectors per thread in flight: all loads (guarded at the end), then all stores.
  for (std::size_t v = first; v < vectors; v += kUnroll * stride) {
    typename K::Vec x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (v + u * stride < vectors) x[u] = k.load(v + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (v + u * stride < vectors) k.store(v + u * stride, x[u]);
  }
  for (std::size_t j = first; j < scalars; j += stride)
    k.scalar(j < head ? j : tail_start + (j - head));
}

// ---- launch helpers -----------------------------------------------------------------------

void check(cudaError_t e, const char* what, const char* call) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw CollectiveError(ErrorKind::system, std::string("riseml cuda: ") + what + ": " + call +
                                                 ": " + cudaGetErrorString(e));
  }
}

void check_launch(const char* what) { check(cudaGetLastError(), what, "launch"); }

[[noreturn]] void bad_type(const char* what, DataType t) {
  throw CollectiveError(ErrorKind::invalid_argument,
                        std::string("riseml cuda: ") + what + ": unsupported type " +
                            std::string(to_string(t)));
}

void check_aligned(const char* what, const void* p, std::size_t element) {
  if (reinterpret_cast<std::uintptr_t>(p) % element != 0)
    throw CollectiveError(ErrorKind::invalid_argument,
                          std::string("riseml cuda: ") + what + ": buffer not aligned to its " +
                              std::to_string(element) + "-byte elements");
}

// Blocks resident on the current device at once for `kernel` (kThreads each): SM count x
// blocks per SM. Cached per kernel (one cache per instantiation of this function) and device.
template <auto Kernel>
unsigned resident_blocks(const char* what) {
  constexpr int kCachedDevices = 64;
  static std::atomic<unsigned> cache[kCachedDevices];  // zero: not known yet
  int device = 0;
  check(cudaGetDevice(&device), what, "cudaGetDevice");
  if (device >= 0 && device < kCachedDevices) {
    const unsigned known = cache[device].load(std::memory_order_relaxed);
    if (known != 0) return known;
  }
  int sms = 0, per_sm = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), what,
        "cudaDeviceGetAttribute");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, kThreads, 0), what,
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const unsigned blocks = static_cast<unsigned>((sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1));
  if (device >= 0 && device < kCachedDevices)
    cache[device].store(blocks, std::memory_order_relaxed);
  return blocks;
}

// Elements before `p` is 16-byte aligned (p aligned to `element`).
std::size_t head_elements(const void* p, std::size_t element) {
  return ((16 - (reinterpret_cast<std::uintptr_t>(p) & 15u)) & 15u) / element;
}

// Runs k over `count` elements whose first `head` are scalar (head == count: all scalar, when
// the two buffers of a conversion can never be 16-byte aligned together).
template <typename K>
void launch_elementwise(const K& k, std::size_t count, std::size_t head, const char* what,
                        cudaStream_t stream) {
  head = head < count ? head : count;
  const std::size_t vectors = (count - head) / K::V;
  const std::size_t tail_start = head + vectors * K::V;
  const std::size_t scalars = count - vectors * K::V;
  const std::size_t units = vectors > scalars ? vectors : scalars;
  const std::size_t wanted = (units + kThreads - 1) / kThreads;
  const unsigned wave = resident_blocks<&elementwise_kernel<K>>(what);
  const unsigned blocks = static_cast<unsigned>(wanted < wave ? (wanted ? wanted : 1) : wave);
  elementwise_kernel<K><<<blocks, kThreads, 0, stream>>>(k, vectors, head, tail_start, scalars);
  check_launch(what);
}

template <typename T, typename Op>
void in_place(void* buffer, std::size_t count, Op op, const char* what, cudaStream_t stream) {
  T* p = static_cast<T*>(buffer);
  const std::size_t head = head_elements(p, sizeof(T));
  InPlace<T, Op> k{p, reinterpret_cast<uint4*>(p + (head < count ? head : count)), op};
  launch_elementwise(k, count, head, what, stream);
}

template <typename T>
void scale_int(void* buffer, std::size_t count, double factor, cudaStream_t stream) {
  constexpr T min = std::numeric_limits<T>::min(), max = std::numeric_limits<T>::max();
  const ScaleIntOp<T> op{factor, static_cast<double>(min), static_cast<double>(max), min, max};
  in_place<T>(buffer, count, op, "scale", stream);
}

template <bool Divide>
void scale_float(const char* what, DataType type, void* buffer, std::size_t count, double factor,
                 cudaStream_t stream) {
  switch (type) {
    case DataType::float32:
      in_place<float>(buffer, count, FloatOp<float, Divide>{static_cast<float>(factor)}, what,
                      stream);
      return;
    case DataType::float64:
      in_place<double>(buffer, count, FloatOp<double, Divide>{factor}, what, stream);
      return;
    case DataType::float16:
      in_place<std::uint16_t>(buffer, count, HalfOp<ToF16, Divide>{static_cast<float>(factor)},
                              what, stream);
      return;
    case DataType::bfloat16:
      in_place<std::uint16_t>(buffer, count, HalfOp<ToBF16, Divide>{static_cast<float>(factor)},
                              what, stream);
      return;
    default: bad_type(what, type);
  }
}

// ---- fusion buffer: many tensors, one launch ------------------------------------------------
//
// The fusion buffer is cut into chunks of `chunk` bytes, one per block, and each chunk into one
// part per warp. The host gives each block the first tensor its chunk overlaps (first[]); a warp
// walks from there to its part and copies each overlap of a tensor with its part. Each piece is
// copied with the widest word (16, 8, 4, 2 or 1 bytes) at which its source and destination are
// aligned alike; the bytes before and after the words (under 32) take one byte per lane.

constexpr int kWarp = 32;
constexpr int kWarps = kThreads / kWarp;

template <int K, int B>  // at most K tensors, B blocks
struct FusionTable {
  unsigned char* fusion;      // pack: the destination, unpack: the source
  std::size_t count;          // tensors
  std::size_t chunk;          // bytes per block, a multiple of 4096
  std::size_t offset[K + 1];  // tensor i is fusion[offset[i], offset[i + 1])
  unsigned char* tensor[K];   // pack: sources, unpack: destinations
  std::uint16_t first[B];     // block b's first tensor: offset[first] <= b * chunk < its end
};
static_assert(kMaxFusedTensors <= 65535, "first[] holds 16-bit tensor indices");
static_assert(sizeof(FusionTable<128, 512>) <= 4096, "the small table fits in 4 KiB");
static_assert(sizeof(FusionTable<static_cast<int>(kMaxFusedTensors), 1024>) <= 32764,
              "kernel parameters are limited to 32764 bytes (CUDA 12.1+)");

// One warp copies n bytes from s to d, s and d aligned alike modulo sizeof(W).
template <typename W>
__device__ void copy_words(const unsigned char* s, unsigned char* d, std::size_t n,
                           unsigned lane) {
  constexpr std::size_t w = sizeof(W);
  std::size_t head = (w - (reinterpret_cast<std::uintptr_t>(d) & (w - 1))) & (w - 1);
  head = head < n ? head : n;
  const std::size_t words = (n - head) / w;
  const std::size_t tail_start = head + words * w;
  // head + tail < 2 w <= 32: at most one edge byte per lane, loaded with the first words.
  const std::size_t edge = head + (n - tail_start);
  const std::size_t at = lane < head ? lane : tail_start + (lane - head);
  unsigned char e = 0;
  if (lane < edge) e = s[at];
  const W* sw = reinterpret_cast<const W*>(s + head);
  W* dw = reinterpret_cast<W*>(d + head);
  for (std::size_t i = lane; i < words; i += kUnroll * kWarp) {
    W x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (i + u * kWarp < words) x[u] = sw[i + u * kWarp];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (i + u * kWarp < words) dw[i + u * kWarp] = x[u];
  }
  if (lane < edge) d[at] = e;
}

__device__ void copy_piece(const unsigned char* s, unsigned char* d, std::size_t n,
                           unsigned lane) {
  const auto apart = reinterpret_cast<std::uintptr_t>(s) ^ reinterpret_cast<std::uintptr_t>(d);
  if ((apart & 15u) == 0)
    copy_words<uint4>(s, d, n, lane);
  else if ((apart & 7u) == 0)
    copy_words<uint2>(s, d, n, lane);
  else if ((apart & 3u) == 0)
    copy_words<unsigned>(s, d, n, lane);
  else if ((apart & 1u) == 0)
    copy_words<unsigned short>(s, d, n, lane);
  else
    copy_words<unsigned char>(s, d, n, lane);
}

template <int K, int B, bool Pack>
__global__ void __launch_bounds__(kThreads)
    fusion_kernel(const __grid_constant__ FusionTable<K, B> t) {
  const std::size_t total = t.offset[t.count];
  const std::size_t part = t.chunk / kWarps;
  const unsigned warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const std::size_t lo = blockIdx.x * t.chunk + warp * part;
  if (lo >= total) return;
  const std::size_t hi = total - lo < part ? total : lo + part;
  std::size_t i = t.first[blockIdx.x];
  while (t.offset[i + 1] <= lo) ++i;  // to the tensor holding byte lo (never an empty one)
  for (; i < t.count && t.offset[i] < hi; ++i) {
    const std::size_t from = t.offset[i] > lo ? t.offset[i] : lo;
    const std::size_t to = t.offset[i + 1] < hi ? t.offset[i + 1] : hi;
    if (from >= to) continue;
    unsigned char* fused = t.fusion + from;
    unsigned char* tensor = t.tensor[i] + (from - t.offset[i]);
    if (Pack)
      copy_piece(tensor, fused, to - from, lane);
    else
      copy_piece(fused, tensor, to - from, lane);
  }
}

template <int K, int B, bool Pack, typename Pointer>
void launch_fusion(unsigned char* fusion, const Pointer* tensors, const std::size_t* bytes,
                   std::size_t n, cudaStream_t stream, const char* what) {
  FusionTable<K, B> t;
  t.fusion = fusion;
  t.count = n;
  t.offset[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    t.offset[i + 1] = t.offset[i] + bytes[i];
    // One pointer type for both directions: pack only reads through it.
    t.tensor[i] =
        static_cast<unsigned char*>(const_cast<void*>(static_cast<const void*>(tensors[i])));
  }
  const std::size_t total = t.offset[n];
  if (total == 0) return;
  // At most one wave of blocks (and B), each at least 4 KiB: 512 bytes per warp.
  std::size_t wave = resident_blocks<&fusion_kernel<K, B, Pack>>(what);
  wave = wave < static_cast<std::size_t>(B) ? wave : static_cast<std::size_t>(B);
  std::size_t chunk = (total + wave - 1) / wave;
  chunk = (chunk + 4095) / 4096 * 4096;
  t.chunk = chunk;
  const std::size_t blocks = (total + chunk - 1) / chunk;
  std::size_t i = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    while (t.offset[i + 1] <= b * chunk) ++i;
    t.first[b] = static_cast<std::uint16_t>(i);
  }
  fusion_kernel<K, B, Pack><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(t);
  check_launch(what);
}

// kMaxFusedTensors tensors per launch, with the smallest table that holds them (the parameters
// travel with every launch). `tensors` are the other side of each copy (pack: sources,
// unpack: destinations).
template <bool Pack, typename Pointer>
void fusion_copy(unsigned char* fusion, const Pointer* tensors, const std::size_t* bytes,
                 std::size_t n, cudaStream_t stream, const char* what) {
  constexpr int kMax = static_cast<int>(kMaxFusedTensors);
  for (std::size_t start = 0; start < n; start += kMaxFusedTensors) {
    const std::size_t m = n - start < kMaxFusedTensors ? n - start : kMaxFusedTensors;
    const Pointer* p = tensors + start;
    if (m <= 128)
      launch_fusion<128, 512, Pack>(fusion, p, bytes + start, m, stream, what);
    else if (m <= 512)
      launch_fusion<512, 1024, Pack>(fusion, p, bytes + start, m, stream, what);
    else
      launch_fusion<kMax, 1024, Pack>(fusion, p, bytes + start, m, stream, what);
    for (std::size_t i = start; i < start + m; ++i) fusion += bytes[i];
  }
}

}  // namespace

void scale(DataType type, void* buffer, std::size_t count, double factor, cudaStream_t stream) {
  if (type == DataType::boolean || element_size(type) == 0) bad_type("scale", type);
  if (count == 0) return;
  check_aligned("scale", buffer, element_size(type));
  switch (type) {
    case DataType::int8: scale_int<std::int8_t>(buffer, count, factor, stream); return;
    case DataType::uint8: scale_int<std::uint8_t>(buffer, count, factor, stream); return;
    case DataType::int16: scale_int<std::int16_t>(buffer, count, factor, stream); return;
    case DataType::int32: scale_int<std::int32_t>(buffer, count, factor, stream); return;
    case DataType::int64: scale_int<std::int64_t>(buffer, count, factor, stream); return;
    default: scale_float<false>("scale", type, buffer, count, factor, stream);
  }
}

void divide(DataType type, void* buffer, std::size_t count, int divisor, cudaStream_t stream) {
  if (count == 0) return;
  check_aligned("divide", buffer, element_size(type) ? element_size(type) : 1);
  const long long d = divisor;
  switch (type) {
    case DataType::int32:
      in_place<std::int32_t>(buffer, count, DivideIntOp<std::int32_t>{d}, "divide", stream);
      return;
    case DataType::int64:
      in_place<std::int64_t>(buffer, count, DivideIntOp<std::int64_t>{d}, "divide", stream);
      return;
    case DataType::uint8:
      in_place<std::uint8_t>(buffer, count, DivideIntOp<std::uint8_t>{d}, "divide", stream);
      return;
    case DataType::int8:
      in_place<std::int8_t>(buffer, count, DivideIntOp<std::int8_t>{d}, "divide", stream);
      return;
    case DataType::int16:
      in_place<std::int16_t>(buffer, count, DivideIntOp<std::int16_t>{d}, "divide", stream);
      return;
    default: scale_float<true>("divide", type, buffer, count, static_cast<double>(divisor), stream);
  }
}

void narrow_from_float(DataType half_type, const float* in, void* out, std::size_t count,
                       cudaStream_t stream) {
  if (half_type != DataType::float16 && half_type != DataType::bfloat16)
    bad_type("narrow_from_float", half_type);
  if (count == 0) return;
  check_aligned("narrow_from_float", in, 4);
  check_aligned("narrow_from_float", out, 2);
  auto* o = static_cast<std::uint16_t*>(out);
  // 16-byte aligned together after `head` elements, if ever: in every 4, out every 8.
  const std::size_t in_head = head_elements(in, 4), out_head = head_elements(o, 2);
  const std::size_t head = out_head % 4 == in_head ? out_head : count;
  const std::size_t h = head < count ? head : count;
  const auto* ib = reinterpret_cast<const uint4*>(in + h);
  auto* ob = reinterpret_cast<uint4*>(o + h);
  if (half_type == DataType::float16)
    launch_elementwise(Narrow<ToF16>{in, o, ib, ob}, count, head, "narrow_from_float", stream);
  else
    launch_elementwise(Narrow<ToBF16>{in, o, ib, ob}, count, head, "narrow_from_float", stream);
}

void widen_to_float(DataType half_type, const void* in, float* out, std::size_t count,
                    cudaStream_t stream) {
  if (half_type != DataType::float16 && half_type != DataType::bfloat16)
    bad_type("widen_to_float", half_type);
  if (count == 0) return;
  check_aligned("widen_to_float", in, 2);
  check_aligned("widen_to_float", out, 4);
  auto* i = static_cast<const std::uint16_t*>(in);
  const std::size_t in_head = head_elements(i, 2), out_head = head_elements(out, 4);
  const std::size_t head = in_head % 4 == out_head ? in_head : count;
  const std::size_t h = head < count ? head : count;
  const auto* ib = reinterpret_cast<const uint4*>(i + h);
  auto* ob = reinterpret_cast<uint4*>(out + h);
  if (half_type == DataType::float16)
    launch_elementwise(Widen<ToF16>{i, out, ib, ob}, count, head, "widen_to_float", stream);
  else
    launch_elementwise(Widen<ToBF16>{i, out, ib, ob}, count, head, "widen_to_float", stream);
}

void pack(void* fusion, const void* const* tensors, const std::size_t* bytes, std::size_t n,
          cudaStream_t stream) {
  fusion_copy<true>(static_cast<unsigned char*>(fusion), tensors, bytes, n, stream, "pack");
}

void unpack(const void* fusion, void* const* tensors, const std::size_t* bytes, std::size_t n,
            cudaStream_t stream) {
  // One pointer type for both directions: unpack only reads the fusion buffer.
  fusion_copy<false>(static_cast<unsigned char*>(const_cast<void*>(fusion)), tensors, bytes, n,
                     stream, "unpack");
}

}  // namespace riseml::cuda

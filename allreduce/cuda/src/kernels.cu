// The kernels of kernels.hpp. Every result has the CPU reference's bits
// (riseml/half_float.hpp, allreduce/src/kernels).
//
// Speed (issue 35): every elementwise kernel moves 16 bytes per load or store (uint4: 4
// float32, 2 float64, 8 float16/bfloat16, 16 int8) over the aligned body of its buffer, several
// vectors in flight per thread (all loads of an iteration before any store), and handles the
// unaligned head and the remainder element by element in the same launch. Consecutive threads
// touch consecutive vectors in every load and store (a conversion reads 16 and writes 8 bytes
// per thread, or the reverse), so each warp instruction covers whole 32-byte sectors. The grid
// is one full wave of the device (SM count x resident blocks per SM of that kernel, from
// cudaOccupancyMaxActiveBlocksPerMultiprocessor, cached per kernel and device) or less when
// there is less work; the threads stride over it.
//
// 16-bit floats use the hardware conversions on the vector body (see "16-bit conversions"),
// which give the CPU's bits for everything but NaN; a vector holding a NaN is redone with the
// software conversions of half_float.hpp, as is every head and tail element.
//
// Packing moves its tensor table to the device through a small ring of pinned staging buffers
// and device tables per device (one cudaMemcpyAsync, none when the tensors and sizes are the
// previous upload's on that stream), so the kernel's parameters are 48 bytes; when no slot is free (the host
// is more than a ring ahead of the device), or the stream is being captured into a graph, the
// table travels in the kernel's parameters instead (__grid_constant__). Nothing waits for the
// device and nothing is allocated after the first call on a device.
#include <riseml/collective_error.hpp>
#include <riseml/cuda/kernels.hpp>

#include <riseml/half_float.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>

namespace riseml::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // vectors loaded per thread before any is stored (in place)
constexpr int kConvertUnroll = 8;  // the conversions: 8 x 16-byte or 8 x 8-byte loads

using riseml::kernels::bfloat16_to_float;
using riseml::kernels::float16_to_float;
using riseml::kernels::float_to_bfloat16;
using riseml::kernels::float_to_float16;

__device__ __forceinline__ std::uint32_t pair(std::uint16_t lo, std::uint16_t hi) {
  return static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
}

// ---- 16-bit conversions: the hardware's, with the CPU's bits -------------------------------
//
// The software conversions of half_float.hpp (subnormals normalised, rounding on bits) cost
// some 20 integer instructions per element, which made float16 scaling and widening compute
// bound at 40-50% of an H200's memory bandwidth. The vector body uses the hardware instead:
//  - float16 -> float32: cvt.f32.f16 (HADD2.F32 on sm_80+) is exact: every float16, subnormals
//    included, is a float32, so for every non-NaN input it gives the one float32 of that value,
//    as float16_to_float does; the sign of zero and infinities included.
//  - bfloat16 -> float32: a 16-bit shift, the same code as the CPU's (exact for NaN too).
//  - float32 -> float16 / bfloat16: cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 (one instruction for
//    two elements; the cuda_fp16/cuda_bf16 intrinsics, inline PTX without .ftz, so subnormal
//    inputs and results are kept) round to nearest even, overflow to infinity at the IEEE 754
//    boundary (65520 for float16) and keep signed zeros: IEEE 754 roundTiesToEven, the rule that
//    float_to_float16 / float_to_bfloat16 implement on bits, so the two agree on every non-NaN
//    input (NarrowRoundsToNearestEvenAsTheCpu and WidenEveryBitPatternAsTheCpu check it on the
//    GPU: every rounding boundary, subnormals, overflow, and all 65536 widenings).
//  - NaN: the hardware returns the canonical NaN, the CPU keeps the payload (quiet bit set).
//    A NaN in always gives a NaN out and a non-NaN never gives a NaN, so a vector whose inputs
//    (widening) or outputs (narrowing, scaling) hold no NaN has the CPU's bits; one that does is
//    redone with the software conversions (a branch that only vectors holding a NaN take).
// For scale and divide the check is on the outputs alone: a NaN input widens to a NaN, stays a
// NaN through the multiplication or division and narrows to a NaN, so it is caught there; and
// a vector without NaN inputs widens exactly, so its products are the software path's.

// Non-zero when either 16-bit half of w is a NaN of the format whose infinity is 0x7fff - k:
// |h| + k carries into bit 15 exactly when |h| > infinity (no carry crosses the halves).
__device__ __forceinline__ std::uint32_t nan_bits(std::uint32_t w, std::uint32_t k) {
  return (w & 0x7fff7fffu) + k;  // the caller masks with 0x80008000 (after or-ing words)
}

struct ToF16 {
  static constexpr std::uint32_t kNan = 0x03ff03ffu;   // 0x7fff - 0x7c00 in both halves
  static constexpr bool kWidenNeedsCheck = true;
  __device__ static float load(std::uint16_t h) { return float16_to_float(h); }
  __device__ static std::uint16_t store(float f) { return float_to_float16(f); }
  __device__ static float2 widen2(std::uint32_t w) {  // hardware; exact unless a NaN
    __half2 h;
    std::memcpy(&h, &w, 4);
    return __half22float2(h);
  }
  __device__ static std::uint32_t narrow2(float lo, float hi) {  // hardware; exact unless a NaN
    const __half2 h = __floats2half2_rn(lo, hi);
    std::uint32_t w;
    std::memcpy(&w, &h, 4);
    return w;
  }
};

struct ToBF16 {
  static constexpr std::uint32_t kNan = 0x007f007fu;  // 0x7fff - 0x7f80 in both halves
  static constexpr bool kWidenNeedsCheck = false;     // the shift is the CPU's code
  __device__ static float load(std::uint16_t h) { return bfloat16_to_float(h); }
  __device__ static std::uint16_t store(float f) { return float_to_bfloat16(f); }
  __device__ static float2 widen2(std::uint32_t w) {
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  }
  __device__ static std::uint32_t narrow2(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    std::uint32_t w;
    std::memcpy(&w, &h, 4);
    return w;
  }
};

// The software conversions of two elements packed in a word: the CPU's code.
template <typename Half>
__device__ __forceinline__ float2 widen2_exact(std::uint32_t w) {
  return make_float2(Half::load(static_cast<std::uint16_t>(w)),
                     Half::load(static_cast<std::uint16_t>(w >> 16)));
}
template <typename Half>
__device__ __forceinline__ std::uint32_t narrow2_exact(float lo, float hi) {
  return pair(Half::store(lo), Half::store(hi));
}

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

// ---- elementwise kernels: aligned vector body, scalar head and tail -------------------------
//
// A functor K names Vec (what one vector step loads), V (elements per step), U (steps loaded
// per thread before any is stored), load(v) and store(v, x) for vector v of the aligned body,
// and scalar(i) for element i of the buffer.

template <typename T, typename Op>  // in place, one type
struct InPlace {
  static constexpr int V = 16 / sizeof(T), U = kUnroll;
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

// float16 / bfloat16 in place: float32 math (__fmul_rn / __fdiv_rn by float(factor)), one
// rounding; hardware conversions, the software ones for a vector whose result holds a NaN.
template <typename Half, bool Divide>
struct HalfInPlace {
  static constexpr int V = 8, U = kUnroll;
  using Vec = uint4;
  std::uint16_t* p;
  uint4* body;  // p + head, 16-byte aligned
  float factor;
  __device__ float op(float f) const { return Divide ? div(f, factor) : mul(f, factor); }
  __device__ std::uint32_t fast(std::uint32_t w) const {
    const float2 f = Half::widen2(w);
    return Half::narrow2(op(f.x), op(f.y));
  }
  __device__ std::uint32_t exact(std::uint32_t w) const {
    const float2 f = widen2_exact<Half>(w);
    return narrow2_exact<Half>(op(f.x), op(f.y));
  }
  __device__ Vec load(std::size_t v) const { return body[v]; }
  __device__ void store(std::size_t v, Vec x) const {
    uint4 y = make_uint4(fast(x.x), fast(x.y), fast(x.z), fast(x.w));
    const std::uint32_t k = Half::kNan;
    if (((nan_bits(y.x, k) | nan_bits(y.y, k) | nan_bits(y.z, k) | nan_bits(y.w, k)) &
         0x80008000u) != 0)
      y = make_uint4(exact(x.x), exact(x.y), exact(x.z), exact(x.w));
    body[v] = y;
  }
  __device__ void scalar(std::size_t i) const { p[i] = Half::store(op(Half::load(p[i]))); }
};

// float32 -> 16 bits, 4 per step: one 16-byte load, one 8-byte store per thread.
template <typename Half>
struct Narrow {
  static constexpr int V = 4, U = kConvertUnroll;
  using Vec = uint4;
  const float* in;
  std::uint16_t* out;
  const uint4* in_body;  // 16-byte aligned
  uint2* out_body;       // 8-byte aligned, the same element
  __device__ Vec load(std::size_t v) const { return in_body[v]; }
  __device__ void store(std::size_t v, Vec x) const {
    const float a = __uint_as_float(x.x), b = __uint_as_float(x.y);
    const float c = __uint_as_float(x.z), d = __uint_as_float(x.w);
    uint2 y = make_uint2(Half::narrow2(a, b), Half::narrow2(c, d));
    const std::uint32_t k = Half::kNan;
    if (((nan_bits(y.x, k) | nan_bits(y.y, k)) & 0x80008000u) != 0)
      y = make_uint2(narrow2_exact<Half>(a, b), narrow2_exact<Half>(c, d));
    out_body[v] = y;
  }
  __device__ void scalar(std::size_t i) const { out[i] = Half::store(in[i]); }
};

// 16 bits -> float32, 4 per step: one 8-byte load, one 16-byte store per thread.
template <typename Half>
struct Widen {
  static constexpr int V = 4, U = kConvertUnroll;
  using Vec = uint2;
  const std::uint16_t* in;
  float* out;
  const uint2* in_body;  // 8-byte aligned
  uint4* out_body;       // 16-byte aligned, the same element
  __device__ Vec load(std::size_t v) const { return in_body[v]; }
  __device__ void store(std::size_t v, Vec x) const {
    float2 a, b;
    if (Half::kWidenNeedsCheck &&
        ((nan_bits(x.x, Half::kNan) | nan_bits(x.y, Half::kNan)) & 0x80008000u) != 0) {
      a = widen2_exact<Half>(x.x);
      b = widen2_exact<Half>(x.y);
    } else {
      a = Half::widen2(x.x);
      b = Half::widen2(x.y);
    }
    out_body[v] = make_uint4(__float_as_uint(a.x), __float_as_uint(a.y), __float_as_uint(b.x),
                             __float_as_uint(b.y));
  }
  __device__ void scalar(std::size_t i) const { out[i] = Half::load(in[i]); }
};

// Vectors [0, vectors) of the body; elements [0, head) and [tail_start, tail_start + scalars -
// head) one by one. Grid-stride over both.
template <typename K>
__global__ void __launch_bounds__(kThreads)
    elementwise_kernel(const K k, std::size_t vectors, std::size_t head, std::size_t tail_start,
                       std::size_t scalars) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t first = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  // K::U vectors per thread in flight: all loads (guarded at the end), then all stores.
  for (std::size_t v = first; v < vectors; v += K::U * stride) {
    typename K::Vec x[K::U];
#pragma unroll
    for (int u = 0; u < K::U; ++u)
      if (v + u * stride < vectors) x[u] = k.load(v + u * stride);
#pragma unroll
    for (int u = 0; u < K::U; ++u)
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

// Elements (of `element` bytes, p aligned to them) before p is `align`-byte aligned.
std::size_t head_elements(const void* p, std::size_t element, std::size_t align = 16) {
  return ((align - (reinterpret_cast<std::uintptr_t>(p) & (align - 1))) & (align - 1)) / element;
}

// Runs k over `count` elements whose first `head` are scalar (head == count: all scalar, when
// the two buffers of a conversion can never be aligned together).
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

template <typename Half, bool Divide>
void in_place_half(void* buffer, std::size_t count, float factor, const char* what,
                   cudaStream_t stream) {
  auto* p = static_cast<std::uint16_t*>(buffer);
  const std::size_t head = head_elements(p, 2);
  HalfInPlace<Half, Divide> k{p, reinterpret_cast<uint4*>(p + (head < count ? head : count)),
                              factor};
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
  const float f = static_cast<float>(factor);
  switch (type) {
    case DataType::float32:
      in_place<float>(buffer, count, FloatOp<float, Divide>{f}, what, stream);
      return;
    case DataType::float64:
      in_place<double>(buffer, count, FloatOp<double, Divide>{factor}, what, stream);
      return;
    case DataType::float16: in_place_half<ToF16, Divide>(buffer, count, f, what, stream); return;
    case DataType::bfloat16: in_place_half<ToBF16, Divide>(buffer, count, f, what, stream); return;
    default: bad_type(what, type);
  }
}

// 1 / d when d is a power of two (positive or negative) and 1 / d is a normal number of T:
// then x / d and x * (1 / d) are the same real number, rounded once by the same rule, so they
// have the same bits for every x (infinities and signed zeros included; a NaN stays a NaN,
// and the 16-bit path recomputes any NaN in software as before). A multiplication is a few
// instructions, an IEEE division (__fdiv_rn) a reciprocal, seven FMAs and a range check, which
// with the 16-bit conversions left a divide of float16/bfloat16 short of the memory's speed.
template <typename T>
bool exact_reciprocal(T d, T* reciprocal) {
  if (!(d != 0) || !std::isfinite(d)) return false;
  int e = 0;
  const T m = std::frexp(d, &e);  // d = m * 2^e, |m| in [0.5, 1)
  if (m != T(0.5) && m != T(-0.5)) return false;
  const T r = std::ldexp(m * 2, 1 - e);  // +-2^(1 - e) = 1 / d
  if (!std::isnormal(r)) return false;
  *reciprocal = r;
  return true;
}

// ---- fusion buffer: many tensors, one launch ------------------------------------------------
//
// The table: end[i] (tensor i is fusion[i ? end[i - 1] : 0, end[i])), tensor[i] (its device
// pointer) and first[b] (the tensor holding block b's first byte). The fusion buffer is cut
// into chunks of `chunk` bytes, one per block, and each chunk into one part per warp. A warp
// reads the 32 table entries from its block's first tensor in one coalesced load, finds with a
// ballot the tensors that overlap its part, and copies each overlap; so a part costs two
// dependent table reads (first[], then the entries), not a walk. Each piece is copied with the
// widest word (16, 8, 4, 2 or 1 bytes) at which its source and destination are aligned alike,
// at least 16 bytes per lane in flight per iteration; the bytes before and after the words
// (under 32) take one byte per lane.
//
// Where the table lives: in a device buffer (DeviceTable, 48 bytes of kernel parameters) or,
// as a fallback, in the kernel's parameters (ParamTable, __grid_constant__, up to 30 KiB).
// Measured on an H200 (tools: riseml-gpu-bench and a scratch loop of 200 calls), 1024 tensors of
// 4099 bytes (8.4 MB of traffic, 1.7 us at 4.8 TB/s): the old 30 KiB parameter table took 13 us
// per call; a compact parameter table (16 KiB for 1024 tensors) 10-15 us; a new device table
// each call (cudaMemcpyAsync + launch) 11-18 us; the device table of the previous call, reused
// without building or copying anything, 5-7 us. These calls are bound by the host: a bare
// launch of an empty kernel cost 3.6-4.6 us per call on that machine, so the reuse path is a
// launch plus ~1 us (two comparisons of the caller's arrays with the slot's, an event record).
// The reused table is the common case of a training loop (the same gradient tensors each step,
// pack and unpack of the same tensors share it) and of a benchmark.

constexpr int kWarp = 32;
constexpr int kWarps = kThreads / kWarp;
constexpr unsigned kFull = 0xffffffffu;
constexpr std::size_t kMaxBlocks = 1024;  // of one fusion launch (first[] entries)

static_assert(kMaxFusedTensors <= 65535, "first[] holds 16-bit tensor indices");

template <int K, int B>  // at most K tensors, B blocks
struct ParamTable {
  std::size_t end_[K];
  unsigned char* tensor_[K];  // pack: sources, unpack: destinations
  std::uint16_t first_[B];
  __device__ std::size_t end(std::size_t i) const { return end_[i]; }
  __device__ unsigned char* tensor(std::size_t i) const { return tensor_[i]; }
  __device__ std::size_t first(unsigned b) const { return first_[b]; }
};
static_assert(sizeof(ParamTable<128, 256>) <= 4096, "the small table fits in 4 KiB");
static_assert(sizeof(ParamTable<static_cast<int>(kMaxFusedTensors), kMaxBlocks>) <= 32700,
              "kernel parameters are limited to 32764 bytes (CUDA 12.1+)");

struct DeviceTable {  // the same arrays in device memory
  const std::size_t* __restrict__ end_;
  unsigned char* const* __restrict__ tensor_;
  const std::uint16_t* __restrict__ first_;
  __device__ std::size_t end(std::size_t i) const { return __ldg(end_ + i); }
  __device__ unsigned char* tensor(std::size_t i) const {
    return reinterpret_cast<unsigned char*>(
        __ldg(reinterpret_cast<const unsigned long long*>(tensor_) + i));
  }
  __device__ std::size_t first(unsigned b) const { return __ldg(first_ + b); }
};

struct FusionShape {
  unsigned char* fusion;  // pack: the destination, unpack: the source
  std::size_t count;      // tensors
  std::size_t chunk;      // bytes per block, a multiple of 4096
};

// One warp copies n bytes from s to d, s and d aligned alike modulo sizeof(W). n is at most a
// warp's part of a chunk (32-bit indices: fewer registers, no spills at 64 per thread).
template <typename W>
__device__ void copy_words(const unsigned char* s, unsigned char* d, unsigned n, unsigned lane) {
  constexpr unsigned w = sizeof(W);
  constexpr int U = w >= 4 ? kUnroll : 8;  // 16 bytes per lane in flight from 4-byte words
  unsigned head = (w - (static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(d)) & (w - 1))) &
                  (w - 1);
  head = head < n ? head : n;
  const unsigned words = (n - head) / w;
  const unsigned tail_start = head + words * w;
  // head + tail < 2 w <= 32: at most one edge byte per lane, loaded with the first words.
  const unsigned edge = head + (n - tail_start);
  const unsigned at = lane < head ? lane : tail_start + (lane - head);
  unsigned char e = 0;
  if (lane < edge) e = s[at];
  const W* sw = reinterpret_cast<const W*>(s + head);
  W* dw = reinterpret_cast<W*>(d + head);
  for (unsigned i = lane; i < words; i += U * kWarp) {
    W x[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * kWarp < words) x[u] = sw[i + u * kWarp];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * kWarp < words) dw[i + u * kWarp] = x[u];
  }
  if (lane < edge) d[at] = e;
}

__device__ void copy_piece(const unsigned char* s, unsigned char* d, unsigned n,
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

template <bool Pack, typename Table>
__device__ void fusion_body(const Table& t, const FusionShape& f) {
  const std::size_t total = t.end(f.count - 1);
  const std::size_t part = f.chunk / kWarps;
  const unsigned warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const std::size_t lo = blockIdx.x * f.chunk + warp * part;
  if (lo >= total) return;
  const std::size_t hi = total - lo < part ? total : lo + part;
  // 32 table entries per round, one per lane: tensor i = base + lane spans [start, end).
  for (std::size_t base = t.first(blockIdx.x); base < f.count; base += kWarp) {
    const std::size_t i = base + lane;
    std::size_t end = 0, start = 0;
    unsigned char* tensor = nullptr;
    if (i < f.count) {
      end = t.end(i);
      tensor = t.tensor(i);
    }
    const std::size_t before = lane == 0 && base > 0 ? t.end(base - 1) : 0;
    start = __shfl_up_sync(kFull, end, 1);
    if (lane == 0) start = before;
    unsigned pieces = __ballot_sync(kFull, i < f.count && end > lo && start < hi && start < end);
    while (pieces != 0) {
      const int j = __ffs(pieces) - 1;
      pieces &= pieces - 1;
      const std::size_t s = __shfl_sync(kFull, start, j), e = __shfl_sync(kFull, end, j);
      unsigned char* p = reinterpret_cast<unsigned char*>(__shfl_sync(
          kFull, static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(tensor)), j));
      const std::size_t from = s > lo ? s : lo, to = e < hi ? e : hi;
      unsigned char* fused = f.fusion + from;
      unsigned char* other = p + (from - s);
      const auto n = static_cast<unsigned>(to - from);  // <= part < 2^32 (fusion_copy)
      if (Pack)
        copy_piece(other, fused, n, lane);
      else
        copy_piece(fused, other, n, lane);
    }
    // Done when the round's last tensor reaches the part's end (or there are no more).
    if (__shfl_sync(kFull, end, kWarp - 1) >= hi || base + kWarp >= f.count) break;
  }
}

// At least 3 blocks per SM (<= 80 registers, none spilled): 24 warps, 2 KiB each in flight.
template <bool Pack>
__global__ void __launch_bounds__(kThreads, 3)
    fusion_device_kernel(const DeviceTable t, const FusionShape f) {
  fusion_body<Pack>(t, f);
}

template <int K, int B, bool Pack>
__global__ void __launch_bounds__(kThreads, 3)
    fusion_param_kernel(const __grid_constant__ ParamTable<K, B> t, const FusionShape f) {
  fusion_body<Pack>(t, f);
}

// The table of n tensors on the host: end[], tensor[], and first[] for the blocks of `chunk`
// bytes. Returns the number of blocks. `wave` is the most blocks wanted.
template <typename Pointer>
std::size_t fill_table(const Pointer* tensors, const std::size_t* bytes, std::size_t n,
                       std::size_t wave, std::size_t* end, unsigned char** tensor,
                       std::uint16_t* first, std::size_t* chunk_out) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    total += bytes[i];
    end[i] = total;
    // One pointer type for both directions: pack only reads through it.
    tensor[i] =
        static_cast<unsigned char*>(const_cast<void*>(static_cast<const void*>(tensors[i])));
  }
  if (total == 0) return 0;
  // A warp's part (chunk / 8) must fit 32 bits: chunk <= 2^34, so total <= 2^34 x kMaxBlocks.
  if (total > (std::size_t{1} << 34) * kMaxBlocks)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml cuda: pack/unpack: over 16 TiB in one launch");
  // At most one wave of blocks (and kMaxBlocks), each at least 4 KiB: 512 bytes per warp.
  wave = wave < kMaxBlocks ? wave : kMaxBlocks;
  std::size_t chunk = (total + wave - 1) / wave;
  chunk = (chunk + 4095) / 4096 * 4096;
  while (chunk > (std::size_t{1} << 34) || (total + chunk - 1) / chunk > kMaxBlocks) chunk *= 2;
  const std::size_t blocks = (total + chunk - 1) / chunk;
  std::size_t i = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    while (end[i] <= b * chunk) ++i;
    first[b] = static_cast<std::uint16_t>(i);
  }
  *chunk_out = chunk;
  return blocks;
}

// ---- the device tables: a ring of pinned staging buffers and device buffers per device ------

constexpr int kSlots = 8;
constexpr std::size_t kSlotBytes =
    kMaxFusedTensors * (sizeof(std::size_t) + sizeof(void*)) + kMaxBlocks * sizeof(std::uint16_t);

struct TableSlot {
  unsigned char* host = nullptr;    // pinned staging: the table as last uploaded
  unsigned char* device = nullptr;  // its copy on the device
  cudaEvent_t done = nullptr;       // recorded after the last launch that reads `device`
  cudaStream_t stream = nullptr;    // of that launch
  std::size_t bytes = 0;            // 0: host holds no uploaded table
  std::size_t n = 0, blocks = 0, chunk = 0;  // of that table
};

struct TablePool {
  std::mutex mutex;
  bool usable = false;
  int last = -1;  // the slot uploaded last
  TableSlot slot[kSlots];
};

// The current device's pool, made on its first use (cudaMalloc, cudaMallocHost, events: the
// only allocations, once per device and process; never freed, as the runtime may be gone at
// exit). nullptr when there is none (more than 64 devices); usable == false when making it
// failed, and packing then uses the parameter tables.
TablePool* table_pool(int device) {
  constexpr int kDevices = 64;
  static std::mutex make;
  static TablePool* pools[kDevices] = {};
  if (device < 0 || device >= kDevices) return nullptr;
  std::lock_guard<std::mutex> lock(make);
  if (pools[device] != nullptr) return pools[device];
  auto* pool = new TablePool;
  bool ok = true;
  for (TableSlot& s : pool->slot) {
    ok = ok && cudaMallocHost(reinterpret_cast<void**>(&s.host), kSlotBytes) == cudaSuccess;
    ok = ok && cudaMalloc(reinterpret_cast<void**>(&s.device), kSlotBytes) == cudaSuccess;
    ok = ok && cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming) == cudaSuccess;
  }
  if (!ok) cudaGetLastError();  // a failure only means: parameter tables from now on
  pool->usable = ok;
  pools[device] = pool;
  return pool;
}

// Whether slot s (uploaded, of n tensors) holds the table of these tensors and sizes.
template <typename Pointer>
bool same_table(const TableSlot& s, const Pointer* tensors, const std::size_t* bytes,
                std::size_t n) {
  static_assert(sizeof(Pointer) == sizeof(unsigned char*), "device pointers");
  if (std::memcmp(s.host + n * sizeof(std::size_t), tensors, n * sizeof(void*)) != 0)
    return false;
  const auto* end = reinterpret_cast<const std::size_t*>(s.host);
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    total += bytes[i];
    if (end[i] != total) return false;
  }
  return true;
}

// Launches the kernel with slot s's device table (uploaded, on this stream) and records s.done.
template <bool Pack>
void launch_device_table(TableSlot& s, unsigned char* fusion, cudaStream_t stream,
                         const char* what) {
  const std::size_t n = s.n;
  const DeviceTable t{
      reinterpret_cast<const std::size_t*>(s.device),
      reinterpret_cast<unsigned char* const*>(s.device + n * sizeof(std::size_t)),
      reinterpret_cast<const std::uint16_t*>(s.device + n * (sizeof(std::size_t) + sizeof(void*)))};
  fusion_device_kernel<Pack><<<static_cast<unsigned>(s.blocks), kThreads, 0, stream>>>(
      t, FusionShape{fusion, n, s.chunk});
  check_launch(what);
  check(cudaEventRecord(s.done, stream), what, "cudaEventRecord");
}

// Launches through a device table; false (nothing enqueued) when none can be had without
// waiting: no free slot, a stream being captured into a graph (the staging buffer would be read
// at every replay), or no pool.
template <bool Pack, typename Pointer>
bool launch_with_device_table(unsigned char* fusion, const Pointer* tensors,
                              const std::size_t* bytes, std::size_t n, cudaStream_t stream,
                              const char* what) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (capture != cudaStreamCaptureStatusNone) return false;
  int device = 0;
  check(cudaGetDevice(&device), what, "cudaGetDevice");
  TablePool* pool = table_pool(device);
  if (pool == nullptr || !pool->usable) return false;
  const std::size_t wave = resident_blocks<&fusion_device_kernel<Pack>>(what);

  std::lock_guard<std::mutex> lock(pool->mutex);
  // The same tensors and sizes as the last upload on this stream: launch with that table as it
  // is, without building, comparing or uploading one (the host's cost per call is then the
  // launch and two comparisons of the caller's arrays, ~0.5 us for 1024 tensors).
  if (pool->last >= 0) {
    TableSlot& last = pool->slot[pool->last];
    if (last.bytes != 0 && last.stream == stream && last.n == n &&
        same_table(last, tensors, bytes, n)) {
      launch_device_table<Pack>(last, fusion, stream, what);
      return true;
    }
  }
  // A slot the device is done with, other than the last uploaded one (kept for reuse).
  int free = -1;
  for (int k = 1; k <= kSlots && free < 0; ++k) {
    const int c = (pool->last + k + kSlots) % kSlots;
    if (c == pool->last) continue;
    const cudaError_t e = cudaEventQuery(pool->slot[c].done);
    if (e == cudaSuccess)
      free = c;
    else if (e != cudaErrorNotReady)
      cudaGetLastError();  // not usable now; try the next
  }
  if (free < 0) return false;
  TableSlot& s = pool->slot[free];
  auto* end = reinterpret_cast<std::size_t*>(s.host);
  auto* tensor = reinterpret_cast<unsigned char**>(s.host + n * sizeof(std::size_t));
  auto* first =
      reinterpret_cast<std::uint16_t*>(s.host + n * (sizeof(std::size_t) + sizeof(void*)));
  std::size_t chunk = 0;
  const std::size_t blocks = fill_table(tensors, bytes, n, wave, end, tensor, first, &chunk);
  s.bytes = 0;  // being rewritten
  if (blocks == 0) return true;  // nothing to copy
  const std::size_t table_bytes =
      n * (sizeof(std::size_t) + sizeof(void*)) + blocks * sizeof(std::uint16_t);
  check(cudaMemcpyAsync(s.device, s.host, table_bytes, cudaMemcpyHostToDevice, stream), what,
        "cudaMemcpyAsync");
  s.bytes = table_bytes;
  s.stream = stream;
  s.n = n;
  s.blocks = blocks;
  s.chunk = chunk;
  pool->last = free;
  launch_device_table<Pack>(s, fusion, stream, what);
  return true;
}

template <int K, int B, bool Pack, typename Pointer>
void launch_with_param_table(unsigned char* fusion, const Pointer* tensors,
                             const std::size_t* bytes, std::size_t n, cudaStream_t stream,
                             const char* what) {
  ParamTable<K, B> t;
  const std::size_t wave = resident_blocks<&fusion_param_kernel<K, B, Pack>>(what);
  std::size_t chunk = 0;
  const std::size_t blocks = fill_table(tensors, bytes, n, wave < B ? wave : B, t.end_,
                                        t.tensor_, t.first_, &chunk);
  if (blocks == 0) return;
  fusion_param_kernel<K, B, Pack>
      <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(t, FusionShape{fusion, n, chunk});
  check_launch(what);
}

// Which way the table travels (tests force the parameter tables to cover them).
std::atomic<bool> g_param_tables_only{false};

// kMaxFusedTensors tensors per launch. `tensors` are the other side of each copy (pack:
// sources, unpack: destinations).
template <bool Pack, typename Pointer>
void fusion_copy(unsigned char* fusion, const Pointer* tensors, const std::size_t* bytes,
                 std::size_t n, cudaStream_t stream, const char* what) {
  constexpr int kMax = static_cast<int>(kMaxFusedTensors);
  constexpr int kB = static_cast<int>(kMaxBlocks);
  for (std::size_t start = 0; start < n; start += kMaxFusedTensors) {
    const std::size_t m = n - start < kMaxFusedTensors ? n - start : kMaxFusedTensors;
    const Pointer* p = tensors + start;
    const std::size_t* b = bytes + start;
    if (g_param_tables_only.load(std::memory_order_relaxed) ||
        !launch_with_device_table<Pack>(fusion, p, b, m, stream, what)) {
      // The smallest parameter table that holds the launch.
      if (m <= 128)
        launch_with_param_table<128, 256, Pack>(fusion, p, b, m, stream, what);
      else if (m <= 512)
        launch_with_param_table<512, kB, Pack>(fusion, p, b, m, stream, what);
      else
        launch_with_param_table<kMax, kB, Pack>(fusion, p, b, m, stream, what);
    }
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
    case DataType::float64: {
      double r = 0;
      if (exact_reciprocal(static_cast<double>(divisor), &r))
        scale_float<false>("divide", type, buffer, count, r, stream);
      else
        scale_float<true>("divide", type, buffer, count, static_cast<double>(divisor), stream);
      return;
    }
    case DataType::float32:
    case DataType::float16:
    case DataType::bfloat16: {
      // These divide by float(divisor) (rounded for |divisor| > 2^24, as before).
      float r = 0;
      if (exact_reciprocal(static_cast<float>(divisor), &r))
        scale_float<false>("divide", type, buffer, count, r, stream);
      else
        scale_float<true>("divide", type, buffer, count, static_cast<double>(divisor), stream);
      return;
    }
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
  // The floats 16-byte and the halves 8-byte aligned at the same element, if ever: both
  // repeat every 4 elements.
  const std::size_t in_head = head_elements(in, 4, 16), out_head = head_elements(o, 2, 8);
  const std::size_t head = out_head == in_head ? in_head : count;
  const std::size_t h = head < count ? head : count;
  const auto* ib = reinterpret_cast<const uint4*>(in + h);
  auto* ob = reinterpret_cast<uint2*>(o + h);
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
  const std::size_t in_head = head_elements(i, 2, 8), out_head = head_elements(out, 4, 16);
  const std::size_t head = in_head == out_head ? in_head : count;
  const std::size_t h = head < count ? head : count;
  const auto* ib = reinterpret_cast<const uint2*>(i + h);
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

void use_parameter_tables_for_testing(bool on) {
  g_param_tables_only.store(on, std::memory_order_relaxed);
}

}  // namespace riseml::cuda

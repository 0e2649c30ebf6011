// The kernels of kernels.hpp. The 16-bit conversions are the CPU reference
// (riseml/half_float.hpp, __host__ __device__ under nvcc) done on bits, not the
// CUDA intrinsics, so NaN payloads and every rounding match the CPU bit for bit.
#include <riseml/collective_error.hpp>
#include <riseml/cuda/kernels.hpp>

#include <riseml/half_float.hpp>

#include <cstdint>
#include <string>

namespace riseml::cuda {
namespace {

constexpr int kThreads = 256;

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

template <typename T, bool Divide>
__global__ void scale_kernel(T* p, std::size_t n, T factor) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    p[i] = Divide ? div(p[i], factor) : mul(p[i], factor);
}

// Integer average: truncating division, as kernels::divide on the CPU. The divisor stays a
// 64-bit integer (a uint8 divisor would wrap at 256 ranks).
template <typename T>
__global__ void divide_int_kernel(T* p, std::size_t n, long long divisor) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<T>(static_cast<long long>(p[i]) / divisor);
}

template <typename Half, bool Divide>
__global__ void scale_half_kernel(std::uint16_t* p, std::size_t n, float factor) {
  const Half h;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float x = h.load(p[i]);
    p[i] = h.store(Divide ? div(x, factor) : mul(x, factor));
  }
}

template <typename Half>
__global__ void narrow_kernel(const float* in, std::uint16_t* out, std::size_t n) {
  const Half h;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = h.store(in[i]);
}

template <typename Half>
__global__ void widen_kernel(const std::uint16_t* in, float* out, std::size_t n) {
  const Half h;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = h.load(in[i]);
}

// One segment per blockIdx.y; the x blocks stride over its bytes, 16 at a time where both
// ends are 16-byte aligned.
struct CopyBatch {
  const unsigned char* src[kMaxFusedTensors];
  unsigned char* dst[kMaxFusedTensors];
  std::size_t bytes[kMaxFusedTensors];
};
static_assert(sizeof(CopyBatch) <= 4000, "kernel parameters are limited to 4 KiB");

__global__ void copy_batch_kernel(const CopyBatch batch) {
  const unsigned char* src = batch.src[blockIdx.y];
  unsigned char* dst = batch.dst[blockIdx.y];
  const std::size_t n = batch.bytes[blockIdx.y];
  const std::size_t first = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t done = 0;
  if (((reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) & 15u) == 0) {
    const std::size_t vectors = n / 16;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (std::size_t i = first; i < vectors; i += stride) d[i] = s[i];
    done = vectors * 16;
  }
  for (std::size_t i = done + first; i < n; i += stride) dst[i] = src[i];
}

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw CollectiveError(ErrorKind::system,
                          std::string("riseml cuda: ") + what + ": " + cudaGetErrorString(e));
}

[[noreturn]] void bad_type(const char* what, DataType t) {
  throw CollectiveError(ErrorKind::invalid_argument,
                        std::string("riseml cuda: ") + what + ": unsupported type " +
                            std::string(to_string(t)));
}

template <bool Divide>
void scale_any(const char* what, DataType type, void* buffer, std::size_t count, double factor,
               cudaStream_t stream) {
  if (count == 0) return;
  const unsigned blocks = blocks_for(count);
  switch (type) {
    case DataType::float32:
      scale_kernel<float, Divide><<<blocks, kThreads, 0, stream>>>(
          static_cast<float*>(buffer), count, static_cast<float>(factor));
      break;
    case DataType::float64:
      scale_kernel<double, Divide><<<blocks, kThreads, 0, stream>>>(static_cast<double*>(buffer),
                                                                    count, factor);
      break;
    case DataType::float16:
      scale_half_kernel<ToF16, Divide><<<blocks, kThreads, 0, stream>>>(
          static_cast<std::uint16_t*>(buffer), count, static_cast<float>(factor));
      break;
    case DataType::bfloat16:
      scale_half_kernel<ToBF16, Divide><<<blocks, kThreads, 0, stream>>>(
          static_cast<std::uint16_t*>(buffer), count, static_cast<float>(factor));
      break;
    default: bad_type(what, type);
  }
  check_launch(what);
}

// At most kMaxFusedTensors segments: one launch.
void copy_batch(const unsigned char* const* src, unsigned char* const* dst,
                const std::size_t* bytes, std::size_t n, cudaStream_t stream, const char* what) {
  CopyBatch batch{};
  std::size_t segments = 0, largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (bytes[i] == 0) continue;
    batch.src[segments] = src[i];
    batch.dst[segments] = dst[i];
    batch.bytes[segments] = bytes[i];
    largest = bytes[i] > largest ? bytes[i] : largest;
    ++segments;
  }
  if (segments == 0) return;
  // Enough x blocks that each thread of the largest segment copies a few 16-byte vectors.
  std::size_t x = (largest / 16 + kThreads - 1) / kThreads;
  x = x < 1 ? 1 : (x > 1024 ? 1024 : x);
  copy_batch_kernel<<<dim3(static_cast<unsigned>(x), static_cast<unsigned>(segments)), kThreads, 0,
                      stream>>>(batch);
  check_launch(what);
}

}  // namespace

void scale(DataType type, void* buffer, std::size_t count, double factor, cudaStream_t stream) {
  scale_any<false>("scale", type, buffer, count, factor, stream);
}

void divide(DataType type, void* buffer, std::size_t count, int divisor, cudaStream_t stream) {
  if (count == 0) return;
  const unsigned blocks = blocks_for(count);
  switch (type) {
    case DataType::int32:
      divide_int_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<std::int32_t*>(buffer), count,
                                                          static_cast<long long>(divisor));
      break;
    case DataType::int64:
      divide_int_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<std::int64_t*>(buffer), count,
                                                          static_cast<long long>(divisor));
      break;
    case DataType::uint8:
      divide_int_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<std::uint8_t*>(buffer), count,
                                                          static_cast<long long>(divisor));
      break;
    case DataType::int8:
      divide_int_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<std::int8_t*>(buffer), count,
                                                          static_cast<long long>(divisor));
      break;
    case DataType::int16:
      divide_int_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<std::int16_t*>(buffer), count,
                                                          static_cast<long long>(divisor));
      break;
    default: scale_any<true>("divide", type, buffer, count, static_cast<double>(divisor), stream); return;
  }
  check_launch("divide");
}

void narrow_from_float(DataType half_type, const float* in, void* out, std::size_t count,
                       cudaStream_t stream) {
  if (count == 0) return;
  auto* o = static_cast<std::uint16_t*>(out);
  if (half_type == DataType::float16)
    narrow_kernel<ToF16><<<blocks_for(count), kThreads, 0, stream>>>(in, o, count);
  else if (half_type == DataType::bfloat16)
    narrow_kernel<ToBF16><<<blocks_for(count), kThreads, 0, stream>>>(in, o, count);
  else
    bad_type("narrow_from_float", half_type);
  check_launch("narrow_from_float");
}

void widen_to_float(DataType half_type, const void* in, float* out, std::size_t count,
                    cudaStream_t stream) {
  if (count == 0) return;
  auto* i = static_cast<const std::uint16_t*>(in);
  if (half_type == DataType::float16)
    widen_kernel<ToF16><<<blocks_for(count), kThreads, 0, stream>>>(i, out, count);
  else if (half_type == DataType::bfloat16)
    widen_kernel<ToBF16><<<blocks_for(count), kThreads, 0, stream>>>(i, out, count);
  else
    bad_type("widen_to_float", half_type);
  check_launch("widen_to_float");
}

void pack(void* fusion, const void* const* tensors, const std::size_t* bytes, std::size_t n,
          cudaStream_t stream) {
  auto* base = static_cast<unsigned char*>(fusion);
  for (std::size_t start = 0; start < n; start += kMaxFusedTensors) {
    const std::size_t m = n - start < kMaxFusedTensors ? n - start : kMaxFusedTensors;
    const unsigned char* src[kMaxFusedTensors];
    unsigned char* dst[kMaxFusedTensors];
    for (std::size_t i = 0; i < m; ++i) {
      src[i] = static_cast<const unsigned char*>(tensors[start + i]);
      dst[i] = base;
      base += bytes[start + i];
    }
    copy_batch(src, dst, bytes + start, m, stream, "pack");
  }
}

void unpack(const void* fusion, void* const* tensors, const std::size_t* bytes, std::size_t n,
            cudaStream_t stream) {
  const auto* base = static_cast<const unsigned char*>(fusion);
  for (std::size_t start = 0; start < n; start += kMaxFusedTensors) {
    const std::size_t m = n - start < kMaxFusedTensors ? n - start : kMaxFusedTensors;
    const unsigned char* src[kMaxFusedTensors];
    unsigned char* dst[kMaxFusedTensors];
    for (std::size_t i = 0; i < m; ++i) {
      src[i] = base;
      dst[i] = static_cast<unsigned char*>(tensors[start + i]);
      base += bytes[start + i];
    }
    copy_batch(src, dst, bytes + start, m, stream, "unpack");
  }
}

}  // namespace riseml::cuda

// CUDA kernels for what NCCL does not do: scaling (pre/postscale, average), float16/bfloat16
// compression casts and fusion-buffer packing. Each host wrapper enqueues on `stream` and
// returns at once; it throws CollectiveError(invalid_argument) for a bad type and
// CollectiveError(system) when a launch fails. Every result has the same bits as the CPU
// kernels (allreduce/src/kernels): 16-bit floats compute in float32 and round to nearest even
// once; no fused multiply-adds, no fast-math division.
// Only in a build with CUDA (RISEML_HAVE_CUDA); see status.hpp otherwise.
#pragma once

#include <riseml/datatype.hpp>

#include <cuda_runtime.h>

#include <cstddef>

namespace riseml::cuda {

// buffer[i] = buffer[i] * factor. float32 and the 16-bit floats multiply by float(factor),
// float64 by factor. Only float types.
void scale(DataType type, void* buffer, std::size_t count, double factor, cudaStream_t stream);

// buffer[i] = buffer[i] / divisor, as kernels::divide (averaging a sum); integers truncate.
void divide(DataType type, void* buffer, std::size_t count, int divisor, cudaStream_t stream);

// float32 -> float16/bfloat16 (compression) and back. half_type is float16 or bfloat16.
void narrow_from_float(DataType half_type, const float* in, void* out, std::size_t count,
                       cudaStream_t stream);
void widen_to_float(DataType half_type, const void* in, float* out, std::size_t count,
                    cudaStream_t stream);

// Fusion buffer: tensor i (bytes[i] bytes) lies at fusion + sum of bytes[j < i]. One launch per
// kMaxFusedTensors tensors. Device pointers; tensors may have any alignment.
inline constexpr std::size_t kMaxFusedTensors = 128;
void pack(void* fusion, const void* const* tensors, const std::size_t* bytes, std::size_t n,
          cudaStream_t stream);
void unpack(const void* fusion, void* const* tensors, const std::size_t* bytes, std::size_t n,
            cudaStream_t stream);

}  // namespace riseml::cuda

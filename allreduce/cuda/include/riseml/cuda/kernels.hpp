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

// Every buffer must be aligned to its element size (any further alignment is optional: the
// 16-byte aligned body of a buffer moves 16 bytes per load and store, the rest one element at a
// time, in the same launch); a misaligned one throws CollectiveError(invalid_argument).

// buffer[i] = buffer[i] * factor. float32 and the 16-bit floats multiply by float(factor),
// float64 by factor. Integers (int8, uint8, int16, int32, int64), as the CPU's scaling in
// engine/src/scaling.cpp: x * factor in double, truncated toward zero, saturated at the type's
// range, NaN -> 0. boolean is refused.
void scale(DataType type, void* buffer, std::size_t count, double factor, cudaStream_t stream);

// buffer[i] = buffer[i] / divisor, as kernels::divide (averaging a sum); integers truncate.
void divide(DataType type, void* buffer, std::size_t count, int divisor, cudaStream_t stream);

// float32 -> float16/bfloat16 (compression) and back. half_type is float16 or bfloat16.
void narrow_from_float(DataType half_type, const float* in, void* out, std::size_t count,
                       cudaStream_t stream);
void widen_to_float(DataType half_type, const void* in, float* out, std::size_t count,
                    cudaStream_t stream);

// Fusion buffer: tensor i (bytes[i] bytes) lies at fusion + sum of bytes[j < i]. `tensors` and
// `bytes` are host arrays (of device pointers), read before the call returns. One launch per
// kMaxFusedTensors tensors. The table (offsets, pointers) goes to the device through a ring of
// pinned staging buffers and device buffers made on the first call on each device (one
// cudaMemcpyAsync on `stream`, none when the table is the previous call's on that stream); when
// no slot is free without waiting, or `stream` is being captured into a graph, it travels in the
// kernel's parameters instead (CUDA 12.1+ and a driver of R530 or later for more than 4 KiB).
// Nothing waits for the device. Tensors may have any alignment: each is copied 16 bytes at a
// time where it and its place in the fusion buffer are 16-byte aligned alike, else with the
// widest word (8, 4, 2, 1 bytes) at which they are.
inline constexpr std::size_t kMaxFusedTensors = 1792;
void pack(void* fusion, const void* const* tensors, const std::size_t* bytes, std::size_t n,
          cudaStream_t stream);
void unpack(const void* fusion, void* const* tensors, const std::size_t* bytes, std::size_t n,
            cudaStream_t stream);

// Tests only: true sends every fusion table in the kernel's parameters (the fallback path),
// false (the default) through the device tables.
void use_parameter_tables_for_testing(bool on);

}  // namespace riseml::cuda

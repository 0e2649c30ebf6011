// Element-wise reduction and conversion kernels. One entry point per job; each picks an AVX2+F16C
// build of its loops where the CPU has them and a generic one otherwise (use_generic_kernels()
// forces the latter). Both give identical bits.
#pragma once

#include <riseml/datatype.hpp>

#include <cstddef>
#include <cstdint>

namespace riseml::kernels {

enum class Isa { generic, avx2_f16c };

// The best Isa this CPU supports.
Isa best_isa();
// What the entry points without an Isa use: best_isa(), or generic after use_generic_kernels().
Isa active_isa();
// From now on every kernel call of this process without an Isa runs the generic loops. A
// communicator created with KernelChoice::generic (RISEML_KERNELS=generic) calls it: the choice
// is process-wide because the kernels are free functions shared by every communicator, the
// engine and the tools, and one-way because both builds give the same bits, so it serves to
// rule the vector loops out when hunting a problem, not to tune per communicator.
void use_generic_kernels() noexcept;
const char* to_string(Isa isa);

// out[i] = a[i] op b[i] for i < count. `out` may be `a` or `b` (exactly), never a partial
// overlap. Sum and average both add here (average divides at the end, see divide()). Integer
// sums and products wrap; min/max return the first operand when the two compare equal (or
// either is NaN: `b < a ? b : a`). float16/bfloat16 compute in float32 and round once. bool:
// sum and max are logical or, product and min logical and (results 0 or 1).
void reduce(DataType type, ReduceOp op, void* out, const void* a, const void* b,
            std::size_t count);
void reduce(Isa isa, DataType type, ReduceOp op, void* out, const void* a, const void* b,
            std::size_t count);

// buffer[i] /= divisor (integers truncate, as Horovod; 16-bit floats in float32, rounded once). bool has
// no average: std::invalid_argument (the communicator refuses it before).
void divide(DataType type, void* buffer, std::size_t count, int divisor);

// memcpy with non-temporal stores where the CPU has AVX2 (falls back to memcpy): for data that
// is written once and not read again soon, it saves the read-for-ownership of every line.
void streaming_copy(void* dst, const void* src, std::size_t bytes);

// float16/bfloat16 <-> float32 bulk conversions (round to nearest even).
void widen_to_float(DataType half_type, const void* in, float* out, std::size_t count);
void narrow_from_float(DataType half_type, const float* in, void* out, std::size_t count);
void widen_to_float(Isa isa, DataType half_type, const void* in, float* out, std::size_t count);
void narrow_from_float(Isa isa, DataType half_type, const float* in, void* out,
                       std::size_t count);

}  // namespace riseml::kernels

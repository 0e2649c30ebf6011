// Copying tensors into and out of the fusion buffer, multiplied by a factor on the way
// (prescale, postscale). float16 and bfloat16 are scaled in float32 and rounded to nearest even.
#pragma once

#include <riseml/datatype.hpp>

#include <cstddef>

namespace riseml::engine {

// out[i] = in[i] * factor for `count` elements; in == out is allowed. Integers: in double,
// truncated toward zero, saturating; booleans are copied unscaled.
void scale_copy(const void* in, void* out, std::size_t count, DataType type, double factor);

bool is_floating_point(DataType type);

// The factor GPU tensors are scaled by (the device path, and its host stand-in): float16 and
// bfloat16 take it rounded to their own type first, as Horovod's GPU kernels and torch's
// `tensor * factor.half()` do (so hvd.allreduce(prescale_factor=f) gives Horovod's bits);
// other types take it as given (float32: float(factor); integers: in double).
double device_scale_factor(DataType type, double factor);

}  // namespace riseml::engine

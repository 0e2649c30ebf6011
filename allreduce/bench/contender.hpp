// One allreduce implementation the benchmark times: ours, Open MPI's or Gloo's. All run on the
// same buffers in the same process, in alternating rounds.
#pragma once

#include <riseml/datatype.hpp>

#include <cstddef>
#include <string>

namespace riseml::bench {

class Contender {
 public:
  virtual ~Contender() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const { return name(); }
  virtual bool supports(DataType type, ReduceOp op) const = 0;
  // Called once per size, outside the timed loop (Gloo builds its algorithm object here).
  virtual void prepare(const void* in, void* out, std::size_t count) { (void)in, (void)out, (void)count; }
  // One allreduce; in-place contenders reduce `out` (the caller copies `in` there to check).
  virtual void run(const void* in, void* out, std::size_t count) = 0;
  virtual bool in_place() const { return false; }
};

}  // namespace riseml::bench

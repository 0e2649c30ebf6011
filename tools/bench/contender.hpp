// One implementation of the collective being timed (allreduce, reduce-scatter or all-to-all):
// ours, Open MPI's or Gloo's. All run on the same buffers in the same process, timed by the
// same loops, one after the other. `count` is always the elements of each rank's whole input.
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
  // Called once per size, outside the timed loops, with the buffers the runs will use (Gloo
  // builds its algorithm object on `out` here).
  virtual void prepare(const void* in, void* out, std::size_t count) { (void)in, (void)out, (void)count; }
  // One allreduce of `in` into `out`; only when out_of_place() (Gloo reduces in place only).
  virtual void run(const void* in, void* out, std::size_t count) = 0;
  virtual bool out_of_place() const { return true; }
  // One allreduce of `buffer` in place (the `out` given to prepare()); only when in_place()
  // (reduce-scatter and all-to-all are timed out of place only).
  virtual void run_in_place(void* buffer, std::size_t count) = 0;
  virtual bool in_place() const { return true; }
};

}  // namespace riseml::bench

// Single-copy reads between processes of one host (Linux cross-memory attach, the mechanism
// Open MPI's vader uses for large messages): instead of copying a block into a shared-memory
// slot and out again, the sender offers its address and the receiver copies it straight into
// place with process_vm_readv. Half the copies, for blocks large enough that the extra small
// messages of the offer and its acknowledgement do not matter.
//
// The offer names a check value the sender keeps in its memory while the offer stands; the
// receiver reads it together with the block, so a pid that names another process (another pid
// namespace on the same host) is found out, never taken for the data. A pid whose check
// matched is trusted for a second without reading it again (it pins one more page).
// Any failure (no permission, a seccomp filter, a partial read) is reported as false: the
// caller then moves the block the ordinary way.
#pragma once

#include <cstddef>
#include <cstdint>

namespace riseml {

struct SingleCopyOffer {
  std::uint64_t address = 0;  // the block, in the sender's address space
  std::uint64_t bytes = 0;
  std::uint64_t check_address = 0;  // where the sender keeps `check`
  std::uint64_t check = 0;
};
static_assert(sizeof(SingleCopyOffer) == 32);

// A check value for this process's next offers (random per call, so a stale one never matches).
std::uint64_t single_copy_check();

// Copies offer.bytes bytes of process `pid` at offer.address to `into`; false when the kernel
// refuses or the check value does not match (then `into` holds garbage).
bool single_copy_read(int pid, const SingleCopyOffer& offer, std::byte* into);

}  // namespace riseml

// The collectives core's C++ interface: a communicator over the ranks of a job, built from a
// rendezvous (pmix_bootstrap/ in production, in memory in tests). Every call is collective and
// blocking; it either completes on every rank or throws a CollectiveError on every rank within
// the timeout. After an error the communicator is failed: later calls throw ErrorKind::aborted.
#pragma once

#include <riseml/collective_error.hpp>
#include <riseml/datatype.hpp>
#include <riseml/rendezvous.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace riseml {

// direct: every rank sends its input to every other at once (one step; small calls on one host).
enum class Algorithm : std::uint8_t { automatic, ring, halving_doubling, hierarchical, direct };
enum class TransportChoice : std::uint8_t { automatic, shm, tcp, inproc };
// How float16/bfloat16 allreduces and reduce-scatters add up. wire: 16-bit values travel, every
// step adds in float32 and rounds back to 16 bits (NCCL's and Horovod's way: half the bytes of
// float32, which is what fp16 compression is for). float32: widen to float32, reduce, round
// once at the end (one rounding in all; twice the bytes on the wire).
enum class HalfReduce : std::uint8_t { wire, float32 };
// Which build of the reduction and conversion kernels runs: the best the CPU has (AVX2+F16C or
// generic), or the generic loops. Both give the same bits.
enum class KernelChoice : std::uint8_t { automatic, generic };

std::string_view to_string(Algorithm a);
std::string_view to_string(TransportChoice t);

struct CommunicatorOptions {
  // How long one collective call (and setup) may wait for a peer. RISEML_TIMEOUT_S.
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  // RISEML_ALGORITHM: auto | ring | halving_doubling (hd) | hierarchical. Must agree on all ranks
  // (a disagreement is detected and reported as a mismatch).
  Algorithm algorithm = Algorithm::automatic;
  // RISEML_TRANSPORT: auto (shm between ranks of one host, tcp otherwise) | shm | tcp | inproc.
  // inproc requires every rank to be a thread of this process (unit tests).
  TransportChoice transport = TransportChoice::automatic;
  // RISEML_IFACE: the network interface (or IPv4 address) TCP listens on; empty = the first
  // non-loopback IPv4 interface that is up, else loopback.
  std::string iface;
  // RISEML_TCP_CONNECTIONS: TCP connections per peer (large messages are striped over them).
  int tcp_connections = 1;
  // RISEML_HALF_REDUCE: wire | float32 (see HalfReduce). Must agree on all ranks (a
  // disagreement fails as a size mismatch).
  HalfReduce half_reduce = HalfReduce::wire;
  // Keys published on the rendezvous start with this prefix; communicators of one job that
  // are set up at the same time need distinct prefixes.
  std::string rendezvous_prefix = "riseml";
  // RISEML_HOST_KEY: ranks with equal host keys count as one host (shared memory, hierarchical
  // layout). Empty: hostname + boot id. Tests set it to fake several hosts.
  std::string host_key;
  // RISEML_SMALL_BYTES: an automatic allreduce below this size uses halving-doubling, and so
  // does one whose ring steps would carry less than a quarter of it.
  std::size_t small_message_bytes = 64 << 10;
  // RISEML_DIRECT_BYTES: with 2 to 16 ranks (on one host or several), an automatic allreduce,
  // allgather or broadcast whose input times (ranks - 1) is at most this many bytes (and every
  // barrier) takes one direct step: each rank sends to every other at once. 0: never.
  std::size_t direct_bytes = 24 << 10;
  // RISEML_SHM_SLOTS: slots per shared-memory channel (2 to 1024).
  int shm_slots = 8;
  // RISEML_SHM_SLOT_KIB: KiB per shared-memory slot (4 to 65536). 0: 128 KiB, less when a host
  // has so many ranks that a rank's segment would pass 16 MiB.
  int shm_slot_kib = 0;
  // RISEML_SPIN_US: how long a rank waiting on shared memory spins before it yields and sleeps
  // on its doorbell. Unset: 50 us, or none when the ranks of this host that share CPUs with this
  // one (by their affinity masks at setup) outnumber those CPUs (a spinning rank then keeps its
  // peer from running: it yields at once instead).
  std::optional<std::chrono::microseconds> spin_time;
  // RISEML_RING_CHUNK_KIB: 2 ranks over shared memory run the ring over chunks of this many KiB
  // per rank (messages of at least twice 2 x this size); 0 turns chunking off.
  std::size_t ring_chunk_kib = 512;
  // RISEML_SINGLE_COPY_BYTES: all-to-all blocks of this many bytes and more between ranks of one
  // host are read straight from the sender's buffer; 0: never. Unset: 16 KiB, 32 KiB when the
  // host runs more ranks than it has CPUs. Must agree on all ranks.
  std::optional<std::size_t> single_copy_bytes;
  // RISEML_STREAMING_STORES=0 (false): never write with non-temporal stores (streaming_rule.hpp).
  bool streaming_stores = true;
  // RISEML_KERNELS=generic. Process-wide: a communicator created with `generic` makes every
  // later kernel call of the process use the generic loops (see kernels::use_generic_kernels).
  KernelChoice kernels = KernelChoice::automatic;

  // The defaults overridden by the RISEML_* environment variables above, the only place the
  // core reads them. Throws CollectiveError(invalid_argument) on a malformed value.
  static CommunicatorOptions from_environment();
};

class Context;

// Where this rank sits among the hosts (ranks with equal host keys share a host). Ranks are
// numbered in the job; local_ranks lists this host's, cross_ranks the ranks with the same local
// index on every host (empty when the hosts run different numbers of ranks).
struct HostLayout {
  std::vector<int> local_ranks;
  int local_index = 0;
  std::vector<int> cross_ranks;
  int cross_index = 0;
  int hosts = 1;
  bool uniform = true;  // every host runs the same number of ranks
};

class Communicator {
 public:
  // Collective: sets up the transports to every peer. Throws CollectiveError.
  Communicator(Rendezvous& rendezvous, const CommunicatorOptions& options);
  ~Communicator();
  // What a rank outside a new sub-communicator calls on the job's rendezvous while the members
  // construct theirs over a SubsetRendezvous of it: the same sequence of job-wide fences as a
  // communicator's setup, taking no part in it. Throws CollectiveError(setup) if a fence fails.
  static void stand_by(Rendezvous& rendezvous, const CommunicatorOptions& options);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;

  // out[i] = in[i] of rank 0 (op) ... (op) in[i] of rank size-1; in == out is allowed.
  // float16/bfloat16: each step adds in float32 and rounds to nearest even (HalfReduce::wire,
  // the default), or all is accumulated in float32 and rounded once (HalfReduce::float32).
  // Average divides the sum by size (integers: truncating, as Horovod). Integer sums and products wrap.
  // Every rank ends with bit-identical results; a repeated call gives the same bits.
  void allreduce(const void* in, void* out, std::size_t count, DataType type, ReduceOp op,
                 Algorithm algorithm = Algorithm::automatic);

  // The allreduce among cross_ranks only (each column of the host layout reduces on its own;
  // every rank must call it). The cross-host step of a hierarchical allreduce whose in-host
  // steps run elsewhere (NCCL). Needs uniform hosts, else CollectiveError(invalid_argument).
  void cross_host_allreduce(const void* in, void* out, std::size_t count, DataType type,
                            ReduceOp op);
  HostLayout host_layout() const;

  // buffer of `root` is copied into every rank's buffer.
  void broadcast(void* buffer, std::size_t count, DataType type, int root);

  // out = in of rank 0, in of rank 1, ...; `count` elements each.
  void allgather(const void* in, void* out, std::size_t count, DataType type);
  // As allgather, with counts[r] elements from rank r; counts must agree on all ranks.
  void allgatherv(const void* in, void* out, std::span<const std::size_t> counts, DataType type);

  // Reduces size()*count elements of `in` over all ranks; rank r receives block r in `out`.
  void reduce_scatter(const void* in, void* out, std::size_t count, DataType type, ReduceOp op);
  // As reduce_scatter with counts[r] elements for rank r (`in` holds sum(counts) elements, the
  // blocks in rank order); counts must agree on all ranks. Average divides as allreduce does.
  void reduce_scatterv(const void* in, void* out, std::span<const std::size_t> counts,
                       DataType type, ReduceOp op);

  // All-to-all: `in` holds send_counts[r] elements for each rank r, in rank order; `out`
  // receives recv_counts[r] elements from each rank r, in rank order. recv_counts[r] here must
  // equal send_counts[this rank] on rank r (else CollectiveError(mismatch) on every rank).
  void alltoallv(const void* in, std::span<const std::size_t> send_counts, void* out,
                 std::span<const std::size_t> recv_counts, DataType type);
  // `count` elements to and from every rank.
  void alltoall(const void* in, void* out, std::size_t count, DataType type);

  // Adasum (adaptive summation, Maleki et al. 2020; Horovod's op=Adasum) of floating point
  // tensors laid out back to back in `in` (tensor_counts[i] elements each): pairs of
  // partial results a, b combine as (1 - a.b / (2|a|^2)) a + (1 - a.b / (2|b|^2)) b, per
  // tensor, by recursive halving then doubling. Ranks beyond the largest power of two fold into
  // a partner first. Every rank ends with the same bits. in == out is allowed.
  void adasum_allreduce(const void* in, void* out, std::span<const std::size_t> tensor_counts,
                        DataType type);

  void barrier();

  // Between calls, for a thread that runs collectives only when some rank has work (the
  // engine's idle wait): blocks until a peer has sent this rank something (it started the next
  // collective), until `has_local_work` (asked after every wake-up) says yes, or until
  // `timeout` (to the microsecond: the calling thread's timer slack is 1 us while it sleeps),
  // using no CPU meanwhile. interrupt_wait() (any thread) makes it ask
  // has_local_work again: call it after giving the waiting thread work.
  // `links_guard`: where another thread may run collectives on this communicator meanwhile,
  // the mutex it holds while it does; the wait looks at the links only while it can take that
  // mutex, and returns as soon as it cannot (the other thread is running one).
  void wait_for_peers(std::chrono::microseconds timeout, const std::function<bool()>& has_local_work,
                      std::mutex* links_guard = nullptr);
  void interrupt_wait() noexcept;

  // Which algorithm `allreduce` would run for this many bytes (after RISEML_ALGORITHM).
  Algorithm algorithm_for(std::size_t bytes) const;
  // A short description of the transport per peer, e.g. "shm shm tcp".
  std::string describe_transports() const;
  // Where this host's ranks may run and how this rank waits on shared memory, e.g.
  // "cpus [0] [1], spin 50 us (1 rank(s) share 1 CPU(s))".
  std::string describe_placement() const;

 private:
  std::unique_ptr<Context> context_;
};

}  // namespace riseml

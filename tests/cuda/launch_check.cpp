// riseml_gpu_launch_check: the engine with GPU tensors in separate processes, bootstrapped by
// PMIx (riseml-launch -n N, srun --mpi=pmix, mpirun). Every rank allreduces (fused and single,
// sum and average, sizes with and without a remainder), broadcasts and allgathers device
// tensors and checks the results against what it computes on the host.
//   --fake-hosts  every rank counts as its own host (its own host_key), so two ranks
//                 can share one GPU with RISEML_GPU_ALGORITHM=hierarchical.
// Exit: 0 checked, 1 a wrong result or an error, 77 cannot run here (no GPU, or fewer GPUs
// than ranks on a host in flat mode), with the reason on stderr.
// The ranks agree on that before the engine starts: each puts its verdict (empty, or why it
// cannot run) and all fence once, so every rank exits 77 (or 1) when any rank must, and none
// is left alone at the engine's first fence.
#include <riseml/cuda/gpu_collectives.hpp>
#include <riseml/cuda/status.hpp>
#include <riseml/engine/engine.hpp>
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstddef>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace riseml;

namespace {

constexpr int kSkip = 77;

float value(int rank, std::size_t i) { return static_cast<float>(i % 11) + 0.5f * static_cast<float>(rank); }

struct Device {
  void* p = nullptr;
  explicit Device(std::size_t bytes) {
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) throw std::runtime_error("cudaMalloc");
  }
  ~Device() { cudaFree(p); }
};

// What keeps this rank from running: "" (it can), "skip: why" or "error: why".
std::string verdict(bool fake_hosts, const pmix::JobFacts& facts, bool hierarchical, int& device) {
  if (!cuda::available()) return "skip: " + cuda::status();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1)
    return "skip: cudaGetDeviceCount found no device";
  // Flat: one NCCL communicator over every rank, so the ranks of this machine need a GPU each
  // (--fake-hosts does not change that: they still share the machine's GPUs). Hierarchical:
  // one communicator per host, fake or real.
  const int local = fake_hosts ? 1 : facts.local_size;
  if (!hierarchical && devices < facts.local_size)
    return "skip: " + std::to_string(facts.local_size) + " ranks on host " + facts.hostname +
           " but " + std::to_string(devices) + " GPU(s): flat NCCL needs one GPU per rank";
  if (hierarchical && devices < local)
    return "skip: " + std::to_string(local) + " ranks per host but " + std::to_string(devices) +
           " GPU(s)";
  device = fake_hosts ? facts.rank % devices : facts.local_rank % devices;
  if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
    return "error: cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(e);
  return "";
}

int run(int argc, char** argv) {
  const bool fake_hosts = argc > 1 && std::strcmp(argv[1], "--fake-hosts") == 0;
  std::shared_ptr<pmix::Session> session = pmix::init();
  const pmix::JobFacts facts = session->facts();
  const cuda::GpuOptions gpu = cuda::GpuOptions::from_environment();
  const bool hierarchical = gpu.algorithm == cuda::GpuAlgorithm::hierarchical;
  CommunicatorOptions options = CommunicatorOptions::from_environment();
  if (fake_hosts) options.host_key = "fake-host-" + std::to_string(facts.rank);
  int device = 0;
  std::string mine;
  try {
    mine = verdict(fake_hosts, facts, hierarchical, device);
  } catch (const std::exception& e) {
    mine = std::string("error: ") + e.what();
  }

  // Every rank's verdict, so that all take the same way out.
  pmix::SessionRendezvous rendezvous(session);
  const std::string key = "riseml-gpu-check/verdict";
  rendezvous.put(key, std::vector<std::byte>(reinterpret_cast<const std::byte*>(mine.data()),
                                             reinterpret_cast<const std::byte*>(mine.data()) + mine.size()));
  rendezvous.fence(options.timeout);
  int code = 0;
  for (int k = 0; k < facts.size; ++k) {
    const std::vector<std::byte> v = rendezvous.get(k, key, options.timeout);
    const std::string theirs(reinterpret_cast<const char*>(v.data()), v.size());
    if (theirs.empty()) continue;
    const bool error = theirs.rfind("error:", 0) == 0;
    code = error ? 1 : (code == 1 ? 1 : kSkip);
    if (k == facts.rank || facts.rank == 0)
      std::fprintf(stderr, "%s (rank %d%s)\n", theirs.c_str(), k, k == facts.rank ? "" : ", seen by rank 0");
  }
  if (code != 0) {
    if (mine.empty())
      std::fprintf(stderr, "rank %d: %s: another rank cannot run\n", facts.rank,
                   code == kSkip ? "skip" : "stopping");
    return code;
  }
  engine::Engine eng(rendezvous, options, engine::EngineOptions::from_environment());
  const int n = eng.size(), r = eng.rank();
  int wrong = 0;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok && wrong++ < 5) std::fprintf(stderr, "rank %d: WRONG: %s\n", r, what.c_str());
  };

  // Fused (three tensors) and single tensors; sizes with a remainder over any host size.
  for (std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{3} << 20}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::average}) {
      std::vector<float> host(count);
      for (std::size_t i = 0; i < count; ++i) host[i] = value(r, i);
      Device a(count * 4), b(count * 4), c(count * 4), single(count * 4);
      for (void* p : {a.p, b.p, c.p, single.p})
        cudaMemcpy(p, host.data(), count * 4, cudaMemcpyHostToDevice);
      const std::string tag = std::to_string(count) + "." + std::string(to_string(op));
      engine::Request fused;
      fused.name = "fused." + tag;
      fused.op = op;
      for (void* p : {a.p, b.p, c.p})
        fused.tensors.push_back({p, p, {static_cast<std::int64_t>(count)}, device});
      auto h1 = eng.enqueue(fused);
      engine::Request one;
      one.name = "single." + tag;
      one.op = op;
      one.tensors.push_back({single.p, single.p, {static_cast<std::int64_t>(count)}, device});
      auto h2 = eng.enqueue(one);
      h1.wait();
      h2.wait();
      for (void* p : {a.p, b.p, c.p, single.p}) {
        std::vector<float> got(count);
        cudaMemcpy(got.data(), p, count * 4, cudaMemcpyDeviceToHost);
        for (std::size_t i = 0; i < count; i += 1 + count / 997) {
          float want = 0;
          for (int k = 0; k < n; ++k) want += value(k, i);
          if (op == ReduceOp::average) want /= static_cast<float>(n);
          if (std::abs(got[i] - want) > 1e-3f * (1 + std::abs(want))) {
            expect(false, tag + " element " + std::to_string(i) + ": " + std::to_string(got[i]) +
                              " != " + std::to_string(want));
            break;
          }
        }
      }
    }
  }
  // Broadcast from the last rank; allgather of r + 1 rows from rank r.
  {
    Device v(256 * 4);
    std::vector<float> host(256, static_cast<float>(r));
    cudaMemcpy(v.p, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    engine::Request b;
    b.kind = engine::OpKind::broadcast;
    b.name = "bcast";
    b.root = n - 1;
    b.tensors.push_back({v.p, v.p, {256}, device});
    eng.enqueue(b).wait();
    cudaMemcpy(host.data(), v.p, host.size() * 4, cudaMemcpyDeviceToHost);
    expect(host[0] == static_cast<float>(n - 1) && host[255] == static_cast<float>(n - 1),
           "broadcast");
    Device rows(static_cast<std::size_t>(r + 1) * 4);
    std::vector<float> mine(static_cast<std::size_t>(r + 1), static_cast<float>(r));
    cudaMemcpy(rows.p, mine.data(), mine.size() * 4, cudaMemcpyHostToDevice);
    engine::Request g;
    g.kind = engine::OpKind::allgather;
    g.name = "gather";
    g.tensors.push_back({rows.p, nullptr, {r + 1}, device});
    auto h = eng.enqueue(g);
    const std::size_t total = static_cast<std::size_t>(n) * static_cast<std::size_t>(n + 1) / 2;
    expect(h.output_shape() == std::vector<std::int64_t>{static_cast<std::int64_t>(total)},
           "allgather shape");
    Device all(total * 4);
    h.copy_allgather_output(all.p);
    std::vector<float> got(total);
    cudaMemcpy(got.data(), all.p, total * 4, cudaMemcpyDeviceToHost);
    std::size_t at = 0;
    for (int k = 0; k < n; ++k)
      for (int j = 0; j <= k; ++j) expect(got[at++] == static_cast<float>(k), "allgather rows");
  }
  eng.shutdown();
  std::printf("rank %d of %d (host %s, CUDA device %d, %s): %s\n", r, n, facts.hostname.c_str(),
              device, hierarchical ? "hierarchical" : "flat NCCL", wrong ? "WRONG" : "ok");
  return wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "riseml_gpu_launch_check: %s\n", e.what());
    return 1;
  }
}

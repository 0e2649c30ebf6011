// riseml-gpu-bench: the CUDA kernels' effective memory bandwidth (bytes read + written per
// second) as a share of the device's peak, and NCCL allreduce with one rank per visible device
// (threads) in the nccl-tests table form (busbw = algbw * 2(n-1)/n, 0 with one rank).
// Then the engine's GPU path against raw NCCL (one rank).
//   riseml-gpu-bench [--quick]
#include <riseml/cuda/kernels.hpp>
#include <riseml/cuda/nccl_communicator.hpp>
#include <riseml/cuda/status.hpp>
#include <riseml/engine/engine.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using riseml::DataType;
namespace rc = riseml::cuda;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "riseml-gpu-bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Mean milliseconds per run of `body` over `iterations`, after one warm-up.
double time_ms(cudaStream_t stream, int iterations, const std::function<void()>& body) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  body();
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iterations; ++i) body();
  check(cudaEventRecord(stop, stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iterations;
}

// The device's peak memory bandwidth in GB/s and where it came from: memory clock x bus width x
// 2 (double data rate) from the device attributes, else 4814 GB/s for an H200 (its data
// sheet), else 0 (unknown).
double peak_gbs(int device, const char* name, const char** source) {
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess &&
      clock_khz > 0 && bus_bits > 0) {
    *source = "memory clock x bus width x 2, from the device attributes";
    return 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  }
  cudaGetLastError();
  if (std::strstr(name, "H200") != nullptr) {
    *source = "the H200 data sheet (the device attributes report no memory clock or bus width)";
    return 4814.0;
  }
  *source = "unknown (the device attributes report no memory clock or bus width)";
  return 0;
}

void kernel_row(const std::string& name, double bytes_moved, double ms, double peak) {
  const double gbs = bytes_moved / (ms * 1e-3) / 1e9;
  if (peak > 0)
    std::printf("%-30s %12.0f %10.3f %10.1f %9.1f%%\n", name.c_str(), bytes_moved, ms, gbs,
                100.0 * gbs / peak);
  else
    std::printf("%-30s %12.0f %10.3f %10.1f  peak unknown\n", name.c_str(), bytes_moved, ms, gbs);
}

// Each kernel's effective bandwidth: bytes read + written per second, and its share of the
// peak. The issue-35 targets: >= 80% for scale, divide and the conversions, >= 30% for packing
// 1024 small tensors.
void kernels(bool quick) {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const char* source = "";
  const double peak = peak_gbs(device, prop.name, &source);
  std::printf("# device %d: %s, sm_%d%d, %d SMs, %.1f GiB\n", device, prop.name, prop.major,
              prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
  if (peak > 0)
    std::printf("# peak memory bandwidth %.1f GB/s (%s)\n", peak, source);
  else
    std::printf("# peak memory bandwidth: %s\n", source);

  const std::size_t n = quick ? (std::size_t{1} << 24) : (std::size_t{1} << 28);  // floats
  const int iters = quick ? 5 : 20;
  float* f = nullptr;
  void* h = nullptr;
  void* fusion = nullptr;
  check(cudaMalloc(&f, n * 4), "cudaMalloc");
  check(cudaMalloc(&h, n * 2), "cudaMalloc");
  check(cudaMalloc(&fusion, n * 4), "cudaMalloc");
  cudaStream_t s;
  check(cudaStreamCreate(&s), "cudaStreamCreate");
  // Normal numbers, not zeros, so that the 16-bit conversions take their common path: 0x3c3c is
  // 1.06 as float16 and 0.0115 as bfloat16; the floats are its widening. Scaling by 1 and
  // dividing by 1 keep them there.
  check(cudaMemset(h, 0x3c, n * 2), "cudaMemset");
  rc::widen_to_float(DataType::float16, h, f, n, s);
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");

  std::printf("%-30s %12s %10s %10s %10s\n", "kernel", "bytes", "time_ms", "GB/s", "of_peak");
  // In place: each element read and written once. float64 uses the same bytes (n / 2 doubles).
  struct InPlace {
    const char* type_name;
    DataType type;
    void* buffer;
    std::size_t count, element;
  };
  const InPlace in_place[] = {{"float32", DataType::float32, f, n, 4},
                              {"float16", DataType::float16, h, n, 2},
                              {"bfloat16", DataType::bfloat16, h, n, 2},
                              {"float64", DataType::float64, f, n / 2, 8}};
  for (const InPlace& c : in_place) {
    kernel_row(std::string("scale ") + c.type_name, 2.0 * c.count * c.element,
               time_ms(s, iters, [&] { rc::scale(c.type, c.buffer, c.count, 1.0, s); }), peak);
    kernel_row(std::string("divide ") + c.type_name, 2.0 * c.count * c.element,
               time_ms(s, iters, [&] { rc::divide(c.type, c.buffer, c.count, 1, s); }), peak);
  }
  // Conversions: 4 bytes read + 2 written per element, or the reverse.
  for (DataType t : {DataType::float16, DataType::bfloat16}) {
    const std::string half = t == DataType::float16 ? "float16" : "bfloat16";
    kernel_row("float32->" + half, 6.0 * n, time_ms(s, iters, [&] {
                 rc::narrow_from_float(t, f, h, n, s);
               }), peak);
    kernel_row(half + "->float32", 6.0 * n, time_ms(s, iters, [&] {
                 rc::widen_to_float(t, h, f, n, s);
               }), peak);
  }
  // Packing: 1024 tensors of 64 KiB, and of 4 KiB + 3 bytes (unaligned), into a fusion buffer
  // and back, each one launch. Quick: as many as half the buffer holds.
  for (std::size_t tensor_bytes : {std::size_t{65536}, std::size_t{4099}}) {
    const std::size_t count = std::min<std::size_t>(1024, n * 4 / 2 / tensor_bytes);
    std::vector<const void*> srcs(count);
    std::vector<void*> dsts(count);
    std::vector<std::size_t> sizes(count, tensor_bytes);
    auto* base = reinterpret_cast<unsigned char*>(f);
    for (std::size_t i = 0; i < count; ++i) {
      srcs[i] = base + i * tensor_bytes;
      dsts[i] = base + i * tensor_bytes;
    }
    const std::string shape = std::to_string(count) + " x " + std::to_string(tensor_bytes) + " B";
    kernel_row("pack " + shape, 2.0 * count * tensor_bytes, time_ms(s, iters, [&] {
                 rc::pack(fusion, srcs.data(), sizes.data(), count, s);
               }), peak);
    kernel_row("unpack " + shape, 2.0 * count * tensor_bytes, time_ms(s, iters, [&] {
                 rc::unpack(fusion, dsts.data(), sizes.data(), count, s);
               }), peak);
  }
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  cudaStreamDestroy(s);
  cudaFree(f);
  cudaFree(h);
  cudaFree(fusion);
}

void nccl(bool quick) {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int ranks = devices;
  std::printf("\n# NCCL allreduce float32 sum, %d rank(s) (one per device, threads)%s\n", ranks,
              ranks == 1 ? "; busbw is 0 with one rank (nothing crosses a link)" : "");
  std::printf("%12s %12s %10s %10s %10s\n", "size_B", "count", "time_us", "algbw_GB/s",
              "busbw_GB/s");
  auto hub = std::make_shared<riseml::InMemoryRendezvousHub>(ranks);
  std::vector<std::size_t> sizes = {1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28};
  if (quick) sizes.resize(4);
  std::vector<std::vector<double>> us(ranks, std::vector<double>(sizes.size()));
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        check(cudaSetDevice(r), "cudaSetDevice");
        riseml::InMemoryRendezvous rendezvous(hub, r);
        rc::NcclOptions options;
        options.device = r;
        rc::NcclCommunicator comm(rendezvous, options);
        void* buf = nullptr;
        check(cudaMalloc(&buf, sizes.back()), "cudaMalloc");
        check(cudaMemset(buf, 0, sizes.back()), "cudaMemset");
        cudaStream_t s;
        check(cudaStreamCreate(&s), "cudaStreamCreate");
        for (std::size_t i = 0; i < sizes.size(); ++i) {
          const std::size_t count = sizes[i] / 4;
          const int iters = sizes[i] >= (1 << 24) ? 10 : 50;
          us[r][i] = 1e3 * time_ms(s, iters, [&] {
            comm.allreduce(buf, buf, count, DataType::float32, riseml::ReduceOp::sum, s);
          });
        }
        comm.synchronize();
        cudaStreamDestroy(s);
        cudaFree(buf);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r)
    if (!errors[r].empty()) {
      std::printf("rank %d: %s\n", r, errors[r].c_str());
      std::exit(1);
    }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    double t = 0;
    for (int r = 0; r < ranks; ++r) t = std::max(t, us[r][i]);
    const double algbw = sizes[i] / (t * 1e-6) / 1e9;
    const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
    std::printf("%12zu %12zu %10.1f %10.2f %10.2f\n", sizes[i], sizes[i] / 4, t, algbw, busbw);
  }
}

// The engine's GPU path with one rank: a training step's worth of gradients (`tensors` tensors
// of `bytes` each) through negotiation, fusion (pack, NCCL, unpack) and completion, against the
// same bytes as one raw NCCL allreduce: the difference is the engine's cost per step.
void engine(bool quick) {
  struct Case {
    int tensors;
    std::size_t bytes;
  };
  std::vector<Case> cases = {{64, 16 << 10}, {160, 256 << 10}, {16, 16 << 20}};
  if (quick) cases.resize(2);
  std::printf("\n# engine (1 rank): one step = every tensor allreduced (float32 sum), fused in "
              "a device buffer, vs one raw NCCL allreduce of the same bytes\n");
  std::printf("%8s %12s %12s %12s %12s %10s\n", "tensors", "each_B", "total_B", "engine_us",
              "nccl_us", "overhead");
  auto hub = std::make_shared<riseml::InMemoryRendezvousHub>(1);
  riseml::InMemoryRendezvous rendezvous(hub, 0);
  riseml::CommunicatorOptions copts;
  copts.transport = riseml::TransportChoice::inproc;
  riseml::engine::EngineOptions eopts;
  eopts.cycle_time = std::chrono::microseconds(100);
  riseml::engine::Engine eng(rendezvous, copts, eopts);
  rc::NcclCommunicator raw(rendezvous, rc::NcclOptions{});
  cudaStream_t s;
  check(cudaStreamCreate(&s), "cudaStreamCreate");
  for (const Case& c : cases) {
    const std::size_t total = c.bytes * static_cast<std::size_t>(c.tensors);
    void* block = nullptr;
    check(cudaMalloc(&block, total), "cudaMalloc");
    check(cudaMemset(block, 0, total), "cudaMemset");
    const int steps = quick ? 10 : 30;
    auto step = [&](int k) {
      std::vector<riseml::engine::Handle> handles;
      for (int t = 0; t < c.tensors; ++t) {
        riseml::engine::Request r;
        r.name = "g" + std::to_string(t);
        auto* p = static_cast<std::byte*>(block) + static_cast<std::size_t>(t) * c.bytes;
        r.tensors.push_back({p, p, {static_cast<std::int64_t>(c.bytes / 4)}, 0});
        r.stream = s;
        handles.push_back(eng.enqueue(std::move(r)));
      }
      for (auto& h : handles) h.wait();
      (void)k;
    };
    step(-1);  // warm-up: NCCL setup, fusion buffer, response cache
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < steps; ++k) step(k);
    const double engine_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        steps;
    const double nccl_us = 1e3 * time_ms(s, steps, [&] {
      raw.allreduce(block, block, total / 4, DataType::float32, riseml::ReduceOp::sum, s);
    });
    std::printf("%8d %12zu %12zu %12.1f %12.1f %9.2fx\n", c.tensors, c.bytes, total, engine_us,
                nccl_us, engine_us / nccl_us);
    cudaFree(block);
  }
  raw.synchronize();
  cudaStreamDestroy(s);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::printf("# riseml-gpu-bench: %s\n", rc::status().c_str());
  if (!rc::available()) {
    std::printf("riseml-gpu-bench: no usable CUDA device, nothing to measure\n");
    return 2;
  }
  kernels(quick);
  nccl(quick);
  try {
    engine(quick);
  } catch (const std::exception& e) {
    std::printf("riseml-gpu-bench: engine: %s\n", e.what());
    return 1;
  }
  return 0;
}

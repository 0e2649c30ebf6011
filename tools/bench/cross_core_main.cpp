// riseml-cross-core: what moving S bytes from one CPU's cache into another's costs on this
// machine, the floor under any shared-memory collective of small messages. A writer thread on
// one CPU copies S bytes into a buffer and raises a flag; a reader thread on another CPU sees
// the flag and copies the S bytes out (the time from the flag to the end of that copy is the
// transfer); then the reader hands the turn back. A 2-rank allreduce of S bytes must bring
// S/2 of the peer's inputs and S/2 of its results into each rank, the second half only after
// the first has been reduced: at least two such transfers of S/2, one after the other.
// The second table is that allreduce with no library around it: two threads, each with its own
// S bytes of float32 in private memory, copy them into a shared buffer, wait for the other's, and
// add the other's into their own (in place, our reduction kernel): what the work of a
// shared-memory allreduce that copies its input in costs here with nothing around it, with its
// two parts (the copy in, the reduce out of the other CPU's cache) and the slower thread's time
// per call.
//   riseml-cross-core [--cpus A,B] [--sizes 4K,16K,32K,64K,256K,1M] [--calls 2000]
// Not installed: a measuring aid for docs/performance.md.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <riseml/reduce_kernels.hpp>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "riseml-cross-core: %s\nusage: riseml-cross-core [--cpus A,B] "
               "[--sizes 4K,16K,64K] [--calls 2000]\n",
               why);
  std::exit(2);
}

std::size_t parse_size(const std::string& text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  std::size_t scale = 1;
  if (*end == 'K') scale = 1 << 10, ++end;
  else if (*end == 'M') scale = 1 << 20, ++end;
  if (end == text.c_str() || *end != '\0' || v == 0 || v > (1ull << 30) / scale)
    usage(("not a size: '" + text + "'").c_str());
  return static_cast<std::size_t>(v) * scale;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    out.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

struct Times {
  double p10, p50, p90;
};

Times percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {at(0.1), at(0.5), at(0.9)};
}

// Until `turn` is `want`: spinning, and yielding after a while (both threads on one CPU).
void await_turn(const std::atomic<int>& turn, int want) {
  for (unsigned spins = 0; turn.load(std::memory_order_acquire) != want; ++spins)
    if (spins > 10000) std::this_thread::yield();
}

// One size: `calls` transfers writer -> reader, each timed on the reader.
Times measure(int writer_cpu, int reader_cpu, std::size_t bytes, int calls) {
  std::vector<std::byte> source(bytes, std::byte{1}), shared(bytes, std::byte{2}), sink(bytes);
  alignas(64) std::atomic<int> turn{0};  // 0: the writer's, 1: the reader's
  std::vector<double> transfer;
  transfer.reserve(static_cast<std::size_t>(calls));
  std::thread reader([&] {
    if (!pin(reader_cpu)) usage("cannot run on the reader's CPU");
    for (int i = 0; i < calls + 100; ++i) {
      await_turn(turn, 1);
      const auto t0 = Clock::now();
      std::memcpy(sink.data(), shared.data(), bytes);
      const auto t1 = Clock::now();
      if (i >= 100) transfer.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      turn.store(0, std::memory_order_release);
    }
  });
  if (!pin(writer_cpu)) usage("cannot run on the writer's CPU");
  for (int i = 0; i < calls + 100; ++i) {
    source[static_cast<std::size_t>(i) % bytes] = std::byte(i);  // new data every time
    std::memcpy(shared.data(), source.data(), bytes);
    turn.store(1, std::memory_order_release);
    await_turn(turn, 0);
  }
  reader.join();
  return percentiles(transfer);
}

struct AllreduceTimes {
  Times call;                 // the slower thread's time per call
  double copy_p50, add_p50;   // thread 0's two parts
};

// One size: `calls` 2-thread allreduces of `bytes` (whole float32s, sum, in place) through a shared
// buffer per thread, two of them in turn so a thread never writes the one its peer still reads.
AllreduceTimes measure_allreduce(int cpu0, int cpu1, std::size_t bytes, int calls) {
  const std::size_t count = bytes / sizeof(float);
  struct Side {
    std::vector<float> input, shared;  // shared: two buffers of `count`
    alignas(64) std::atomic<long> arrived{0};
    alignas(64) std::atomic<long> published{0};
    std::vector<double> call, copy, add;
  };
  Side side[2];
  for (Side& s : side) {
    s.input.assign(count, 1.0f);
    s.shared.assign(2 * count, 0.0f);
    s.call.reserve(static_cast<std::size_t>(calls));
  }
  auto spin_until = [](const std::atomic<long>& v, long want) {
    for (unsigned spins = 0; v.load(std::memory_order_acquire) < want; ++spins)
      if (spins > 10000) std::this_thread::yield();
  };
  auto run = [&](int me, int cpu) {
    if (!pin(cpu)) usage("cannot run on the CPUs asked for");
    Side& mine = side[me];
    const Side& peer = side[1 - me];
    for (long i = 1; i <= calls + 100; ++i) {
      mine.arrived.store(i, std::memory_order_release);  // both start together
      spin_until(peer.arrived, i);
      const auto t0 = Clock::now();
      float* out = mine.shared.data() + (i % 2) * count;
      std::memcpy(out, mine.input.data(), count * sizeof(float));
      const auto t1 = Clock::now();
      mine.published.store(i, std::memory_order_release);
      spin_until(peer.published, i);
      const float* theirs = peer.shared.data() + (i % 2) * count;
      riseml::kernels::reduce(riseml::DataType::float32, riseml::ReduceOp::sum,
                              mine.input.data(), mine.input.data(), theirs, count);
      const auto t2 = Clock::now();
      if (i > 100) {
        mine.call.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
        mine.copy.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        mine.add.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
      }
    }
  };
  std::thread other([&] { run(1, cpu1); });
  run(0, cpu0);
  other.join();
  std::vector<double> slower(side[0].call.size());
  for (std::size_t k = 0; k < slower.size(); ++k)
    slower[k] = std::max(side[0].call[k], side[1].call[k]);
  return {percentiles(slower), percentiles(side[0].copy).p50, percentiles(side[0].add).p50};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> cpus;
  std::vector<std::size_t> sizes;
  int calls = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + arg).c_str());
    const std::string value = argv[++i];
    if (arg == "--cpus") {
      for (const std::string& c : split(value)) cpus.push_back(std::atoi(c.c_str()));
      if (cpus.size() != 2) usage("--cpus wants two CPUs, e.g. 0,1");
    } else if (arg == "--sizes") {
      for (const std::string& s : split(value)) sizes.push_back(parse_size(s));
    } else if (arg == "--calls") {
      calls = std::atoi(value.c_str());
      if (calls < 1) usage("--calls must be at least 1");
    } else {
      usage(("unknown option " + arg).c_str());
    }
  }
  if (cpus.empty()) {  // the first two CPUs this process may use
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    if (cpus.empty()) usage("cannot read this process's CPUs");
    if (cpus.size() < 2) cpus.push_back(cpus[0]);  // one CPU: both threads on it
  }
  if (sizes.empty())
    for (std::size_t k : {4, 16, 32, 64, 256, 1024}) sizes.push_back(k << 10);
  std::printf("# riseml-cross-core: CPU %d writes, CPU %d reads; %d transfers per size\n",
              cpus[0], cpus[1], calls);
  std::printf("# floor of a 2-rank allreduce of S bytes: two transfers of S/2 in sequence\n");
  std::printf("#%11s %9s %9s %9s %10s %16s\n", "size", "p10_us", "p50_us", "p90_us", "GB/s_p50",
              "2x(S/2)_p50_us");
  for (std::size_t bytes : sizes) {
    const Times t = measure(cpus[0], cpus[1], bytes, calls);
    const Times half = bytes >= 2 ? measure(cpus[0], cpus[1], bytes / 2, calls) : t;
    std::printf("%12zu %9.2f %9.2f %9.2f %10.2f %16.2f\n", bytes, t.p10, t.p50, t.p90,
                static_cast<double>(bytes) / t.p50 / 1e3, 2 * half.p50);
  }
  std::printf("#\n# a 2-rank allreduce of S bytes (float32 sum, in place) with no library: copy in, "
              "reduce out of the other CPU's buffer; the slower thread per call\n");
  std::printf("#%11s %9s %9s %9s %12s %12s\n", "size", "p10_us", "p50_us", "p90_us",
              "copy_in_p50", "reduce_p50");
  for (std::size_t bytes : sizes) {
    if (bytes < sizeof(float)) continue;
    const AllreduceTimes a = measure_allreduce(cpus[0], cpus[1], bytes, calls);
    std::printf("%12zu %9.2f %9.2f %9.2f %12.2f %12.2f\n", bytes, a.call.p10, a.call.p50,
                a.call.p90, a.copy_p50, a.add_p50);
  }
  return 0;
}

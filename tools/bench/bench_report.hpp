// What riseml-bench measured and how it prints it: per implementation and mode a table in the
// nccl-tests layout (size, count, type, redop, time, algbw, busbw; busbw = algbw * 2(n-1)/n for
// allreduce, * (n-1)/n for reduce-scatter and all-to-all) with the median round and the
// lowest and highest rounds beside it, the ratios against the peers and the memory-bound limit,
// and a CSV for plots.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include <riseml/wait_stats.hpp>

namespace riseml::bench {

enum class Mode { out_of_place, in_place, per_call };
constexpr int kModes = 3;

// One implementation, one size, one mode.
struct Cell {
  std::vector<double> rounds;  // seconds per call: per round (per call: the round's median)
  std::vector<double> calls;   // per call: every call's seconds
  long long wrong = -1;        // -1: not run
  WaitStats waits;             // ours, --wait-stats: summed over `waited_calls` calls
  std::uint64_t waited_calls = 0;
};

class Results {
 public:
  Results(std::size_t contenders, std::size_t sizes, std::size_t rounds);
  Cell& at(std::size_t contender, Mode mode, std::size_t size);
  const Cell& at(std::size_t contender, Mode mode, std::size_t size) const;
  Cell& limit(std::size_t size) { return limit_[size]; }
  const Cell& limit(std::size_t size) const { return limit_[size]; }
  // The TCP stream limit, measured only when some of our links are TCP.
  Cell& stream_limit(std::size_t size) { return stream_limit_[size]; }
  const Cell& stream_limit(std::size_t size) const { return stream_limit_[size]; }
  std::size_t contenders() const { return contenders_; }
  long long total_wrong() const;

 private:
  std::size_t contenders_, sizes_;
  std::vector<Cell> cells_, limit_, stream_limit_;
};

// Elements of each rank's input for a size: whole elements, and for reduce-scatter and
// all-to-all a whole number of them per rank (the size rounded down).
std::size_t bench_count(BenchCollective collective, std::size_t bytes, DataType type, int ranks);

class Report {
 public:
  Report(const BenchOptions& options, int ranks, const Results& results,
         BenchCollective collective = BenchCollective::allreduce)
      : o_(options), ranks_(ranks), r_(results), collective_(collective) {}
  void add_contender(std::string name, std::string description);
  // A line printed under the header (what was left out, and why).
  void add_note(std::string note) { notes_.push_back(std::move(note)); }
  // How the stream limit was measured (printed above its table).
  void set_stream_note(std::string note) { stream_note_ = std::move(note); }
  void print(std::FILE* out) const;
  void write_csv(const std::string& path) const;

 private:
  // busbw of the median, slowest and fastest round of a cell (GB/s).
  struct Busbw {
    double median = 0, low = 0, high = 0;
  };
  Busbw busbw(const Cell& c, std::size_t bytes) const;
  double bus_factor() const;
  void print_table(std::FILE* out, std::size_t ci, Mode mode) const;
  void print_limit(std::FILE* out) const;
  // The lower of the memory-bound and the stream limit at size s (GB/s busbw); 0: none measured.
  double binding_limit(std::size_t s) const;
  void print_ratios(std::FILE* out, Mode mode) const;
  void print_waits(std::FILE* out, Mode mode) const;

  const char* mode_title(Mode m) const;
  // Bytes of each rank's input at size index s (see bench_count).
  std::size_t bytes_at(std::size_t s) const;

  const BenchOptions& o_;
  int ranks_;
  const Results& r_;
  BenchCollective collective_;
  std::vector<std::string> names_, descriptions_, notes_;
  std::string stream_note_;
};

}  // namespace riseml::bench

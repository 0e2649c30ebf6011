#include "bench_report.hpp"

#include <algorithm>
#include <fstream>

#include "measure.hpp"

namespace riseml::bench {

namespace {

const char* mode_key(Mode m) {
  switch (m) {
    case Mode::out_of_place: return "b2b_out";
    case Mode::in_place: return "b2b_in";
    case Mode::per_call: return "per_call";
  }
  return "?";
}

}  // namespace

std::size_t bench_count(BenchCollective collective, std::size_t bytes, DataType type, int ranks) {
  const std::size_t count = bytes / element_size(type);
  if (collective == BenchCollective::allreduce) return count;
  const auto n = static_cast<std::size_t>(ranks);
  return count / n * n;
}

const char* Report::mode_title(Mode m) const {
  switch (m) {
    case Mode::out_of_place: return "back to back, out of place";
    case Mode::in_place: return "back to back, in place";
    case Mode::per_call:
      return collective_ == BenchCollective::allreduce
                 ? "per call, in place (barrier, one call, slowest rank)"
                 : "per call, out of place (barrier, one call, slowest rank)";
  }
  return "?";
}

std::size_t Report::bytes_at(std::size_t s) const {
  return bench_count(collective_, o_.sizes[s], o_.type, ranks_) * element_size(o_.type);
}

Results::Results(std::size_t contenders, std::size_t sizes, std::size_t rounds)
    : contenders_(contenders), sizes_(sizes), cells_(contenders * kModes * sizes), limit_(sizes),
      stream_limit_(sizes) {
  for (auto& c : cells_) c.rounds.reserve(rounds);
}

Cell& Results::at(std::size_t contender, Mode mode, std::size_t size) {
  return cells_[(contender * kModes + static_cast<std::size_t>(mode)) * sizes_ + size];
}

const Cell& Results::at(std::size_t contender, Mode mode, std::size_t size) const {
  return cells_[(contender * kModes + static_cast<std::size_t>(mode)) * sizes_ + size];
}

long long Results::total_wrong() const {
  long long w = 0;
  for (const auto& c : cells_) w += std::max(0LL, c.wrong);
  return w;
}

void Report::add_contender(std::string name, std::string description) {
  names_.push_back(std::move(name));
  descriptions_.push_back(std::move(description));
}

// nccl-tests' factors: an allreduce moves 2(n-1)/n of its size over each rank's links, a
// reduce-scatter or all-to-all (n-1)/n of the whole input.
double Report::bus_factor() const {
  const double share = static_cast<double>(ranks_ - 1) / ranks_;
  return collective_ == BenchCollective::allreduce ? 2.0 * share : share;
}

Report::Busbw Report::busbw(const Cell& c, std::size_t bytes) const {
  Busbw b;
  if (c.rounds.empty()) return b;
  auto bw = [&](double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 * bus_factor() : 0; };
  b.median = bw(quantile(c.rounds, 0.5));
  b.low = bw(*std::max_element(c.rounds.begin(), c.rounds.end()));
  b.high = bw(*std::min_element(c.rounds.begin(), c.rounds.end()));
  return b;
}

void Report::print_table(std::FILE* out, std::size_t ci, Mode mode) const {
  const std::string type(to_string(o_.type));
  const std::string op = collective_ == BenchCollective::alltoall ? "none" : std::string(to_string(o_.op));
  std::fprintf(out, "#\n# %s -- %s\n", descriptions_[ci].c_str(), mode_title(mode));
  if (mode == Mode::per_call) {
    std::fprintf(out, "# %10s %11s %8s %6s %10s %10s %10s %10s %9s %9s %7s %7s\n", "size", "count", "type",
                 "redop", "p10_us", "median_us", "p90_us", "busbw_GBps", "low_GBps", "high_GBps", "low/med", "#wrong");
  } else {
    std::fprintf(out, "# %10s %11s %8s %6s %10s %10s %10s %9s %9s %7s %7s\n", "size", "count", "type", "redop",
                 "time_us", "algbw_GBps", "busbw_GBps", "low_GBps", "high_GBps", "low/med", "#wrong");
  }
  for (std::size_t s = 0; s < o_.sizes.size(); ++s) {
    const Cell& c = r_.at(ci, mode, s);
    const std::size_t bytes = bytes_at(s);
    const std::size_t count = bytes / element_size(o_.type);
    if (c.rounds.empty()) {
      std::fprintf(out, "  %10zu %11zu %8s %6s %10s\n", bytes, count, type.c_str(), op.c_str(), "n/a");
      continue;
    }
    const Busbw b = busbw(c, bytes);
    const double stability = b.median > 0 ? b.low / b.median : 0;
    if (mode == Mode::per_call) {
      const double med = quantile(c.calls, 0.5);
      std::fprintf(out, "  %10zu %11zu %8s %6s %10.1f %10.1f %10.1f %10.3f %9.3f %9.3f %7.2f %7lld\n", bytes,
                   count, type.c_str(), op.c_str(), quantile(c.calls, 0.1) * 1e6, med * 1e6,
                   quantile(c.calls, 0.9) * 1e6, b.median, b.low, b.high, stability, c.wrong);
    } else {
      const double t = quantile(c.rounds, 0.5);
      std::fprintf(out, "  %10zu %11zu %8s %6s %10.1f %10.3f %10.3f %9.3f %9.3f %7.2f %7lld\n", bytes, count,
                   type.c_str(), op.c_str(), t * 1e6, static_cast<double>(bytes) / t / 1e9, b.median, b.low,
                   b.high, stability, c.wrong);
    }
  }
}

void Report::print_limit(std::FILE* out) const {
  auto table = [&](auto cell) {
    std::fprintf(out, "# %10s %10s %10s %9s %9s\n", "size", "time_us", "busbw_GBps", "low_GBps", "high_GBps");
    for (std::size_t s = 0; s < o_.sizes.size(); ++s) {
      const Cell& c = cell(s);
      if (c.rounds.empty()) continue;
      const Busbw b = busbw(c, o_.sizes[s]);
      std::fprintf(out, "  %10zu %10.1f %10.3f %9.3f %9.3f\n", o_.sizes[s], quantile(c.rounds, 0.5) * 1e6,
                   b.median, b.low, b.high);
    }
  };
  std::fprintf(out,
               "#\n# limit: the memory-bound busbw of this machine -- every rank at once adds two "
               "blocks of S(n-1)/n bytes into a third and copies one (an ideal allreduce's traffic)\n");
  table([&](std::size_t s) -> const Cell& { return r_.limit(s); });
  bool stream = false;
  for (std::size_t s = 0; s < o_.sizes.size(); ++s) stream |= !r_.stream_limit(s).rounds.empty();
  if (!stream) return;
  std::fprintf(out,
               "#\n# stream limit: the links' busbw -- the bytes an allreduce must move over each link, "
               "streamed to the next and from the previous at once over plain TCP (%s)\n",
               stream_note_.c_str());
  table([&](std::size_t s) -> const Cell& { return r_.stream_limit(s); });
}

double Report::binding_limit(std::size_t s) const {
  const double memory = busbw(r_.limit(s), o_.sizes[s]).median;
  const double stream = busbw(r_.stream_limit(s), o_.sizes[s]).median;
  if (memory > 0 && stream > 0) return std::min(memory, stream);
  return std::max(memory, stream);
}

void Report::print_ratios(std::FILE* out, Mode mode) const {
  std::fprintf(out, "#\n# busbw ratio (median rounds), %s\n# %10s", mode_title(mode), "size");
  for (std::size_t ci = 1; ci < names_.size(); ++ci) std::fprintf(out, " %10s", ("vs " + names_[ci]).c_str());
  const bool limit = o_.limit && collective_ == BenchCollective::allreduce;
  if (limit) std::fprintf(out, " %10s", "of limit");  // the lower limit of the two
  std::fprintf(out, "\n");
  for (std::size_t s = 0; s < o_.sizes.size(); ++s) {
    const double ours = busbw(r_.at(0, mode, s), bytes_at(s)).median;
    std::fprintf(out, "  %10zu", bytes_at(s));
    for (std::size_t ci = 1; ci < names_.size(); ++ci) {
      // A peer that only reduces in place is compared in place.
      const Cell& theirs = r_.at(ci, mode, s).rounds.empty() && mode == Mode::out_of_place
                               ? r_.at(ci, Mode::in_place, s)
                               : r_.at(ci, mode, s);
      const double t = busbw(theirs, bytes_at(s)).median;
      if (t > 0 && ours > 0)
        std::fprintf(out, " %10.2f", ours / t);
      else
        std::fprintf(out, " %10s", "n/a");
    }
    if (limit) {
      const double l = binding_limit(s);
      if (l > 0 && ours > 0)
        std::fprintf(out, " %10.2f", ours / l);
      else
        std::fprintf(out, " %10s", "n/a");
    }
    std::fprintf(out, "\n");
  }
}

void Report::print_waits(std::FILE* out, Mode mode) const {
  std::fprintf(out, "#\n# how riseml's ranks waited, per call, summed over the ranks (all rounds), %s\n", mode_title(mode));
  std::fprintf(out, "# %10s %10s %10s %10s %10s %12s\n", "size", "yields", "sleeps", "doorbells", "polls",
               "slept_us");
  for (std::size_t s = 0; s < o_.sizes.size(); ++s) {
    const Cell& c = r_.at(0, mode, s);
    if (c.waited_calls == 0) continue;
    const double n = static_cast<double>(c.waited_calls);
    std::fprintf(out, "  %10zu %10.1f %10.1f %10.1f %10.1f %12.1f\n", o_.sizes[s], c.waits.yields / n,
                 c.waits.timed_sleeps / n, c.waits.doorbell_sleeps / n, c.waits.polls / n,
                 c.waits.slept_ns / n / 1e3);
  }
}

void Report::print(std::FILE* out) const {
  if (collective_ == BenchCollective::allreduce) {
    std::fprintf(out, "# riseml-bench: %d ranks, %s %s, %d round(s), each a whole sweep; busbw: the median round "
                 "(low/high: the slowest and fastest round; low/med: slowest / median)\n",
                 ranks_, std::string(to_string(o_.type)).c_str(), std::string(to_string(o_.op)).c_str(), o_.rounds);
  } else {
    const std::string what = collective_ == BenchCollective::alltoall
                                 ? std::string(to_string(o_.type))
                                 : std::string(to_string(o_.type)) + " " + std::string(to_string(o_.op));
    std::fprintf(out, "# riseml-bench: %d ranks, %s %s, %d round(s), each a whole sweep; size: each rank's whole "
                 "input; busbw = algbw * (n-1)/n (nccl-tests), the median round (low/high: the slowest and "
                 "fastest round; low/med: slowest / median)\n",
                 ranks_, to_string(collective_), what.c_str(), o_.rounds);
  }
  for (const auto& note : notes_) std::fprintf(out, "# %s\n", note.c_str());
  if (o_.precondition_calls > 0 && collective_ == BenchCollective::allreduce)
    std::fprintf(out, "# preconditioned: %d riseml allreduces of %zu bytes before the sweep\n",
                 o_.precondition_calls, o_.precondition_bytes);
  std::vector<Mode> modes;
  if (o_.back_to_back) modes.insert(modes.end(), {Mode::out_of_place, Mode::in_place});
  if (o_.per_call) modes.push_back(Mode::per_call);
  for (std::size_t ci = 0; ci < names_.size(); ++ci)
    for (Mode m : modes) {
      bool any = false;
      for (std::size_t s = 0; s < o_.sizes.size(); ++s) any |= !r_.at(ci, m, s).rounds.empty();
      if (any) print_table(out, ci, m);
    }
  if (o_.wait_stats)
    for (Mode m : modes) print_waits(out, m);
  const bool limit = o_.limit && collective_ == BenchCollective::allreduce;
  if (limit) print_limit(out);
  if (names_.size() > 1 || limit)
    for (Mode m : modes) {
      bool any = false;  // reduce-scatter and all-to-all run out of place only
      for (std::size_t s = 0; s < o_.sizes.size(); ++s) any |= !r_.at(0, m, s).rounds.empty();
      if (any) print_ratios(out, m);
    }
}

void Report::write_csv(const std::string& path) const {
  std::ofstream f(path);
  f << "impl,mode,size,count,type,redop,time_us,busbw_GBps,busbw_low_GBps,busbw_high_GBps,p10_us,p90_us,wrong,ranks\n";
  auto row = [&](const std::string& impl, const char* mode, const Cell& c, std::size_t bytes) {
    if (c.rounds.empty()) return;
    const Busbw b = busbw(c, bytes);
    const double t = quantile(c.rounds, 0.5);
    f << impl << ',' << mode << ',' << bytes << ',' << bytes / element_size(o_.type) << ','
      << to_string(o_.type) << ',' << to_string(o_.op) << ',' << t * 1e6 << ',' << b.median << ',' << b.low
      << ',' << b.high << ',' << quantile(c.calls, 0.1) * 1e6 << ',' << quantile(c.calls, 0.9) * 1e6 << ','
      << c.wrong << ',' << ranks_ << '\n';
  };
  for (std::size_t ci = 0; ci < names_.size(); ++ci)
    for (Mode m : {Mode::out_of_place, Mode::in_place, Mode::per_call})
      for (std::size_t s = 0; s < o_.sizes.size(); ++s) row(names_[ci], mode_key(m), r_.at(ci, m, s), bytes_at(s));
  for (std::size_t s = 0; s < o_.sizes.size(); ++s) row("limit", "b2b_out", r_.limit(s), o_.sizes[s]);
  for (std::size_t s = 0; s < o_.sizes.size(); ++s)
    row("stream-limit", "b2b_out", r_.stream_limit(s), o_.sizes[s]);
}

}  // namespace riseml::bench

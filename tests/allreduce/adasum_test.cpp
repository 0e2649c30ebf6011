// Adasum against a reference written the plain way: whole vectors in double, the ranks beyond
// the largest power of two p folded into rank r - p, then a binary tree (0,1), (2,3), ...,
// ((0,1),(2,3)), ... The algorithm halves the vectors and sums partial dot products in another
// order and rounds the working vector to the tensor's type after every level, so results may
// differ from the reference by rounding: per element at most tolerance(type) times the
// largest magnitude any vector in the tree reaches for that tensor (a few roundings of the
// type's unit, with room for the coefficients' own error). Exact cases check the formula
// itself; every rank must hold the same bits, and a fused call the bits of one call per tensor.
#include <gtest/gtest.h>
#include <riseml/allreduce.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>

#include <riseml/half_float.hpp>
#include "rank_threads.hpp"

namespace riseml {
namespace {

using test::run_ranks;

constexpr DataType kFloatTypes[] = {DataType::float32, DataType::float64, DataType::float16,
                                    DataType::bfloat16};

// float64 differs from the reference only in summation order (observed 7e-15 of the scale).
// The other types round the working vector after each of at most 4 levels: 8 units of
// roundoff, u = 2^-24 (float32), 2^-11 (float16), 2^-8 (bfloat16), covers that and the
// coefficients computed from rounded vectors (observed: 1.3u, 1.4u, 1.4u).
double tolerance(DataType t) {
  switch (t) {
    case DataType::float64:
      return 1e-12;
    case DataType::float32:
      return 8 * std::ldexp(1.0, -24);
    case DataType::float16:
      return 8 * std::ldexp(1.0, -11);
    default:
      return 8 * std::ldexp(1.0, -8);
  }
}

double decode(DataType t, const std::byte* p, std::size_t k) {
  switch (t) {
    case DataType::float32: {
      float x;
      std::memcpy(&x, p + 4 * k, 4);
      return x;
    }
    case DataType::float64: {
      double x;
      std::memcpy(&x, p + 8 * k, 8);
      return x;
    }
    case DataType::float16: {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * k, 2);
      return kernels::float16_to_float(h);
    }
    default: {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * k, 2);
      return kernels::bfloat16_to_float(h);
    }
  }
}

void encode(DataType t, std::byte* p, std::size_t k, double v) {
  switch (t) {
    case DataType::float32: {
      float x = static_cast<float>(v);
      std::memcpy(p + 4 * k, &x, 4);
      break;
    }
    case DataType::float64:
      std::memcpy(p + 8 * k, &v, 8);
      break;
    case DataType::float16: {
      auto h = kernels::float_to_float16(static_cast<float>(v));
      std::memcpy(p + 2 * k, &h, 2);
      break;
    }
    default: {
      auto h = kernels::float_to_bfloat16(static_cast<float>(v));
      std::memcpy(p + 2 * k, &h, 2);
      break;
    }
  }
}

// Deterministic noise in [-1, 1].
double noise(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t z = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e5ull) * 0xbf58476d1ce4e5b9ull ^
                    (c + 7) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  z *= 0xd6e9e3779b97f4a7ull;
  z ^= z >> 29;
  return static_cast<double>(z >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

// The tensors of every call: a zero-length one, single elements, odd sizes. Tensor 3 is zero
// on rank 1, tensor 5 on every rank.
const std::vector<std::size_t> kCounts = {37, 0, 1000, 64, 1, 3, 4099, 2};

// Rank r's value: a part shared by all ranks (so the vectors correlate and the coefficients
// are far from 1) plus its own.
double value(int rank, std::size_t tensor, std::size_t k) {
  if ((tensor == 3 && rank == 1) || tensor == 5) return 0;
  return 0.7 * noise(1000, tensor, k) + 0.5 * noise(static_cast<std::uint64_t>(rank), tensor, k);
}

std::vector<std::byte> make_input(DataType t, int rank, const std::vector<std::size_t>& counts) {
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  std::vector<std::byte> v(total * element_size(t) + 1);  // +1: never a null data()
  std::size_t at = 0;
  for (std::size_t tensor = 0; tensor < counts.size(); ++tensor)
    for (std::size_t k = 0; k < counts[tensor]; ++k)
      encode(t, v.data(), at++, value(rank, tensor, k));
  return v;
}

struct Reference {
  std::vector<double> result;
  std::vector<double> scale;  // per tensor: the largest magnitude anywhere in the tree
};

// a = Adasum(a, b), tensor by tensor.
void adasum_pair(std::vector<double>& a, const std::vector<double>& b,
                 const std::vector<std::size_t>& counts, std::vector<double>& scale) {
  std::size_t at = 0;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t k = at; k < at + counts[t]; ++k) {
      ab += a[k] * b[k];
      aa += a[k] * a[k];
      bb += b[k] * b[k];
    }
    const double ca = aa == 0 ? 1 : 1 - ab / (2 * aa);
    const double cb = bb == 0 ? 1 : 1 - ab / (2 * bb);
    for (std::size_t k = at; k < at + counts[t]; ++k) {
      a[k] = ca * a[k] + cb * b[k];
      scale[t] = std::max(scale[t], std::abs(a[k]));
    }
    at += counts[t];
  }
}

Reference reference(DataType type, int n, const std::vector<std::size_t>& counts) {
  std::vector<std::vector<double>> v(static_cast<std::size_t>(n));
  Reference ref;
  ref.scale.assign(counts.size(), 0);
  for (int r = 0; r < n; ++r) {
    const auto in = make_input(type, r, counts);
    std::size_t at = 0;
    for (std::size_t t = 0; t < counts.size(); ++t)
      for (std::size_t k = 0; k < counts[t]; ++k, ++at) {
        v[static_cast<std::size_t>(r)].push_back(decode(type, in.data(), at));
        ref.scale[t] = std::max(ref.scale[t], std::abs(v[static_cast<std::size_t>(r)].back()));
      }
  }
  const int p = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  for (int r = 0; r + p < n; ++r)
    adasum_pair(v[static_cast<std::size_t>(r)], v[static_cast<std::size_t>(r + p)], counts,
                ref.scale);
  for (int d = 1; d < p; d *= 2)
    for (int r = 0; r < p; r += 2 * d)
      adasum_pair(v[static_cast<std::size_t>(r)], v[static_cast<std::size_t>(r + d)], counts,
                  ref.scale);
  ref.result = std::move(v[0]);
  return ref;
}

struct Failures {
  std::mutex mutex;
  std::vector<std::string> list;
  void add(std::string s) {
    std::lock_guard lock(mutex);
    if (list.size() < 10) list.push_back(std::move(s));
  }
};

void expect_all_ok(const std::vector<test::RankOutcome>& outcomes) {
  for (std::size_t r = 0; r < outcomes.size(); ++r)
    EXPECT_TRUE(outcomes[r].ok) << "rank " << r << ": " << outcomes[r].error;
}

// Every float type: against the reference, the same bits on every rank, again on a repeated
// call, in place, and one call per tensor.
void check_adasum(int n, const std::function<CommunicatorOptions(int)>& options,
                  const std::vector<std::size_t>& counts) {
  constexpr std::size_t kTypes = std::size(kFloatTypes);
  std::vector<std::vector<std::vector<std::byte>>> results(
      kTypes, std::vector<std::vector<std::byte>>(static_cast<std::size_t>(n)));
  Failures fails;
  auto outcomes = run_ranks(n, options, [&](Communicator& comm) {
    const int me = comm.rank();
    for (std::size_t ti = 0; ti < kTypes; ++ti) {
      const DataType t = kFloatTypes[ti];
      const std::size_t es = element_size(t);
      const std::string what =
          std::string(to_string(t)) + " ranks " + std::to_string(n) + " rank " + std::to_string(me);
      auto in = make_input(t, me, counts);
      std::vector<std::byte> out(in.size()), again(in.size()), single(in.size());
      comm.adasum_allreduce(in.data(), out.data(), counts, t);
      comm.adasum_allreduce(in.data(), again.data(), counts, t);
      if (out != again) fails.add("unrepeatable: " + what);
      std::size_t at = 0;
      for (std::size_t tensor = 0; tensor < counts.size(); ++tensor) {
        comm.adasum_allreduce(in.data() + at * es, single.data() + at * es,
                              std::span(counts).subspan(tensor, 1), t);
        at += counts[tensor];
      }
      if (out != single) fails.add("fused differs from one call per tensor: " + what);
      comm.adasum_allreduce(in.data(), in.data(), counts, t);
      if (in != out) fails.add("in place differs: " + what);
      // Nothing at all, and only empty tensors.
      comm.adasum_allreduce(nullptr, nullptr, {}, t);
      const std::size_t empty[] = {0, 0};
      comm.adasum_allreduce(nullptr, nullptr, empty, t);
      results[ti][static_cast<std::size_t>(me)] = std::move(out);
    }
  });
  expect_all_ok(outcomes);
  for (auto& f : fails.list) ADD_FAILURE() << f;
  if (::testing::Test::HasFailure()) return;

  for (std::size_t ti = 0; ti < kTypes; ++ti) {
    const DataType t = kFloatTypes[ti];
    const auto& got = results[ti][0];
    for (int r = 1; r < n; ++r)
      EXPECT_TRUE(results[ti][static_cast<std::size_t>(r)] == got)
          << to_string(t) << ": rank " << r << " holds other bits than rank 0";
    const Reference ref = reference(t, n, counts);
    std::size_t at = 0;
    for (std::size_t tensor = 0; tensor < counts.size(); ++tensor) {
      const double limit = tolerance(t) * ref.scale[tensor];
      double worst = 0;
      std::size_t worst_at = 0;
      for (std::size_t k = 0; k < counts[tensor]; ++k, ++at) {
        const double err = std::abs(decode(t, got.data(), at) - ref.result[at]);
        if (!(err <= worst) && !std::isnan(worst)) {  // a NaN sticks
          worst = err;
          worst_at = k;
        }
      }
      EXPECT_LE(worst, limit) << to_string(t) << " ranks " << n << " tensor " << tensor
                              << " element " << worst_at << ": off by " << worst << " (scale "
                              << ref.scale[tensor] << ")";
      if (tensor == 5) {
        EXPECT_EQ(worst, 0.0) << "zero everywhere must stay exactly zero";
      }
    }
  }
}

class AdasumRanks : public ::testing::TestWithParam<int> {};

TEST_P(AdasumRanks, EveryFloatTypeMatchesTheReferenceTree) {
  check_adasum(
      GetParam(), [](int) { return test::inproc_options(); }, kCounts);
}

INSTANTIATE_TEST_SUITE_P(Inproc, AdasumRanks, ::testing::Values(1, 2, 3, 4, 5, 8));

CommunicatorOptions transport_options(TransportChoice t) {
  CommunicatorOptions o;
  o.transport = t;
  o.timeout = std::chrono::seconds(30);
  return o;
}

std::vector<std::size_t> counts_with_a_large_tensor() {
  auto counts = kCounts;
  counts.push_back((1 << 17) + 3);  // many shared-memory slots, several TCP buffers
  return counts;
}

TEST(Adasum, SharedMemoryTwoThreeAndFourRanks) {
  for (int n : {2, 3, 4})
    check_adasum(
        n, [](int) { return transport_options(TransportChoice::shm); },
        counts_with_a_large_tensor());
}

TEST(Adasum, TcpTwoThreeAndFourRanks) {
  for (int n : {2, 3, 4})
    check_adasum(
        n, [](int) { return transport_options(TransportChoice::tcp); },
        counts_with_a_large_tensor());
}

// Cases whose result is exact in float32: the formula itself, not only its agreement with
// the reference.
TEST(Adasum, TwoRanksExactCases) {
  const std::size_t counts[] = {2, 2, 2, 2, 2, 2};
  const float a[] = {1, 0, 1, 0, 1, 0, 1, 2, 0, 0, 3, 4};
  const float b[] = {1, 0, 0, 1, -1, 0, 0, 0, 0, 0, 6, 8};
  // same direction: the average; orthogonal: the sum; opposite: 1.5a + 1.5b; a zero side:
  // the other side; both zero: zero; b = 2a: a.b / (2|a|^2) = 1, so 0 a + 0.75 b.
  const float want[] = {1, 0, 1, 1, 0, 0, 1, 2, 0, 0, 4.5f, 6};
  auto outcomes = run_ranks(2, test::inproc_options(), [&](Communicator& comm) {
    float out[12];
    comm.adasum_allreduce(comm.rank() == 0 ? a : b, out, counts, DataType::float32);
    for (int k = 0; k < 12; ++k)
      if (out[k] != want[k])
        throw std::runtime_error("element " + std::to_string(k) + ": " + std::to_string(out[k]));
  });
  expect_all_ok(outcomes);
}

// Identical inputs average to themselves: 0.5 x + 0.5 x, exact in every type and rank count.
TEST(Adasum, EqualInputsGiveThemselves) {
  for (int n : {2, 3, 5, 6, 8}) {
    auto outcomes = run_ranks(n, test::inproc_options(), [&](Communicator& comm) {
      for (DataType t : kFloatTypes) {
        const std::vector<std::size_t> counts = {5, 300, 1};
        auto in = make_input(t, 0, counts);  // rank 0's data on every rank
        std::vector<std::byte> out(in.size());
        comm.adasum_allreduce(in.data(), out.data(), counts, t);
        if (out != in) throw std::runtime_error(std::string(to_string(t)) + " changed");
      }
    });
    expect_all_ok(outcomes);
  }
}

TEST(Adasum, IntegerTypesAreRefusedAndTheCommunicatorStaysUsable) {
  auto outcomes =
      run_ranks(3, test::inproc_options(std::chrono::seconds(10)), [](Communicator& comm) {
        std::int64_t x[4] = {1, 2, 3, 4};
        const std::size_t counts[] = {4};
        for (DataType t : kAllDataTypes) {
          if (std::find(std::begin(kFloatTypes), std::end(kFloatTypes), t) != std::end(kFloatTypes))
            continue;
          try {
            comm.adasum_allreduce(x, x, counts, t);
            throw std::runtime_error(std::string(to_string(t)) + " accepted");
          } catch (const CollectiveError& e) {
            if (e.kind() != ErrorKind::invalid_argument ||
                std::string(e.what()).find("Adasum needs floating point tensors") ==
                    std::string::npos)
              throw;
          }
        }
        float f[2] = {1, 0};
        const std::size_t two[] = {2};
        comm.adasum_allreduce(f, f, two, DataType::float32);
        if (f[0] != 1 || f[1] != 0) throw std::runtime_error("wrong after the refusals");
      });
  expect_all_ok(outcomes);
}

// A rank running Adasum while another runs a plain allreduce of the same size fails them both.
TEST(Adasum, AgainstAPlainAllreduceIsAMismatch) {
  auto outcomes =
      run_ranks(2, test::inproc_options(std::chrono::seconds(5)), [](Communicator& comm) {
        float x[8] = {};
        const std::size_t counts[] = {8};
        if (comm.rank() == 0)
          comm.adasum_allreduce(x, x, counts, DataType::float32);
        else
          comm.allreduce(x, x, 8, DataType::float32, ReduceOp::sum, Algorithm::halving_doubling);
      });
  for (const auto& o : outcomes) EXPECT_FALSE(o.ok) << "the disagreement went unnoticed";
}

// The C function over two ranks: a C rendezvous wrapping the in-memory one.
TEST(Adasum, CApi) {
  auto hub = std::make_shared<InMemoryRendezvousHub>(2);
  std::mutex mutex;
  std::vector<std::string> fails;
  auto rank_main = [&](int rank) {
    InMemoryRendezvous inner(hub, rank);
    riseml_rendezvous r{};
    r.user = &inner;
    r.rank = rank;
    r.size = 2;
    r.put = [](void* u, const char* k, const void* v, size_t n) {
      const auto* p = static_cast<const std::byte*>(v);
      static_cast<Rendezvous*>(u)->put(k, std::vector<std::byte>(p, p + n));
      return 0;
    };
    r.fence = [](void* u, long ms) {
      static_cast<Rendezvous*>(u)->fence(std::chrono::milliseconds(ms));
      return 0;
    };
    r.get = [](void* u, int from, const char* k, void* v, size_t cap, size_t* n, long ms) {
      try {
        const auto value = static_cast<Rendezvous*>(u)->get(from, k, std::chrono::milliseconds(ms));
        *n = value.size();
        std::memcpy(v, value.data(), std::min(cap, value.size()));
        return 0;
      } catch (const RendezvousError&) {
        return 1;
      }
    };
    r.job_secret = [](void* u, void* v, size_t cap, size_t* n) {
      const auto s = static_cast<Rendezvous*>(u)->job_secret();
      *n = s.size();
      std::memcpy(v, s.data(), std::min(cap, s.size()));
      return 0;
    };
    auto fail = [&](const std::string& s) {
      std::lock_guard lock(mutex);
      fails.push_back("rank " + std::to_string(rank) + ": " + s);
    };
    riseml_comm* comm = nullptr;
    if (riseml_comm_create(&r, &comm) != RISEML_OK) return fail(riseml_last_error());
    float x[4] = {1, 0, 3, 4};
    if (rank == 1) x[0] = 0, x[1] = 1, x[2] = 6, x[3] = 8;
    const size_t counts[] = {2, 2};
    if (riseml_adasum_allreduce(comm, x, x, counts, 2, RISEML_FLOAT32) != RISEML_OK)
      fail(riseml_last_error());
    else if (x[0] != 1 || x[1] != 1 || x[2] != 4.5f || x[3] != 6)
      fail("wrong result");
    std::int32_t i[2] = {1, 2};
    if (riseml_adasum_allreduce(comm, i, i, counts, 1, RISEML_INT32) != RISEML_ERR_INVALID_ARGUMENT)
      fail("int32 accepted");
    if (riseml_adasum_allreduce(comm, x, x, nullptr, 1, RISEML_FLOAT32) !=
        RISEML_ERR_INVALID_ARGUMENT)
      fail("null tensor_counts accepted");
    if (riseml_adasum_allreduce(comm, nullptr, nullptr, nullptr, 0, RISEML_FLOAT64) != RISEML_OK)
      fail(std::string("no tensors: ") + riseml_last_error());
    riseml_comm_destroy(comm);
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
  for (auto& f : fails) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace riseml

// The CUDA kernels against the CPU kernels (allreduce/src/kernels), bit for bit.
#include "gpu_test_util.hpp"

#include <riseml/collective_error.hpp>
#include <riseml/cuda/kernels.hpp>
#include <riseml/cuda/status.hpp>

#include <riseml/half_float.hpp>
#include <riseml/reduce_kernels.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>

namespace riseml {
// Test names say "float16", not "1-byte object <02>".
inline void PrintTo(DataType t, std::ostream* os) { *os << to_string(t); }
}  // namespace riseml

namespace riseml::cuda {
namespace {

using testing::DeviceBuffer;
using testing::first_bit_difference;

// Float bit patterns that exercise every rounding path: specials, the float16 and bfloat16
// boundaries (overflow, subnormal, underflow, ties) and random bits.
std::vector<float> interesting_floats() {
  std::vector<std::uint32_t> bits = {
      0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u,
      0x7fa00000u, 0x477fe000u, 0x477ff000u, 0x477fefffu, 0x47800000u, 0x38800000u, 0x387fffffu,
      0x33000000u, 0x33000001u, 0x32ffffffu, 0x33800000u, 0x00000001u, 0x807fffffu, 0x3f800000u,
      0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u, 0x3f7fffffu, 0x7f7fffffu, 0xff7fffffu};
  for (std::uint32_t e = 0; e < 256; ++e)
    for (std::uint32_t m : {0x000000u, 0x000fffu, 0x001000u, 0x001001u, 0x002000u, 0x003000u,
                            0x007fffu, 0x008000u, 0x008001u, 0x018000u, 0x7fffffu})
      for (std::uint32_t s : {0u, 0x80000000u}) bits.push_back(s | (e << 23) | m);
  std::mt19937 rng(7);
  for (int i = 0; i < (1 << 20); ++i) bits.push_back(static_cast<std::uint32_t>(rng()));
  std::vector<float> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) out[i] = std::bit_cast<float>(bits[i]);
  return out;
}

class CudaKernels : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override { RISEML_SKIP_WITHOUT_GPU(); }
};

class CudaHalfKernels : public CudaKernels {};

TEST(CudaStatus, SaysWhetherAGpuIsUsable) {
  EXPECT_TRUE(built_with_cuda());
  const std::string s = status();
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(available(), testing::no_device_reason().empty()) << s;
  if (!available()) {
    EXPECT_NE(s.find("no CUDA device"), std::string::npos) << s;
  }
}

TEST_P(CudaHalfKernels, WidenEveryBitPatternAsTheCpu) {
  const DataType t = GetParam();
  std::vector<std::uint16_t> in(65536);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint16_t>(i);
  std::vector<float> expected(in.size());
  kernels::widen_to_float(t, in.data(), expected.data(), in.size());
  DeviceBuffer d_in(in.size() * 2), d_out(in.size() * 4);
  d_in.upload(in);
  widen_to_float(t, d_in.get(), d_out.as<float>(), in.size(), nullptr);
  RISEML_CUDA_OK(cudaDeviceSynchronize());
  const auto got = d_out.download<float>(in.size());
  const long bad = first_bit_difference(got, expected);
  EXPECT_EQ(bad, -1) << "input 0x" << std::hex << (bad >= 0 ? in[bad] : 0);
}

TEST_P(CudaHalfKernels, NarrowRoundsToNearestEvenAsTheCpu) {
  const DataType t = GetParam();
  const auto in = interesting_floats();
  std::vector<std::uint16_t> expected(in.size());
  kernels::narrow_from_float(t, in.data(), expected.data(), in.size());
  DeviceBuffer d_in(in.size() * 4), d_out(in.size() * 2);
  d_in.upload(in);
  narrow_from_float(t, d_in.as<float>(), d_out.get(), in.size(), nullptr);
  RISEML_CUDA_OK(cudaDeviceSynchronize());
  const auto got = d_out.download<std::uint16_t>(in.size());
  const long bad = first_bit_difference(got, expected);
  EXPECT_EQ(bad, -1) << "input bits 0x" << std::hex
                     << (bad >= 0 ? std::bit_cast<std::uint32_t>(in[bad]) : 0u) << " gpu 0x"
                     << (bad >= 0 ? got[bad] : 0) << " cpu 0x" << (bad >= 0 ? expected[bad] : 0);
}

// Random values of `t` (as bytes), finite and some specials.
std::vector<unsigned char> random_values(DataType t, std::size_t count) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dist(-1e4, 1e4);
  std::vector<unsigned char> bytes(count * element_size(t));
  for (std::size_t i = 0; i < count; ++i) {
    double v = dist(rng);
    if (i % 97 == 0) v = std::numeric_limits<double>::infinity();
    if (i % 101 == 0) v = -0.0;
    if (i % 103 == 0) v = 1e-40;
    unsigned char* p = bytes.data() + i * element_size(t);
    switch (t) {
      case DataType::float32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
      case DataType::float64: std::memcpy(p, &v, 8); break;
      case DataType::float16: {
        const std::uint16_t h = kernels::float_to_float16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      default: {
        const std::uint16_t h = kernels::float_to_bfloat16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
      }
    }
  }
  return bytes;
}

// The scale reference: float(factor) for float32 and 16-bit floats, float32 math, one rounding.
void scale_on_cpu(DataType t, unsigned char* p, std::size_t count, double factor) {
  const float ff = static_cast<float>(factor);
  for (std::size_t i = 0; i < count; ++i) {
    switch (t) {
      case DataType::float32: {
        float x;
        std::memcpy(&x, p + 4 * i, 4);
        x = x * ff;
        std::memcpy(p + 4 * i, &x, 4);
        break;
      }
      case DataType::float64: {
        double x;
        std::memcpy(&x, p + 8 * i, 8);
        x = x * factor;
        std::memcpy(p + 8 * i, &x, 8);
        break;
      }
      case DataType::float16:
      case DataType::bfloat16: {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        h = t == DataType::float16 ? kernels::float_to_float16(kernels::float16_to_float(h) * ff)
                                   : kernels::float_to_bfloat16(kernels::bfloat16_to_float(h) * ff);
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      default: FAIL();
    }
  }
}

TEST_P(CudaKernels, ScaleMatchesTheCpuBits) {
  const DataType t = GetParam();
  const std::size_t count = 100003;
  for (double factor : {0.5, 1.0 / 3.0, 0.125, 7.0, 1e-3}) {
    auto expected = random_values(t, count);
    DeviceBuffer d(expected.size());
    d.upload(expected);
    scale(t, d.get(), count, factor, nullptr);
    RISEML_CUDA_OK(cudaDeviceSynchronize());
    scale_on_cpu(t, expected.data(), count, factor);
    const auto got = d.download<unsigned char>(expected.size());
    EXPECT_EQ(first_bit_difference(got, expected), -1) << to_string(t) << " x " << factor;
  }
}

TEST_P(CudaKernels, DivideMatchesCpuDivide) {
  const DataType t = GetParam();
  const std::size_t count = 100003;
  // Powers of two (multiplied by their exact reciprocal) and others (divided).
  for (int divisor : {1, 2, 3, 7, 48, 1000, 64, -4, -3, 1 << 30}) {
    auto expected = random_values(t, count);
    DeviceBuffer d(expected.size());
    d.upload(expected);
    divide(t, d.get(), count, divisor, nullptr);
    RISEML_CUDA_OK(cudaDeviceSynchronize());
    kernels::divide(t, expected.data(), count, divisor);
    const auto got = d.download<unsigned char>(expected.size());
    EXPECT_EQ(first_bit_difference(got, expected), -1) << to_string(t) << " / " << divisor;
  }
}

// Every 16-bit pattern scaled and divided (the hardware conversions on the vector body, the
// software ones for a vector holding a NaN): the CPU's bits wherever the result is a number.
// Where the input or the result is a NaN, only NaN is required: the GPU's float32 arithmetic
// returns the canonical NaN while the CPU's keeps the payload (as before the hardware
// conversions). NaNs are spread through the data so most vectors take the fallback next to
// plain ones.
TEST_P(CudaHalfKernels, ScaleAndDivideEveryBitPatternAsTheCpu) {
  const DataType t = GetParam();
  std::vector<std::uint16_t> in(65536);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint16_t>(i * 40503u);
  const auto is_nan = [t](std::uint16_t h) {
    return t == DataType::float16 ? (h & 0x7fffu) > 0x7c00u : (h & 0x7fffu) > 0x7f80u;
  };
  DeviceBuffer d(in.size() * 2);
  for (int op = 0; op < 10; ++op) {
    const double factors[] = {0.5, 1.0 / 3.0, 3.0, 1e-3, 1e5, 0.0};
    const int divisors[] = {3, 4, -6, 1};
    std::vector<std::uint16_t> expected = in;
    auto* bytes = reinterpret_cast<unsigned char*>(expected.data());
    d.upload(in);
    std::string what;
    if (op < 6) {
      scale(t, d.get(), in.size(), factors[op], nullptr);
      scale_on_cpu(t, bytes, in.size(), factors[op]);
      what = "scale " + std::to_string(factors[op]);
    } else {
      divide(t, d.get(), in.size(), divisors[op - 6], nullptr);
      kernels::divide(t, bytes, in.size(), divisors[op - 6]);
      what = "divide " + std::to_string(divisors[op - 6]);
    }
    RISEML_CUDA_OK(cudaDeviceSynchronize());
    const auto got = d.download<std::uint16_t>(in.size());
    long bad = -1;
    for (std::size_t i = 0; i < in.size() && bad < 0; ++i) {
      const bool nan = is_nan(in[i]) || is_nan(expected[i]);
      if (nan ? !is_nan(got[i]) : got[i] != expected[i]) bad = static_cast<long>(i);
    }
    EXPECT_EQ(bad, -1) << to_string(t) << " " << what << ": input 0x" << std::hex
                       << (bad >= 0 ? in[bad] : 0) << " gpu 0x" << (bad >= 0 ? got[bad] : 0)
                       << " cpu 0x" << (bad >= 0 ? expected[bad] : 0);
  }
}

// Integer average divides and truncates toward zero, as the CPU (negative sums included).
TEST(CudaIntegerKernels, DivideTruncatesAsTheCpu) {
  RISEML_SKIP_WITHOUT_GPU();
  const std::size_t count = 100003;
  std::mt19937_64 rng(5);
  for (DataType t : {DataType::int32, DataType::int64, DataType::uint8, DataType::int8,
                     DataType::int16}) {
    for (int divisor : {1, 2, 3, 7, 48, 1000}) {
      std::vector<unsigned char> expected(count * element_size(t));
      for (auto& b : expected) b = static_cast<unsigned char>(rng());
      DeviceBuffer d(expected.size());
      d.upload(expected);
      divide(t, d.get(), count, divisor, nullptr);
      RISEML_CUDA_OK(cudaDeviceSynchronize());
      kernels::divide(t, expected.data(), count, divisor);
      const auto got = d.download<unsigned char>(expected.size());
      EXPECT_EQ(first_bit_difference(got, expected), -1) << to_string(t) << " / " << divisor;
    }
  }
}

// The vectorised kernels at every start alignment and length: a 16-byte body, a scalar head
// before it and a scalar tail after it. Guard bytes around the buffer must stay as they were.
std::vector<std::size_t> odd_counts() { return {1, 7, 4097, (std::size_t{1} << 20) + 3}; }

// Byte offsets of a buffer from a 256-byte aligned allocation, each a multiple of the element.
std::vector<std::size_t> odd_offsets(std::size_t element) {
  if (element == 2) return {0, 2, 4, 6, 14};
  if (element == 4) return {0, 4, 8, 12};
  if (element == 8) return {0, 8};
  return {0, 1, 3, 7, 15};
}

std::vector<unsigned char> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

constexpr std::size_t kGuard = 64;

TEST_P(CudaKernels, ScaleAndDivideAtOddOffsetsAndCounts) {
  const DataType t = GetParam();
  const std::size_t es = element_size(t);
  for (std::size_t count : odd_counts()) {
    for (std::size_t offset : odd_offsets(es)) {
      const auto values = random_values(t, count);
      const std::size_t size = kGuard + offset + values.size() + kGuard;
      auto image = random_bytes(size, static_cast<unsigned>(count + offset));
      std::copy(values.begin(), values.end(), image.begin() + kGuard + offset);
      DeviceBuffer d(size);
      for (int op = 0; op < 2; ++op) {
        d.upload(image);
        unsigned char* at = d.as<unsigned char>() + kGuard + offset;
        auto expected = image;
        if (op == 0) {
          scale(t, at, count, 1.0 / 3.0, nullptr);
          scale_on_cpu(t, expected.data() + kGuard + offset, count, 1.0 / 3.0);
        } else {
          divide(t, at, count, 7, nullptr);
          kernels::divide(t, expected.data() + kGuard + offset, count, 7);
        }
        RISEML_CUDA_OK(cudaDeviceSynchronize());
        const auto got = d.download<unsigned char>(size);
        const long bad = first_bit_difference(got, expected);
        EXPECT_EQ(bad, -1) << to_string(t) << (op == 0 ? " scale" : " divide") << " count "
                           << count << " offset " << offset << ": byte " << bad;
      }
    }
  }
}

TEST_P(CudaHalfKernels, ConversionsAtOddOffsetsAndCounts) {
  const DataType t = GetParam();
  for (std::size_t count : odd_counts()) {
    std::vector<float> floats(count);
    std::mt19937 rng(static_cast<unsigned>(count));
    for (auto& f : floats) f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    std::vector<std::uint16_t> halves(count);
    for (auto& h : halves) h = static_cast<std::uint16_t>(rng());
    std::vector<std::uint16_t> narrowed(count);
    kernels::narrow_from_float(t, floats.data(), narrowed.data(), count);
    std::vector<float> widened(count);
    kernels::widen_to_float(t, halves.data(), widened.data(), count);
    // Float side at 0/4/12 bytes, 16-bit side at 0/2/6/8 bytes: some pairs can be 16-byte
    // aligned together after a head, some never (all scalar).
    for (std::size_t f_off : {std::size_t{0}, std::size_t{4}, std::size_t{12}}) {
      for (std::size_t h_off : {std::size_t{0}, std::size_t{2}, std::size_t{6}, std::size_t{8}}) {
        const std::size_t f_size = kGuard + f_off + 4 * count + kGuard;
        const std::size_t h_size = kGuard + h_off + 2 * count + kGuard;
        const auto f_image = random_bytes(f_size, 1);
        const auto h_image = random_bytes(h_size, 2);
        DeviceBuffer d_f(f_size), d_h(h_size);
        float* f_at = reinterpret_cast<float*>(d_f.as<unsigned char>() + kGuard + f_off);
        void* h_at = d_h.as<unsigned char>() + kGuard + h_off;

        // narrow: floats -> halves
        auto f_in = f_image;
        std::memcpy(f_in.data() + kGuard + f_off, floats.data(), 4 * count);
        d_f.upload(f_in);
        d_h.upload(h_image);
        narrow_from_float(t, f_at, h_at, count, nullptr);
        RISEML_CUDA_OK(cudaDeviceSynchronize());
        auto expected_h = h_image;
        std::memcpy(expected_h.data() + kGuard + h_off, narrowed.data(), 2 * count);
        EXPECT_EQ(first_bit_difference(d_h.download<unsigned char>(h_size), expected_h), -1)
            << "narrow " << to_string(t) << " count " << count << " float offset " << f_off
            << " half offset " << h_off;

        // widen: halves -> floats
        auto h_in = h_image;
        std::memcpy(h_in.data() + kGuard + h_off, halves.data(), 2 * count);
        d_h.upload(h_in);
        d_f.upload(f_image);
        widen_to_float(t, h_at, f_at, count, nullptr);
        RISEML_CUDA_OK(cudaDeviceSynchronize());
        auto expected_f = f_image;
        std::memcpy(expected_f.data() + kGuard + f_off, widened.data(), 4 * count);
        EXPECT_EQ(first_bit_difference(d_f.download<unsigned char>(f_size), expected_f), -1)
            << "widen " << to_string(t) << " count " << count << " half offset " << h_off
            << " float offset " << f_off;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, CudaKernels,
                         ::testing::Values(DataType::float32, DataType::float64,
                                           DataType::float16, DataType::bfloat16),
                         [](const auto& info) { return std::string(to_string(info.param)); });
INSTANTIATE_TEST_SUITE_P(HalfTypes, CudaHalfKernels,
                         ::testing::Values(DataType::float16, DataType::bfloat16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

class CudaFusion : public ::testing::Test {
 protected:
  void SetUp() override { RISEML_SKIP_WITHOUT_GPU(); }
};

TEST_F(CudaFusion, PacksAndUnpacksManyUnalignedTensors) {
  // 300 tensors (one launch), sizes 0..5000 bytes, at odd offsets inside one allocation.
  std::mt19937 rng(3);
  const std::size_t n = 300;
  std::vector<std::size_t> bytes(n), offsets(n);
  std::size_t total = 0, arena = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bytes[i] = i % 50 == 0 ? 0 : rng() % 5001;
    offsets[i] = arena + rng() % 17;
    arena = offsets[i] + bytes[i];
    total += bytes[i];
  }
  std::vector<unsigned char> host(arena);
  for (auto& b : host) b = static_cast<unsigned char>(rng());
  DeviceBuffer d_tensors(arena), d_fusion(total), d_back(arena);
  d_tensors.upload(host);
  RISEML_CUDA_OK(cudaMemset(d_back.get(), 0, arena));
  std::vector<const void*> srcs(n);
  std::vector<void*> dsts(n);
  std::vector<unsigned char> expected_fusion;
  for (std::size_t i = 0; i < n; ++i) {
    srcs[i] = d_tensors.as<unsigned char>() + offsets[i];
    dsts[i] = d_back.as<unsigned char>() + offsets[i];
    expected_fusion.insert(expected_fusion.end(), host.begin() + offsets[i],
                           host.begin() + offsets[i] + bytes[i]);
  }
  pack(d_fusion.get(), srcs.data(), bytes.data(), n, nullptr);
  RISEML_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(d_fusion.download<unsigned char>(total), expected_fusion);

  unpack(d_fusion.get(), dsts.data(), bytes.data(), n, nullptr);
  RISEML_CUDA_OK(cudaDeviceSynchronize());
  const auto back = d_back.download<unsigned char>(arena);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_TRUE(std::equal(back.begin() + offsets[i], back.begin() + offsets[i] + bytes[i],
                           host.begin() + offsets[i]))
        << "tensor " << i;
}

// `n` tensors of mixed sizes (0, a few bytes, 4099, 64 KiB, some of 1 MiB) and every
// alignment (source and fusion place alike or not mod 16), packed and unpacked; unpacking
// writes nothing between the tensors.
void pack_and_unpack_mixed(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::size_t> bytes(n), offsets(n);
  std::size_t total = 0, arena = 0;
  for (std::size_t i = 0; i < n; ++i) {
    switch (rng() % 8) {
      case 0: bytes[i] = 0; break;
      case 1: bytes[i] = 1 + rng() % 16; break;
      case 2: bytes[i] = 4099; break;
      case 3: bytes[i] = 65536; break;
      case 4: bytes[i] = i % 64 == 0 ? (1 << 20) + rng() % 64 : 2048 + rng() % 64; break;
      case 5: bytes[i] = 16 * (1 + rng() % 200); break;
      default: bytes[i] = rng() % 9000;
    }
    offsets[i] = arena + (i % 3 == 0 ? 0 : rng() % 16);  // half of them 16-byte aligned
    arena = (offsets[i] + bytes[i] + 15) / 16 * 16 + 16;
    total += bytes[i];
  }
  const auto host = random_bytes(arena, seed + 1);
  const auto filler = random_bytes(arena, seed + 2);
  DeviceBuffer d_tensors(arena), d_fusion(total + 8), d_back(arena);
  d_tensors.upload(host);
  d_back.upload(filler);
  std::vector<const void*> srcs(n);
  std::vector<void*> dsts(n);
  std::vector<unsigned char> expected_fusion;
  auto expected_back = filler;
  for (std::size_t i = 0; i < n; ++i) {
    srcs[i] = d_tensors.as<unsigned char>() + offsets[i];
    dsts[i] = d_back.as<unsigned char>() + offsets[i];
    expected_fusion.insert(expected_fusion.end(), host.begin() + offsets[i],
                           host.begin() + offsets[i] + bytes[i]);
    std::copy(host.begin() + offsets[i], host.begin() + offsets[i] + bytes[i],
              expected_back.begin() + offsets[i]);
  }
  // The fusion buffer starts 8 bytes in, so that its 16-byte alignment differs from the
  // allocations'.
  unsigned char* fusion = d_fusion.as<unsigned char>() + 8;
  pack(fusion, srcs.data(), bytes.data(), n, nullptr);
  RISEML_CUDA_OK(cudaDeviceSynchronize());
  std::vector<unsigned char> got_fusion(total);
  RISEML_CUDA_OK(cudaMemcpy(got_fusion.data(), fusion, total, cudaMemcpyDeviceToHost));
  const long bad_fusion = first_bit_difference(got_fusion, expected_fusion);
  EXPECT_EQ(bad_fusion, -1) << n << " tensors: fusion byte " << bad_fusion;

  unpack(fusion, dsts.data(), bytes.data(), n, nullptr);
  RISEML_CUDA_OK(cudaDeviceSynchronize());
  const long bad_back = first_bit_difference(d_back.download<unsigned char>(arena), expected_back);
  EXPECT_EQ(bad_back, -1) << n << " tensors: unpacked byte " << bad_back;
}

TEST_F(CudaFusion, PacksAndUnpacks1024MixedTensorsInOneLaunch) {
  static_assert(kMaxFusedTensors >= 1024);
  pack_and_unpack_mixed(1024, 21);
}

TEST_F(CudaFusion, PacksAndUnpacksMoreTensorsThanOneLaunchHolds) {
  pack_and_unpack_mixed(kMaxFusedTensors * 2 + 17, 22);
}

// The fallback: every table in the kernel's parameters (no free slot, graph capture).
TEST_F(CudaFusion, PacksAndUnpacksWithTheTableInTheParameters) {
  use_parameter_tables_for_testing(true);
  pack_and_unpack_mixed(1024, 25);
  pack_and_unpack_mixed(kMaxFusedTensors * 2 + 17, 26);
  use_parameter_tables_for_testing(false);
}

// The device tables: the same tensors again (the uploaded table reused), on another stream
// (uploaded again), and more different tables in flight than the ring holds (the rest in the
// parameters), none waited for until the end.
TEST_F(CudaFusion, ReusesAndRotatesDeviceTablesWithoutWaiting) {
  const std::size_t n = 700, each = 333;  // odd sizes: 4-byte and byte words, edges
  const auto host = random_bytes(n * each, 31);
  DeviceBuffer d_src(n * each), d_fusion(64 * n * each);
  d_src.upload(host);
  std::vector<const void*> srcs(n);
  std::vector<std::size_t> bytes(n, each);
  for (std::size_t i = 0; i < n; ++i) srcs[i] = d_src.as<unsigned char>() + i * each;
  cudaStream_t other = nullptr;
  RISEML_CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  // Call k packs tensors [k % 5, n) (a different table for each k % 5) into fusion region k;
  // calls 0..4 and 40..44 twice in a row (the same table), 20..29 on the other stream.
  std::vector<std::size_t> firsts;
  for (std::size_t k = 0; k < 64; ++k) {
    const std::size_t first = k % 5;
    const bool twice = k < 5 || (k >= 40 && k < 45);
    cudaStream_t s = k >= 20 && k < 30 ? other : nullptr;
    unsigned char* region = d_fusion.as<unsigned char>() + k * n * each;
    for (int r = 0; r < (twice ? 2 : 1); ++r)
      pack(region, srcs.data() + first, bytes.data() + first, n - first, s);
    firsts.push_back(first);
  }
  RISEML_CUDA_OK(cudaDeviceSynchronize());
  RISEML_CUDA_OK(cudaStreamDestroy(other));
  const auto got = d_fusion.download<unsigned char>(64 * n * each);
  for (std::size_t k = 0; k < 64; ++k) {
    const std::size_t len = (n - firsts[k]) * each;
    ASSERT_TRUE(std::equal(got.begin() + k * n * each, got.begin() + k * n * each + len,
                           host.begin() + firsts[k] * each))
        << "call " << k;
  }
}

// One 64 MiB tensor, 4 bytes into its allocation and its fusion buffer: spread over many blocks.
TEST_F(CudaFusion, PacksOneLargeTensorAcrossManyBlocks) {
  const std::size_t bytes[] = {(std::size_t{64} << 20) + 5};
  const auto host = random_bytes(bytes[0], 24);
  DeviceBuffer d_src(bytes[0] + 16), d_fusion(bytes[0] + 16);
  unsigned char* src = d_src.as<unsigned char>() + 4;
  unsigned char* fusion = d_fusion.as<unsigned char>() + 4;
  RISEML_CUDA_OK(cudaMemcpy(src, host.data(), bytes[0], cudaMemcpyHostToDevice));
  const void* srcs[] = {src};
  pack(fusion, srcs, bytes, 1, nullptr);
  RISEML_CUDA_OK(cudaDeviceSynchronize());
  std::vector<unsigned char> got(bytes[0]);
  RISEML_CUDA_OK(cudaMemcpy(got.data(), fusion, bytes[0], cudaMemcpyDeviceToHost));
  EXPECT_EQ(first_bit_difference(got, host), -1);
}

// Integer scaling as the CPU (engine/src/scaling.cpp, scale_integer): x * factor in double,
// truncated toward zero, saturated at the type's range, NaN -> 0.
template <typename T>
void scale_integer_on_cpu(unsigned char* p, std::size_t count, double factor) {
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  for (std::size_t i = 0; i < count; ++i) {
    T x;
    std::memcpy(&x, p + i * sizeof(T), sizeof(T));
    const double v = std::trunc(static_cast<double>(x) * factor);
    if (std::isnan(v))
      x = 0;
    else if (v <= lo)
      x = std::numeric_limits<T>::min();
    else if (v >= hi)
      x = std::numeric_limits<T>::max();
    else
      x = static_cast<T>(v);
    std::memcpy(p + i * sizeof(T), &x, sizeof(T));
  }
}

void scale_integer_on_cpu(DataType t, unsigned char* p, std::size_t count, double factor) {
  switch (t) {
    case DataType::int8: scale_integer_on_cpu<std::int8_t>(p, count, factor); break;
    case DataType::uint8: scale_integer_on_cpu<std::uint8_t>(p, count, factor); break;
    case DataType::int16: scale_integer_on_cpu<std::int16_t>(p, count, factor); break;
    case DataType::int32: scale_integer_on_cpu<std::int32_t>(p, count, factor); break;
    case DataType::int64: scale_integer_on_cpu<std::int64_t>(p, count, factor); break;
    default: FAIL() << to_string(t);
  }
}

TEST(CudaIntegerKernels, ScaleTruncatesAndSaturatesAsTheCpu) {
  RISEML_SKIP_WITHOUT_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (DataType t : {DataType::int8, DataType::uint8, DataType::int16, DataType::int32,
                     DataType::int64}) {
    const std::size_t es = element_size(t);
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{4097},
                              (std::size_t{1} << 20) + 3}) {
      // Random bits (every value, the extremes among them), at an offset of one element.
      auto image = random_bytes((count + 2) * es, static_cast<unsigned>(count));
      for (std::size_t k = 0; k < es; ++k) {  // the type's extremes at the start of the data
        image[es + k] = static_cast<unsigned char>(k + 1 == es ? 0x80 : 0x00);  // signed min
        if (count > 1)
          image[2 * es + k] = static_cast<unsigned char>(k + 1 == es ? 0x7f : 0xff);  // max
      }
      for (double factor : {0.5, 1.0 / 3.0, -1.0, -1.5, 2.0, 3.7, 1e30, -1e30, 0.0, -0.0, nan,
                            inf, -inf}) {
        DeviceBuffer d(image.size());
        d.upload(image);
        scale(t, d.as<unsigned char>() + es, count, factor, nullptr);
        RISEML_CUDA_OK(cudaDeviceSynchronize());
        auto expected = image;
        scale_integer_on_cpu(t, expected.data() + es, count, factor);
        const auto got = d.download<unsigned char>(image.size());
        const long bad = first_bit_difference(got, expected);
        EXPECT_EQ(bad, -1) << to_string(t) << " count " << count << " x " << factor
                           << ": byte " << bad;
      }
    }
  }
}

TEST_F(CudaFusion, RefusesBooleanScalingAndNonHalfConversions) {
  DeviceBuffer d(64);
  EXPECT_THROW(scale(DataType::boolean, d.get(), 16, 2.0, nullptr), CollectiveError);
  EXPECT_THROW(narrow_from_float(DataType::float32, d.as<float>(), d.get(), 4, nullptr),
               CollectiveError);
  EXPECT_THROW(widen_to_float(DataType::int16, d.get(), d.as<float>(), 4, nullptr),
               CollectiveError);
  // Elements must be aligned to their size.
  EXPECT_THROW(scale(DataType::float32, d.as<unsigned char>() + 2, 4, 2.0, nullptr),
               CollectiveError);
}

}  // namespace
}  // namespace riseml::cuda

// The CUDA kernels against the CPU kernels (allreduce/src/kernels), bit for bit.
#include "gpu_test_util.hpp"

#include <riseml/collective_error.hpp>
#include <riseml/cuda/kernels.hpp>
#include <riseml/cuda/status.hpp>

#include <riseml/half_float.hpp>
#include <riseml/reduce_kernels.hpp>

#include <algorithm>
#include <bit>
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
  for (int divisor : {1, 2, 3, 7, 48, 1000}) {
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
  // 300 tensors (three launches), sizes 0..5000 bytes, at odd offsets inside one allocation.
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

TEST_F(CudaFusion, RejectsNonFloatScaling) {
  DeviceBuffer d(64);
  EXPECT_THROW(scale(DataType::int32, d.get(), 16, 2.0, nullptr), CollectiveError);
  EXPECT_THROW(narrow_from_float(DataType::float32, d.as<float>(), d.get(), 4, nullptr),
               CollectiveError);
}

}  // namespace
}  // namespace riseml::cuda

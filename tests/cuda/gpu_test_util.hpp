// Shared by the GPU tests: skip (visibly) without a CUDA device, device buffers, checks.
#pragma once

#include <riseml/cuda/status.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace riseml::cuda::testing {

// Empty when a CUDA device is usable, else why not ("no CUDA device: ...").
inline std::string no_device_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA device: cudaGetDeviceCount returned 0";
  return {};
}

inline int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

#define RISEML_SKIP_WITHOUT_GPU()                                                \
  do {                                                                           \
    const std::string why = ::riseml::cuda::testing::no_device_reason();         \
    if (!why.empty()) GTEST_SKIP() << why;                                       \
  } while (0)

#define RISEML_CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// A device buffer of `bytes` bytes.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&ptr_, bytes ? bytes : 1) != cudaSuccess) ptr_ = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }

  template <typename T>
  void upload(const std::vector<T>& v) {
    ASSERT_LE(v.size() * sizeof(T), bytes_);
    ASSERT_EQ(cudaMemcpy(ptr_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  template <typename T>
  std::vector<T> download(std::size_t count) const {
    std::vector<T> v(count);
    EXPECT_EQ(cudaMemcpy(v.data(), ptr_, count * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return v;
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

// Index of the first element whose bits differ, or -1.
template <typename T>
long first_bit_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<long>(i);
  return -1;
}

}  // namespace riseml::cuda::testing

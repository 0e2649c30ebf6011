// A rendezvous over files in one directory, for processes a test forks itself (the fault tests
// need ranks no launcher will tear down when one of them is killed). put writes key.rank
// atomically (rename), fence makes every rank create fence.<n>.<rank> and waits for all.
#pragma once

#include <riseml/rendezvous.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace riseml::test {

class FileRendezvous : public Rendezvous {
 public:
  FileRendezvous(std::filesystem::path dir, int rank, int size)
      : dir_(std::move(dir)), rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void put(std::string_view key, const std::vector<std::byte>& value) override {
    const auto path = file(rank_, key);
    const auto tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(reinterpret_cast<const char*>(value.data()), static_cast<std::streamsize>(value.size()));
    }
    std::filesystem::rename(tmp, path);
  }

  void fence(std::chrono::milliseconds timeout) override {
    const int n = fences_++;
    std::ofstream(dir_ / ("fence." + std::to_string(n) + "." + std::to_string(rank_)));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int r = 0; r < size_; ++r)
      while (!std::filesystem::exists(dir_ / ("fence." + std::to_string(n) + "." + std::to_string(r)))) {
        if (std::chrono::steady_clock::now() > deadline)
          throw RendezvousError("file fence: rank " + std::to_string(r) + " did not arrive");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
  }

  std::vector<std::byte> get(int rank, std::string_view key, std::chrono::milliseconds) override {
    std::ifstream in(file(rank, key), std::ios::binary);
    if (!in) throw RendezvousError("file rendezvous: no " + std::string(key) + " from rank " + std::to_string(rank));
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> v(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) v[i] = static_cast<std::byte>(s[i]);
    return v;
  }

  std::vector<std::byte> job_secret() override {
    std::vector<std::byte> v(32);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::byte>(i * 13 + 5);
    return v;
  }

 private:
  std::filesystem::path file(int rank, std::string_view key) const {
    std::string k(key);
    for (char& c : k)
      if (c == '/') c = '_';
    return dir_ / (k + "." + std::to_string(rank));
  }

  std::filesystem::path dir_;
  int rank_, size_;
  int fences_ = 0;
};

}  // namespace riseml::test

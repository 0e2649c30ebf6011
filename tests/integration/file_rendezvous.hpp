// A rendezvous over files in one directory, for processes a test forks itself (the fault tests
// need ranks no launcher will tear down when one of them is killed). put writes key.rank
// atomically (rename), fence makes every rank create fence.<n>.<rank> and waits for all;
// fence_among does the same among some ranks (files named after the member list).
#pragma once

#include <riseml/rendezvous.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
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
    std::vector<int> all(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) all[static_cast<std::size_t>(r)] = r;
    wait_for("fence." + std::to_string(fences_++), all, timeout);
  }

  void fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) override {
    std::string set;
    for (int r : ranks) set += "_" + std::to_string(r);
    wait_for("among" + set + "." + std::to_string(subset_fences_[set]++), ranks, timeout);
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

  void wait_for(const std::string& name, const std::vector<int>& ranks,
                std::chrono::milliseconds timeout) {
    std::ofstream(dir_ / (name + "." + std::to_string(rank_)));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int r : ranks)
      while (!std::filesystem::exists(dir_ / (name + "." + std::to_string(r)))) {
        if (std::chrono::steady_clock::now() > deadline)
          throw RendezvousError("file fence: rank " + std::to_string(r) + " did not arrive");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
  }

  std::filesystem::path dir_;
  int rank_, size_;
  int fences_ = 0;
  std::map<std::string, int> subset_fences_;
};

}  // namespace riseml::test

#include "shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <riseml/collective_error.hpp>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

namespace riseml {

namespace {
constexpr std::uint64_t kMagic = 0x72697365'6d6c7368ull;  // "risemlsh"
constexpr std::size_t kHeaderBytes = 4096;
constexpr std::size_t kSlotHeaderBytes = sizeof(ShmSlotHeader);
static_assert(kSlotHeaderBytes == 64);
static_assert(sizeof(ShmSegmentHeader) <= kHeaderBytes);

[[noreturn]] void throw_system(const std::string& what) {
  throw CollectiveError(ErrorKind::system, what + ": " + std::strerror(errno));
}
}  // namespace

std::size_t ShmLayout::channel_bytes() const {
  return sizeof(ShmChannelControl) + slots * (kSlotHeaderBytes + slot_bytes);
}

std::size_t ShmLayout::total_bytes() const { return kHeaderBytes + channels * channel_bytes(); }

ShmSegment ShmSegment::create(const std::string& name, const ShmLayout& layout, int owner_rank) {
  ShmSegment s;
  s.name_ = name;
  s.owner_ = true;
  s.bytes_ = layout.total_bytes();
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw_system("shm_open(" + name + ")");
  // Allocate the pages now: a full /dev/shm is then an error here, not a SIGBUS later.
  if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(s.bytes_)); err != 0) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    errno = err;
    throw_system("allocating " + std::to_string(s.bytes_) + " bytes of shared memory (" + name +
                 ", is /dev/shm full?)");
  }
  s.base_ = ::mmap(nullptr, s.bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (s.base_ == MAP_FAILED) {
    s.base_ = nullptr;
    ::shm_unlink(name.c_str());
    throw_system("mmap(" + name + ")");
  }
  // Touch every page now (MAP_POPULATE is a hint); tmpfs pages then exist for all mappers.
  std::memset(s.base_, 0, s.bytes_);
  auto* h = new (s.base_) ShmSegmentHeader{};
  h->magic = kMagic;
  h->owner_rank = owner_rank;
  h->owner_pid = static_cast<std::int32_t>(::getpid());
  h->layout = layout;
  for (std::uint32_t c = 0; c < layout.channels; ++c) new (&s.control(c)) ShmChannelControl{};
  return s;
}

ShmSegment ShmSegment::open(const std::string& name) {
  ShmSegment s;
  s.name_ = name;
  int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) throw_system("shm_open(" + name + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kHeaderBytes)) {
    ::close(fd);
    throw CollectiveError(ErrorKind::setup, "shared memory segment " + name + " is too small");
  }
  s.bytes_ = static_cast<std::size_t>(st.st_size);
  s.base_ = ::mmap(nullptr, s.bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (s.base_ == MAP_FAILED) {
    s.base_ = nullptr;
    throw_system("mmap(" + name + ")");
  }
  if (s.header().magic != kMagic || s.header().layout.total_bytes() != s.bytes_)
    throw CollectiveError(ErrorKind::setup, "shared memory segment " + name + " is not ours");
  return s;
}

ShmSegment::ShmSegment(ShmSegment&& o) noexcept
    : name_(std::move(o.name_)),
      base_(std::exchange(o.base_, nullptr)),
      bytes_(o.bytes_),
      owner_(std::exchange(o.owner_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    this->~ShmSegment();
    new (this) ShmSegment(std::move(o));
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  if (owner_) unlink();
  if (base_) ::munmap(base_, bytes_);
}

void ShmSegment::unlink() {
  if (owner_) ::shm_unlink(name_.c_str());
  owner_ = false;
}

ShmChannelControl& ShmSegment::control(std::uint32_t channel) const {
  auto* p = static_cast<std::byte*>(base_) + kHeaderBytes +
            channel * header().layout.channel_bytes();
  return *reinterpret_cast<ShmChannelControl*>(p);
}

ShmSlotHeader& ShmSegment::slot(std::uint32_t channel, std::uint64_t index) const {
  const ShmLayout& l = header().layout;
  auto* p = reinterpret_cast<std::byte*>(&control(channel)) + sizeof(ShmChannelControl) +
            (index % l.slots) * (kSlotHeaderBytes + l.slot_bytes);
  return *reinterpret_cast<ShmSlotHeader*>(p);
}

std::byte* ShmSegment::slot_data(std::uint32_t channel, std::uint64_t index) const {
  return reinterpret_cast<std::byte*>(&slot(channel, index)) + kSlotHeaderBytes;
}

}  // namespace riseml

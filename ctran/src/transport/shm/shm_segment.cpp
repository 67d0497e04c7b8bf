// Implementation of shm_segment.hpp.
#include "shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"

namespace ctran {
namespace {

void* mapFd(int fd, size_t bytes, const std::string& name) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    ::close(fd);
    throwSystemError(strCat("mmap of shared memory '", name, "' (", bytes, " bytes)"), err);
  }
  return p;
}

}  // namespace

ShmSegment ShmSegment::create(const std::string& name, size_t bytes) {
  CTRAN_CHECK(bytes > 0, InvalidArgument, "shared memory '", name, "': size must be positive");
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  CTRAN_SYSCHECK(fd, strCat("shm_open(create) '", name, "'"));
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    throwSystemError(strCat("ftruncate of shared memory '", name, "' to ", bytes, " bytes"), err);
  }
  ShmSegment s;
  try {
    s.data_ = mapFd(fd, bytes, name);
  } catch (...) {
    ::shm_unlink(name.c_str());
    throw;
  }
  ::close(fd);
  s.bytes_ = bytes;
  s.name_ = name;
  s.owner_ = true;
  return s;
}

ShmSegment ShmSegment::open(const std::string& name, size_t bytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  CTRAN_SYSCHECK(fd, strCat("shm_open '", name, "'"));
  struct stat st = {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    ::close(fd);
    throw InvalidUsage(strCat("shared memory '", name, "' has ", st.st_size,
                              " bytes, fewer than the ", bytes, " expected"));
  }
  ShmSegment s;
  s.data_ = mapFd(fd, bytes, name);
  ::close(fd);
  s.bytes_ = bytes;
  s.name_ = name;
  return s;
}

ShmSegment::ShmSegment(ShmSegment&& o) noexcept { *this = std::move(o); }

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = o.data_;
    bytes_ = o.bytes_;
    name_ = std::move(o.name_);
    owner_ = o.owner_;
    o.data_ = nullptr;
    o.bytes_ = 0;
    o.owner_ = false;
  }
  return *this;
}

void ShmSegment::unlink() {
  if (owner_) {
    if (::shm_unlink(name_.c_str()) != 0 && errno != ENOENT) {
      CTRAN_WARN("shm_unlink '", name_, "' failed: errno ", errno);
    }
    owner_ = false;
  }
}

void ShmSegment::reset() {
  unlink();
  if (data_) ::munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

ShmSegment::~ShmSegment() { reset(); }

}  // namespace ctran

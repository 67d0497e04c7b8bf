// A POSIX shared-memory segment: created by its owner, mapped by peers, unlinked as soon as
// every peer has mapped it so that nothing is left in /dev/shm if a process dies later.
#pragma once

#include <cstddef>
#include <string>

namespace ctran {

class ShmSegment {
 public:
  /// Creates and maps a new segment (fails if the name exists); pages are pre-faulted.
  static ShmSegment create(const std::string& name, size_t bytes);
  /// Maps an existing segment, checking it has `bytes`.
  static ShmSegment open(const std::string& name, size_t bytes);

  ShmSegment() = default;
  ShmSegment(ShmSegment&& o) noexcept;
  ShmSegment& operator=(ShmSegment&& o) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }
  /// Removes the name (mappings stay valid). Idempotent.
  void unlink();

 private:
  void reset();
  void* data_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool owner_ = false;
};

}  // namespace ctran

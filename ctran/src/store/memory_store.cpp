// MemoryStore: a mutex-guarded map with a condition variable for blocking gets.
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>

#include "ctran/store.hpp"

namespace ctran {

struct MemoryStore::Impl {
  std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, Bytes> data;
};

MemoryStore::MemoryStore() : impl_(std::make_unique<Impl>()) {}
MemoryStore::~MemoryStore() = default;

void MemoryStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->data[key] = value;
  }
  impl_->changed.notify_all();
}

Bytes MemoryStore::get(const std::string& key, const Deadline& deadline) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  bool found =
      impl_->changed.wait_until(lock, deadline.at(), [&] { return impl_->data.count(key) != 0; });
  if (!found) throwTimeout(deadline, "store key '" + key + "' in a memory store");
  return impl_->data[key];
}

int64_t MemoryStore::add(const std::string& key, int64_t delta) {
  int64_t sum = 0;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    Bytes& cur = impl_->data[key];
    int64_t old = 0;
    if (cur.size() == 8) std::memcpy(&old, cur.data(), 8);
    sum = old + delta;
    cur.resize(8);
    std::memcpy(cur.data(), &sum, 8);
  }
  impl_->changed.notify_all();
  return sum;
}

bool MemoryStore::check(const std::string& key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->data.count(key) != 0;
}

void MemoryStore::erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->data.erase(key);
}

}  // namespace ctran

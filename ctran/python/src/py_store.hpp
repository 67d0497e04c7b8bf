// PyStore: a ctran::Store served by any Python object with torch.distributed.Store's methods
// (set, get, add, check, delete_key), such as a torch TCPStore or one of ctran's own stores.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "ctran/checks.hpp"
#include "ctran/store.hpp"

namespace ctran::python {

class PyStore : public Store {
 public:
  explicit PyStore(pybind11::object obj) : obj_(new pybind11::object(std::move(obj))) {}
  ~PyStore() override {
    pybind11::gil_scoped_acquire gil;
    delete obj_;
  }

  void set(const std::string& key, const Bytes& value) override {
    call("set", [&] {
      obj_->attr("set")(key,
                        pybind11::bytes(reinterpret_cast<const char*>(value.data()), value.size()));
    });
  }

  // torch.distributed.Store.get takes no timeout (the store's own applies), so the deadline is
  // honoured by polling check() with growing naps until the key exists, and only then get().
  Bytes get(const std::string& key, const Deadline& deadline) override {
    auto nap = std::chrono::microseconds(50);
    while (!check(key)) {
      if (deadline.expired()) {
        throwTimeout(deadline, strCat("store key '", key, "' in a python store"));
      }
      std::this_thread::sleep_for(nap);
      nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(2));
    }
    Bytes out;
    call("get", [&] {
      std::string s = obj_->attr("get")(key).cast<std::string>();
      out.assign(s.begin(), s.end());
    });
    return out;
  }

  int64_t add(const std::string& key, int64_t delta) override {
    int64_t v = 0;
    call("add", [&] { v = obj_->attr("add")(key, delta).cast<int64_t>(); });
    return v;
  }

  bool check(const std::string& key) override {
    bool v = false;
    call("check", [&] { v = obj_->attr("check")(std::vector<std::string>{key}).cast<bool>(); });
    return v;
  }

  void erase(const std::string& key) override {
    call("delete_key", [&] { obj_->attr("delete_key")(key); });
  }

 private:
  template <typename Fn>
  void call(const char* method, Fn&& fn) {
    pybind11::gil_scoped_acquire gil;
    try {
      fn();
    } catch (pybind11::error_already_set& e) {
      throw RemoteError(strCat("python store ", method, " failed: ", e.what()));
    }
  }

  pybind11::object* obj_;  // deleted under the GIL
};

}  // namespace ctran::python

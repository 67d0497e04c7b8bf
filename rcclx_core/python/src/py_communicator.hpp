// PyCommunicator: a Communicator as Python holds it, with the arrays of its unfinished calls
// kept alive. Every call runs without the GIL (a call may wait on peers that are threads of
// this process, and the first low-precision GPU call allocates collectively).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "ctran/checks.hpp"
#include "rcclx/communicator.hpp"

namespace rcclx::python {

namespace py = pybind11;

class PyCommunicator {
 public:
  explicit PyCommunicator(std::unique_ptr<Communicator> c) : comm_(std::move(c)) {}
  PyCommunicator(PyCommunicator&&) = default;
  ~PyCommunicator() {
    if (comm_ && !comm_->destroyed()) {
      py::gil_scoped_release nogil;
      try {
        comm_->destroy();
      } catch (const std::exception&) {
      }
    }
  }
  Communicator& comm() {
    CTRAN_CHECK(comm_ != nullptr, ctran::InvalidUsage, "communicator is not initialised");
    return *comm_;
  }

  /// Runs `call` without the GIL. The arrays stay referenced until the call's work completes:
  /// an async host call's Work keeps them; a call recorded in a group keeps them until the group
  /// ends. A synchronous call, or one enqueued on a GPU stream (keeping its arrays alive until
  /// the kernel ran is the caller's job, as with NCCL), returns None.
  template <typename Call>
  py::object run(std::initializer_list<py::handle> arrays, Call&& call) {
    WorkPtr work;
    {
      py::gil_scoped_release nogil;
      work = call();
    }
    if (comm_->inGroup()) {
      for (py::handle a : arrays) grouped_.push_back(py::reinterpret_borrow<py::object>(a));
      return py::none();
    }
    if (!work) return py::none();
    prune();
    Pending p{work, {}};
    for (py::handle a : arrays) p.arrays.push_back(py::reinterpret_borrow<py::object>(a));
    pending_.push_back(std::move(p));
    return py::cast(work);
  }

  /// Ends a group; when it was the outermost, its calls run, and their arrays are released
  /// once they complete.
  py::object groupEnd(bool async) {
    prune();
    WorkPtr work;
    try {
      py::gil_scoped_release nogil;
      work = comm().groupEnd(async);
    } catch (...) {
      if (!comm().inGroup()) grouped_.clear();
      throw;
    }
    if (comm().inGroup()) return py::none();  // an inner group: the outermost one runs all
    std::vector<py::object> arrays = std::move(grouped_);
    grouped_.clear();
    if (!work) return py::none();
    pending_.push_back({work, std::move(arrays)});
    return py::cast(work);
  }

  /// Leaves the group, dropping its recorded calls and the arrays they kept alive.
  void groupCancel() {
    comm().groupCancel();
    grouped_.clear();
  }

  /// Drops the arrays of completed asynchronous calls.
  void prune() {
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [](const Pending& p) { return p.work->isCompleted(); }),
                   pending_.end());
  }

 private:
  struct Pending {
    WorkPtr work;
    std::vector<py::object> arrays;
  };
  std::unique_ptr<Communicator> comm_;
  std::vector<Pending> pending_;
  std::vector<py::object> grouped_;  // arrays of the calls recorded in the open group
};

/// Adds the collectives (all_reduce ... barrier, group_start / group_end) to the Python class.
void registerCollectives(py::class_<PyCommunicator>& cls);

}  // namespace rcclx::python

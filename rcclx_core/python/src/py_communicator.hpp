// PyCommunicator: a Communicator as Python holds it, with the arrays of its unfinished calls
// kept alive, and the two ways a binding runs a call (on the host without the GIL, or enqueued
// on a GPU stream).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "call_args.hpp"
#include "ctran/checks.hpp"
#include "rcclx/communicator.hpp"

namespace rcclx::python {

namespace py = pybind11;

// A communicator plus the arrays its unfinished asynchronous calls use.
class PyCommunicator {
 public:
  explicit PyCommunicator(std::unique_ptr<Communicator> c) : comm_(std::move(c)) {}
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

  // Runs `call` without the GIL. `arrays` stay alive until the call's work completes: an
  // async Work keeps them; a call recorded in a group (no Work yet) keeps them until the group
  // ends.
  py::object run(bool async, std::vector<py::object> arrays, const std::function<WorkPtr()>& call) {
    prune();
    WorkPtr work;
    {
      py::gil_scoped_release nogil;
      work = call();
    }
    if (!work) {
      for (auto& a : arrays) grouped_.push_back(std::move(a));
      return py::none();
    }
    if (!async) return py::none();
    pending_.push_back({work, std::move(arrays)});
    return py::cast(work);
  }

  // Enqueues a call on GPU buffers (returns None: the stream orders it). Inside a group the
  // arrays stay referenced until the group ends (grouped device sends and receives are
  // enqueued then); otherwise keeping them alive until the kernel ran is the caller's job, as
  // with NCCL.
  py::object runDevice(std::vector<py::object> arrays, const std::function<WorkPtr()>& call) {
    {
      py::gil_scoped_release nogil;
      call();
    }
    if (comm().inGroup()) {
      for (auto& a : arrays) grouped_.push_back(std::move(a));
    }
    return py::none();
  }

  // Runs `call` where its buffers are (placeCall): enqueued on the GPU stream (runDevice), or
  // on the host (run). Device calls too run without the GIL: the first low-precision call
  // allocates its staging collectively, and the other ranks may be threads of this process.
  py::object dispatch(const char* op,
                      std::initializer_list<std::pair<const char*, const BufferView*>> bufs,
                      const std::optional<uintptr_t>& stream, CallOptions& opts,
                      std::vector<py::object> arrays, const std::function<WorkPtr()>& call) {
    if (placeCall(op, bufs, stream, opts)) return runDevice(std::move(arrays), call);
    return run(opts.async, std::move(arrays), call);
  }

  // Ends a group; when it was the outermost, its calls run, and their arrays are released
  // once they complete.
  py::object groupEnd(bool async) {
    prune();
    WorkPtr work;
    try {
      py::gil_scoped_release nogil;
      work = comm().groupEnd(async);
    } catch (...) {
      grouped_.clear();
      throw;
    }
    if (!work) return py::none();  // an inner group: the outermost one runs everything
    std::vector<py::object> arrays = std::move(grouped_);
    grouped_.clear();
    if (!async) return py::none();
    pending_.push_back({work, std::move(arrays)});
    return py::cast(work);
  }

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

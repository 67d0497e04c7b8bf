// Binding of Communicator: converts arrays to (pointer, count, type), checks their sizes
// against each other, releases the GIL while the collective runs, and keeps the arrays of
// asynchronous calls alive until their work completes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <numeric>

#include "bootstrap_py.hpp"
#include "buffer_view.hpp"
#include "ctran/checks.hpp"
#include "rcclx/communicator.hpp"

namespace py = pybind11;

namespace rcclx::python {
namespace {

using ctran::InvalidArgument;
using ctran::strCat;

bool onGpu(const BufferView& v) { return v.deviceType == static_cast<int>(DeviceKind::kCuda); }

// Where a call runs, from its buffers (name, view; null views are skipped): all on the
// communicator's GPU -> true, with opts set to enqueue on `stream` (default: the legacy default
// stream, 0); all on the host -> false (stream= is refused there). Mixed buffers are an error
// naming both.
bool placeCall(const char* op,
               std::initializer_list<std::pair<const char*, const BufferView*>> bufs,
               const std::optional<uintptr_t>& stream, CallOptions& opts) {
  const char* firstName = nullptr;
  const BufferView* first = nullptr;
  for (const auto& [name, v] : bufs) {
    if (v == nullptr) continue;
    if (first == nullptr) {
      first = v;
      firstName = name;
      continue;
    }
    CTRAN_CHECK(onGpu(*v) == onGpu(*first), InvalidArgument, op, ": ", name, " is on ",
                v->deviceName(), " but ", firstName, " is on ", first->deviceName(),
                " (a call's buffers must all be on the communicator's GPU or all on the host)");
  }
  if (first == nullptr || !onGpu(*first)) {
    CTRAN_CHECK(!stream.has_value(), InvalidArgument, op,
                ": stream= applies to GPU buffers only, but the buffers are on the host");
    return false;
  }
  opts.onDevice = true;
  opts.stream = reinterpret_cast<void*>(static_cast<uintptr_t>(stream.value_or(0)));
  return true;
}

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

std::optional<DataType> dtypeArg(const py::object& d) {
  if (d.is_none()) return std::nullopt;
  return checkDataType(d.cast<int>(), "dtype");
}

// A view of a call's buffer: host memory, or device memory of the communicator's GPU.
BufferView callBuffer(const py::handle& obj, const char* op, const char* arg,
                      std::optional<DataType> dtype, bool needWritable, int commDevice) {
  BufferView v = viewBuffer(obj, strCat(op, ": ", arg), dtype);
  const bool cuda = v.deviceType == static_cast<int>(DeviceKind::kCuda);
  CTRAN_CHECK(cuda || v.deviceType == static_cast<int>(DeviceKind::kCpu) ||
                  v.deviceType == static_cast<int>(DeviceKind::kCudaHost),
              InvalidArgument, op, ": ", arg, " is on device ", v.deviceName(),
              ", which this build cannot reach");
  CTRAN_CHECK(!cuda || commDevice >= 0, InvalidArgument, op, ": ", arg, " is on ", v.deviceName(),
              " but the communicator was created without a device (pass "
              "device= when creating it)");
  CTRAN_CHECK(!cuda || v.deviceId == commDevice, InvalidArgument, op, ": ", arg, " is on ",
              v.deviceName(), " but the communicator runs on cuda:", commDevice);
  CTRAN_CHECK(!needWritable || v.writable, InvalidArgument, op, ": ", arg, " is read-only");
  return v;
}

void sameType(const BufferView& a, const BufferView& b, const char* op) {
  CTRAN_CHECK(a.type == b.type, InvalidArgument, op, ": sendbuf is ", dataTypeName(a.type),
              " but recvbuf is ", dataTypeName(b.type));
}

void expectCount(const BufferView& v, size_t want, const char* op, const char* arg,
                 const std::string& why) {
  CTRAN_CHECK(v.count == want, InvalidArgument, op, ": ", arg, " has ", v.count,
              " elements but needs ", want, " (", why, ")");
}

RedOp opArg(int op, DataType t, const char* what) { return checkRedOp(op, t, what); }

CallOptions optionsOf(bool async, const py::object& algo = py::none(),
                      const py::object& scalar = py::none()) {
  CallOptions o;
  o.async = async;
  if (!algo.is_none()) o.algo = algo.cast<std::string>();
  if (!scalar.is_none()) o.premulScalar = scalar.cast<double>();
  return o;
}

// low_precision=: True / False force the FP8 wire format on / off, None leaves it to the knobs.
std::optional<bool> lowPrecisionArg(const py::object& lp) {
  if (lp.is_none()) return std::nullopt;
  return lp.cast<bool>();
}

std::vector<size_t> countsArg(const py::object& obj, int n, const char* op, const char* arg) {
  auto v = obj.cast<std::vector<int64_t>>();
  CTRAN_CHECK(v.size() == static_cast<size_t>(n), InvalidArgument, op, ": ", arg, " has ", v.size(),
              " entries for ", n, " ranks");
  std::vector<size_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    CTRAN_CHECK(v[i] >= 0, InvalidArgument, op, ": ", arg, "[", i, "]=", v[i], " is negative");
    out.push_back(static_cast<size_t>(v[i]));
  }
  return out;
}

std::vector<size_t> packed(const std::vector<size_t>& counts) {
  std::vector<size_t> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
}

void checkFits(const BufferView& v, const std::vector<size_t>& counts,
               const std::vector<size_t>& displs, const char* op, const char* arg) {
  for (size_t i = 0; i < counts.size(); ++i) {
    CTRAN_CHECK(displs[i] + counts[i] <= v.count, InvalidArgument, op, ": ", arg, " block ", i,
                " (displacement ", displs[i], ", count ", counts[i], ") ends past its ", v.count,
                " elements");
  }
}

std::unique_ptr<PyCommunicator> wrap(std::unique_ptr<Communicator> c) {
  if (!c) return nullptr;
  return std::make_unique<PyCommunicator>(std::move(c));
}

}  // namespace

void registerCommunicator(py::module_& m) {
  py::class_<Work, WorkPtr>(m, "Work", "Handle of an asynchronous operation.")
      .def(
          "wait",
          [](Work& w, std::optional<double> timeout) {
            py::gil_scoped_release nogil;
            w.wait(timeout ? static_cast<int64_t>(*timeout * 1000) : -1);
            return true;
          },
          py::arg("timeout") = py::none(),
          "Waits (at most `timeout` seconds) and raises the operation's error, if any.")
      .def("is_completed", &Work::isCompleted)
      .def_property_readonly("description", &Work::description);

  using PC = PyCommunicator;
  py::class_<PC>(m, "Communicator", "A rank's membership in a group running collectives.")
      .def_static(
          "from_unique_id",
          [](const py::bytes& uid, int rank, int nranks, std::optional<int> device) {
            ctran::UniqueId id = ctran::python::uniqueIdFromPy(uid);
            py::gil_scoped_release nogil;
            auto c = std::make_unique<Communicator>(
                ctran::Bootstrap::fromUniqueId(id, rank, nranks), device.value_or(-1));
            py::gil_scoped_acquire gil;
            return wrap(std::move(c));
          },
          py::arg("unique_id"), py::arg("rank"), py::arg("nranks"), py::arg("device") = py::none(),
          "Joins the group named by unique_id. With device (a GPU index; every rank passes one, "
          "or none), the communicator also runs every collective on that GPU's buffers.")
      .def_static(
          "from_env",
          [](std::optional<int> device) {
            py::gil_scoped_release nogil;
            auto c =
                std::make_unique<Communicator>(ctran::Bootstrap::fromEnv(), device.value_or(-1));
            py::gil_scoped_acquire gil;
            return wrap(std::move(c));
          },
          py::arg("device") = py::none())
      .def_static(
          "from_store",
          [](py::object store, int rank, int nranks, std::string prefix,
             std::optional<int> device) {
            auto s = ctran::python::storeFromPy(store);
            py::gil_scoped_release nogil;
            auto c = std::make_unique<Communicator>(
                std::make_unique<ctran::Bootstrap>(s, rank, nranks, prefix), device.value_or(-1));
            py::gil_scoped_acquire gil;
            return wrap(std::move(c));
          },
          py::arg("store"), py::arg("rank"), py::arg("nranks"), py::arg("prefix") = "rcclx",
          py::arg("device") = py::none())
      .def_property_readonly("rank", [](PC& c) { return c.comm().rank(); })
      .def_property_readonly("size", [](PC& c) { return c.comm().size(); })
      .def_property_readonly("local_rank", [](PC& c) { return c.comm().topology().localRank; })
      .def_property_readonly("local_size", [](PC& c) { return c.comm().topology().localSize(); })
      .def_property_readonly("num_hosts", [](PC& c) { return c.comm().topology().nHosts; })
      .def_property_readonly("direct_access", [](PC& c) { return c.comm().directAccess(); })
      .def_property_readonly(
          "device",
          [](PC& c) -> py::object {
            int d = c.comm().device();
            return d < 0 ? py::object(py::none()) : py::object(py::int_(d));
          },
          "The GPU index collectives on device buffers run on, or None.")
      .def(
          "_alloc_symmetric",
          [](PC& c, size_t nbytes) {
            py::gil_scoped_release nogil;
            return reinterpret_cast<uintptr_t>(c.comm().allocSymmetric(nbytes));
          },
          py::arg("nbytes"), "Collective; the device pointer (see alloc_symmetric).")
      .def_property_readonly(
          "symmetric_calls", [](PC& c) { return c.comm().symmetricCalls(); },
          "GPU all_reduce calls so far that stored their all-gather straight into outputs in "
          "symmetric buffers (alloc_symmetric, register_symmetric).")
      .def(
          "_free_symmetric",
          [](PC& c, uintptr_t ptr) {
            py::gil_scoped_release nogil;
            c.comm().freeSymmetric(reinterpret_cast<void*>(ptr));
          },
          py::arg("ptr"), "Collective (see SymmetricBuffer.free and .deregister).")
      .def(
          "_register_symmetric",
          [](PC& c, uintptr_t ptr, size_t nbytes) {
            py::gil_scoped_release nogil;
            c.comm().registerSymmetric(reinterpret_cast<void*>(ptr), nbytes);
          },
          py::arg("ptr"), py::arg("nbytes"), "Collective (see register_symmetric).")
      .def(
          "set_gpu_tuning", [](PC& c, const std::string& spec) { c.comm().setGpuTuning(spec); },
          py::arg("spec"),
          "Replaces the GPU kernels' launch shapes ('name=value,...', as "
          "RCCLX_GPU_TUNING); for tuning tools.")
      .def(
          "all_reduce",
          [](PC& c, py::object send, py::object recv, int op, py::object algo, py::object scalar,
             bool async, py::object dtype, std::optional<uintptr_t> stream,
             py::object lowPrecision) {
            const char* o = "all_reduce";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), recv.is_none(), dev);
            auto r =
                recv.is_none() ? s : callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            sameType(s, r, o);
            expectCount(r, s.count, o, "recvbuf", "the same as sendbuf");
            RedOp red = opArg(op, s.type, o);
            auto opts = optionsOf(async, algo, scalar);
            opts.lowPrecision = lowPrecisionArg(lowPrecision);
            auto call = [&] {
              return c.comm().allReduce(s.data, r.data, s.count, s.type, red, opts);
            };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", &r}}, stream, opts, {send, recv},
                              call);
          },
          py::arg("sendbuf"), py::arg("recvbuf") = py::none(), py::arg("op") = 0,
          py::arg("algo") = py::none(), py::arg("scalar") = py::none(), py::arg("async_op") = false,
          py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
          py::arg("low_precision") = py::none(),
          "recv = op over ranks of send (in place when recvbuf is None). GPU buffers (on the "
          "communicator's device): enqueued on `stream` (a cudaStream_t as an int, e.g. "
          "torch.cuda.current_stream().cuda_stream; default the legacy default stream 0), "
          "returns None at once; capturable in a CUDA graph.")
      .def(
          "reduce",
          [](PC& c, py::object send, py::object recv, int root, int op, py::object scalar,
             bool async, py::object dtype, std::optional<uintptr_t> stream) {
            const char* o = "reduce";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), recv.is_none(), dev);
            BufferView r = s;
            if (!recv.is_none()) r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            bool isRoot = c.comm().rank() == root;
            if (isRoot) {
              sameType(s, r, o);
              expectCount(r, s.count, o, "recvbuf", "the same as sendbuf");
            }
            RedOp red = opArg(op, s.type, o);
            auto opts = optionsOf(async, py::none(), scalar);
            auto call = [&] {
              return c.comm().reduce(s.data, isRoot ? r.data : nullptr, s.count, s.type, red, root,
                                     opts);
            };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", isRoot ? &r : nullptr}}, stream,
                              opts, {send, recv}, call);
          },
          py::arg("sendbuf"), py::arg("recvbuf") = py::none(), py::arg("root") = 0,
          py::arg("op") = 0, py::arg("scalar") = py::none(), py::arg("async_op") = false,
          py::arg("dtype") = py::none(), py::arg("stream") = py::none())
      .def(
          "broadcast",
          [](PC& c, py::object send, py::object recv, int root, bool async, py::object dtype,
             std::optional<uintptr_t> stream) {
            const char* o = "broadcast";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), recv.is_none(), dev);
            auto r =
                recv.is_none() ? s : callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            sameType(s, r, o);
            expectCount(r, s.count, o, "recvbuf", "the same as sendbuf");
            auto opts = optionsOf(async);
            auto call = [&] {
              return c.comm().broadcast(s.data, r.data, s.count, s.type, root, opts);
            };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", &r}}, stream, opts, {send, recv},
                              call);
          },
          py::arg("sendbuf"), py::arg("recvbuf") = py::none(), py::arg("root") = 0,
          py::arg("async_op") = false, py::arg("dtype") = py::none(),
          py::arg("stream") = py::none())
      .def(
          "all_gather",
          [](PC& c, py::object send, py::object recv, bool async, py::object dtype,
             std::optional<uintptr_t> stream, py::object lowPrecision) {
            const char* o = "all_gather";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), false, dev);
            auto r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            sameType(s, r, o);
            int n = c.comm().size();
            expectCount(r, s.count * n, o, "recvbuf", strCat(n, " ranks x ", s.count));
            auto opts = optionsOf(async);
            opts.lowPrecision = lowPrecisionArg(lowPrecision);
            auto call = [&] { return c.comm().allGather(s.data, r.data, s.count, s.type, opts); };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", &r}}, stream, opts, {send, recv},
                              call);
          },
          py::arg("sendbuf"), py::arg("recvbuf"), py::arg("async_op") = false,
          py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
          py::arg("low_precision") = py::none())
      .def(
          "all_gather_v",
          [](PC& c, py::object send, py::object recv, py::object counts, bool async,
             py::object dtype, std::optional<uintptr_t> stream, py::object lowPrecision) {
            const char* o = "all_gather_v";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), false, dev);
            auto r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            sameType(s, r, o);
            auto cnt = countsArg(counts, c.comm().size(), o, "recv_counts");
            size_t total = std::accumulate(cnt.begin(), cnt.end(), size_t{0});
            expectCount(r, total, o, "recvbuf", "the sum of recv_counts");
            auto opts = optionsOf(async);
            opts.lowPrecision = lowPrecisionArg(lowPrecision);
            auto call = [&] {
              return c.comm().allGatherV(s.data, s.count, r.data, cnt, s.type, opts);
            };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", &r}}, stream, opts, {send, recv},
                              call);
          },
          py::arg("sendbuf"), py::arg("recvbuf"), py::arg("recv_counts"),
          py::arg("async_op") = false, py::arg("dtype") = py::none(),
          py::arg("stream") = py::none(), py::arg("low_precision") = py::none())
      .def(
          "reduce_scatter",
          [](PC& c, py::object send, py::object recv, int op, py::object scalar, bool async,
             py::object dtype, std::optional<uintptr_t> stream, py::object lowPrecision) {
            const char* o = "reduce_scatter";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), false, dev);
            auto r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            sameType(s, r, o);
            int n = c.comm().size();
            expectCount(s, r.count * n, o, "sendbuf", strCat(n, " ranks x ", r.count));
            RedOp red = opArg(op, s.type, o);
            auto opts = optionsOf(async, py::none(), scalar);
            opts.lowPrecision = lowPrecisionArg(lowPrecision);
            auto call = [&] {
              return c.comm().reduceScatter(s.data, r.data, r.count, s.type, red, opts);
            };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", &r}}, stream, opts, {send, recv},
                              call);
          },
          py::arg("sendbuf"), py::arg("recvbuf"), py::arg("op") = 0, py::arg("scalar") = py::none(),
          py::arg("async_op") = false, py::arg("dtype") = py::none(),
          py::arg("stream") = py::none(), py::arg("low_precision") = py::none())
      .def(
          "reduce_scatter_v",
          [](PC& c, py::object send, py::object recv, py::object counts, int op, py::object scalar,
             bool async, py::object dtype, std::optional<uintptr_t> stream,
             py::object lowPrecision) {
            const char* o = "reduce_scatter_v";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), false, dev);
            auto r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            sameType(s, r, o);
            auto cnt = countsArg(counts, c.comm().size(), o, "counts");
            size_t total = std::accumulate(cnt.begin(), cnt.end(), size_t{0});
            expectCount(s, total, o, "sendbuf", "the sum of counts");
            expectCount(r, cnt[c.comm().rank()], o, "recvbuf", "counts[rank]");
            RedOp red = opArg(op, s.type, o);
            auto opts = optionsOf(async, py::none(), scalar);
            opts.lowPrecision = lowPrecisionArg(lowPrecision);
            auto call = [&] {
              return c.comm().reduceScatterV(s.data, r.data, cnt, s.type, red, opts);
            };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", &r}}, stream, opts, {send, recv},
                              call);
          },
          py::arg("sendbuf"), py::arg("recvbuf"), py::arg("counts"), py::arg("op") = 0,
          py::arg("scalar") = py::none(), py::arg("async_op") = false,
          py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
          py::arg("low_precision") = py::none())
      .def(
          "all_to_all",
          [](PC& c, py::object send, py::object recv, bool async, py::object dtype,
             std::optional<uintptr_t> stream, py::object lowPrecision) {
            const char* o = "all_to_all";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), false, dev);
            auto r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            sameType(s, r, o);
            int n = c.comm().size();
            CTRAN_CHECK(s.count % n == 0, InvalidArgument, o, ": sendbuf has ", s.count,
                        " elements, not a multiple of ", n, " ranks");
            expectCount(r, s.count, o, "recvbuf", "the same as sendbuf");
            auto opts = optionsOf(async);
            opts.lowPrecision = lowPrecisionArg(lowPrecision);
            auto call = [&] {
              return c.comm().allToAll(s.data, r.data, s.count / n, s.type, opts);
            };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", &r}}, stream, opts, {send, recv},
                              call);
          },
          py::arg("sendbuf"), py::arg("recvbuf"), py::arg("async_op") = false,
          py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
          py::arg("low_precision") = py::none())
      .def(
          "all_to_all_v",
          [](PC& c, py::object send, py::object recv, py::object sendCounts, py::object recvCounts,
             py::object sendDispls, py::object recvDispls, bool async, py::object dtype,
             std::optional<uintptr_t> stream) {
            const char* o = "all_to_all_v";
            int n = c.comm().size();
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), false, dev);
            auto r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            sameType(s, r, o);
            auto sc = countsArg(sendCounts, n, o, "send_counts");
            auto rc = countsArg(recvCounts, n, o, "recv_counts");
            auto sd =
                sendDispls.is_none() ? packed(sc) : countsArg(sendDispls, n, o, "send_displs");
            auto rd =
                recvDispls.is_none() ? packed(rc) : countsArg(recvDispls, n, o, "recv_displs");
            checkFits(s, sc, sd, o, "sendbuf");
            checkFits(r, rc, rd, o, "recvbuf");
            auto opts = optionsOf(async);
            auto call = [&] {
              return c.comm().allToAllV(s.data, sc, sd, r.data, rc, rd, s.type, opts);
            };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", &r}}, stream, opts, {send, recv},
                              call);
          },
          py::arg("sendbuf"), py::arg("recvbuf"), py::arg("send_counts"), py::arg("recv_counts"),
          py::arg("send_displs") = py::none(), py::arg("recv_displs") = py::none(),
          py::arg("async_op") = false, py::arg("dtype") = py::none(),
          py::arg("stream") = py::none())
      .def(
          "gather",
          [](PC& c, py::object send, py::object recv, int root, bool async, py::object dtype,
             std::optional<uintptr_t> stream) {
            const char* o = "gather";
            const int dev = c.comm().device();
            auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), false, dev);
            std::optional<BufferView> r;
            if (c.comm().rank() == root) {
              r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
              sameType(s, *r, o);
              expectCount(*r, s.count * c.comm().size(), o, "recvbuf",
                          strCat(c.comm().size(), " ranks x ", s.count));
            }
            void* rp = r ? r->data : nullptr;
            auto opts = optionsOf(async);
            auto call = [&] { return c.comm().gather(s.data, rp, s.count, s.type, root, opts); };
            return c.dispatch(o, {{"sendbuf", &s}, {"recvbuf", r ? &*r : nullptr}}, stream, opts,
                              {send, recv}, call);
          },
          py::arg("sendbuf"), py::arg("recvbuf") = py::none(), py::arg("root") = 0,
          py::arg("async_op") = false, py::arg("dtype") = py::none(),
          py::arg("stream") = py::none())
      .def(
          "scatter",
          [](PC& c, py::object send, py::object recv, int root, bool async, py::object dtype,
             std::optional<uintptr_t> stream) {
            const char* o = "scatter";
            const int dev = c.comm().device();
            auto r = callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
            std::optional<BufferView> s;
            if (c.comm().rank() == root) {
              s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), false, dev);
              sameType(*s, r, o);
              expectCount(*s, r.count * c.comm().size(), o, "sendbuf",
                          strCat(c.comm().size(), " ranks x ", r.count));
            }
            const void* sp = s ? s->data : nullptr;
            auto opts = optionsOf(async);
            auto call = [&] { return c.comm().scatter(sp, r.data, r.count, r.type, root, opts); };
            return c.dispatch(o, {{"recvbuf", &r}, {"sendbuf", s ? &*s : nullptr}}, stream, opts,
                              {send, recv}, call);
          },
          py::arg("sendbuf"), py::arg("recvbuf"), py::arg("root") = 0, py::arg("async_op") = false,
          py::arg("dtype") = py::none(), py::arg("stream") = py::none())
      .def(
          "send",
          [](PC& c, py::object buf, int peer, bool async, py::object dtype,
             std::optional<uintptr_t> stream) {
            auto b = callBuffer(buf, "send", "buf", dtypeArg(dtype), false, c.comm().device());
            auto opts = optionsOf(async);
            auto call = [&] { return c.comm().send(b.data, b.count, b.type, peer, opts); };
            return c.dispatch("send", {{"buf", &b}}, stream, opts, {buf}, call);
          },
          py::arg("buf"), py::arg("peer"), py::arg("async_op") = false,
          py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
          "GPU buffers: enqueued on `stream`; inside a group, enqueued by group_end together "
          "with the group's other sends and receives.")
      .def(
          "recv",
          [](PC& c, py::object buf, int peer, bool async, py::object dtype,
             std::optional<uintptr_t> stream) {
            auto b = callBuffer(buf, "recv", "buf", dtypeArg(dtype), true, c.comm().device());
            auto opts = optionsOf(async);
            auto call = [&] { return c.comm().recv(b.data, b.count, b.type, peer, opts); };
            return c.dispatch("recv", {{"buf", &b}}, stream, opts, {buf}, call);
          },
          py::arg("buf"), py::arg("peer"), py::arg("async_op") = false,
          py::arg("dtype") = py::none(), py::arg("stream") = py::none())
      .def(
          "barrier",
          [](PC& c, bool async, std::optional<uintptr_t> stream) {
            auto opts = optionsOf(async);
            if (stream.has_value()) {
              opts.onDevice = true;
              opts.stream = reinterpret_cast<void*>(static_cast<uintptr_t>(*stream));
              return c.runDevice({}, [&] { return c.comm().barrier(opts); });
            }
            return c.run(async, {}, [&] { return c.comm().barrier(opts); });
          },
          py::arg("async_op") = false, py::arg("stream") = py::none(),
          "On the host; with stream= (a GPU communicator), a kernel on that stream that ends "
          "once every rank's stream has reached its barrier.")
      .def("group_start", [](PC& c) { c.comm().groupStart(); })
      .def(
          "group_end", [](PC& c, bool async) { return c.groupEnd(async); },
          py::arg("async_op") = false)
      .def(
          "split",
          [](PC& c, int color, std::optional<int> key) {
            std::unique_ptr<Communicator> sub;
            {
              py::gil_scoped_release nogil;
              sub = c.comm().split(color, key.value_or(c.comm().rank()));
            }
            return wrap(std::move(sub));
          },
          py::arg("color"), py::arg("key") = py::none(),
          "Ranks with the same color form a new communicator (None for a negative color).")
      .def(
          "split_ranks",
          [](PC& c, const std::vector<int>& ranks) {
            std::unique_ptr<Communicator> sub;
            {
              py::gil_scoped_release nogil;
              sub = c.comm().splitRanks(ranks);
            }
            return wrap(std::move(sub));
          },
          py::arg("ranks"), "The listed ranks form a new communicator (None elsewhere).")
      .def(
          "select_all_reduce",
          [](PC& c, size_t nbytes, int dtype, int op, py::object algo, bool gpu) {
            DataType t = checkDataType(dtype, "select_all_reduce");
            Selection s =
                c.comm().selectAllReduce(nbytes, t, checkRedOp(op, t, "select_all_reduce"),
                                         algo.is_none() ? "" : algo.cast<std::string>(), gpu);
            return py::make_tuple(algoName(s.algo), s.reason);
          },
          py::arg("nbytes"), py::arg("dtype") = 7, py::arg("op") = 0, py::arg("algo") = py::none(),
          py::arg("gpu") = false)
      .def("finalize",
           [](PC& c) {
             py::gil_scoped_release nogil;
             c.comm().finalize();
           })
      .def("destroy",
           [](PC& c) {
             {
               py::gil_scoped_release nogil;
               c.comm().destroy();
             }
             c.prune();
           })
      .def("abort",
           [](PC& c) {
             py::gil_scoped_release nogil;
             c.comm().abort();
           })
      .def_property_readonly("destroyed", [](PC& c) { return c.comm().destroyed(); });
}

}  // namespace rcclx::python

// The collective methods of Communicator: each converts its arrays to (pointer, count, type),
// checks them against each other (call_args.hpp) and runs the call where its buffers are.
#include <pybind11/stl.h>

#include <numeric>

#include "py_communicator.hpp"

namespace rcclx::python {

using ctran::InvalidArgument;
using ctran::strCat;

void registerCollectives(py::class_<PyCommunicator>& cls) {
  using PC = PyCommunicator;
  cls.def(
         "all_reduce",
         [](PC& c, py::object send, py::object recv, int op, py::object algo, py::object scalar,
            bool async, py::object dtype, std::optional<uintptr_t> stream,
            py::object lowPrecision) {
           const char* o = "all_reduce";
           const int dev = c.comm().device();
           auto s = callBuffer(send, o, "sendbuf", dtypeArg(dtype), recv.is_none(), dev);
           auto r = recv.is_none() ? s : callBuffer(recv, o, "recvbuf", dtypeArg(dtype), true, dev);
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
          py::arg("async_op") = false);
}

}  // namespace rcclx::python

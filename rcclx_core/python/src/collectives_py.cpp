// The collective methods of Communicator: each converts its arrays to Buffers and its keyword
// arguments to CallOptions (call_args.hpp) and makes one core call, which checks them and runs
// where the buffers live.
#include <pybind11/stl.h>

#include "call_args.hpp"
#include "py_communicator.hpp"

namespace rcclx::python {

namespace {

using PC = PyCommunicator;
using Stream = std::optional<uintptr_t>;

const char* const kGpuNote =
    " GPU buffers (on the communicator's device) are enqueued on `stream` (a cudaStream_t as an "
    "int, e.g. torch.cuda.current_stream().cuda_stream; default the legacy default stream) and "
    "the call returns None at once; host buffers run now, or on the communicator's worker with "
    "async_op=True, which returns a Work.";

std::string doc(const char* what) { return std::string(what) + kGpuNote; }

}  // namespace

void registerCollectives(py::class_<PyCommunicator>& cls) {
  cls.def(
      "all_reduce",
      [](PC& c, py::object send, py::object recv, int op, py::object algo, py::object scalar,
         bool async, py::object dtype, Stream stream, py::object lp) {
        BufferView sv, rv;
        const Buffer s = bufferArg(send, "all_reduce", "sendbuf", dtypeArg(dtype), sv);
        const Buffer r =
            recv.is_none() ? s : bufferArg(recv, "all_reduce", "recvbuf", dtypeArg(dtype), rv);
        const CallOptions o = optionsOf(async, algo, scalar, stream, lp);
        return c.run({send, recv}, [&] {
          return c.comm().allReduce(s, r, reductionOp(op, sv, "all_reduce"), o);
        });
      },
      py::arg("sendbuf"), py::arg("recvbuf") = py::none(), py::arg("op") = 0,
      py::arg("algo") = py::none(), py::arg("scalar") = py::none(), py::arg("async_op") = false,
      py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      py::arg("low_precision") = py::none(),
      doc("recvbuf = op over ranks of sendbuf (in place when recvbuf is None). algo= forces an "
          "algorithm, scalar= is PREMUL_SUM's, low_precision= forces (True) or forbids (False) "
          "the FP8 wire format; capturable in a CUDA graph.")
          .c_str());
  cls.def(
      "reduce",
      [](PC& c, py::object send, py::object recv, py::object rootArg, int op, py::object scalar,
         bool async, py::object dtype, Stream stream) {
        BufferView sv, rv;
        const int root = rankArg(rootArg, "reduce", "root");
        const Buffer s = bufferArg(send, "reduce", "sendbuf", dtypeArg(dtype), sv);
        Buffer r = s;
        if (!recv.is_none() && c.comm().rank() == root)
          r = bufferArg(recv, "reduce", "recvbuf", dtypeArg(dtype), rv);
        const CallOptions o = optionsOf(async, py::none(), scalar, stream);
        return c.run({send, recv},
                     [&] { return c.comm().reduce(s, r, reductionOp(op, sv, "reduce"), root, o); });
      },
      py::arg("sendbuf"), py::arg("recvbuf") = py::none(), py::arg("root") = 0, py::arg("op") = 0,
      py::arg("scalar") = py::none(), py::arg("async_op") = false, py::arg("dtype") = py::none(),
      py::arg("stream") = py::none(),
      doc("On root, recvbuf (sendbuf when None) = op over ranks of sendbuf.").c_str());
  cls.def(
      "broadcast",
      [](PC& c, py::object send, py::object recv, py::object rootArg, bool async, py::object dtype,
         Stream stream) {
        BufferView sv, rv;
        const int root = rankArg(rootArg, "broadcast", "root");
        const Buffer s = bufferArg(send, "broadcast", "sendbuf", dtypeArg(dtype), sv);
        const Buffer r =
            recv.is_none() ? s : bufferArg(recv, "broadcast", "recvbuf", dtypeArg(dtype), rv);
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream);
        return c.run({send, recv}, [&] { return c.comm().broadcast(s, r, root, o); });
      },
      py::arg("sendbuf"), py::arg("recvbuf") = py::none(), py::arg("root") = 0,
      py::arg("async_op") = false, py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      doc("recvbuf (sendbuf when None) = root's sendbuf.").c_str());
  cls.def(
      "all_gather",
      [](PC& c, py::object send, py::object recv, bool async, py::object dtype, Stream stream,
         py::object lp) {
        BufferView sv, rv;
        const Buffer s = bufferArg(send, "all_gather", "sendbuf", dtypeArg(dtype), sv);
        const Buffer r = bufferArg(recv, "all_gather", "recvbuf", dtypeArg(dtype), rv);
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream, lp);
        return c.run({send, recv}, [&] { return c.comm().allGather(s, r, o); });
      },
      py::arg("sendbuf"), py::arg("recvbuf"), py::arg("async_op") = false,
      py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      py::arg("low_precision") = py::none(),
      doc("recvbuf = every rank's sendbuf, in rank order (size x sendbuf elements).").c_str());
  cls.def(
      "all_gather_v",
      [](PC& c, py::object send, py::object recv, py::object counts, bool async, py::object dtype,
         Stream stream, py::object lp) {
        BufferView sv, rv;
        const Buffer s = bufferArg(send, "all_gather_v", "sendbuf", dtypeArg(dtype), sv);
        const Buffer r = bufferArg(recv, "all_gather_v", "recvbuf", dtypeArg(dtype), rv);
        const auto n = countsArg(counts, "all_gather_v", "recv_counts");
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream, lp);
        return c.run({send, recv}, [&] { return c.comm().allGatherV(s, r, n, o); });
      },
      py::arg("sendbuf"), py::arg("recvbuf"), py::arg("recv_counts"), py::arg("async_op") = false,
      py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      py::arg("low_precision") = py::none(),
      doc("recvbuf = rank r's sendbuf (recv_counts[r] elements) for every r, packed in rank "
          "order.")
          .c_str());
  cls.def(
      "reduce_scatter",
      [](PC& c, py::object send, py::object recv, int op, py::object scalar, bool async,
         py::object dtype, Stream stream, py::object lp) {
        BufferView sv, rv;
        const Buffer s = bufferArg(send, "reduce_scatter", "sendbuf", dtypeArg(dtype), sv);
        const Buffer r = bufferArg(recv, "reduce_scatter", "recvbuf", dtypeArg(dtype), rv);
        const CallOptions o = optionsOf(async, py::none(), scalar, stream, lp);
        return c.run({send, recv}, [&] {
          return c.comm().reduceScatter(s, r, reductionOp(op, sv, "reduce_scatter"), o);
        });
      },
      py::arg("sendbuf"), py::arg("recvbuf"), py::arg("op") = 0, py::arg("scalar") = py::none(),
      py::arg("async_op") = false, py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      py::arg("low_precision") = py::none(),
      doc("recvbuf = op over ranks of block `rank` of sendbuf (size blocks of recvbuf's "
          "length).")
          .c_str());
  cls.def(
      "reduce_scatter_v",
      [](PC& c, py::object send, py::object recv, py::object counts, int op, py::object scalar,
         bool async, py::object dtype, Stream stream, py::object lp) {
        BufferView sv, rv;
        const Buffer s = bufferArg(send, "reduce_scatter_v", "sendbuf", dtypeArg(dtype), sv);
        const Buffer r = bufferArg(recv, "reduce_scatter_v", "recvbuf", dtypeArg(dtype), rv);
        const auto n = countsArg(counts, "reduce_scatter_v", "counts");
        const CallOptions o = optionsOf(async, py::none(), scalar, stream, lp);
        return c.run({send, recv}, [&] {
          return c.comm().reduceScatterV(s, r, n, reductionOp(op, sv, "reduce_scatter_v"), o);
        });
      },
      py::arg("sendbuf"), py::arg("recvbuf"), py::arg("counts"), py::arg("op") = 0,
      py::arg("scalar") = py::none(), py::arg("async_op") = false, py::arg("dtype") = py::none(),
      py::arg("stream") = py::none(), py::arg("low_precision") = py::none(),
      doc("recvbuf = op over ranks of block `rank` of sendbuf, blocks of counts[r] elements "
          "packed in rank order.")
          .c_str());
  cls.def(
      "all_to_all",
      [](PC& c, py::object send, py::object recv, bool async, py::object dtype, Stream stream,
         py::object lp) {
        BufferView sv, rv;
        const Buffer s = bufferArg(send, "all_to_all", "sendbuf", dtypeArg(dtype), sv);
        const Buffer r = bufferArg(recv, "all_to_all", "recvbuf", dtypeArg(dtype), rv);
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream, lp);
        return c.run({send, recv}, [&] { return c.comm().allToAll(s, r, o); });
      },
      py::arg("sendbuf"), py::arg("recvbuf"), py::arg("async_op") = false,
      py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      py::arg("low_precision") = py::none(),
      doc("Block p of sendbuf (size equal blocks) goes to rank p, into its block `rank`.").c_str());
  cls.def(
      "all_to_all_v",
      [](PC& c, py::object send, py::object recv, py::object sendCounts, py::object recvCounts,
         py::object sendDispls, py::object recvDispls, bool async, py::object dtype,
         Stream stream) {
        const char* o = "all_to_all_v";
        BufferView sv, rv;
        const Buffer s = bufferArg(send, o, "sendbuf", dtypeArg(dtype), sv);
        const Buffer r = bufferArg(recv, o, "recvbuf", dtypeArg(dtype), rv);
        const auto sc = countsArg(sendCounts, o, "send_counts");
        const auto rc = countsArg(recvCounts, o, "recv_counts");
        const auto sd =
            sendDispls.is_none() ? std::vector<size_t>{} : countsArg(sendDispls, o, "send_displs");
        const auto rd =
            recvDispls.is_none() ? std::vector<size_t>{} : countsArg(recvDispls, o, "recv_displs");
        const CallOptions opts = optionsOf(async, py::none(), py::none(), stream);
        return c.run({send, recv}, [&] { return c.comm().allToAllV(s, r, sc, sd, rc, rd, opts); });
      },
      py::arg("sendbuf"), py::arg("recvbuf"), py::arg("send_counts"), py::arg("recv_counts"),
      py::arg("send_displs") = py::none(), py::arg("recv_displs") = py::none(),
      py::arg("async_op") = false, py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      doc("send_counts[p] elements of sendbuf (at send_displs[p], packed when None) go to rank "
          "p, into recvbuf at its recv_displs[rank].")
          .c_str());
  cls.def(
      "alltoallv_dynamic",
      [](PC& c, py::object send, py::object recv, py::object sendSplits, py::object recvSplits,
         py::object sendOffsets, py::object recvOffsets, size_t rowElems, py::object maxRows,
         bool known, bool async, py::object dtype, Stream stream) {
        const char* o = "alltoallv_dynamic";
        BufferView sv, rv, ssv, rsv, sov, rov;
        const Buffer s = bufferArg(send, o, "input", dtypeArg(dtype), sv);
        const Buffer r = bufferArg(recv, o, "output", dtypeArg(dtype), rv);
        DynamicSplits sp;
        sp.sendSplits = bufferArg(sendSplits, o, "input_split_sizes", std::nullopt, ssv);
        sp.recvSplits = bufferArg(recvSplits, o, "output_split_sizes", std::nullopt, rsv);
        if (!sendOffsets.is_none())
          sp.sendOffsets = bufferArg(sendOffsets, o, "input_offsets", std::nullopt, sov);
        if (!recvOffsets.is_none())
          sp.recvOffsets = bufferArg(recvOffsets, o, "output_offsets", std::nullopt, rov);
        sp.rowElems = rowElems;
        if (!maxRows.is_none()) sp.maxRecvRows = maxRows.cast<size_t>();
        sp.recvSplitsKnown = known;
        const CallOptions opts = optionsOf(async, py::none(), py::none(), stream);
        return c.run({send, recv, sendSplits, recvSplits, sendOffsets, recvOffsets},
                     [&] { return c.comm().allToAllvDynamic(s, r, sp, opts); });
      },
      py::arg("input"), py::arg("output"), py::arg("input_split_sizes"),
      py::arg("output_split_sizes"), py::arg("input_offsets") = py::none(),
      py::arg("output_offsets") = py::none(), py::arg("row_elems") = 1,
      py::arg("max_output_rows") = py::none(), py::arg("output_split_sizes_known") = false,
      py::arg("async_op") = false, py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      doc("All-to-all-v whose counts are int64 arrays beside the data (rows of row_elems "
          "elements): input_split_sizes[p] rows go to rank p; output_split_sizes (and "
          "output_offsets) are written with the rows received from each rank, packed in rank "
          "order. Rows past the output's capacity (or max_output_rows) are dropped and the "
          "call fails naming the sender; output_split_sizes_known=True reads output_split_sizes "
          "instead of exchanging counts.")
          .c_str());
  cls.def(
      "check_alltoallv_dynamic", [](PC& c) { c.comm().checkAllToAllvDynamic(); },
      "Raises InvalidArgumentError with what this rank's earlier alltoallv_dynamic calls on GPU "
      "buffers recorded (an overflow, invalid counts) and clears it; call once their kernels "
      "finished. Host buffers raise from the call itself.");
  cls.def(
      "gather",
      [](PC& c, py::object send, py::object recv, py::object rootArg, bool async, py::object dtype,
         Stream stream) {
        BufferView sv, rv;
        const int root = rankArg(rootArg, "gather", "root");
        const Buffer s = bufferArg(send, "gather", "sendbuf", dtypeArg(dtype), sv);
        Buffer r;
        if (c.comm().rank() == root) r = bufferArg(recv, "gather", "recvbuf", dtypeArg(dtype), rv);
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream);
        return c.run({send, recv}, [&] { return c.comm().gather(s, r, root, o); });
      },
      py::arg("sendbuf"), py::arg("recvbuf") = py::none(), py::arg("root") = 0,
      py::arg("async_op") = false, py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      doc("On root, recvbuf = every rank's sendbuf in rank order (recvbuf is ignored "
          "elsewhere).")
          .c_str());
  cls.def(
      "scatter",
      [](PC& c, py::object send, py::object recv, py::object rootArg, bool async, py::object dtype,
         Stream stream) {
        BufferView sv, rv;
        const int root = rankArg(rootArg, "scatter", "root");
        const Buffer r = bufferArg(recv, "scatter", "recvbuf", dtypeArg(dtype), rv);
        Buffer s;
        if (c.comm().rank() == root) s = bufferArg(send, "scatter", "sendbuf", dtypeArg(dtype), sv);
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream);
        return c.run({send, recv}, [&] { return c.comm().scatter(s, r, root, o); });
      },
      py::arg("sendbuf"), py::arg("recvbuf"), py::arg("root") = 0, py::arg("async_op") = false,
      py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      doc("recvbuf = block `rank` of root's sendbuf (sendbuf is ignored off the root).").c_str());
  cls.def(
      "send",
      [](PC& c, py::object buf, py::object peerArg, bool async, py::object dtype, Stream stream) {
        BufferView v;
        const int peer = rankArg(peerArg, "send", "peer");
        const Buffer b = bufferArg(buf, "send", "buf", dtypeArg(dtype), v);
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream);
        return c.run({buf}, [&] { return c.comm().send(b, peer, o); });
      },
      py::arg("buf"), py::arg("peer"), py::arg("async_op") = false, py::arg("dtype") = py::none(),
      py::arg("stream") = py::none(),
      doc("Sends buf to peer (matched with its recv). Inside a group, GPU sends and receives "
          "are enqueued together by group_end.")
          .c_str());
  cls.def(
      "recv",
      [](PC& c, py::object buf, py::object peerArg, bool async, py::object dtype, Stream stream) {
        BufferView v;
        const int peer = rankArg(peerArg, "recv", "peer");
        const Buffer b = bufferArg(buf, "recv", "buf", dtypeArg(dtype), v);
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream);
        return c.run({buf}, [&] { return c.comm().recv(b, peer, o); });
      },
      py::arg("buf"), py::arg("peer"), py::arg("async_op") = false, py::arg("dtype") = py::none(),
      py::arg("stream") = py::none(), doc("Receives peer's send into buf.").c_str());
  cls.def(
      "barrier",
      [](PC& c, bool async, Stream stream) {
        const CallOptions o = optionsOf(async, py::none(), py::none(), stream);
        return c.run({}, [&] { return c.comm().barrier(o); });
      },
      py::arg("async_op") = false, py::arg("stream") = py::none(),
      "Returns once every rank reached it; with stream= (a GPU communicator), a kernel on that "
      "stream that ends once every rank's stream reached its barrier.");
  cls.def(
      "group_start", [](PC& c) { c.comm().groupStart(); },
      "Starts recording calls; the outermost group_end runs them together.");
  cls.def(
      "group_end", [](PC& c, bool async) { return c.groupEnd(async); }, py::arg("async_op") = false,
      "Ends a group; the outermost runs its calls (returns their Work with async_op=True).");
  cls.def(
      "group_cancel", [](PC& c) { c.groupCancel(); },
      "Leaves every open level of the group; none of its recorded calls runs. Every rank "
      "should cancel the same group.");
}

}  // namespace rcclx::python

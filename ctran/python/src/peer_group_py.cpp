// Bindings of Bootstrap, Topology, PeerGroup and Window.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <tuple>
#include <vector>

#include "bootstrap_py.hpp"
#include "ctran/peer_group.hpp"
#include "ctran/topology.hpp"
#include "ctran/window.hpp"

namespace py = pybind11;

namespace ctran::python {
namespace {

py::bytes toPy(const Bytes& b) {
  return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
}

Bytes fromPy(const py::bytes& b) {
  std::string s = b;
  return Bytes(s.begin(), s.end());
}

py::object memoryOf(void* p, size_t n) {
  if (!p) return py::none();
  return py::memoryview::from_memory(p, static_cast<ssize_t>(n), /*readonly=*/false);
}

}  // namespace

void registerPeerGroup(py::module_& m) {
  py::class_<Bootstrap>(m, "Bootstrap", "Membership in a group of processes (setup traffic only).")
      .def_static(
          "from_unique_id",
          [](const py::bytes& uid, int rank, int nranks) {
            UniqueId id = uniqueIdFromPy(uid);
            py::gil_scoped_release nogil;
            return Bootstrap::fromUniqueId(id, rank, nranks);
          },
          py::arg("unique_id"), py::arg("rank"), py::arg("nranks"),
          "Joins the group named by unique_id (from create_unique_id) as `rank` of `nranks`.")
      .def_static("from_env", &Bootstrap::fromEnv, py::call_guard<py::gil_scoped_release>(),
                  "Joins the group torchrun's environment describes (RANK, WORLD_SIZE, "
                  "MASTER_ADDR, MASTER_PORT).")
      .def_static(
          "from_store",
          [](py::object store, int rank, int nranks, std::string prefix) {
            auto s = storeFromPy(store);
            py::gil_scoped_release nogil;
            return std::make_unique<Bootstrap>(s, rank, nranks, prefix);
          },
          py::arg("store"), py::arg("rank"), py::arg("nranks"), py::arg("prefix") = "",
          "Joins the group rendezvousing in `store` under keys prefixed by `prefix`.")
      .def_property_readonly("rank", &Bootstrap::rank, "This process's rank in the group.")
      .def_property_readonly("nranks", &Bootstrap::nranks, "Number of ranks in the group.")
      .def(
          "all_gather",
          [](Bootstrap& b, const py::bytes& mine) {
            Bytes in = fromPy(mine);
            std::vector<Bytes> all;
            {
              py::gil_scoped_release nogil;
              all = b.allGather(in);
            }
            py::list out;
            for (auto& x : all) out.append(toPy(x));
            return out;
          },
          py::arg("data"), "Collective: every rank's `data`, indexed by rank.")
      .def("barrier", &Bootstrap::barrier, py::call_guard<py::gil_scoped_release>(),
           "Collective: returns once every rank has entered.")
      .def(
          "send",
          [](Bootstrap& b, int peer, const py::bytes& msg) {
            Bytes in = fromPy(msg);
            py::gil_scoped_release nogil;
            b.send(peer, in);
          },
          py::arg("peer"), py::arg("data"),
          "Sends a small control message to `peer` (ordered per pair of ranks).")
      .def(
          "recv",
          [](Bootstrap& b, int peer) {
            Bytes out;
            {
              py::gil_scoped_release nogil;
              out = b.recv(peer);
            }
            return toPy(out);
          },
          py::arg("peer"), "The next control message from `peer`.");

  py::class_<Topology>(m, "Topology", "Ranks grouped by host.")
      .def_readonly("rank", &Topology::rank, "This process's rank.")
      .def_readonly("nranks", &Topology::nranks, "Number of ranks.")
      .def_readonly("host_id", &Topology::hostId, "This process's host identity.")
      .def_readonly("host_of", &Topology::hostOf,
                    "Host index of every rank (hosts numbered by their lowest rank).")
      .def_readonly("pids", &Topology::pids, "Process id of every rank (on its own host).")
      .def_readonly("process_tokens", &Topology::processTokens,
                    "process_token() of every rank's process.")
      .def("same_process", &Topology::sameProcess, py::arg("a"), py::arg("b"),
           "True when ranks a and b live in one process (same host, pid and process token).")
      .def_readonly("local_ranks", &Topology::localRanks,
                    "Global ranks on this process's host, ascending.")
      .def_readonly("local_rank", &Topology::localRank, "Index of `rank` in local_ranks.")
      .def_readonly("num_hosts", &Topology::nHosts, "Number of hosts in the group.")
      .def_property_readonly("local_size", &Topology::localSize,
                             "Number of ranks on this process's host.");
  m.def("host_identity", &hostIdentity,
        "This process's host identity: RCCLX_HOST_ID if set, else hostname, boot id and "
        "namespaces.");
  m.def("process_token", &processToken, "This process's token (see Topology.process_tokens).");

  py::class_<PeerGroup>(m, "PeerGroup", "A rank's transports to every peer of its group.")
      .def_static(
          "from_unique_id",
          [](const py::bytes& uid, int rank, int nranks) {
            UniqueId id = uniqueIdFromPy(uid);
            py::gil_scoped_release nogil;
            return std::make_unique<PeerGroup>(Bootstrap::fromUniqueId(id, rank, nranks));
          },
          py::arg("unique_id"), py::arg("rank"), py::arg("nranks"),
          "Collective: joins the group named by unique_id and connects to every peer.")
      .def_static(
          "from_env", [] { return std::make_unique<PeerGroup>(Bootstrap::fromEnv()); },
          py::call_guard<py::gil_scoped_release>(),
          "Collective: joins the group torchrun's environment describes and connects to every "
          "peer.")
      .def_static(
          "from_store",
          [](py::object store, int rank, int nranks, std::string prefix) {
            auto s = storeFromPy(store);
            py::gil_scoped_release nogil;
            return std::make_unique<PeerGroup>(
                std::make_unique<Bootstrap>(s, rank, nranks, prefix));
          },
          py::arg("store"), py::arg("rank"), py::arg("nranks"), py::arg("prefix") = "",
          "Collective: joins the group rendezvousing in `store` under `prefix` and connects to "
          "every peer.")
      .def_property_readonly("rank", &PeerGroup::rank, "This process's rank in the group.")
      .def_property_readonly("nranks", &PeerGroup::nranks, "Number of ranks in the group.")
      .def_property_readonly("topology", &PeerGroup::topology, py::return_value_policy::copy,
                             "A copy of the group's Topology.")
      .def_property_readonly("bootstrap", &PeerGroup::bootstrap,
                             py::return_value_policy::reference_internal,
                             "The Bootstrap the group was joined with (valid while it lives).")
      .def_property_readonly("job_tag", &PeerGroup::jobTag,
                             "A random tag shared by every rank of the group.")
      .def(
          "transport_to",
          [](const PeerGroup& g, int peer) { return transportName(g.transportTo(peer)); },
          py::arg("peer"), "How this rank reaches `peer`: 'self', 'shm', 'tcp' or 'cuda_ipc'.")
      .def("create_window", &PeerGroup::createWindow, py::arg("nbytes"),
           py::arg("num_signals") = 64, py::keep_alive<0, 1>(),
           py::call_guard<py::gil_scoped_release>(),
           "Collective: a Window of `nbytes` (the same on every rank) with `num_signals` signal "
           "slots.")
      .def(
          "check_peer",
          [](PeerGroup& g, int peer, std::optional<py::function> delivered) {
            if (!delivered) return g.checkPeer(peer);
            g.checkPeer(peer, [&] { return delivered->operator()().cast<bool>(); });
          },
          py::arg("peer"), py::arg("delivered") = py::none(),
          "Raises RemoteError if `peer` is known to have died or disconnected, and tells every "
          "rank; not when `delivered()` (asked only then) says what this rank awaited from it "
          "had arrived before it left.")
      .def("moves_device_memory", &PeerGroup::movesDeviceMemory, py::arg("peer"),
           "Whether messages to and from `peer` move GPU memory in place (the ucx transport "
           "reaches it and every rank's UCX drives CUDA memory).")
      .def(
          "exchange_messages",
          [](PeerGroup& g, const std::vector<std::tuple<bool, int, py::buffer>>& batch,
             int64_t timeoutMs) {
            std::vector<Message> messages;
            std::vector<py::buffer_info> held;  // keeps each buffer's export alive
            held.reserve(batch.size());
            for (const auto& [send, peer, buffer] : batch) {
              held.push_back(buffer.request(/*writable=*/!send));
              const py::buffer_info& b = held.back();
              messages.push_back({send, peer, b.ptr,
                                  static_cast<size_t>(b.size) * static_cast<size_t>(b.itemsize)});
            }
            py::gil_scoped_release nogil;
            g.exchangeMessages(messages, "exchange_messages", timeoutMs);
          },
          py::arg("batch"), py::arg("timeout_ms") = -1,
          "Two-sided messages over the ucx transport: `batch` is a list of (send, peer, buffer); "
          "the n-th send to a peer meets that peer's n-th receive from this rank, and the sizes "
          "must match. Issues them all, then waits until each completed.")
      .def("check_failed", &PeerGroup::checkFailed,
           "Raises RemoteError naming the culprit if any rank reported a failure of the group.")
      .def("destroy", &PeerGroup::destroy,
           "Releases the transports and the bootstrap (windows stay mapped until destroyed).")
      .def_property_readonly("destroyed", &PeerGroup::destroyed, "True once destroy() was called.");

  py::class_<Window, std::shared_ptr<Window>>(m, "Window",
                                              "Collectively allocated memory reachable by peers.")
      .def_property_readonly("id", &Window::id, "The window's number, the same on every rank.")
      .def_property_readonly("nbytes", &Window::bytes, "Size of each rank's memory, in bytes.")
      .def_property_readonly("num_signals", &Window::numSignals, "Number of signal slots.")
      .def_property_readonly(
          "buffer", [](const Window& w) { return memoryOf(w.data(), w.bytes()); },
          "Writable memoryview of this rank's bytes (invalid after destroy).")
      .def(
          "peer_buffer",
          [](const Window& w, int peer) { return memoryOf(w.peerData(peer), w.bytes()); },
          py::arg("peer"), "Memoryview of a peer's bytes mapped here, or None (tcp peers).")
      .def(
          "put",
          [](Window& w, int peer, size_t offset, py::object data) {
            Py_buffer view;
            if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
              PyErr_Clear();
              throw InvalidArgument(
                  "window put: data must be a C-contiguous buffer (bytes, numpy array...)");
            }
            try {
              py::gil_scoped_release nogil;
              w.put(peer, offset, view.buf, static_cast<size_t>(view.len));
            } catch (...) {
              PyBuffer_Release(&view);
              throw;
            }
            PyBuffer_Release(&view);
          },
          py::arg("peer"), py::arg("offset"), py::arg("data"),
          "Copies the bytes of `data` into `peer`'s memory at `offset`.")
      .def("signal", &Window::signal, py::arg("peer"), py::arg("slot"), py::arg("delta") = 1,
           py::call_guard<py::gil_scoped_release>(),
           "Adds `delta` to `peer`'s signal `slot`, after this rank's earlier puts to it.")
      .def("wait_signal", &Window::waitSignal, py::arg("slot"), py::arg("value"),
           py::arg("from_peer") = -1, py::arg("timeout_ms") = -1,
           py::call_guard<py::gil_scoped_release>(),
           "Waits until the local `slot` reaches `value` and returns the slot's value (from_peer: "
           "the rank expected to signal it, named if it fails; -1: any; timeout_ms: the "
           "deadline, RCCLX_TIMEOUT_MS when negative).")
      .def("read_signal", &Window::readSignal, py::arg("slot"),
           "The local signal `slot`'s current value.")
      .def("destroy", &Window::destroy,
           "Unmaps the peers and releases the memory (this rank only, not collective).")
      .def_property_readonly("destroyed", &Window::destroyed, "True once destroy() was called.");
}

}  // namespace ctran::python

// Binding of DeviceRma: one-sided puts and stream-ordered signals over mapped device memory.
// Pointers and streams cross as integers (a tensor's data_ptr(), a cudaStream_t).
#include <pybind11/pybind11.h>

#include "ctran/device_rma.hpp"
#include "ctran/peer_group.hpp"

namespace py = pybind11;

namespace ctran::python {
namespace {

void* asPointer(uintptr_t p) { return reinterpret_cast<void*>(p); }

}  // namespace

void registerDeviceRma(py::module_& m) {
  py::class_<DeviceRma>(m, "DeviceRma",
                        "Device memory of every rank of a one-host group, mapped by every rank, "
                        "with stream-ordered put / signal / wait_signal.")
      .def(py::init([](PeerGroup& group, int device, uintptr_t ptr, size_t nbytes) {
             return std::make_unique<DeviceRma>(group, device,
                                                DeviceWindow::UserMemory{asPointer(ptr), nbytes});
           }),
           py::arg("group"), py::arg("device"), py::arg("ptr"), py::arg("nbytes"),
           py::keep_alive<1, 2>(), py::call_guard<py::gil_scoped_release>(),
           "Collective: maps `nbytes` of this rank's memory at `ptr` (GPU `device`, inside one "
           "allocation; the same size on every rank) on every rank of `group`.")
      .def_property_readonly("nbytes", &DeviceRma::bytes, "Bytes of each rank's memory.")
      .def_property_readonly("device", &DeviceRma::device, "The GPU of this rank's memory.")
      .def(
          "peer_ptr",
          [](const DeviceRma& r, int peer) {
            return reinterpret_cast<uintptr_t>(r.peerData(peer));
          },
          py::arg("peer"), "Address of `peer`'s memory as mapped in this process.")
      .def(
          "put",
          [](DeviceRma& r, int peer, size_t offset, uintptr_t src, size_t nbytes,
             uintptr_t stream) { r.put(peer, offset, asPointer(src), nbytes, asPointer(stream)); },
          py::arg("peer"), py::arg("offset"), py::arg("src"), py::arg("nbytes"), py::arg("stream"),
          py::call_guard<py::gil_scoped_release>(),
          "Enqueues on `stream` a copy of `nbytes` at device address `src` into `peer`'s memory "
          "at byte `offset`.")
      .def(
          "signal",
          [](DeviceRma& r, int peer, uintptr_t stream) { r.signal(peer, asPointer(stream)); },
          py::arg("peer"), py::arg("stream"), py::call_guard<py::gil_scoped_release>(),
          "Enqueues on `stream` this rank's next signal to `peer`, after everything before it.")
      .def(
          "wait_signal",
          [](DeviceRma& r, int peer, uintptr_t stream, int64_t timeoutMs) {
            r.waitSignal(peer, asPointer(stream), timeoutMs);
          },
          py::arg("peer"), py::arg("stream"), py::arg("timeout_ms") = -1,
          py::call_guard<py::gil_scoped_release>(),
          "Enqueues on `stream` a wait for `peer`'s next signal. Past timeout_ms "
          "(RCCLX_TIMEOUT_MS when negative) the kernel ends without it and the window fails: "
          "every later call but destroy() raises TimeoutError.")
      .def("check_failed", &DeviceRma::checkFailed,
           "Raises the window's TimeoutError once one of its waits has timed out (without "
           "blocking: only once the waiting kernel recorded it); else returns.")
      .def("destroy", &DeviceRma::destroy, py::arg("collective") = true,
           py::call_guard<py::gil_scoped_release>(),
           "Unmaps the peers (collective: first finishes this GPU's work and meets every rank; "
           "else first ends this window's pending waits). A failed window too.")
      .def_property_readonly("destroyed", &DeviceRma::destroyed, "True once destroy() was called.");
}

}  // namespace ctran::python

// Binding of Communicator: how it is created, what it reports, symmetric buffers, tuning,
// splits and teardown. The collectives are bound in collectives_py.cpp, the argument checks
// they share are call_args.hpp's, and PyCommunicator (py_communicator.hpp) keeps the arrays of
// asynchronous calls alive until their work completes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>

#include "bootstrap_py.hpp"
#include "ctran/checks.hpp"
#include "py_communicator.hpp"
#include "rcclx/communicator.hpp"
#include "testing_access.hpp"

namespace rcclx::python {
namespace {

std::unique_ptr<PyCommunicator> wrap(std::unique_ptr<Communicator> c) {
  if (!c) return nullptr;
  return std::make_unique<PyCommunicator>(std::move(c));
}

using Hints = std::optional<std::map<std::string, std::string>>;

CommConfig configOf(std::optional<int> device, const Hints& hints) {
  CommConfig c;
  c.device = device.value_or(-1);
  if (hints) c.hints = *hints;
  return c;
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
      .def("is_completed", &Work::isCompleted,
           "True once the operation finished, successfully or not.")
      .def_property_readonly(
          "description", &Work::description,
          "The operation and its number on the communicator ('all_reduce #12').");

  using PC = PyCommunicator;
  py::class_<PC> cls(m, "Communicator", "A rank's membership in a group running collectives.");
  cls.def(py::init([](PC& other) { return std::make_unique<PC>(std::move(other)); }),
          py::arg("other"),
          "Takes over `other`'s communicator (which is left empty): how a subclass adopts one "
          "a factory or split() made.");
  cls.def_static(
         "from_unique_id",
         [](const py::bytes& uid, int rank, int nranks, std::optional<int> device, Hints hints) {
           ctran::UniqueId id = ctran::python::uniqueIdFromPy(uid);
           py::gil_scoped_release nogil;
           auto c = std::make_unique<Communicator>(ctran::Bootstrap::fromUniqueId(id, rank, nranks),
                                                   configOf(device, hints));
           py::gil_scoped_acquire gil;
           return wrap(std::move(c));
         },
         py::arg("unique_id"), py::arg("rank"), py::arg("nranks"), py::arg("device") = py::none(),
         py::arg("hints") = py::none(),
         "Joins the group named by unique_id. With device (a GPU index; every rank passes one, "
         "or none), the communicator also runs every collective on that GPU's buffers. hints: "
         "knob values for this communicator only ({'RCCLX_ALLREDUCE_ALGO': 'dda_tree'}), "
         "overriding the environment; the configuration is read once, here.")
      .def_static(
          "from_env",
          [](std::optional<int> device, Hints hints) {
            py::gil_scoped_release nogil;
            auto c = std::make_unique<Communicator>(ctran::Bootstrap::fromEnv(),
                                                    configOf(device, hints));
            py::gil_scoped_acquire gil;
            return wrap(std::move(c));
          },
          py::arg("device") = py::none(), py::arg("hints") = py::none(),
          "Joins the group torchrun's environment describes (RANK, WORLD_SIZE, MASTER_ADDR, "
          "MASTER_PORT); device and hints as from_unique_id.")
      .def_static(
          "from_store",
          [](py::object store, int rank, int nranks, std::string prefix, std::optional<int> device,
             Hints hints) {
            auto s = ctran::python::storeFromPy(store);
            py::gil_scoped_release nogil;
            auto c = std::make_unique<Communicator>(
                std::make_unique<ctran::Bootstrap>(s, rank, nranks, prefix),
                configOf(device, hints));
            py::gil_scoped_acquire gil;
            return wrap(std::move(c));
          },
          py::arg("store"), py::arg("rank"), py::arg("nranks"), py::arg("prefix") = "rcclx",
          py::arg("device") = py::none(), py::arg("hints") = py::none(),
          "Joins the group rendezvousing in `store` (a ctran store, or any object with "
          "set/get like torch.distributed's stores) under `prefix`; device and hints as "
          "from_unique_id.")
      .def_property_readonly(
          "rank", [](PC& c) { return c.comm().rank(); }, "This rank's index in the group.")
      .def_property_readonly(
          "size", [](PC& c) { return c.comm().size(); }, "Number of ranks in the group.")
      .def_property_readonly(
          "local_rank", [](PC& c) { return c.comm().topology().localRank; },
          "This rank's index among the ranks of its host.")
      .def_property_readonly(
          "local_size", [](PC& c) { return c.comm().topology().localSize(); },
          "Number of ranks on this rank's host.")
      .def_property_readonly(
          "num_hosts", [](PC& c) { return c.comm().topology().nHosts; },
          "Number of hosts the group spans.")
      .def_property_readonly(
          "direct_access", [](PC& c) { return c.comm().directAccess(); },
          "True when the direct (DDA) algorithms can run on host buffers: every rank on this "
          "host.")
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
          py::arg("ptr"), py::arg("nbytes"), "Collective (see register_symmetric).");
  registerCollectives(cls);
  cls.def(
         "split",
         [](PC& c, int color, std::optional<int> key, Hints hints) {
           std::unique_ptr<Communicator> sub;
           {
             py::gil_scoped_release nogil;
             sub = c.comm().split(color, key.value_or(c.comm().rank()),
                                  hints.value_or(Hints::value_type{}));
           }
           return wrap(std::move(sub));
         },
         py::arg("color"), py::arg("key") = py::none(), py::arg("hints") = py::none(),
         "Ranks with the same color form a new communicator (None for a negative color), with "
         "this one's device and knobs, `hints` (knob name -> value) overriding them.")
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
          "finalize",
          [](PC& c) {
            py::gil_scoped_release nogil;
            c.comm().finalize();
          },
          "Waits for all submitted host work.")
      .def(
          "destroy",
          [](PC& c) {
            {
              py::gil_scoped_release nogil;
              c.comm().destroy();
            }
            c.prune();
          },
          "Collective: finalizes, then releases every resource (a second call raises "
          "InvalidUsageError).")
      .def(
          "abort",
          [](PC& c) {
            py::gil_scoped_release nogil;
            c.comm().abort();
          },
          "Releases every resource without waiting for peers; later calls raise "
          "InvalidUsageError.")
      .def(
          "check_failed",
          [](PC& c) {
            py::gil_scoped_release nogil;
            c.comm().checkFailed();
          },
          "Raises the RemoteError of a failure any rank reported (what every later call "
          "raises; on GPUs, the kernels of calls in flight then ended early, their outputs "
          "undefined); returns at once when there is none.")
      .def_property_readonly(
          "destroyed", [](PC& c) { return c.comm().destroyed(); },
          "True once destroy() or abort() was called.");
}

}  // namespace rcclx::python

// rcclx_core._C._testing: hooks into the core for tests and tuning tools (re-exported as
// rcclx_core._testing): the pure allreduce selector, a communicator's selection, zero-copy
// counters and GPU launch shapes, the low-precision reference codec and policy, and the
// cross-core handoff probe rcclx-perf records.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ctran/device.hpp"
#include "py_communicator.hpp"
#include "selector.hpp"
#include "testing_access.hpp"

namespace py = pybind11;

namespace rcclx::python {

void registerLowPrecision(py::module_& m);
void registerMachineProbe(py::module_& m);

namespace {

using PC = PyCommunicator;

void registerSelector(py::module_& m) {
  m.def(
      "select_all_reduce",
      [](size_t nbytes, int dtype, int op, int nranks, int nHosts, bool directAccess,
         std::string forced, size_t flatMax, size_t treeMax, bool gpu, size_t gpuFlatMax,
         size_t gpuTreeMax, bool deterministic) {
        SelectorInput in;
        in.bytes = nbytes;
        in.type = checkDataType(dtype, "select_all_reduce");
        in.op = checkRedOp(op, in.type, "select_all_reduce");
        in.nranks = nranks;
        in.nHosts = nHosts;
        in.directAccess = directAccess;
        in.gpu = gpu;
        in.deterministic = deterministic;
        SelectorConfig cfg;
        cfg.forced = parseAlgo(forced, "select_all_reduce");
        cfg.forcedBy = "forced='" + forced + "'";
        cfg.flatMaxBytes = flatMax;
        cfg.treeMaxBytes = treeMax;
        cfg.gpuFlatMaxBytes = gpuFlatMax;
        cfg.gpuTreeMaxBytes = gpuTreeMax;
        Selection s = selectAllReduce(in, cfg);
        return py::make_tuple(algoName(s.algo), s.reason());
      },
      py::arg("nbytes"), py::arg("dtype") = 7, py::arg("op") = 0, py::arg("nranks") = 2,
      py::arg("num_hosts") = 1, py::arg("direct_access") = true, py::arg("forced") = "auto",
      py::arg("flat_max_bytes") = SelectorConfig().flatMaxBytes,
      py::arg("tree_max_bytes") = SelectorConfig().treeMaxBytes, py::arg("gpu") = false,
      py::arg("gpu_flat_max_bytes") = SelectorConfig().gpuFlatMaxBytes,
      py::arg("gpu_tree_max_bytes") = SelectorConfig().gpuTreeMaxBytes,
      py::arg("deterministic") = true,
      "The pure allreduce selector: (algorithm, reason) for the given call and thresholds.");
}

void registerCommunicatorHooks(py::module_& m) {
  m.def(
      "selection",
      [](PC& c, size_t nbytes, int dtype, int op, py::object algo, bool gpu) {
        const DataType t = checkDataType(dtype, "selection");
        const auto [chosen, why] = CommunicatorTesting::selectAllReduce(
            c.comm(), nbytes, t, checkRedOp(op, t, "selection"),
            algo.is_none() ? "" : algo.cast<std::string>(), gpu);
        return py::make_tuple(algoName(chosen), why);
      },
      py::arg("comm"), py::arg("nbytes"), py::arg("dtype") = 7, py::arg("op") = 0,
      py::arg("algo") = py::none(), py::arg("gpu") = false,
      "(algorithm, reason) the communicator's selector picks for an allreduce of nbytes.");
  m.def(
      "collective_selection",
      [](PC& c, const std::string& collective, size_t nbytes, int root) {
        const auto [chosen, why] =
            CommunicatorTesting::selectCollective(c.comm(), collective, nbytes, root);
        return py::make_tuple(chosen, why);
      },
      py::arg("comm"), py::arg("collective"), py::arg("nbytes"), py::arg("root") = 0,
      "(algorithm, reason) the host back-end picks for all_gather, reduce_scatter, broadcast or "
      "reduce of nbytes (all_gather: the whole output; reduce_scatter: the whole input).");
  m.def(
      "symmetric_calls", [](PC& c) { return CommunicatorTesting::symmetricCalls(c.comm()); },
      py::arg("comm"),
      "GPU all_reduce calls so far that stored their all-gather straight into the peers' "
      "outputs (symmetric buffers, or outputs mapped while a graph was captured).");
  m.def(
      "graph_registrations",
      [](PC& c) {
        py::gil_scoped_release nogil;
        return CommunicatorTesting::graphRegistrations(c.comm());
      },
      py::arg("comm"),
      "Outputs of captured GPU all_reduce calls mapped on every rank for CUDA graphs still "
      "alive (RCCLX_GPU_GRAPH_REGISTER); the mappings of destroyed graphs are closed first.");
  m.def(
      "set_gpu_tuning",
      [](PC& c, const std::string& spec) { CommunicatorTesting::setGpuTuning(c.comm(), spec); },
      py::arg("comm"), py::arg("spec"),
      "Replaces the GPU allreduce kernels' launch shapes ('name=value,...', as "
      "RCCLX_GPU_TUNING); for tuning tools.");
  m.def(
      "gpu_sharing", [](PC& c) { return CommunicatorTesting::gpuSharing(c.comm()); },
      py::arg("comm"),
      "How the communicator's ranks share GPUs and the launch bound that follows (one line; "
      "'' without a device).");
  m.def("open_ipc_mappings", &ctran::device::openIpcMappings,
        "Peers' GPU memory mappings (cudaIpcOpenMemHandle) this process's communicators hold "
        "open; 0 once every communicator that opened them is destroyed (a leak check).");
}

}  // namespace

void registerTesting(py::module_& m) {
  registerSelector(m);
  registerCommunicatorHooks(m);
  registerLowPrecision(m);
  registerMachineProbe(m);
}

}  // namespace rcclx::python

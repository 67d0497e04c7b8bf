"""Hooks into the core for tests and tuning tools; not a stable API.

- ``select_all_reduce(nbytes, ...)``: the pure allreduce selector over given thresholds;
- ``selection(comm, nbytes, ...)``: what a communicator's selector picks;
- ``collective_selection(comm, collective, nbytes, root=0)``: the same for all_gather,
  reduce_scatter, broadcast and reduce;
- ``symmetric_calls(comm)``, ``graph_registrations(comm)``: zero-copy counters of GPU calls;
- ``set_gpu_tuning(comm, spec)``: the GPU allreduce kernels' launch shapes;
- ``gpu_sharing(comm)``: how the ranks share GPUs and the launch bound that follows;
- ``lp_*`` and ``low_precision_decision``: the low-precision reference codec and policy;
- ``open_ipc_mappings()``: peers' GPU memory mappings this process's communicators hold open;
- ``cross_core_handoff(cpu_a, cpu_b, bytes, rounds)``: how fast one CPU sees another's writes
  (rcclx-perf records it beside host timings);
- ``free_port_run(count=2)``: free ports outside the ephemeral range for ranks started on this
  machine (MASTER_PORT and the store's port after it).
"""

from rcclx_core._C._testing import (
    collective_selection,
    cross_core_handoff,
    gpu_sharing,
    graph_registrations,
    low_precision_decision,
    lp_dequantize,
    lp_gpu_launch_shape,
    lp_quantize,
    lp_wire_bytes,
    open_ipc_mappings,
    select_all_reduce,
    selection,
    set_gpu_tuning,
    symmetric_calls,
)
from rcclx_core._ports import free_port_run

__all__ = [
    "collective_selection",
    "cross_core_handoff",
    "free_port_run",
    "gpu_sharing",
    "graph_registrations",
    "low_precision_decision",
    "lp_dequantize",
    "lp_gpu_launch_shape",
    "lp_quantize",
    "lp_wire_bytes",
    "open_ipc_mappings",
    "select_all_reduce",
    "selection",
    "set_gpu_tuning",
    "symmetric_calls",
]

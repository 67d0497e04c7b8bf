"""rcclx-perf: times and checks rcclx_core collectives over a range of sizes, on CPUs or GPUs, as
nccl-tests does, next to the peers it is asked to compare with.

Modules: ``cli`` (options, entry point), ``launch`` (local rank processes or torchrun),
``device`` (--device, GPUs per rank, the multicast switches), ``buffers`` (host or GPU buffers
and their layouts), ``timing`` (eager and CUDA-graph timers), ``ours`` (our collectives as
columns), ``peers`` (--compare: nccl, symm_mem, gloo), ``runner`` (one rank's loop), ``check``
(inputs, exact references, the low-precision error), ``summary`` and ``targets`` (the end of
the report, --targets), ``report`` and ``plot`` (table, JSON, plot), ``spec`` (types,
collectives, sizes, the run's options).
"""

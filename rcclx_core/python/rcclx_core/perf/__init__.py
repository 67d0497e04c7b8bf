"""rcclx-perf: times and checks rcclx_core collectives over a range of sizes, as nccl-tests does.

Modules: ``cli`` (options, entry point), ``launch`` (local rank processes or torchrun),
``runner`` (one rank's timing loop), ``check`` (inputs and exact references), ``gloo``
(``--compare gloo``), ``report`` (table, JSON, plot), ``spec`` (types, collectives, sizes).
"""

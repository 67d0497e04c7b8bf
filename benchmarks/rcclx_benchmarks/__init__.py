"""RCCLX's workloads and benchmarks (see the README): ``e2e`` (rcclx-e2e and the accuracy study),
``host_time``, ``dist_all_reduce``, ``transport_bench``; ``local_ranks`` starts the ranks."""

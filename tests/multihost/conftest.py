"""Fixtures of the multi-host tests: clusters of test hosts (hosts.py), root only; without
root, unshare, nsenter or ip every test here is skipped with the reason.

``cluster`` is a cluster of three hosts shared by the tests that leave its network as they
found it (made once, on first use); ``make_cluster(n)`` makes a cluster of n hosts of the test's
own, closed after it, for tests that change links. After every test, nothing of a job may be
left on a host (a process, a file in /dev/shm): the test fails otherwise; and a closed cluster
must leave nothing at all (no holder, no process in its namespaces). ``transport`` is what the
tests pass to ``Cluster.start``, which sets RCCLX_NET_TRANSPORT: the transports between hosts
the tests run over, None being the library's default (tcp between these hosts), and ucx;
shared memory within a host either way.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

# The rank functions and case loops of tests/rcclx_core run here unchanged.
_CORE_TESTS = str(Path(__file__).resolve().parents[1] / "rcclx_core")
if _CORE_TESTS not in sys.path:
    sys.path.append(_CORE_TESTS)

import hosts  # noqa: E402

# Between hosts: the library's choice (tcp on these hosts: they have no RDMA device) and ucx
# (over UCX's tcp transport on eth0), which tests skip where libucp does not load.
TRANSPORTS = [None, "ucx"]


@functools.cache
def _unavailable() -> str | None:
    return hosts.unavailable_reason()


def _skip_unless_possible() -> None:
    reason = _unavailable()
    if reason:
        pytest.skip(reason)


def _left_on_hosts(cluster: hosts.Cluster) -> list[str]:
    left = list(cluster.leftovers)
    cluster.leftovers.clear()
    for host in cluster.hosts:
        left += [f"{host.name}: process {c}" for c in cluster.processes()[host.name]]
        left += [f"{host.name}: /dev/shm/{f}" for f in host.shm_files()]
    return left


def _close(cluster: hosts.Cluster) -> list[str]:
    cluster.close()
    return cluster.remaining()


@pytest.fixture(scope="session")
def _shared_cluster():
    _skip_unless_possible()
    # The launch tests' ranks import torch: once per host, not once per rank.
    cluster = hosts.Cluster(3, preload=("torch", "torchcomms_rcclx", "torchcomms_rcclx._create"))
    yield cluster
    left = _close(cluster)
    assert not left, f"left after the cluster closed: {left}"


@pytest.fixture
def cluster(_shared_cluster):
    yield _shared_cluster
    left = _left_on_hosts(_shared_cluster)
    assert not left, f"left on the hosts after the test: {left}"


@pytest.fixture
def make_cluster():
    _skip_unless_possible()
    made: list[hosts.Cluster] = []

    def make(nhosts: int) -> hosts.Cluster:
        made.append(hosts.Cluster(nhosts))
        return made[-1]

    yield make
    left = []
    for c in made:
        left += _left_on_hosts(c) + _close(c)
    assert not left, f"left after the test: {left}"


@pytest.fixture(params=TRANSPORTS, ids=lambda t: t or "default")
def transport(request) -> str | None:
    if request.param == "ucx":
        import ctran

        found, missing = ctran.ucx_library()
        if not found:
            pytest.skip(f"no usable UCX: {missing}")
    return request.param

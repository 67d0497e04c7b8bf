"""free_port_run: ports for ranks started on this machine, outside the ephemeral range."""

import socket

import pytest

import rcclx_core._ports
from rcclx_core._ports import _ephemeral_range
from rcclx_core._testing import free_port_run


def test_a_run_is_free_outside_the_ephemeral_range_and_never_given_twice():
    low, high = _ephemeral_range()
    seen = set()
    for count in (1, 2, 3, 2):
        base = free_port_run(count)
        run = set(range(base, base + count))
        assert not run & seen, f"{sorted(run & seen)} handed out twice"
        seen |= run
        for port in run:
            assert not low <= port <= high, f"{port} is in the ephemeral range {low}..{high}"
            with socket.socket() as s:  # free: a listener can take it
                s.bind(("127.0.0.1", port))
                s.listen()


def test_a_run_skips_a_port_another_process_listens_on(monkeypatch):
    # A listener the module knows nothing of, on the first port the search will try.
    first = free_port_run(4)  # first .. first+3 free
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", first + 1))
        taken.listen()
        tries = iter([first + 1, first, first + 2])  # runs of two holding it, then one without

        class Scripted:
            def randint(self, low, high):
                return next(tries)

        monkeypatch.setattr(rcclx_core._ports.random, "Random", Scripted)
        monkeypatch.setattr(rcclx_core._ports, "_given", set())
        assert free_port_run(2) == first + 2


@pytest.mark.parametrize("count", [0, -1])
def test_a_bad_count_is_refused_naming_it(count):
    with pytest.raises(ValueError, match=f"count must be at least 1, got {count}"):
        free_port_run(count)

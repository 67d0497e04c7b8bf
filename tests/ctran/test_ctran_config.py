"""Configuration dump, RCCLX_DEBUG logging with a rank prefix, and GPU availability queries."""

import os
import subprocess
import sys
import threading
import time

import pytest

import ctran

CTRAN_KNOBS = [
    "RCCLX_DEBUG",
    "RCCLX_TIMEOUT_MS",
    "RCCLX_SPIN_US",
    "RCCLX_HOST_ID",
    "RCCLX_TRANSPORT",
    "RCCLX_BOOTSTRAP_ADDR",
    "RCCLX_BOOTSTRAP_PORT",
]


def _knob(name):
    (entry,) = [k for k in ctran.config_dump() if k["name"] == name]
    return entry


def test_config_dump_lists_every_ctran_knob(monkeypatch):
    for name in CTRAN_KNOBS:
        monkeypatch.delenv(name, raising=False)
    dump = ctran.config_dump()
    names = [k["name"] for k in dump]
    assert len(names) == len(set(names)), "a knob is listed twice"
    for name in CTRAN_KNOBS:
        assert name in names
    for entry in dump:
        assert set(entry) == {
            "name",
            "type",
            "default",
            "choices",
            "description",
            "value",
            "from_env",
        }
        assert entry["type"] in {"bool", "int", "bytes", "string", "enum"}
        assert entry["description"]
        if entry["type"] == "enum":
            assert entry["default"].lower() in entry["choices"].lower().split("|")
    timeout = _knob("RCCLX_TIMEOUT_MS")
    assert (timeout["type"], timeout["value"], timeout["from_env"]) == (
        "int",
        timeout["default"],
        False,
    )
    assert _knob("RCCLX_TRANSPORT")["choices"] == "auto|shm|tcp|ucx"
    assert _knob("RCCLX_NET_TRANSPORT")["choices"] == "auto|ucx|tcp"


def test_config_dump_reflects_the_environment(monkeypatch):
    monkeypatch.setenv("RCCLX_TIMEOUT_MS", "1234")
    monkeypatch.setenv("RCCLX_TRANSPORT", "tcp")
    assert (_knob("RCCLX_TIMEOUT_MS")["value"], _knob("RCCLX_TIMEOUT_MS")["from_env"]) == (
        "1234",
        True,
    )
    assert (_knob("RCCLX_TRANSPORT")["value"], _knob("RCCLX_TRANSPORT")["from_env"]) == (
        "tcp",
        True,
    )
    monkeypatch.delenv("RCCLX_TIMEOUT_MS")
    assert _knob("RCCLX_TIMEOUT_MS")["from_env"] is False
    # An empty value counts as unset.
    monkeypatch.setenv("RCCLX_TIMEOUT_MS", "")
    assert _knob("RCCLX_TIMEOUT_MS")["from_env"] is False


def test_timeout_knob_is_read_at_each_wait(monkeypatch):
    store = ctran.MemoryStore()
    for timeout_ms in (150, 400):
        monkeypatch.setenv("RCCLX_TIMEOUT_MS", str(timeout_ms))
        start = time.monotonic()
        with pytest.raises(ctran.TimeoutError, match=f"RCCLX_TIMEOUT_MS={timeout_ms}"):
            store.get("missing")
        assert timeout_ms / 1000 * 0.9 <= time.monotonic() - start < timeout_ms / 1000 + 2


# Joins as rank 1 of a two-rank group whose rank 0 is the test process; first, with
# RCCLX_DEBUG=NONE, builds a one-rank group, which would log at INFO.
_LOGGING_RANK = """
import os, sys
import ctran
os.environ["RCCLX_DEBUG"] = "NONE"
ctran.refresh_logging()
ctran.PeerGroup.from_store(ctran.MemoryStore(), 0, 1).destroy()
os.environ["RCCLX_DEBUG"] = "INFO"
ctran.refresh_logging()
store = ctran.TcpStore("127.0.0.1", int(sys.argv[1]))
group = ctran.PeerGroup.from_store(store, 1, 2, prefix="log")
group.create_window(64).destroy()
group.bootstrap.barrier()
"""


def test_info_logging_has_a_rank_prefix():
    server = ctran.TcpStoreServer()
    errors = []

    def rank0():
        try:
            group = ctran.PeerGroup.from_store(
                ctran.TcpStore("127.0.0.1", server.port), 0, 2, prefix="log"
            )
            group.create_window(64).destroy()
            group.bootstrap.barrier()
            group.destroy()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    partner = threading.Thread(target=rank0)
    partner.start()
    env = {k: v for k, v in os.environ.items() if k != "RCCLX_DEBUG"}
    proc = subprocess.run(
        [sys.executable, "-c", _LOGGING_RANK, str(server.port)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    partner.join(60)
    assert proc.returncode == 0, proc.stderr
    assert not errors
    info_lines = [line for line in proc.stderr.splitlines() if " INFO] " in line]
    assert info_lines, proc.stderr
    for line in info_lines:
        assert line.startswith("[rcclx ") and ":1 INFO] " in line, line
    assert any("peer group: rank 1/2" in line for line in info_lines), proc.stderr
    # Nothing was logged while RCCLX_DEBUG=NONE.
    assert "rank 0/1" not in proc.stderr


def test_cuda_device_count_without_a_usable_gpu():
    count, why = ctran.cuda_device_count()
    assert isinstance(count, int) and isinstance(why, str)
    if count > 0:
        pytest.skip(f"{count} GPU(s) usable here: the no-GPU report is tested on CPU machines")
    assert why.startswith("no GPU")
    if not ctran.built_with_cuda():
        assert "without" in why
    with pytest.raises(ctran.CudaError) as info:
        ctran.cuda_probe(0, 1)
    assert "no GPU" in str(info.value)


@pytest.mark.gpu
def test_cuda_probe_round_trips_a_value():
    count, why = ctran.cuda_device_count()
    if count == 0:
        pytest.skip(why)
    assert why == ""
    for device in range(count):
        assert ctran.cuda_probe(device, 1234 + device) == 1234 + device
    assert ctran.cuda_probe(0, -(2**62)) == -(2**62)
    with pytest.raises(ctran.InvalidArgumentError, match=f"device {count} is out of range"):
        ctran.cuda_probe(count, 1)

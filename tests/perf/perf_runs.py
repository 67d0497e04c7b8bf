"""Runs the rcclx-perf command as the user does (a subprocess with real rank processes) and reads
its table back: shared by the tests of tests/perf."""

from __future__ import annotations

import json
import subprocess
import sys


def parse_table(stdout: str) -> list[dict]:
    """The table's rows as dicts keyed by the header's column names (the last '#' line with
    'size(B)' before the rows)."""
    columns: list[str] = []
    rows = []
    for line in stdout.splitlines():
        if line.startswith("#") and "size(B)" in line and "count(elems)" in line:
            columns = line.lstrip("#").split()
        elif line.strip() and not line.startswith("#"):
            rows.append(dict(zip(columns, line.split())))
    return rows


def on_cpu(args) -> list[str]:
    """``args`` on host buffers unless they name a device (--device auto would take a GPU)."""
    return list(args) if "--device" in args else ["--device", "cpu", *args]


def perf(tmp_path, *args: str, expect: int = 0, timeout: float = 120) -> tuple[list[dict], str]:
    """Runs ``rcclx-perf args`` in ``tmp_path`` (on the host unless args say --device); returns
    its table rows and its whole output."""
    proc = subprocess.run(
        [sys.executable, "-m", "rcclx_core.perf", *on_cpu(args)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == expect, f"exit {proc.returncode}, expected {expect}:\n{out}"
    return parse_table(proc.stdout), out


def perf_json(tmp_path, *args: str, expect: int = 0) -> tuple[list[dict], str, dict]:
    """As ``perf``, with --json: also the JSON document."""
    rows, out = perf(tmp_path, *args, "--json", "out.json", expect=expect)
    return rows, out, json.loads((tmp_path / "out.json").read_text())

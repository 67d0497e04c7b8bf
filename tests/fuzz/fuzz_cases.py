"""Shared pieces of the property-based fuzz tests: the example budget, the errors a rejected call
may raise, and the runner that executes a fuzz body in a forked rank so that a crash fails the
test with the example that caused it instead of killing pytest.

RCCLX_FUZZ_EXAMPLES=N raises the number of examples per property (the default keeps CI fast);
examples are derandomized, so every run (and every rank of a launch) draws the same ones.
"""

from __future__ import annotations

import os
import pathlib

import launcher

EXAMPLES = int(os.environ.get("RCCLX_FUZZ_EXAMPLES", "25"))
# Seconds a property may take: a few for the launch, then well above the ~0.1 s an example costs.
TIMEOUT = 60 + EXAMPLES


def settings(examples: int = EXAMPLES):
    import hypothesis

    return hypothesis.settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=False,
        suppress_health_check=list(hypothesis.HealthCheck),
    )


def allowed_errors() -> tuple[type[BaseException], ...]:
    import ctran
    import rcclx_core

    return (
        rcclx_core.InvalidArgumentError,
        rcclx_core.InvalidUsageError,
        ctran.InvalidArgumentError,
        ctran.InvalidUsageError,
        TypeError,
        ValueError,
    )


class ExampleLog:
    """Writes the example about to run to a file before the call, so that if the call kills the
    process the test can still say which example it was."""

    def __init__(self, path: str) -> None:
        self.path = path

    def record(self, text: str) -> None:
        with open(self.path, "w") as f:
            f.write(text)


def run_isolated(body, nranks: int, log_dir: pathlib.Path, timeout: float = TIMEOUT) -> None:
    """Runs ``body(ctx, ExampleLog)`` on ``nranks`` forked ranks; a rank that dies or hangs
    fails the test naming the example it was running."""
    logs = [str(log_dir / f"example.{r}") for r in range(nranks)]
    results = launcher.launch(_rank_body, nranks, body, logs, timeout=timeout, expect_errors=True)
    failures = []
    for res in results:
        if res.error_type is None and res.exitcode in (0, None):
            continue
        path = pathlib.Path(logs[res.rank])
        last = path.read_text() if path.exists() else "(none recorded)"
        failures.append(
            f"rank {res.rank}: {res.error_type}: {res.error}\n"
            f"last example: {last}\n{res.traceback or ''}"
        )
    assert not failures, "\n".join(failures)


def _rank_body(ctx, body, logs):
    body(ctx, ExampleLog(logs[ctx.rank]))

"""The stand-in ``torchcomms`` (torchcomms_standin/): torchcomms' quick start as written on 1 and
2 ranks, torchcomms' names mapped to torchcomms_rcclx's, an import that touches nothing (torch
imports it while torch.distributed initialises, and must see no torchcomms), and a real
torchcomms always imported in its place, wherever the import system finds one.

Run where the distribution is installed (``nox -s tests``, the dev environment); skipped where
it is not, or where a real torchcomms is installed (the stand-in then steps aside).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap

import checks
import pytest

from launcher import launch

torch = pytest.importorskip("torch")

import rcclx_core  # noqa: E402
import torchcomms_rcclx  # noqa: E402


@pytest.fixture(scope="module")
def standin():
    """The installed stand-in, imported as ``torchcomms``."""
    try:
        importlib.metadata.distribution("rcclx-torchcomms-standin")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("rcclx-torchcomms-standin is not installed (pip install ./torchcomms_standin)")
    import torchcomms  # installed but not importable: the .pth is not honoured, a failure

    if getattr(torchcomms, "STANDIN", None) != "rcclx":
        pytest.skip(f"a real torchcomms is installed ({torchcomms.__file__})")
    return torchcomms


def _python(code: str, cwd, path_first=None) -> subprocess.CompletedProcess:
    """`code` in a new interpreter of this environment (PYTHONPATH led by `path_first`)."""
    env = dict(os.environ)
    if path_first is not None:
        paths = (str(path_first), env.get("PYTHONPATH"))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


# --- torchcomms' quick start ----------------------------------------------------------------


def _quick_start_rank(ctx):
    import torchcomms

    comm = torchcomms.new_comm("rcclx", torch.device("cpu"), name="my_comm")
    t = torch.ones(4)
    comm.all_reduce(t, torchcomms.ReduceOp.SUM, async_op=False)
    rank = comm.get_rank()
    u = torch.full((3,), float(rank + 1))
    work = comm.all_reduce(u, torchcomms.ReduceOp.MAX, async_op=True)
    work.wait()
    got = (
        rank,
        comm.get_size(),
        comm.get_name(),
        t.tolist(),
        u.tolist(),
        isinstance(comm, torchcomms.TorchComm),
        isinstance(work, torchcomms.TorchWork),
        torchcomms.STANDIN,
    )
    comm.finalize()
    return got


@pytest.mark.parametrize("nranks", [1, 2])
def test_quick_start_runs_as_written(standin, nranks):
    port = checks.free_port()
    results = launch(
        _quick_start_rank,
        nranks,
        rank_env=lambda r: {
            "RANK": str(r),
            "WORLD_SIZE": str(nranks),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        },
    )
    n = float(nranks)
    assert [r.value for r in results] == [
        (r, nranks, "my_comm", [n] * 4, [n] * 3, True, True, "rcclx") for r in range(nranks)
    ]


# --- torchcomms' names ----------------------------------------------------------------------

_SAME_AS = {
    "TorchComm": "TorchComm",
    "TorchWork": "Work",
    "ReduceOp": "ReduceOp",
    "RedOpType": "RedOpType",
    "BatchSendRecv": "BatchSendRecv",
    "P2POp": "P2POp",
    "CommOptions": "CommOptions",
}


@pytest.mark.parametrize("name", sorted(_SAME_AS))
def test_torchcomms_names_are_torchcomms_rcclx_ones(standin, name):
    assert getattr(standin, name) is getattr(torchcomms_rcclx, _SAME_AS[name])
    assert name in standin.__all__ and name in dir(standin)


def test_torchcomm_window_is_the_rcclx_window(standin):
    if importlib.util.find_spec("torchcomms_rcclx._window") is None:
        pytest.skip("torchcomms_rcclx._window does not exist yet")
    from torchcomms_rcclx._window import TorchCommWindowRCCLX

    assert standin.TorchCommWindow is TorchCommWindowRCCLX


def test_objcol_is_torchcomms_rcclx_objcol(standin):
    from torchcomms import objcol

    from torchcomms_rcclx import objcol as ours

    assert standin.objcol is objcol
    assert objcol.__all__ and all(getattr(objcol, f) is getattr(ours, f) for f in objcol.__all__)


def test_device_mesh_forwards_to_torchcomms_rcclx(standin):
    from torchcomms import device_mesh

    assert standin.device_mesh is device_mesh
    if importlib.util.find_spec("torchcomms_rcclx.device_mesh") is None:
        pytest.skip("torchcomms_rcclx.device_mesh does not exist yet")
    from torchcomms_rcclx import device_mesh as ours

    assert device_mesh.init_device_mesh is ours.init_device_mesh


def test_other_backends_need_the_real_torchcomms(standin):
    with pytest.raises(rcclx_core.InvalidArgumentError, match="backend 'nccl' is not available"):
        standin.new_comm("nccl", torch.device("cpu"), name="my_comm")
    with pytest.raises(ValueError) as raised:  # a ValueError and a RuntimeError, as torch's
        standin.new_comm("gloo", "cpu", "x")
    assert "stand-in" in str(raised.value) and "only backend is 'rcclx'" in str(raised.value)
    assert standin.is_backend_built("rcclx") and not standin.is_backend_built("nccl")
    with pytest.raises(AttributeError, match="stand-in"):
        standin.TorchCommNCCL  # noqa: B018


@pytest.mark.parametrize("module", ["_comms", "_backend_wrapper", "hooks"])
def test_has_none_of_what_torch_looks_for(standin, module):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"torchcomms.{module}")


# --- importing it ---------------------------------------------------------------------------


def test_import_loads_neither_torch_nor_torchcomms_rcclx(standin, tmp_path):
    done = _python(
        """
        import sys
        import torchcomms, torchcomms.device_mesh
        print(torchcomms.STANDIN, sorted(m for m in ("torch", "torchcomms_rcclx", "rcclx_core")
                                         if m in sys.modules))
        """,
        tmp_path,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "rcclx []\n", "")


def test_torch_distributed_sees_no_torchcomms(standin, tmp_path):
    done = _python(
        """
        import sys
        import torch.distributed
        from torch.distributed import distributed_c10d
        print(distributed_c10d._TORCHCOMM_AVAILABLE, sys.modules["torchcomms"].STANDIN)
        """,
        tmp_path,
    )
    # torch imported the stand-in, found no _comms in it, and said nothing.
    assert (done.returncode, done.stdout, done.stderr) == (0, "False rcclx\n", "")


# --- never in a real torchcomms' place ------------------------------------------------------

_IMPORT_HOOK = textwrap.dedent("""
    import importlib.util, sys
    class RealTorchcommsFinder:  # as an editable install's import hook
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "torchcomms":
                return importlib.util.spec_from_file_location(
                    name, {init!r}, submodule_search_locations=[{folder!r}])
    sys.meta_path.append(RealTorchcommsFinder)
""")


def _fake_torchcomms(root, body: str = "REAL = True\n") -> str:
    """A folder holding a package `torchcomms` with `body`; returns the folder."""
    (root / "torchcomms").mkdir(parents=True)
    (root / "torchcomms" / "__init__.py").write_text(body)
    return str(root)


@pytest.mark.parametrize("where", ["earlier on sys.path", "later on sys.path", "import hook"])
def test_a_real_torchcomms_is_imported_instead(standin, tmp_path, where):
    real = _fake_torchcomms(tmp_path / "real")
    real_init = os.path.join(real, "torchcomms", "__init__.py")
    setup, path_first = "", None
    if where == "earlier on sys.path":
        path_first = real
    elif where == "later on sys.path":
        setup = f"import sys; sys.path.append({real!r})"
    else:
        setup = _IMPORT_HOOK.format(init=real_init, folder=os.path.dirname(real_init))
    done = _python(
        setup + "\nimport torchcomms\nprint(torchcomms.__file__, torchcomms.REAL)\n",
        tmp_path,
        path_first,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"{real_init} True\n"


def test_a_failing_real_torchcomms_fails_the_import(standin, tmp_path):
    # As PyPI's placeholder `torchcomms`, whose import raises.
    real = _fake_torchcomms(tmp_path / "real", "raise ImportError('placeholder torchcomms')\n")
    done = _python(f"import sys; sys.path.append({real!r}); import torchcomms", tmp_path)
    assert done.returncode != 0 and "ImportError: placeholder torchcomms" in done.stderr


# An import hook that searches all of sys.path (as instrumenting hooks do) finds the stand-in.
_PATH_HOOK = textwrap.dedent("""
    import importlib.machinery, sys
    class WholePathFinder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            return importlib.machinery.PathFinder.find_spec(name, path)
    sys.meta_path.insert(0, WholePathFinder)
""")


@pytest.mark.parametrize(
    "other",
    ["another copy of the stand-in", "a hook finding the stand-in", "a folder without __init__"],
)
def test_what_is_not_a_real_torchcomms_leaves_the_standin(standin, tmp_path, other):
    # A stand-in that took any of these for a real torchcomms would hand the import to itself
    # (without end), or to an empty package.
    if other == "another copy of the stand-in":
        copy = tmp_path / "rcclx_torchcomms_standin"
        shutil.copytree(os.path.dirname(standin.__file__), copy / "torchcomms")
        code, path_first = f"import sys; sys.path.append({str(copy)!r})", None
    elif other == "a hook finding the stand-in":
        code, path_first = _PATH_HOOK, None
    else:
        (tmp_path / "ns" / "torchcomms").mkdir(parents=True)
        code, path_first = "", tmp_path / "ns"
    done = _python(code + "\nimport torchcomms; print(torchcomms.__file__)", tmp_path, path_first)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{standin.__file__}\n", "")

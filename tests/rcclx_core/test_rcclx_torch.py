"""torch CPU tensors through DLPack: bfloat16 and float8 tensors reduce to the same bits as
their raw storage passed with dtype=, and match the float64 reference; shapes flatten;
non-contiguous tensors and tensors that refuse DLPack get clear errors."""

import importlib.util

import checks
import numpy as np
import pytest
import rcclx_helpers as H

from launcher import launch

# torch is imported inside the ranks only (it is slow to import).
if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)

TORCH_TYPES = {
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "bfloat16": "bfloat16",
    "float8_e4m3": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
}
COUNTS = (0, 1, 1001, 5003)


def _torch_rank(ctx):
    import torch

    import rcclx_core as rc

    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    check, join = checks.same_bits, checks.join_problems
    out = {}

    def as_tensor(spec, storage):
        return torch.from_numpy(storage.copy()).view(getattr(torch, TORCH_TYPES[spec.name]))

    def bits(t):
        if t.numel() == 0:
            return np.zeros(0, dtype=np.uint8)
        return t.reshape(-1).view(torch.uint8).numpy()

    for spec in H.SPECS:
        for op, values in [
            (H.OP.SUM, "int"),
            (H.OP.MAX, "rand" if not spec.is_int else "int"),
            (H.OP.AVG, "rand" if not spec.is_int else "int"),
        ]:
            for ki, count in enumerate(COUNTS):
                inputs = [H.make_input(spec, op, values, p, count) for p in range(n)]
                # The torch tensor ...
                t = as_tensor(spec, inputs[me])
                if ki % 2:
                    comm.all_reduce(t, op=op)
                    got_t = t
                else:
                    got_t = torch.empty_like(t)
                    comm.all_reduce(t, got_t, op=op)
                # ... and numpy storage with dtype= give the same bits.
                x = inputs[me].copy()
                comm.all_reduce(x, op=op, dtype=spec.rc)
                got = bits(got_t).view(spec.storage)
                problem = join(
                    check(got, x, "torch vs numpy: "),
                    H.check_reduction(spec, op, values, got, inputs, [1.0] * n),
                )
                out[f"all_reduce {spec.name} {op.name} count={count}"] = (
                    checks.digest(got),
                    problem,
                )
        # Data movement with torch tensors of this type, 2-D shapes included.
        mine = [H.make_bytes(spec, p, 6, tag=20) for p in range(n)]
        t = as_tensor(spec, mine[me]).reshape(2, 3)
        recv = torch.empty((n, 2, 3), dtype=t.dtype)
        comm.all_gather(t, recv)
        out[f"all_gather 2-D {spec.name}"] = (
            "",
            check(bits(recv.reshape(-1)).view(spec.storage), np.concatenate(mine)),
        )
        b = as_tensor(spec, mine[me])
        comm.broadcast(b, root=n - 1)
        out[f"broadcast {spec.name}"] = ("", check(bits(b).view(spec.storage), mine[n - 1]))

    # Errors name the argument and the problem.
    errors = {}
    base = torch.zeros(4, 6)
    for what, call in {
        "transposed": lambda: comm.all_reduce(base.t()),
        "strided recvbuf": lambda: comm.all_reduce(torch.zeros(3), torch.zeros(6)[::2]),
        "column slice": lambda: comm.all_reduce(base[:, ::2]),
        "requires grad": lambda: comm.all_reduce(torch.zeros(4, requires_grad=True)),
        "int16": lambda: comm.all_reduce(torch.zeros(4, dtype=torch.int16)),
        "BAND on bfloat16": lambda: comm.all_reduce(
            torch.zeros(4, dtype=torch.bfloat16), op=rc.RedOp.BAND
        ),
    }.items():
        try:
            call()
            errors[what] = ("returned", "")
        except rc.Error as e:
            errors[what] = (type(e).__name__, str(e))
    comm.destroy()
    return out, errors


def test_torch_tensors():
    results = launch(_torch_rank, 2, env=H.CHUNK_ENV, timeout=120)
    checks.assert_cases(
        [r.value[0] for r in results], expect_cases=len(H.SPECS) * (3 * len(COUNTS) + 2)
    )
    for res in results:
        errors = res.value[1]
        want = {
            "transposed": ["sendbuf must be contiguous", "shape (6, 4)"],
            "strided recvbuf": ["recvbuf must be contiguous"],
            "column slice": ["sendbuf must be contiguous", "strides (6, 2)"],
            "requires grad": ["sendbuf", "require", "grad"],
            "int16": ["sendbuf", "16 bits", "not supported"],
            "BAND on bfloat16": ["op band", "bfloat16"],
        }
        for what, fragments in want.items():
            kind, msg = errors[what]
            assert kind == "InvalidArgumentError", (what, kind, msg)
            for f in fragments:
                assert f in msg, (what, msg)


def _bool_rank(ctx):
    import torch

    import rcclx_core as rc

    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    # Column j holds rank r's bit (j >> r) & 1: every pattern of the ranks' bits appears.
    pattern = [bool((j >> r) & 1) for r in range(n) for j in range(1 << n)]
    mine = np.array(pattern[me * (1 << n) : (me + 1) * (1 << n)])
    cols = np.array(pattern).reshape(n, 1 << n)
    want = {"SUM": cols.any(axis=0), "MAX": cols.any(axis=0), "PROD": cols.all(axis=0)}
    want["MIN"] = want["PROD"]
    out = {}
    for op, expected in want.items():
        for kind, make in (("numpy", lambda: mine.copy()), ("torch", lambda: torch.tensor(mine))):
            x = make()
            comm.all_reduce(x, op=getattr(rc.RedOp, op))
            got = np.asarray(x).view(np.uint8)  # the bytes: 0 or 1, never 2
            out[f"{kind} {op}"] = got.tolist() == expected.astype(np.uint8).tolist()
    x = torch.tensor(mine)
    x = torch.tensor(np.tile(mine, n))
    scattered = torch.empty(1 << n, dtype=torch.bool)
    comm.reduce_scatter(x, scattered, op=rc.RedOp.SUM)
    got = scattered.numpy().view(np.uint8).tolist()
    out["reduce_scatter SUM"] = got == want["SUM"].astype(np.uint8).tolist()
    for op in ("AVG", "PREMUL_SUM"):
        try:
            comm.all_reduce(mine.copy(), op=getattr(rc.RedOp, op))
            out[f"{op} refused"] = "returned"
        except rc.InvalidArgumentError as e:
            out[f"{op} refused"] = "bool" in str(e) and "all_reduce" in str(e)
    # dtype= reads the bytes as uint8: a plain byte sum.
    x = np.ones(3, dtype=bool)
    comm.all_reduce(x, dtype=rc.DataType.UINT8)
    out["dtype=uint8 sums bytes"] = x.view(np.uint8).tolist() == [n] * 3
    comm.destroy()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_bool_reductions_are_logical(nranks):
    """As in PyTorch: over bool arrays SUM and MAX are a logical or, PROD and MIN a logical
    and; AVG and PREMUL_SUM are refused; the result is a valid bool array (bytes 0 or 1)."""
    for r in launch(_bool_rank, nranks, env=H.CHUNK_ENV, timeout=60):
        assert all(v is True for v in r.value.values()), (r.rank, r.value)

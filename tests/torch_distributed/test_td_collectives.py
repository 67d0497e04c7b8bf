"""Every c10d collective of the "rcclx" backend on CPU tensors, 2 and 3 real processes,
against a reference every rank computes from every rank's input: exact for integers, allclose
for floats. Synchronous and async_op=True calls both; counts 0, 1 and odd."""

import importlib.util

import checks
import pytest
import td_helpers as H

from launcher import launch

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)

COUNTS = (0, 1, 1003)
DTYPES = ("float32", "int32", "bfloat16", "int8", "float64")
FLOAT_OPS = ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "PREMUL_SUM")
INT_OPS = ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")


def _reductions(dist, torch, n, me, out):
    # A PREMUL_SUM op hands its factor to a Python backend only where torch exposes it (2.13
    # does, 2.8 does not: there the backend refuses the op, naming it).
    premul = hasattr(dist._make_nccl_premul_sum(0.5), "factor")
    for name in DTYPES:
        dtype = getattr(torch, name)
        ops = FLOAT_OPS if dtype.is_floating_point else INT_OPS
        if not premul:
            ops = tuple(op for op in ops if op != "PREMUL_SUM")
        for op in ops:
            for ci, count in enumerate(COUNTS):
                xs = [H.rank_input(r, count, dtype, tag=ci) for r in range(n)]
                factor = 0.5
                red = (
                    dist._make_nccl_premul_sum(factor)
                    if op == "PREMUL_SUM"
                    else getattr(dist.ReduceOp, op)
                )
                want = H.reduce_ref(xs, op, factor)
                t = xs[me].clone()
                if ci % 2:
                    dist.all_reduce(t, op=red)
                else:
                    dist.all_reduce(t, op=red, async_op=True).wait()
                H.collect(out, f"all_reduce {name} {op} {count}", t, want)
                if op in ("SUM", "MAX"):
                    root = count % n
                    t = xs[me].clone()
                    dist.reduce(t, dst=root, op=red)
                    if me == root:
                        H.collect(out, f"reduce {name} {op} {count}", t, want)
                    else:
                        out[f"reduce {name} {op} {count}"] = ("", None)
                    # reduce_scatter_tensor: block r of the input goes to rank r
                    ins = [H.rank_input(r, n * count, dtype, tag=7 + ci) for r in range(n)]
                    o = torch.empty(count, dtype=dtype)
                    H.reduce_scatter_tensor(dist)(o, ins[me].clone(), op=red)
                    block = H.reduce_ref(ins, op)[me * count : (me + 1) * count]
                    H.collect(out, f"reduce_scatter_tensor {name} {op} {count}", o, block)
                    o = torch.empty(count, dtype=dtype)
                    dist.reduce_scatter(o, list(ins[me].clone().view(n, count)), op=red)
                    H.collect(out, f"reduce_scatter {name} {op} {count}", o, block)


def _data_movement(dist, torch, n, me, out):
    for name in DTYPES:
        dtype = getattr(torch, name)
        for ci, count in enumerate(COUNTS):
            xs = [H.rank_input(r, count, dtype, tag=20 + ci) for r in range(n)]
            key = f"{name} {count}"
            # all_gather into a list and into one tensor
            lst = [torch.empty(count, dtype=dtype) for _ in range(n)]
            dist.all_gather(lst, xs[me])
            H.collect(out, f"all_gather {key}", torch.cat(lst), torch.cat(xs))
            flat = torch.empty(n * count, dtype=dtype)
            w = H.all_gather_tensor(dist)(flat, xs[me], async_op=True)
            w.wait()
            H.collect(out, f"all_gather_into_tensor {key}", flat, torch.cat(xs))
            # broadcast from every root
            for root in range(n):
                t = xs[me].clone()
                dist.broadcast(t, src=root)
                H.collect(out, f"broadcast root={root} {key}", t, xs[root])
            # gather / scatter to and from the last rank
            root = n - 1
            gl = [torch.empty(count, dtype=dtype) for _ in range(n)] if me == root else None
            dist.gather(xs[me], gl, dst=root)
            got = torch.cat(gl) if me == root else torch.cat(xs)
            H.collect(out, f"gather {key}", got, torch.cat(xs))
            blocks = [H.rank_input(100 + r, count, dtype, tag=ci) for r in range(n)]
            o = torch.empty(count, dtype=dtype)
            dist.scatter(o, blocks if me == root else None, src=root)
            H.collect(out, f"scatter {key}", o, blocks[me])
            # all_to_all with lists, all_to_all_single equal and with split sizes
            send = [H.rank_input(10 * me + p, count + p, dtype, tag=ci) for p in range(n)]
            recv = [torch.empty(count + me, dtype=dtype) for _ in range(n)]
            dist.all_to_all(recv, send)
            want = [H.rank_input(10 * p + me, count + me, dtype, tag=ci) for p in range(n)]
            H.collect(out, f"all_to_all {key}", torch.cat(recv), torch.cat(want))
            rows = [H.rank_input(10 * me + p, 2 * count, dtype, tag=ci) for p in range(n)]
            o = torch.empty(n * 2 * count, dtype=dtype)
            dist.all_to_all_single(o.view(n, -1), torch.stack(rows))
            want = [H.rank_input(10 * p + me, 2 * count, dtype, tag=ci) for p in range(n)]
            H.collect(out, f"all_to_all_single {key}", o, torch.cat(want))

            # splits: rank p sends (p + q + count % 2) rows of 3 to rank q
            def rows_of(p, q, count=count, dtype=dtype, ci=ci):
                return H.rank_input(50 + 10 * p + q, 3 * (p + q + count % 2), dtype, tag=ci)

            ins = torch.cat([rows_of(me, q) for q in range(n)]).view(-1, 3)
            in_splits = [me + q + count % 2 for q in range(n)]
            out_splits = [p + me + count % 2 for p in range(n)]
            o = torch.empty(sum(out_splits), 3, dtype=dtype)
            dist.all_to_all_single(o, ins, out_splits, in_splits, async_op=True).wait()
            want = torch.cat([rows_of(p, me) for p in range(n)]).view(-1, 3)
            H.collect(out, f"all_to_all_single splits {key}", o, want)


def _collectives_rank(ctx, port):
    import torch

    dist = H.init(ctx, port)
    n, me = dist.get_world_size(), dist.get_rank()
    out = {}
    assert dist.get_backend() == "rcclx"
    _reductions(dist, torch, n, me, out)
    _data_movement(dist, torch, n, me, out)
    # coalesced all_reduce (what the coalescing manager issues), several dtypes of one call
    ts = [H.rank_input(me, c, torch.float32, tag=c) for c in (5, 0, 17)]
    want = [
        H.reduce_ref([H.rank_input(r, c, torch.float32, tag=c) for r in range(n)], "SUM")
        for c in (5, 0, 17)
    ]
    with dist._coalescing_manager(async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
    H.collect(out, "all_reduce coalesced", torch.cat(ts), torch.cat(want))
    dist.barrier()
    dist.destroy_process_group()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_collectives(nranks):
    results = launch(_collectives_rank, nranks, checks.free_port(), timeout=120)
    checks.assert_cases(results)

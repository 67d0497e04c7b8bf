"""Every collective of the torchcomms surface on host tensors, through torchcomms'
``new_comm("rcclx")`` (the real torchcomms where installed, else the stand-in), 2 and 3 ranks:
synchronously (the Work complete on return), without looking at the Work, asynchronously
(wait()), and in place where torchcomms defines it; counts 0, 4 and 1024 (and 1M for the main
collectives); bool, uint8, int8, int32, int64, float16, bfloat16, float32 and float64; SUM,
MAX, MIN, AVG and PREMUL_SUM (a number, and with the stand-in a one-element tensor) where
torch.distributed's NCCL backend reduces that dtype; the list forms with tensors apart and with
tensors that are views of one buffer. Outputs start poisoned, so unwritten elements show.
"""

from __future__ import annotations

import checks
import pytest
import tc_helpers as H

from launcher import launch

torch = pytest.importorskip("torch")

MODES = ("sync", "nowork", "async")


def _finish(mode, work) -> str | None:
    """What a mode checks of the Work, and waiting for it."""
    if mode == "sync" and not work.is_completed():
        return "a synchronous call's Work is not complete on return"
    if mode == "async":
        work.wait()
        if not work.is_completed():
            return "is_completed() is False after wait()"
    return None


def _record(out, key, mode, work, got, want, op="SUM", same=True):
    """out[key] = (digest of got, or "" where ranks' outputs differ; what was wrong). `got`
    may be a function, called once the Work was waited for (a list's tensors joined)."""
    waited = _finish(mode, work)
    got = got() if callable(got) else got
    problem = checks.join_problems(waited, H.compare(got, want, op))
    out[key] = (checks.digest(got) if same else "", problem)


def _poisoned(count, dtype):
    return checks.poison(torch.empty(count, dtype=dtype))


def _reductions_rank(ctx):
    comm = H.comm_of(ctx, "reductions")
    n, me = comm.get_size(), comm.get_rank()
    out = {}
    for dtype in H.DTYPES:
        for op in H.OPS:
            if not H.reducible(dtype, op):
                continue
            for count in H.COUNTS:
                inputs = [H.make(p, count, dtype) for p in range(n)]
                want = H.reference(inputs, op)
                for mode in MODES:
                    key = f"{H.name_of(dtype)} {op} count={count} {mode}"
                    rop = H.op_of(op, tensor_factor=(mode == "async"))
                    t = inputs[me].clone()
                    w = comm.all_reduce(t, rop, async_op=(mode == "async"))
                    _record(out, f"all_reduce {key}", mode, w, t, want, op)
                    # reduce: in place on the root, the other ranks' tensors unchanged.
                    root = n - 1
                    t = inputs[me].clone()
                    w = comm.reduce(t, root, rop, async_op=(mode == "async"))
                    expect = want if me == root else inputs[me]
                    _record(out, f"reduce {key}", mode, w, t, expect, op, same=False)
                    # reduce_scatter_single, out of place and in place (output = input's block).
                    big = [H.make(p, n * count, dtype, salt=1) for p in range(n)]
                    want_rs = H.reference(big, op)[me * count : (me + 1) * count]
                    o = _poisoned(count, dtype)
                    w = comm.reduce_scatter_single(o, big[me].clone(), rop, mode == "async")
                    _record(
                        out, f"reduce_scatter_single {key}", mode, w, o, want_rs, op, same=False
                    )
                    buf = big[me].clone()
                    o = buf[me * count : (me + 1) * count]
                    w = comm.reduce_scatter_single(o, buf, rop, mode == "async")
                    _record(
                        out,
                        f"reduce_scatter_single in place {key}",
                        mode,
                        w,
                        o,
                        want_rs,
                        op,
                        same=False,
                    )
                    # reduce_scatter: list input, apart (cat) or views of one buffer.
                    pieces = list(big[me].clone().split(count)) if count else None
                    apart = [x.clone() for x in big[me].split(count)] if count else None
                    for form, lst in (("views", pieces), ("apart", apart)):
                        if lst is None:
                            lst = [torch.empty(0, dtype=dtype) for _ in range(n)]
                        o = _poisoned(count, dtype)
                        w = comm.reduce_scatter(o, lst, rop, mode == "async")
                        _record(
                            out, f"reduce_scatter {form} {key}", mode, w, o, want_rs, op, same=False
                        )
                    # reduce_scatter_v: rank r's block has count + r elements.
                    sizes = [count + r for r in range(n)]
                    vin = [H.make(p, sum(sizes), dtype, salt=2) for p in range(n)]
                    lo = sum(sizes[:me])
                    want_v = H.reference(vin, op)[lo : lo + sizes[me]]
                    o = _poisoned(sizes[me], dtype)
                    w = comm.reduce_scatter_v(
                        o, [x.clone() for x in vin[me].split(sizes)], rop, mode == "async"
                    )
                    _record(out, f"reduce_scatter_v {key}", mode, w, o, want_v, op, same=False)
    comm.finalize()
    return out


def _movement_rank(ctx):
    comm = H.comm_of(ctx, "movement")
    n, me = comm.get_size(), comm.get_rank()
    out = {}
    for dtype in H.DTYPES:
        for count in H.COUNTS:
            ins = [H.make(p, count, dtype) for p in range(n)]
            gathered = torch.cat(ins)
            for mode in MODES:
                a = mode == "async"
                key = f"{H.name_of(dtype)} count={count} {mode}"

                def case(name, work, got, want, same=True, key=key, mode=mode):
                    _record(out, f"{name} {key}", mode, work, got, want, same=same)

                root = 1 % n
                t = ins[me].clone() if me == root else _poisoned(count, dtype)
                case("broadcast", comm.broadcast(t, root, a), t, ins[root])

                o = _poisoned(n * count, dtype)
                case("all_gather_single", comm.all_gather_single(o, ins[me], a), o, gathered)
                o = _poisoned(n * count, dtype)
                o[me * count : (me + 1) * count] = ins[me]
                w = comm.all_gather_single(o, o[me * count : (me + 1) * count], a)
                case("all_gather_single in place", w, o, gathered)

                for form in ("views", "apart"):
                    o = _poisoned(n * count, dtype)
                    lst = (
                        list(o.split(count))
                        if form == "views" and count
                        else [_poisoned(count, dtype) for _ in range(n)]
                    )
                    w = comm.all_gather(lst, ins[me], a)
                    case(f"all_gather {form}", w, lambda lst=lst: torch.cat(lst), gathered)

                sizes = [count + r for r in range(n)]
                vins = [H.make(p, sizes[p], dtype) for p in range(n)]
                lst = [_poisoned(s, dtype) for s in sizes]
                w = comm.all_gather_v(lst, vins[me], a)
                case("all_gather_v", w, lambda lst=lst: torch.cat(lst), torch.cat(vins))

                # all_to_all_single: block p of rank q's input lands in rank p's block q.
                a2a_in = [H.make(p, n * count, dtype, salt=3) for p in range(n)]
                want = torch.cat([x[me * count : (me + 1) * count] for x in a2a_in])
                o = _poisoned(n * count, dtype)
                w = comm.all_to_all_single(o, a2a_in[me], a)
                case("all_to_all_single", w, o, want, same=False)

                # all_to_all with uneven blocks: rank q sends count + q + p elements to rank p.
                def block(q, p, count=count, dtype=dtype):
                    return H.make(q * n + p, count + q + p, dtype, salt=4)

                outs = [_poisoned(count + q + me, dtype) for q in range(n)]
                w = comm.all_to_all(outs, [block(me, p) for p in range(n)], a)
                want = torch.cat([block(q, me) for q in range(n)])
                case("all_to_all", w, lambda outs=outs: torch.cat(outs), want, same=False)

                # all_to_all_v_single on 2-D rows: rank q sends (q + p) % 3 rows to rank p.
                cols = 3

                def rows(q, p, count=count):
                    return (q + p) % 3 + (count > 0)

                def rows_of(q, p, cols=cols, dtype=dtype):
                    return H.make(q * n + p, rows(q, p) * cols, dtype, salt=5).view(-1, cols)

                send = torch.cat([rows_of(me, p) for p in range(n)])
                recv_rows = [rows(q, me) for q in range(n)]
                o = checks.poison(torch.empty(sum(recv_rows), cols, dtype=dtype))
                w = comm.all_to_all_v_single(o, send, recv_rows, [rows(me, p) for p in range(n)], a)
                want = torch.cat([rows_of(q, me) for q in range(n)])
                case("all_to_all_v_single", w, o, want, same=False)

                # gather / gather_single on the last rank; scatter from rank 0.
                root = n - 1
                lst = [_poisoned(count, dtype) for _ in range(n)] if me == root else []
                w = comm.gather(lst, ins[me], root, a)
                got = (lambda lst=lst: torch.cat(lst)) if me == root else gathered
                case("gather", w, got, gathered)
                o = _poisoned(n * count, dtype)
                w = comm.gather_single(o, ins[me], root, a)
                case("gather_single", w, o if me == root else gathered, gathered)
                o = _poisoned(count, dtype)
                lst = [x.clone() for x in ins] if me == 0 else []
                w = comm.scatter(o, lst, 0, a)
                case("scatter", w, o, ins[me], same=False)
        w = comm.barrier(async_op=True)
        w.wait()
        out[f"barrier {H.name_of(dtype)}"] = ("", None if w.is_completed() else "not complete")
    comm.finalize()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_reductions(nranks):
    checks.assert_cases(launch(_reductions_rank, nranks, timeout=120))


@pytest.mark.parametrize("nranks", [2, 3])
def test_data_movement(nranks):
    checks.assert_cases(launch(_movement_rank, nranks, timeout=120))


def _large_rank(ctx):
    comm = H.comm_of(ctx, "large")
    n, me = comm.get_size(), comm.get_rank()
    count = 1 << 20
    out = {}
    ins = [H.make(p, count, torch.float32, salt=2) for p in range(n)]
    for a in (False, True):
        t = ins[me].clone()
        comm.all_reduce(t, H.op_of("SUM"), a).wait()
        out[f"all_reduce 1M async={a}"] = (checks.digest(t), H.compare(t, H.reference(ins, "SUM")))
        o = _poisoned(n * count, torch.float32)
        comm.all_gather_single(o, ins[me], a).wait()
        out[f"all_gather_single 1M async={a}"] = (checks.digest(o), H.compare(o, torch.cat(ins)))
        r = _poisoned(count // n, torch.float32)
        block = slice(me * (count // n), (me + 1) * (count // n))
        comm.reduce_scatter_single(r, ins[me][: n * (count // n)], H.op_of("SUM"), a).wait()
        want = H.reference([x[: n * (count // n)] for x in ins], "SUM")[block]
        out[f"reduce_scatter_single 1M async={a}"] = ("", H.compare(r, want))
        o = _poisoned(n * (count // n), torch.float32)
        comm.all_to_all_single(o, ins[me][: n * (count // n)], a).wait()
        want = torch.cat([x[: n * (count // n)].view(n, -1)[me] for x in ins])
        out[f"all_to_all_single 1M async={a}"] = ("", H.compare(o, want))
    comm.finalize()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_large_count(nranks):
    checks.assert_cases(launch(_large_rank, nranks, timeout=120))


def _hints_rank(ctx):
    comm = H.backend_of(ctx, "hints")  # torchcomms' Python-backend interface drops hints=
    n, me = comm.get_size(), comm.get_rank()
    out = {}
    inputs = [H.make(p, 4096, torch.float32) for p in range(n)]
    want = H.reference(inputs, "SUM")
    calls = [{"algo": a} for a in ("ring", "dda_flat", "dda_tree")]
    calls += [{"RCCLX_ALLREDUCE_ALGO": "ring"}, {"low_precision": "0"}, {"low_precision": "1"}]
    for hints in calls:
        for a in (False, True):
            t = inputs[me].clone()
            work = comm.all_reduce(t, H.op_of("SUM"), a, hints=hints)
            if work is not None:
                work.wait()
            # Small integers are exact in FP8 with a per-block scale, so even low precision is.
            out[f"all_reduce hints={hints} async={a}"] = (checks.digest(t), H.compare(t, want))
    o = _poisoned(n * 4096, torch.float32)
    comm.all_gather_single(o, inputs[me], False, hints={"low_precision": "1"})
    out["all_gather_single low_precision"] = (checks.digest(o), H.compare(o, torch.cat(inputs)))
    comm.finalize()
    return out


def test_per_call_hints():
    checks.assert_cases(launch(_hints_rank, 2))


def _grad_rank(ctx):
    comm = H.comm_of(ctx, "grad")
    n, me = comm.get_size(), comm.get_rank()
    out = {}
    leaf = torch.full((4,), float(me + 1), requires_grad=True)
    with torch.no_grad():
        comm.all_reduce(leaf, H.op_of("SUM"), False)  # a parameter, reduced in place
    out["all_reduce of a leaf that requires grad"] = (
        "",
        H.compare(leaf.detach(), torch.full((4,), float(n * (n + 1) // 2))),
    )
    y = torch.full((4,), float(me), requires_grad=True) * 2  # part of a graph
    gathered = _poisoned(n * 4, torch.float32)
    comm.all_gather_single(gathered, y, False)
    want = torch.cat([torch.full((4,), 2.0 * r) for r in range(n)])
    out["all_gather_single of a tensor in a graph"] = ("", H.compare(gathered, want))
    comm.finalize()
    return out


def test_tensors_that_require_grad():
    """Tensors that require grad are moved as data (autograd does not see the collective), as
    with torch.distributed's backends."""
    checks.assert_cases(launch(_grad_rank, 2))


def _dropped_inputs_rank(ctx):
    """async_op=True calls whose inputs the caller drops before wait(): the call keeps them
    alive until it completes (torchcomms' tests do the same)."""
    import gc

    comm = H.comm_of(ctx, "dropped")
    n, me = comm.get_size(), comm.get_rank()
    ins = [H.make(p, 4096, torch.float32, salt=6) for p in range(n)]
    out = {}
    gathered = _poisoned(n * 4096, torch.float32)
    x = ins[me].clone()
    w_gather = comm.all_gather_single(gathered, x, True)
    scattered = _poisoned(4096 // n, torch.float32)
    y = torch.cat([x[: (4096 // n) * n]])
    w_rs = comm.reduce_scatter_single(scattered, y, H.op_of("SUM"), True)
    z = ins[me].clone()
    w_reduce = comm.all_reduce(z, H.op_of("SUM"), True)
    del x, y, z
    gc.collect()
    for w in (w_gather, w_rs, w_reduce):
        w.wait()
    out["all_gather_single, input dropped"] = ("", H.compare(gathered, torch.cat(ins)))
    block = slice(me * (4096 // n), (me + 1) * (4096 // n))
    want = H.reference([i[: (4096 // n) * n] for i in ins], "SUM")[block]
    out["reduce_scatter_single, input dropped"] = ("", H.compare(scattered, want))
    comm.finalize()
    return out


def test_async_calls_whose_inputs_were_dropped():
    checks.assert_cases(launch(_dropped_inputs_rank, 2), same_on_all_ranks=False)


def _several_comms_rank(ctx):
    """Three communicators alive at once, their async calls interleaved, each with its own
    result."""
    comms = [H.comm_of(ctx, f"live{k}") for k in range(3)]
    n, me = ctx.nranks, ctx.rank
    out = {}
    tensors = [torch.full((1000,), float((me + 1) * (k + 1))) for k in range(3)]
    works = [c.all_reduce(t, H.op_of("SUM"), True) for c, t in zip(comms, tensors)]
    for w in reversed(works):
        w.wait()
    for k, t in enumerate(tensors):
        want = torch.full((1000,), float((k + 1) * n * (n + 1) // 2))
        out[f"communicator {k}"] = ("", H.compare(t, want))
    for c in comms:
        c.finalize()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_several_live_communicators(nranks):
    checks.assert_cases(launch(_several_comms_rank, nranks))

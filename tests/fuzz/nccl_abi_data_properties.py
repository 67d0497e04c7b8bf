"""The fuzzing properties of libnccl.so.2's data-moving entries (test_fuzz_nccl_abi.py runs
them): the collectives, ncclAllToAllv and ncclAllToAllvDynamic, with random buffers, counts,
datatypes, operators, roots and split arrays. Importing this module registers them."""

from __future__ import annotations

import ctypes

import fuzz_cases
from hypothesis import given
from hypothesis import strategies as st
from nccl_abi_ctypes import (
    CAPACITY,
    INT,
    INT32,
    INVALID_ARGUMENT,
    INVALID_USAGE,
    NUM_OPS,
    NUM_TYPES,
    SIZE,
    SUCCESS,
    World,
    comms,
    datatypes,
    prop,
    roots,
)

# The collectives and their arguments, in nccl.h's order: (name, kind). Kinds: "send" / "recv"
# buffers, "count", "type", "op", "root" / "peer", "comm", "stream".
COLLECTIVES = {
    "ncclAllReduce": ("send", "recv", "count", "type", "op", "comm", "stream"),
    "ncclReduce": ("send", "recv", "count", "type", "op", "root", "comm", "stream"),
    "ncclBroadcast": ("send", "recv", "count", "type", "root", "comm", "stream"),
    "ncclBcast": ("buff", "count", "type", "root", "comm", "stream"),
    "ncclReduceScatter": ("send", "recv", "recvcount", "type", "op", "comm", "stream"),
    "ncclAllGather": ("send", "recv", "sendcount", "type", "comm", "stream"),
    "ncclAlltoAll": ("send", "recv", "count", "type", "comm", "stream"),
    "ncclGather": ("send", "recv", "count", "type", "root", "comm", "stream"),
    "ncclScatter": ("send", "recv", "count", "type", "root", "comm", "stream"),
    "ncclSend": ("send", "count", "type", "peer", "comm", "stream"),
    "ncclRecv": ("recv", "count", "type", "peer", "comm", "stream"),
}
BUFFER_NAMES = {"send": "sendbuff", "recv": "recvbuff", "buff": "buff"}
COUNT_NAMES = {"count", "recvcount", "sendcount"}


class Ops:
    """PreMulSum handles made on the world's communicator: live ones by datatype, and the
    values of destroyed ones (destroyed handles are invalid operators)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.live: dict[int, int] = {}
        self.dead: set[int] = set()

    def handle(self, datatype: int) -> int:
        if datatype not in self.live:
            op = INT()
            scalar = ctypes.create_string_buffer(8)
            self.world.abi.call(
                "ncclRedOpCreatePreMulSum",
                ctypes.byref(op),
                scalar,
                datatype,
                1,
                self.world.comm,
            )
            self.live[datatype] = op.value
        return self.live[datatype]

    def destroyed(self) -> int:
        op = self.handle(0)
        self.world.abi.call("ncclRedOpDestroy", op, self.world.comm)
        del self.live[0]
        self.dead.add(op)
        return op


@st.composite
def operators(draw, ops: Ops, datatype: int, bad: dict):
    kind = draw(
        st.sampled_from(["builtin"] * 6 + ["premul"] * 2 + ["premul-other", "dead", "random"])
    )
    valid_type = 0 <= datatype < NUM_TYPES
    if kind == "builtin":
        return draw(st.integers(0, NUM_OPS - 1))
    if kind == "premul" and valid_type:
        return ops.handle(datatype)
    bad["op"] = {INVALID_ARGUMENT}
    if kind == "premul-other" and valid_type:
        return ops.handle((datatype + 1 + draw(st.integers(0, NUM_TYPES - 2))) % NUM_TYPES)
    if kind == "dead":
        return ops.destroyed()
    live = set(ops.live.values())
    return draw(INT32.filter(lambda v: not 0 <= v < NUM_OPS and v not in live))


@prop
def collectives(world: World):
    abi = world.abi
    ops = Ops(world)
    send = ctypes.create_string_buffer(8 * CAPACITY)
    recv = ctypes.create_string_buffer(8 * CAPACITY)

    @fuzz_cases.settings(4 * fuzz_cases.EXAMPLES)
    @given(st.data())
    def check(data):
        bad = {}
        entry = data.draw(st.sampled_from(sorted(COLLECTIVES)))
        kinds = COLLECTIVES[entry]
        datatype = data.draw(datatypes(bad))
        # Counts: within the buffers' capacity, or more elements than an address space holds.
        huge = data.draw(st.integers(0, 7)) == 0
        count = data.draw(st.integers(2**63, 2**64 - 1) if huge else st.integers(0, CAPACITY))
        count_name = next(k for k in kinds if k in COUNT_NAMES)
        if count > CAPACITY:
            bad[count_name] = {INVALID_ARGUMENT}
        args = []
        for kind in kinds:
            if kind in BUFFER_NAMES:
                choice = data.draw(st.sampled_from(["own"] * 4 + ["shared", "null"]))
                if choice == "null":
                    if count > 0:
                        bad[BUFFER_NAMES[kind]] = {INVALID_ARGUMENT}
                    args.append(None)
                else:
                    args.append(send if choice == "shared" or kind != "recv" else recv)
            elif kind in COUNT_NAMES:
                args.append(count)
            elif kind == "type":
                args.append(datatype)
            elif kind == "op":
                args.append(data.draw(operators(ops, datatype, bad)))
            elif kind in ("root", "peer"):
                args.append(data.draw(roots(bad, kind)))
            elif kind == "comm":
                args.append(data.draw(comms(world, bad)))
            elif kind == "stream":
                stream = None if data.draw(st.integers(0, 7)) else data.draw(st.integers(1, 2**48))
                if stream is not None:
                    # A stream with host buffers, or (no buffers to place) on a communicator
                    # without a GPU: InvalidArgument or InvalidUsage.
                    bad["stream"] = {INVALID_ARGUMENT, INVALID_USAGE}
                args.append(stream)
        if entry not in ("ncclSend", "ncclRecv"):
            abi.call(entry, *args, bad=bad)
            return
        # A send to itself needs its receive in the same group (unmatched, it stays pending and
        # fails a later call when it times out): an accepted one gets its counterpart. A rejected
        # one fails the group: ncclGroupEnd returns its error and runs nothing.
        abi.call("ncclGroupStart")
        accepted = abi.call(entry, *args, bad=bad) == SUCCESS
        if accepted:
            counterpart = "ncclRecv" if entry == "ncclSend" else "ncclSend"
            abi.call(counterpart, recv if entry == "ncclSend" else send, *args[1:5], None)
        abi.call("ncclGroupEnd", bad={} if accepted else bad)

    check()


def _sizes(values):
    return (SIZE * len(values))(*values)


def _int64s(values):
    return (ctypes.c_int64 * len(values))(*values)


@prop
def alltoallv(world: World):
    abi = world.abi
    send = ctypes.create_string_buffer(8 * CAPACITY)
    recv = ctypes.create_string_buffer(8 * CAPACITY)

    @fuzz_cases.settings(2 * fuzz_cases.EXAMPLES)
    @given(st.data())
    def check(data):
        bad = {}
        datatype = data.draw(datatypes(bad))
        comm = data.draw(comms(world, bad))
        # One block per rank: within the buffers, or extents that overflow size_t.
        within = st.integers(0, CAPACITY // 2)
        huge = st.integers(2**63, 2**64 - 1)
        arrays = {}
        for name in ("sendcounts", "sdispls", "recvcounts", "rdispls"):
            choice = data.draw(st.sampled_from(["small"] * 10 + ["huge", "null"]))
            if choice == "null":
                bad[name] = {INVALID_ARGUMENT}
                arrays[name] = None
            else:
                arrays[name] = _sizes([data.draw(within if choice == "small" else huge)])
        sc, rc = arrays["sendcounts"], arrays["recvcounts"]
        if sc is not None and rc is not None and data.draw(st.integers(0, 7)):
            rc[0] = sc[0]  # what a rank sends itself it receives: mostly consistent
        for counts, displs in (("sendcounts", "sdispls"), ("recvcounts", "rdispls")):
            c, d = arrays[counts], arrays[displs]
            if c is not None and d is not None and c[0] > 0 and c[0] + d[0] >= 2**63:
                # A block ending past any address space (an empty block points at nothing).
                bad[counts] = bad[displs] = {INVALID_ARGUMENT}
        if sc is not None and rc is not None and sc[0] != rc[0]:
            # One rank sends its block to itself: the two counts must agree.
            bad["sendcounts"] = bad["recvcounts"] = {INVALID_ARGUMENT}
        total = {
            side: arrays[f"{side}counts"][0] if arrays[f"{side}counts"] is not None else 0
            for side in ("send", "recv")
        }
        buffers = {}
        for side, buf, name in (("send", send, "sendbuff"), ("recv", recv, "recvbuff")):
            if data.draw(st.integers(0, 7)) == 0:
                buffers[side] = None
                if total[side] > 0:
                    bad[name] = {INVALID_ARGUMENT}
            else:
                buffers[side] = buf
        abi.call(
            "ncclAllToAllv",
            buffers["send"],
            arrays["sendcounts"],
            arrays["sdispls"],
            buffers["recv"],
            arrays["recvcounts"],
            arrays["rdispls"],
            datatype,
            comm,
            None,
            bad=bad,
        )

    check()


@prop
def alltoallv_dynamic(world: World):
    abi = world.abi
    send = ctypes.create_string_buffer(8 * CAPACITY)
    recv = ctypes.create_string_buffer(8 * CAPACITY)

    @fuzz_cases.settings(2 * fuzz_cases.EXAMPLES)
    @given(st.data())
    def check(data):
        bad = {}
        datatype = data.draw(datatypes(bad))
        comm = data.draw(comms(world, bad))
        row_elems = data.draw(st.one_of(st.integers(1, 4), st.just(0), st.integers(2**33, 2**40)))
        if row_elems == 0:
            bad["rowElems"] = {INVALID_ARGUMENT}
        rows = {}
        for side in ("send", "recv"):
            r = data.draw(st.one_of(st.integers(0, CAPACITY // 4), st.integers(2**33, 2**64 - 1)))
            rows[side] = r
            if r * row_elems > CAPACITY:
                # More elements than fit in an address space (the buffers are smaller still).
                if r * row_elems >= 2**63:
                    bad[f"{side}Rows"] = bad["rowElems"] = {INVALID_ARGUMENT}
                else:
                    rows[side] = CAPACITY // max(row_elems, 1)
                    if row_elems > CAPACITY:
                        rows[side] = 0
        splits = {}
        for name in ("sendSplits", "recvSplits", "sendOffsets", "recvOffsets"):
            choice = data.draw(st.sampled_from(["fits"] * 6 + ["random", "null"]))
            if choice == "null":
                if name in ("sendSplits", "recvSplits"):
                    bad[name] = {INVALID_ARGUMENT}
                splits[name] = None
                continue
            # Mostly rows the buffers hold (recvSplits / recvOffsets are outputs: any value).
            fits = st.integers(0, min(rows["send"], rows["recv"]) // 2)
            value = data.draw(fits if choice == "fits" else st.integers(-(2**63), 2**63 - 1))
            splits[name] = _int64s([value])
        send_rows = splits["sendSplits"][0] if splits["sendSplits"] is not None else 0
        offset = splits["sendOffsets"][0] if splits["sendOffsets"] is not None else 0
        if splits["sendSplits"] is not None and not (
            0 <= send_rows and 0 <= offset and offset + send_rows <= rows["send"]
        ):
            # The split sizes are data, read where the buffers live (by the core, on the GPU
            # in device code): named as the core names them, input_split_sizes / input_offsets.
            for alias in ("input_split_sizes", "input_offsets"):
                bad.setdefault(alias, {INVALID_ARGUMENT})
        elif splits["sendSplits"] is not None and send_rows > rows["recv"]:
            bad.setdefault("output", {INVALID_ARGUMENT})  # the core's "output overflow"
        # The known-counts form reads recvSplits: on one rank it must equal what the rank sends
        # itself, else the error names output_split_sizes (the core's name) with both numbers.
        entry = data.draw(
            st.sampled_from(["ncclAllToAllvDynamic", "ncclAllToAllvDynamicKnownCounts"])
        )
        if entry.endswith("KnownCounts") and splits["recvSplits"] is not None:
            if splits["recvSplits"][0] != send_rows or splits["recvSplits"][0] > rows["recv"]:
                bad.setdefault("output_split_sizes", {INVALID_ARGUMENT})
        buffers = {}
        for side, buf, name in (("send", send, "sendbuff"), ("recv", recv, "recvbuff")):
            if data.draw(st.integers(0, 7)) == 0:
                buffers[side] = None
                if rows[side] * row_elems > 0:
                    bad[name] = {INVALID_ARGUMENT}
            else:
                buffers[side] = buf
        abi.call(
            entry,
            buffers["send"],
            rows["send"],
            splits["sendSplits"],
            splits["sendOffsets"],
            buffers["recv"],
            rows["recv"],
            splits["recvSplits"],
            splits["recvOffsets"],
            row_elems,
            datatype,
            comm,
            None,
            bad=bad,
        )

    check()

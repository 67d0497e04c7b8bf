"""Property-based fuzzing of libnccl.so.2's C ABI, called through ctypes.

Property: every nccl* entry, called with random arguments (NULL pointers, garbage handles,
out-of-range ranks, roots, peers, datatypes and operators, random counts and ncclConfig_t
structs of random size, magic and version), returns a valid ncclResult_t (0..7, never
ncclNumResults). A call whose arguments are all valid succeeds; a call with invalid ones returns
the typed code of one of them and leaves in ncclGetLastError "<entry>: <message>" where the
message names that argument, as a word, as nccl.h spells it ("datatype", "root", "sendbuff",
"comm", "config->magic", ...); only the split sizes of ncclAllToAllvDynamic, which are data the
core reads, are named by the core's names for them.

Each property runs in its own interpreter (this file run as a script), with a bounded
RCCLX_TIMEOUT_MS so a garbage unique id cannot keep a call waiting: a crash of the library
kills that child, not pytest, and the test fails with the example the child recorded just
before the call. Communicators are 1-rank host-memory ones (RCCLX_NCCL_HOST_ONLY=1).

Not fuzzed, because the ABI leaves them undefined (NCCL crashes too): communicators and buffers
at unmapped addresses, buffers shorter than the counts given, arrays shorter than the
communicator's size. (Registration and window handles are looked up before they are read, so
unmapped and already deregistered ones are fuzzed.)

RCCLX_FUZZ_EXAMPLES=N raises the number of examples per property (see fuzz_cases).
"""

from __future__ import annotations

import ctypes
import struct
import subprocess
import sys

import pytest

pytest.importorskip("hypothesis")

import fuzz_cases  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# Each property's child: an interpreter start, the library load, then its examples.
CHILD_TIMEOUT = 60 + 2 * fuzz_cases.EXAMPLES
pytestmark = pytest.mark.timeout(CHILD_TIMEOUT + 30)

from nccl_abi_ctypes import (  # noqa: E402
    API_MAGIC,
    CONFIG_BLOCKING,
    CONFIG_BYTES,
    CONFIG_COMM_NAME,
    CONFIG_UNDEF_INT,
    IN_PROGRESS,
    INT,
    INT32,
    INVALID_ARGUMENT,
    INVALID_USAGE,
    NUM_OPS,
    PROPERTIES,
    SIM_INFO_MAGIC,
    SUCCESS,
    VERSION_CODE,
    Abi,
    P,
    UniqueId,
    World,
    _child_environment,
    comms,
    datatypes,
    out_pointer,
    prop,
)

# ---- The child's properties ---------------------------------------------------------------------


@prop
def library(world: World):
    abi = world.abi

    @fuzz_cases.settings()
    @given(st.data())
    def check(data):
        bad = {}
        entry = data.draw(st.sampled_from(["version", "unique_id", "strings", "mem", "free"]))
        if entry == "version":
            out = data.draw(out_pointer(bad, "version"))
            abi.call("ncclGetVersion", out, bad=bad)
        elif entry == "unique_id":
            out = data.draw(out_pointer(bad, "uniqueId", UniqueId))
            abi.call("ncclGetUniqueId", out, bad=bad)
        elif entry == "strings":
            text = abi.lib.ncclGetErrorString(data.draw(INT32))
            assert text, "ncclGetErrorString returned NULL or an empty string"
            comm = data.draw(st.sampled_from([None, world.comm]))
            assert abi.lib.ncclGetLastError(comm) is not None
            abi.lib.ncclResetDebugInit()
        elif entry == "mem":
            size = data.draw(st.one_of(st.integers(0, 1 << 20), st.integers(2**62, 2**64 - 1)))
            ptr = P()
            out = data.draw(st.sampled_from([ctypes.byref(ptr), None]))
            if out is None:
                bad["ptr"] = {INVALID_ARGUMENT}
            if size == 0:
                bad["size"] = {INVALID_ARGUMENT}
            elif size >= 2**62:
                # More than any machine has: typed as out of memory, naming the size.
                bad["size"] = {INVALID_ARGUMENT, 2}
            rc = abi.call("ncclMemAlloc", out, size, bad=bad)
            if rc == SUCCESS:
                assert ptr.value is not None and ptr.value % 4096 == 0
                ctypes.memset(ptr, 0xA5, size)  # the memory is really there
                abi.call("ncclMemFree", ptr)
                # Freed: no longer ncclMemAlloc's.
                abi.call("ncclMemFree", ptr, bad={"ptr": {INVALID_ARGUMENT}})
        else:
            kind = data.draw(st.sampled_from(["null", "foreign", "offset"]))
            if kind == "null":  # NULL is accepted, as by free()
                abi.call("ncclMemFree", None)
                return
            ptr = P()
            abi.call("ncclMemAlloc", ctypes.byref(ptr), 4096)
            target = ptr.value + 8 if kind == "offset" else ctypes.addressof(world.foreign)
            abi.call("ncclMemFree", P(target), bad={"ptr": {INVALID_ARGUMENT}})
            abi.call("ncclMemFree", ptr)

    check()


def garbage_ids():
    """128 bytes that are not a live unique id: random, RCCLX's id magic ("RCCLXID1") followed
    by a port of 0, an empty host or a host with no terminating NUL, or an NCCL_COMM_ID id whose
    address has no port (none of them names a reachable address, so nothing is contacted)."""
    magic = b"RCCLXID1"
    random_bytes = st.binary(min_size=128, max_size=128).filter(
        lambda b: not b.startswith((magic, b"RCCLXENV"))
    )
    zero_port = st.binary(min_size=116, max_size=116).map(lambda b: magic + b"\0" * 4 + b)
    no_host = st.tuples(st.integers(1, 65535), st.binary(min_size=108, max_size=108)).map(
        lambda t: magic + t[0].to_bytes(4, "little") + b"\0\0\0\0" + b"\0" + t[1][:107]
    )
    unterminated = st.tuples(st.integers(1, 65535), st.binary(min_size=112, max_size=112)).map(
        lambda t: magic + t[0].to_bytes(4, "little") + b"\1\2\3\4" + bytes(c | 1 for c in t[1])
    )
    # An id made from NCCL_COMM_ID ("RCCLXENV" then "host:port"), with an address that has no
    # port (no ':'): one with a port would be dialled, and on rank 0 served.
    env_magic = b"RCCLXENV"
    env_no_port = st.binary(min_size=120, max_size=120).map(
        lambda b: env_magic + b.replace(b":", b"_")
    )
    return st.one_of(random_bytes, zero_port, no_host, unterminated, env_no_port)


@st.composite
def configs(draw, bad: dict):
    """NULL, or an ncclConfig_t of a random size, magic, version and blocking field; the buffer
    holds at least the 112 bytes of NCCL 2.31's struct and the size field claims what it
    claims (larger sizes model newer NCCL versions)."""
    if draw(st.integers(0, 4)) == 0:
        return None
    if draw(st.integers(0, 3)):
        size = draw(st.sampled_from([40, 48, 56, 72, 80, 96, 112, 4096]))
    else:
        size = draw(st.one_of(st.integers(0, 200), st.integers(4097, 2**64 - 1)))
    magic = API_MAGIC if draw(st.integers(0, 7)) else draw(st.integers(0, 2**32 - 1))
    version = VERSION_CODE if draw(st.integers(0, 7)) else draw(st.integers(0, 2**32 - 1))
    blocking = draw(st.sampled_from([CONFIG_UNDEF_INT, 1, 1, 0, None]))
    if blocking is None:
        blocking = draw(INT32)
    raw = bytearray(draw(st.binary(min_size=CONFIG_BYTES, max_size=CONFIG_BYTES)))
    struct.pack_into("<QIIi", raw, 0, size, magic, version, blocking)
    # netName NULL; commName NULL or a real string (the reader keeps it).
    name = draw(st.sampled_from([None, b"fuzz-comm"]))
    name_buf = ctypes.create_string_buffer(name) if name else None
    struct.pack_into("<Q", raw, 32, 0)
    struct.pack_into("<Q", raw, CONFIG_COMM_NAME, ctypes.addressof(name_buf) if name_buf else 0)
    buf = ctypes.create_string_buffer(bytes(raw), max(CONFIG_BYTES, min(size, 8192)))
    buf._name = name_buf  # kept alive with the struct
    if magic != API_MAGIC or not 40 <= size <= 4096 or version < 21400:
        bad["config"] = {INVALID_ARGUMENT}
    elif size >= CONFIG_BLOCKING + 4 and blocking not in (CONFIG_UNDEF_INT, 0, 1):
        bad["config"] = {INVALID_ARGUMENT}
    buf._blocking = blocking == 0 and size >= CONFIG_BLOCKING + 4
    return buf


def _settle(abi: Abi, comm: P, rc: int) -> None:
    """Waits for a non-blocking initialisation (rc ncclInProgress) and destroys the new comm."""
    if rc == IN_PROGRESS:
        state = INT(IN_PROGRESS)
        while state.value == IN_PROGRESS:
            abi.call("ncclCommGetAsyncError", comm, ctypes.byref(state))
        assert state.value == SUCCESS, abi.last_error()
    if comm.value is not None:
        abi.call("ncclCommDestroy", comm)


@prop
def init(world: World):
    abi = world.abi

    @fuzz_cases.settings()
    @given(st.data())
    def check(data):
        bad = {}
        entry = data.draw(
            st.sampled_from(["ncclCommInitRank", "ncclCommInitRankConfig", "scalable", "all"])
        )
        comm = P()
        out = data.draw(out_pointer(bad, "newcomm" if entry == "scalable" else "comm", P))
        out = ctypes.byref(comm) if out is not None else None
        if entry == "all":
            ndev = data.draw(st.one_of(st.integers(1, 3), st.integers(-(2**31), 0)))
            if ndev < 1:
                bad["ndev"] = {INVALID_ARGUMENT}
            n = max(ndev, 1)
            devlist = data.draw(
                st.one_of(st.none(), st.lists(INT32, min_size=n, max_size=n).map(_ints))
            )
            handles = (P * n)()
            abi.call(
                "ncclCommInitAll", handles if out is not None else None, ndev, devlist, bad=bad
            )
            for h in handles:
                if h is not None:
                    abi.call("ncclCommDestroy", P(h))
            return
        # A live id with 1 rank (no peer to wait for) or a garbage one with any rank count.
        live = data.draw(st.integers(0, 3)) > 0
        nranks = 1 if live and data.draw(st.integers(0, 3)) else data.draw(INT32)
        rank = 0 if data.draw(st.integers(0, 3)) else data.draw(INT32)
        if live and nranks > 1 and 0 <= rank < nranks:
            nranks = 1  # peers that never come would only time out
        if nranks < 1:
            bad["nranks"] = {INVALID_ARGUMENT}
        elif not 0 <= rank < nranks:
            bad["myrank" if entry == "scalable" else "rank"] = {INVALID_ARGUMENT}
        uid = UniqueId()
        if live:
            abi.call("ncclGetUniqueId", ctypes.byref(uid))
        else:
            uid.internal = data.draw(garbage_ids())
            bad["commId"] = {INVALID_ARGUMENT}
        config = data.draw(configs(bad)) if entry != "ncclCommInitRank" else None
        # Inside a group, or with a non-blocking config, the id is used after the call returns:
        # a garbage one fails ncclGroupEnd, or the initialisation ncclCommGetAsyncError reports.
        grouped = data.draw(st.booleans())
        nonblocking = config is not None and config._blocking and "config" not in bad
        deferred = {k: v for k, v in bad.items() if k == "commId"}
        eager = {k: v for k, v in bad.items() if k != "commId"}
        if grouped:
            abi.call("ncclGroupStart")
        call_bad, ok = bad, (SUCCESS,)
        if grouped or nonblocking:
            call_bad, ok = eager, (SUCCESS,) if grouped else (IN_PROGRESS,)
        if entry == "ncclCommInitRank":
            rc = abi.call(entry, out, nranks, uid, rank, bad=call_bad, ok=ok)
        elif entry == "ncclCommInitRankConfig":
            rc = abi.call(entry, out, nranks, uid, rank, config, bad=call_bad, ok=ok)
        else:
            n_id = (
                data.draw(st.integers(1, 3)) if data.draw(st.integers(0, 5)) else data.draw(INT32)
            )
            if n_id < 1:
                call_bad["nId"] = {INVALID_ARGUMENT}
            ids = (UniqueId * max(1, min(n_id, 3)))(*([uid] * max(1, min(n_id, 3))))
            ids = data.draw(st.sampled_from([ids] * 5 + [None]))
            if ids is None:
                call_bad["commIds"] = {INVALID_ARGUMENT}
            if n_id > 3:
                n_id = 3  # the array holds 3
            rc = abi.call(
                "ncclCommInitRankScalable",
                out,
                nranks,
                rank,
                n_id,
                ids,
                config,
                bad=call_bad,
                ok=ok,
            )
        accepted = rc in (SUCCESS, IN_PROGRESS)
        if grouped:  # a call rejected inside the group fails the group with its error
            abi.call("ncclGroupEnd", bad=deferred if accepted else call_bad)
        if not accepted:
            assert comm.value is None, f"{entry} failed but set *comm"
            return
        if rc == SUCCESS and not grouped:
            _settle(abi, comm, rc)
            return
        # The handle exists: its initialisation ends in the background or ended at the group's
        # end, with the id's rejection if it was garbage.
        state = INT(IN_PROGRESS)
        while state.value == IN_PROGRESS:
            abi.call("ncclCommGetAsyncError", comm, ctypes.byref(state))
        assert state.value == (INVALID_ARGUMENT if deferred else SUCCESS), abi.last_error()
        abi.call("ncclCommCount", comm, ctypes.byref(INT()), bad=deferred)
        abi.call("ncclCommDestroy", comm)

    check()


def _ints(values):
    return (INT * len(values))(*values)


# The data-moving entries' properties (collectives, alltoallv, ncclAllToAllvDynamic) are in
# nccl_abi_data_properties.py; importing it registers them in PROPERTIES.
import nccl_abi_data_properties  # noqa: E402, F401


@prop
def handles(world: World):
    """Queries, registrations, windows, PreMulSum operators and the device API."""
    abi = world.abi
    buff = ctypes.create_string_buffer(4096)

    @fuzz_cases.settings(3 * fuzz_cases.EXAMPLES)
    @given(st.data())
    def check(data):
        bad = {}
        entry = data.draw(
            st.sampled_from(
                [
                    "ncclCommCount",
                    "ncclCommCuDevice",
                    "ncclCommUserRank",
                    "ncclCommGetAsyncError",
                    "register",
                    "window",
                    "premul",
                    "destroy-op",
                    "device-api",
                    "query-properties",
                ]
            )
        )
        comm = data.draw(comms(world, bad))
        if entry in ("ncclCommCount", "ncclCommCuDevice", "ncclCommUserRank"):
            name = {"ncclCommCount": "count", "ncclCommCuDevice": "device"}.get(entry, "rank")
            abi.call(entry, comm, data.draw(out_pointer(bad, name)), bad=bad)
        elif entry == "ncclCommGetAsyncError":
            abi.call(entry, comm, data.draw(out_pointer(bad, "asyncError")), bad=bad)
        elif entry in ("register", "window"):
            ptr = data.draw(st.sampled_from([buff, buff, None]))
            size = data.draw(st.one_of(st.integers(1, 4096), st.just(0)))
            if ptr is None:
                bad["buff"] = {INVALID_ARGUMENT}
            if size == 0:
                bad["size"] = {INVALID_ARGUMENT}
            handle = P()
            out = data.draw(st.sampled_from([ctypes.byref(handle)] * 3 + [None]))
            if entry == "register":
                if out is None:
                    bad["handle"] = {INVALID_ARGUMENT}
                rc = abi.call("ncclCommRegister", comm, ptr, size, out, bad=bad)
                dereg = "ncclCommDeregister"
            else:
                if out is None:
                    bad["win"] = {INVALID_ARGUMENT}
                flags = data.draw(st.one_of(st.sampled_from([0, 1]), INT32))
                if flags not in (0, 1):
                    bad["winFlags"] = {INVALID_ARGUMENT}
                rc = abi.call("ncclCommWindowRegister", comm, ptr, size, out, flags, bad=bad)
                dereg = "ncclCommWindowDeregister"
            name = "handle" if entry == "register" else "win"
            # Deregistration: of NULL, a foreign block, an unmapped address, with a bad comm,
            # then for real, then again (the handle is looked up before it is read).
            refused = {name: {INVALID_ARGUMENT}}
            abi.call(dereg, world.comm, None, bad=refused)
            abi.call(dereg, world.comm, world.foreign, bad=refused)
            abi.call(dereg, world.comm, data.draw(st.integers(1, 4095)), bad=refused)
            if rc == SUCCESS:
                abi.call(dereg, None, handle, bad={"comm": {INVALID_ARGUMENT}})
                abi.call(dereg, world.comm, handle)
                abi.call(dereg, world.comm, handle, bad=refused)
        elif entry == "premul":
            op = INT()
            out = data.draw(st.sampled_from([ctypes.byref(op)] * 3 + [None]))
            if out is None:
                bad["op"] = {INVALID_ARGUMENT}
            scalar = data.draw(st.sampled_from([ctypes.create_string_buffer(8)] * 3 + [None]))
            if scalar is None:
                bad["scalar"] = {INVALID_ARGUMENT}
            datatype = data.draw(datatypes(bad))
            residence = data.draw(st.one_of(st.sampled_from([0, 1]), INT32))
            if residence not in (0, 1):
                bad["residence"] = {INVALID_ARGUMENT}
            rc = abi.call(
                "ncclRedOpCreatePreMulSum", out, scalar, datatype, residence, comm, bad=bad
            )
            if rc == SUCCESS:
                assert op.value >= NUM_OPS
                abi.call("ncclRedOpDestroy", op.value, world.comm)
                abi.call("ncclRedOpDestroy", op.value, world.comm, bad={"op": {INVALID_ARGUMENT}})
        elif entry == "destroy-op":
            abi.call(
                "ncclRedOpDestroy", data.draw(INT32), comm, bad={**bad, "op": {INVALID_ARGUMENT}}
            )
        elif entry == "query-properties":
            # The versioned header, then bytes that must stay as they were past its size.
            props = ctypes.create_string_buffer(b"\xab" * 512, 512)
            size = data.draw(st.one_of(st.integers(0, 512), st.just(16), st.just(24)))
            magic = API_MAGIC if data.draw(st.integers(0, 3)) else data.draw(INT32) & 0xFFFFFFFF
            struct.pack_into("=QII", props, 0, size, magic, VERSION_CODE)
            if magic != API_MAGIC or size <= 16:
                bad["props"] = {INVALID_ARGUMENT}
            rc = abi.call("ncclCommQueryProperties", comm, props, bad=bad)
            if rc == SUCCESS:
                assert props.raw[max(size, 16) :] == b"\xab" * (512 - max(size, 16))
        else:
            # RCCLX makes no device communicators: a NULL argument is the caller's fault, any
            # requirements (here zeroed ones) are refused as usage, naming what was asked.
            reqs = data.draw(st.sampled_from([buff, None]))
            refused = {**bad, "reqs": {INVALID_ARGUMENT if reqs is None else INVALID_USAGE}}
            abi.call("ncclDevCommCreate", comm, reqs, buff, bad=refused)
            dev = data.draw(st.sampled_from([buff, None]))
            refused = {**bad, "devComm": {INVALID_ARGUMENT if dev is None else INVALID_USAGE}}
            abi.call("ncclDevCommDestroy", comm, dev, bad=refused)

    check()


@prop
def split_shrink(world: World):
    abi = world.abi

    @fuzz_cases.settings(2 * fuzz_cases.EXAMPLES)
    @given(st.data())
    def check(data):
        bad = {}
        comm = data.draw(comms(world, bad))
        child = P()
        out = data.draw(st.sampled_from([ctypes.byref(child)] * 4 + [None]))
        if out is None:
            bad["newcomm"] = {INVALID_ARGUMENT}
        # Split and shrink make the child at once, a non-blocking config's too.
        config = data.draw(configs(bad))
        if data.draw(st.booleans()):
            color = data.draw(st.one_of(st.sampled_from([0, 1, -1]), INT32))
            if color < -1:
                bad["color"] = {INVALID_ARGUMENT}
            key = data.draw(INT32)
            rc = abi.call("ncclCommSplit", comm, color, key, out, config, bad=bad)
            if rc == SUCCESS and color == -1:
                assert child.value is None, "NCCL_SPLIT_NOCOLOR made a communicator"
        else:
            ranks = data.draw(
                st.one_of(st.none(), st.lists(st.one_of(st.just(0), INT32), max_size=4))
            )
            count = data.draw(st.one_of(st.integers(0, 4), INT32))
            if count < 0:
                bad["excludeRanksCount"] = {INVALID_ARGUMENT}
            elif ranks is None:
                if count > 0:
                    bad["excludeRanksList"] = {INVALID_ARGUMENT}
            else:
                count = min(count, len(ranks))  # the array holds len(ranks)
                if count > 0:
                    # Out of range, listed twice, or rank 0: excluding the only rank.
                    bad["excludeRanksList"] = {INVALID_ARGUMENT}
            flags = data.draw(st.one_of(st.sampled_from([0, 1]), INT32))
            if flags not in (0, 1):
                bad["shrinkFlags"] = {INVALID_ARGUMENT}
            array = _ints(ranks) if ranks else None
            if ranks is not None and not ranks:
                array = (INT * 1)()
            rc = abi.call("ncclCommShrink", comm, array, count, out, config, flags, bad=bad)
        if rc != SUCCESS:
            assert child.value is None
        if child.value is not None:
            _settle(abi, child, SUCCESS)

    check()


@prop
def lifecycle(world: World):
    """Random sequences of calls on a fresh communicator, with groups opened and closed at
    random: after destroy or abort every call is refused as InvalidUsage, after revoke all but
    destroy / abort are; ncclGroupEnd without a group is refused too. Inside a group: a refused
    all_reduce or split fails the group (its outermost end returns InvalidUsage), a recorded
    one keeps the communicator from being destroyed until then (abort is allowed), and a split
    runs at the end, where a communicator revoked or aborted meanwhile fails it."""
    abi = world.abi
    buf = ctypes.create_string_buffer(64)
    steps = st.lists(
        st.sampled_from(
            [
                "allreduce",
                "count",
                "finalize",
                "revoke",
                "destroy",
                "abort",
                "group-start",
                "group-end",
                "simulate-end",
                "simulate-end-info",
                "simulate-end-small",
                "simulate-end-magic",
                "async-error",
                "split",
                "premul",
            ]
        ),
        min_size=1,
        max_size=12,
    )

    @fuzz_cases.settings()
    @given(steps)
    def check(plan):
        comm = world.new_comm()
        state = "ready"
        depth = 0
        children = []
        group = {"failed": False, "recorded": False, "split": False}

        def joins_group(rc):  # an all_reduce or split made inside a group
            if depth:
                group["failed" if rc != SUCCESS else "recorded"] = True

        def group_end_error():  # what the outermost end of the group returns
            split_fails = group["split"] and state != "ready"
            return {"comm": {INVALID_USAGE}} if group["failed"] or split_fails else {}

        for step in plan:
            gone = {"comm": {INVALID_USAGE}} if state == "destroyed" else {}
            revoked = {"comm": {INVALID_USAGE}} if state == "revoked" else {}
            refused = gone or revoked
            if step == "allreduce":
                joins_group(abi.call("ncclAllReduce", buf, buf, 4, 7, 0, comm, None, bad=refused))
            elif step == "count":
                abi.call("ncclCommCount", comm, ctypes.byref(INT()), bad=gone)
            elif step == "finalize":
                abi.call("ncclCommFinalize", comm, bad=refused)
            elif step == "async-error":
                abi.call("ncclCommGetAsyncError", comm, ctypes.byref(INT()), bad=gone)
            elif step == "premul":
                op = INT()
                s = ctypes.create_string_buffer(8)
                rc = abi.call(
                    "ncclRedOpCreatePreMulSum", ctypes.byref(op), s, 7, 1, comm, bad=refused
                )
                if rc == SUCCESS:
                    abi.call("ncclRedOpDestroy", op.value, comm)
            elif step == "split":
                child = P()
                rc = abi.call("ncclCommSplit", comm, 0, 0, ctypes.byref(child), None, bad=refused)
                joins_group(rc)
                if rc == SUCCESS:
                    children.append(child)
                    group["split"] = group["split"] or depth > 0
            elif step == "revoke":
                if abi.call("ncclCommRevoke", comm, 0, bad=refused) == SUCCESS:
                    state = "revoked"
            elif step in ("destroy", "abort"):
                entry = "ncclCommDestroy" if step == "destroy" else "ncclCommAbort"
                held = step == "destroy" and group["recorded"] and not gone
                if (
                    abi.call(entry, comm, bad={"comm": {INVALID_USAGE}} if held else gone)
                    == SUCCESS
                ):
                    state = "destroyed"
            elif step == "group-start":
                abi.call("ncclGroupStart")
                depth += 1
            else:
                unopened = {} if depth else {"ncclGroupStart": {INVALID_USAGE}}
                ending = group_end_error() if depth == 1 else unopened
                if step == "group-end":
                    abi.call("ncclGroupEnd", bad=ending)
                    depth = max(depth - 1, 0)
                    if not depth:
                        group = {"failed": False, "recorded": False, "split": False}
                    continue
                # simInfo: NULL, NCCL_SIM_INFO_INITIALIZER, or a bad magic or size (checked
                # before the group ends, which then stays open).
                sim_kind = step.removeprefix("simulate-end")
                sim = None
                if sim_kind:
                    sim = ctypes.create_string_buffer(24)
                    size = 24 if sim_kind != "-small" else 16
                    magic = SIM_INFO_MAGIC if sim_kind != "-magic" else 0x1234
                    struct.pack_into("<QIIf", sim, 0, size, magic, VERSION_CODE, -1.0)
                if sim_kind in ("-small", "-magic"):
                    abi.call("ncclGroupSimulateEnd", sim, bad={"simInfo": {INVALID_ARGUMENT}})
                    continue
                rc = abi.call("ncclGroupSimulateEnd", sim, bad=ending)
                if sim is not None and depth == 1 and rc == SUCCESS:
                    assert struct.unpack_from("<f", sim, 16)[0] >= 0, "no estimatedTime"
                depth = max(depth - 1, 0)
                if not depth:
                    group = {"failed": False, "recorded": False, "split": False}
        while depth:
            abi.call("ncclGroupEnd", bad=group_end_error() if depth == 1 else {})
            depth -= 1
        for child in children:
            abi.call("ncclCommDestroy", child)
        if state != "destroyed":
            abi.call("ncclCommDestroy", comm)

    check()


def _child_main(name: str, log_path: str) -> None:
    world = World(log_path)
    PROPERTIES[name](world)
    # What the examples reached, by entry and result code (shown by pytest -rA or on failure).
    for entry, tally in sorted(world.abi.results.items()):
        print(f"{entry}: " + ", ".join(f"{n} x {rc}" for rc, n in sorted(tally.items())))


# ---- The pytest side ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_c_abi_property(name, tmp_path):
    log = tmp_path / "example"
    try:
        run = subprocess.run(
            [sys.executable, __file__, name, str(log)],
            env=_child_environment(),
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        last = log.read_text() if log.exists() else "(none recorded)"
        pytest.fail(f"property {name} hung for {CHILD_TIMEOUT} s; last call: {last}")
    if run.returncode == 0:
        print(run.stdout)
        return
    last = log.read_text() if log.exists() else "(none recorded)"
    how = f"killed by signal {-run.returncode}" if run.returncode < 0 else "failed"
    pytest.fail(
        f"property {name} {how}; last call: {last}\n"
        f"--- child output (tail) ---\n{(run.stdout + run.stderr)[-6000:]}"
    )


if __name__ == "__main__":
    _child_main(sys.argv[1], sys.argv[2])

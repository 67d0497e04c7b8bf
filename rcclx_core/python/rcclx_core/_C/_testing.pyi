# Stubs of the native submodule rcclx_core._C._testing (rcclx_core/python/src/testing_py.cpp
# and lp_py.cpp), re-exported by rcclx_core._testing. Why this is a file of a stub package:
# see _C/__init__.pyi. Checked against the built module by tests/rcclx_core/test_stubs.py.

from typing import TypedDict

from rcclx_core._C import ArrayLike, Communicator, DataType, RedOp

# --- for annotations only

# lp_gpu_launch_shape()'s result.
class LpLaunchShape(TypedDict):
    blocks: int
    slots: int
    chunk_blocks: int
    chunk_bytes: int
    staging_bytes: int

# --- the allreduce selector

def select_all_reduce(
    nbytes: int,
    dtype: DataType | int = 7,
    op: RedOp | int = 0,
    nranks: int = 2,
    num_hosts: int = 1,
    direct_access: bool = True,
    forced: str = "auto",
    flat_max_bytes: int = 32768,
    tree_max_bytes: int = 2097152,
    gpu: bool = False,
    gpu_flat_max_bytes: int = 262144,
    gpu_tree_max_bytes: int = 33554432,
    deterministic: bool = True,
) -> tuple[str, str]: ...

# --- a communicator's selection, zero-copy counters and GPU launch shapes

def selection(
    comm: Communicator,
    nbytes: int,
    dtype: DataType | int = 7,
    op: RedOp | int = 0,
    algo: str | None = None,
    gpu: bool = False,
) -> tuple[str, str]: ...
def collective_selection(
    comm: Communicator, collective: str, nbytes: int, root: int = 0
) -> tuple[str, str]: ...
def symmetric_calls(comm: Communicator) -> int: ...
def graph_registrations(comm: Communicator) -> int: ...
def set_gpu_tuning(comm: Communicator, spec: str) -> None: ...
def gpu_sharing(comm: Communicator) -> str: ...

# --- the low-precision reference codec and policy

def lp_wire_bytes(count: int, block_elems: int = 256) -> int: ...
def lp_quantize(
    src: ArrayLike, dst: ArrayLike, dtype: DataType | int | None = None, block_elems: int = 256
) -> None: ...
def lp_dequantize(
    src: ArrayLike, dst: ArrayLike, dtype: DataType | int | None = None, block_elems: int = 256
) -> None: ...
def low_precision_decision(
    collective: str,
    nbytes: int,
    dtype: DataType | int = 7,
    op: RedOp | int = 0,
    nranks: int = 2,
    hint: bool | None = None,
    gpu: bool = False,
) -> tuple[bool, str]: ...
def lp_gpu_launch_shape(
    segment_blocks: int,
    block_elems: int = 256,
    nranks: int = 2,
    staging_bytes: int = 41943040,
    max_blocks: int = 256,
    max_chunk_blocks: int = 128,
    one_slot: bool = False,
) -> LpLaunchShape: ...
def open_ipc_mappings() -> int: ...

# --- the machine

def cross_core_handoff(
    cpu_a: int, cpu_b: int, bytes: int = 0, rounds: int = 1000, timeout_s: float = 1.0
) -> float: ...

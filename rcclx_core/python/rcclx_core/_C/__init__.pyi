# Stubs of the native module rcclx_core._C (rcclx_core/python/src/*.cpp).
#
# A stub package (_C/__init__.pyi, _C/_testing.pyi) rather than one _C.pyi, because _C has a
# native submodule, _C._testing: a lone _C.pyi can declare it only as a module attribute, and
# then neither mypy nor pyright resolves `from rcclx_core._C._testing import selection` (both
# report the module as missing), while with this folder both resolve every form of that import.
# At run time the folder changes nothing: it holds no __init__.py, so Python still loads the
# extension module _C beside it, which creates _C._testing itself.
#
# Every name, parameter and default here mirrors a binding; tests/rcclx_core/test_stubs.py
# compares them with the built module. The names in the first section exist for type checkers
# only (import them under `if TYPE_CHECKING:`).

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, Protocol, TypedDict

from typing_extensions import Buffer, TypeAlias

from . import _testing as _testing

# --- for annotations only

class SupportsDLPack(Protocol):
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...

# What a collective takes as a buffer: a C-contiguous array exporting DLPack (numpy, torch,
# cupy...) or the buffer protocol (bytes, bytearray, memoryview, array.array).
ArrayLike: TypeAlias = SupportsDLPack | Buffer

# A ctran Store, or any object with torch.distributed.Store's set, get, add, check and
# delete_key (a torch TCPStore, for one).
StoreLike: TypeAlias = Any

# One knob as config_dump() reports it.
class ConfigEntry(TypedDict):
    name: str
    type: Literal["bool", "int", "bytes", "string", "enum"]
    default: str
    choices: str  # an enum's values separated by '|', otherwise ""
    description: str
    value: str  # the effective value: the environment's, or the default
    from_env: bool

# --- enums (pybind11 enums: int(member) is the value in the comment, the C ABI's number)

class DataType:
    INT8: ClassVar[DataType]  # value = 0
    UINT8: ClassVar[DataType]  # value = 1
    INT32: ClassVar[DataType]  # value = 2
    UINT32: ClassVar[DataType]  # value = 3
    INT64: ClassVar[DataType]  # value = 4
    UINT64: ClassVar[DataType]  # value = 5
    FLOAT16: ClassVar[DataType]  # value = 6
    FLOAT32: ClassVar[DataType]  # value = 7
    FLOAT64: ClassVar[DataType]  # value = 8
    BFLOAT16: ClassVar[DataType]  # value = 9
    FLOAT8_E4M3: ClassVar[DataType]  # value = 10
    FLOAT8_E5M2: ClassVar[DataType]  # value = 11
    __members__: ClassVar[dict[str, DataType]]
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __ne__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class RedOp:
    SUM: ClassVar[RedOp]  # value = 0
    PROD: ClassVar[RedOp]  # value = 1
    MAX: ClassVar[RedOp]  # value = 2
    MIN: ClassVar[RedOp]  # value = 3
    AVG: ClassVar[RedOp]  # value = 4
    PREMUL_SUM: ClassVar[RedOp]  # value = 5
    BAND: ClassVar[RedOp]  # value = 6
    BOR: ClassVar[RedOp]  # value = 7
    BXOR: ClassVar[RedOp]  # value = 8
    __members__: ClassVar[dict[str, RedOp]]
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __ne__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

def datatype_size(dtype: DataType | int) -> int: ...

# --- configuration

def config_dump() -> list[ConfigEntry]: ...
def refresh_logging() -> None: ...
def create_unique_id() -> bytes: ...

# --- communicators

class Work:
    def wait(self, timeout: float | None = None) -> bool: ...
    def is_completed(self) -> bool: ...
    @property
    def description(self) -> str: ...

class Communicator:
    def __init__(self, other: Communicator) -> None: ...
    @staticmethod
    def from_unique_id(
        unique_id: bytes,
        rank: int,
        nranks: int,
        device: int | None = None,
        hints: Mapping[str, str] | None = None,
    ) -> Communicator: ...
    @staticmethod
    def from_env(
        device: int | None = None, hints: Mapping[str, str] | None = None
    ) -> Communicator: ...
    @staticmethod
    def from_store(
        store: StoreLike,
        rank: int,
        nranks: int,
        prefix: str = "rcclx",
        device: int | None = None,
        hints: Mapping[str, str] | None = None,
    ) -> Communicator: ...
    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def local_rank(self) -> int: ...
    @property
    def local_size(self) -> int: ...
    @property
    def num_hosts(self) -> int: ...
    @property
    def direct_access(self) -> bool: ...
    @property
    def device(self) -> int | None: ...
    def _alloc_symmetric(self, nbytes: int) -> int: ...
    def _free_symmetric(self, ptr: int) -> None: ...
    def _register_symmetric(self, ptr: int, nbytes: int) -> None: ...

    # Collectives: a GPU call (buffers on the communicator's device) is enqueued on `stream`
    # (a cudaStream_t as an int) and returns None; a host call runs now and returns None, or
    # with async_op=True runs on the communicator's worker and returns its Work.
    def all_reduce(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike | None = None,
        op: RedOp | int = 0,
        algo: str | None = None,
        scalar: float | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None: ...
    def reduce(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike | None = None,
        root: int = 0,
        op: RedOp | int = 0,
        scalar: float | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None: ...
    def broadcast(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike | None = None,
        root: int = 0,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None: ...
    def all_gather(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None: ...
    def all_gather_v(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        recv_counts: Sequence[int],
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None: ...
    def reduce_scatter(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        op: RedOp | int = 0,
        scalar: float | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None: ...
    def reduce_scatter_v(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        counts: Sequence[int],
        op: RedOp | int = 0,
        scalar: float | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None: ...
    def all_to_all(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None: ...
    def all_to_all_v(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        send_counts: Sequence[int],
        recv_counts: Sequence[int],
        send_displs: Sequence[int] | None = None,
        recv_displs: Sequence[int] | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None: ...
    def alltoallv_dynamic(
        self,
        input: ArrayLike,
        output: ArrayLike,
        input_split_sizes: ArrayLike,
        output_split_sizes: ArrayLike,
        input_offsets: ArrayLike | None = None,
        output_offsets: ArrayLike | None = None,
        row_elems: int = 1,
        max_output_rows: int | None = None,
        output_split_sizes_known: bool = False,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None: ...
    def check_alltoallv_dynamic(self) -> None: ...
    def gather(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike | None = None,
        root: int = 0,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None: ...
    def scatter(
        self,
        sendbuf: ArrayLike | None,
        recvbuf: ArrayLike,
        root: int = 0,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None: ...
    def send(
        self,
        buf: ArrayLike,
        peer: int,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None: ...
    def recv(
        self,
        buf: ArrayLike,
        peer: int,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None: ...
    def barrier(self, async_op: bool = False, stream: int | None = None) -> Work | None: ...
    def group_start(self) -> None: ...
    def group_end(self, async_op: bool = False) -> Work | None: ...
    def group_cancel(self) -> None: ...

    # Splits and teardown.
    def split(
        self, color: int, key: int | None = None, hints: Mapping[str, str] | None = None
    ) -> Communicator | None: ...
    def split_ranks(self, ranks: Sequence[int]) -> Communicator | None: ...
    def finalize(self) -> None: ...
    def destroy(self) -> None: ...
    def abort(self) -> None: ...
    def check_failed(self) -> None: ...
    @property
    def destroyed(self) -> bool: ...

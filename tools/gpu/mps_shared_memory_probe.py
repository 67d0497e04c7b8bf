"""Can an MPS client start a kernel that needs shared memory while another client's blocks wait
on every SM? (docs/measurements/2026-12-05_mps_shared_memory_carveout.md)

    python tools/gpu/mps_shared_memory_probe.py spin CARVEOUT BLOCKS THREADS SECONDS READY
    python tools/gpu/mps_shared_memory_probe.py victim READY

`spin` launches BLOCKS blocks that wait on a flag in mapped host memory (CARVEOUT: the kernel's
preferred shared-memory carveout in percent, -1 to leave the driver's choice), reports how many
became resident, creates the file READY, and releases them after SECONDS. `victim` (started
first, so its context and kernels are ready) waits for READY, then times kernels with 0 to
64 KiB of dynamic shared memory and a few torch operations. Both must run under one MPS daemon
with no SM limit; tools/gpu/mps_shared_memory_probe.sh runs the cases. Needs CuPy and torch.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

import cupy as cp
import numpy as np

WAIT_SOURCE = r"""
extern "C" __global__ void wait_for_flag(volatile int* flag, int* resident) {
  if (threadIdx.x == 0) {
    atomicAdd(resident, 1);
    while (*flag == 0) __nanosleep(2000);
  }
  __syncthreads();
}"""

SHARED_SOURCE = r"""
extern "C" __global__ void use_shared(float* out, int floats) {
  extern __shared__ float buf[];
  if (threadIdx.x < floats) buf[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = floats > 0 ? buf[0] : 1.0f;
}"""


def mapped_ints(n: int) -> tuple[np.ndarray, int]:
    """n ints of mapped pinned host memory: a numpy view, and the address the GPU uses (the
    same one, under unified addressing)."""
    ptr = cp.cuda.runtime.hostAlloc(n * 4, 2)  # cudaHostAllocMapped
    view = np.ctypeslib.as_array((ctypes.c_int * n).from_address(ptr))
    view[:] = 0
    return view, ptr


def spin(carveout: int, blocks: int, threads: int, seconds: float, ready: str) -> None:
    kernel = cp.RawKernel(WAIT_SOURCE, "wait_for_flag")
    if carveout >= 0:
        kernel.preferred_shared_memory_carveout = carveout
    flag, flag_at = mapped_ints(1)
    resident, resident_at = mapped_ints(1)
    kernel((blocks,), (threads,), (cp.uint64(flag_at), cp.uint64(resident_at)))
    deadline = time.time() + 10
    while resident[0] < blocks and time.time() < deadline:
        time.sleep(0.001)
    print(f"spinner: {resident[0]}/{blocks} blocks resident (carveout {carveout})", flush=True)
    open(ready, "w").close()
    time.sleep(seconds)
    flag[0] = 1
    cp.cuda.Device().synchronize()


def victim(ready: str) -> None:
    import torch

    out = cp.zeros(1024, dtype=cp.float32)
    kernel = cp.RawKernel(SHARED_SOURCE, "use_shared")
    kernel.max_dynamic_shared_size_bytes = 64 * 1024
    a = torch.ones(1 << 20, device="cuda")
    b = a.clone()
    rows = torch.randn(512, 8192, device="cuda")
    # Everything once before the spinner starts: module loads and torch's first launches.
    kernel((64,), (256,), (out, cp.int32(16384)), shared_mem=65536)
    torch.softmax(rows, dim=-1).sum(dim=0)
    torch.equal(a, b)
    torch.cuda.synchronize()
    cp.cuda.Device().synchronize()
    open(ready + ".warm", "w").close()
    while not os.path.exists(ready):
        time.sleep(0.001)

    def timed(name, launch) -> None:
        t = time.time()
        launch()
        cp.cuda.Device().synchronize()
        torch.cuda.synchronize()
        print(f"victim: {name}: {1e3 * (time.time() - t):.1f} ms", flush=True)

    for shared in (0, 4096, 32768, 65536):
        timed(
            f"kernel with {shared} B of shared memory",
            lambda shared=shared: kernel(
                (64,), (256,), (out, cp.int32(shared // 4)), shared_mem=shared
            ),
        )
    timed(
        "torch softmax over 8192 columns, then a column sum", lambda: torch.softmax(rows, -1).sum(0)
    )
    timed("torch.equal of 1M floats", lambda: torch.equal(a, b))


if __name__ == "__main__":
    if sys.argv[1] == "spin":
        spin(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
    else:
        victim(sys.argv[2])

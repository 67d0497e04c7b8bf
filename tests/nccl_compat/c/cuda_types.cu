// Compiled by test_abi.py with nvcc against our include dir alone: as with NVIDIA's nccl.h, the
// CUDA half, bfloat16 and fp8 types come with nccl.h.
#include <nccl.h>

__global__ void fill(half* a, __nv_bfloat16* b, __nv_fp8_e4m3* c, __nv_fp8_e5m2* d) {
  a[0] = __float2half(1.0f);
  b[0] = __float2bfloat16(2.0f);
  c[0] = __nv_fp8_e4m3(3.0f);
  d[0] = __nv_fp8_e5m2(4.0f);
}

ncclResult_t sum_halves(half* data, size_t count, ncclComm_t comm, cudaStream_t stream) {
  return ncclAllReduce(data, data, count, ncclFloat16, ncclSum, comm, stream);
}

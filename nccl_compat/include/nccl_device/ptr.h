/*
 * nccl_device/ptr.h of RCCLX's NCCL-ABI library: ncclSymPtr<T>, a typed position in a window
 * (the window and a byte offset into it), the same on every rank of the window. Its arithmetic
 * works everywhere; turning it into an address works for a symmetric pointer without a window
 * (its offset is then a plain local address) and otherwise goes through the window address
 * functions of nccl_device/core.h, which RCCLX's windows do not serve to kernels.
 */
#ifndef RCCLX_NCCL_DEVICE_PTR_H_
#define RCCLX_NCCL_DEVICE_PTR_H_

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
template <typename T>
struct ncclSymPtr {
  using ElementType = T;
  ncclWindow_t window;
  size_t offset; /* bytes from the start of the window (an address when window is null) */

  NCCL_HOST_DEVICE_INLINE constexpr ncclSymPtr(ncclWindow_t w = nullptr, size_t byteOffset = 0)
      : window(w), offset(byteOffset) {}

  /* The same position seen as another element type. */
  template <typename U>
  NCCL_HOST_DEVICE_INLINE operator ncclSymPtr<U>() const {
    return ncclSymPtr<U>(window, offset);
  }

  /* Moves by d elements of T, as a T* would (size_t arithmetic wraps a negative d into a step
   * back). */
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator+=(int d) { return forward(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator+=(unsigned int d) { return forward(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator+=(long d) { return forward(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator+=(unsigned long d) { return forward(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator+=(long long d) { return forward(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator+=(unsigned long long d) { return forward(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator-=(int d) { return back(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator-=(unsigned int d) { return back(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator-=(long d) { return back(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator-=(unsigned long d) { return back(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator-=(long long d) { return back(d); }
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& operator-=(unsigned long long d) { return back(d); }

#ifdef __CUDACC__
  /* This rank's element. */
  __device__ __forceinline__ T* localPtr() const {
    if (window == nullptr) return reinterpret_cast<T*>(offset);
    return static_cast<T*>(ncclGetLocalPointer(window, offset));
  }
  /* The element of LSA rank `peer`, of world rank `peer`, of rank `peer` of `team`. */
  __device__ __forceinline__ T* lsaPtr(int peer) const {
    return static_cast<T*>(ncclGetLsaPointer(window, offset, peer));
  }
  __device__ __forceinline__ T* peerPtr(int peer) const {
    return static_cast<T*>(ncclGetPeerPointer(window, offset, peer));
  }
  __device__ __forceinline__ T* peerPtr(ncclTeam team, int peer) const {
    return static_cast<T*>(ncclGetPeerPointer(window, offset, team, peer));
  }
  /* The multicast address of the element in a multimem group. */
  __device__ __forceinline__ T* multimemPtr(ncclMultimemHandle mmHandle) const {
    return static_cast<T*>(ncclGetMultimemPointer(window, offset, mmHandle));
  }
  __device__ __forceinline__ T* lsaMultimemPtr(ncclDevComm const& comm) const {
    return static_cast<T*>(ncclGetLsaMultimemPointer(window, offset, comm));
  }
#endif

 private:
  template <typename Int>
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& forward(Int elements) {
    offset += static_cast<size_t>(elements) * sizeof(T);
    return *this;
  }
  template <typename Int>
  NCCL_HOST_DEVICE_INLINE ncclSymPtr& back(Int elements) {
    offset -= static_cast<size_t>(elements) * sizeof(T);
    return *this;
  }
};

template <typename T, typename Int>
NCCL_HOST_DEVICE_INLINE ncclSymPtr<T> operator+(ncclSymPtr<T> p, Int d) {
  return p += d;
}
template <typename T, typename Int>
NCCL_HOST_DEVICE_INLINE ncclSymPtr<T> operator-(ncclSymPtr<T> p, Int d) {
  return p -= d;
}
/* Elements from b to a (both in the same window). */
template <typename T>
NCCL_HOST_DEVICE_INLINE ptrdiff_t operator-(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return static_cast<ptrdiff_t>(a.offset - b.offset) / static_cast<ptrdiff_t>(sizeof(T));
}
template <typename T>
NCCL_HOST_DEVICE_INLINE bool operator==(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return a.window == b.window && a.offset == b.offset;
}
template <typename T>
NCCL_HOST_DEVICE_INLINE bool operator!=(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return !(a == b);
}

#ifdef __CUDACC__
/* A resource buffer of a device communicator as a symmetric pointer into its resource window. */
__device__ inline ncclSymPtr<char> ncclGetResourceBuffer(ncclDevComm const& comm,
                                                         ncclDevResourceHandle h) {
  return ncclSymPtr<char>(comm.resourceWindow, ncclGetResourceBufferOffset(h));
}
#endif
#endif /* __cplusplus */

#endif /* RCCLX_NCCL_DEVICE_PTR_H_ */

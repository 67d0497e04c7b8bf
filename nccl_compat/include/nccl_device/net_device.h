/*
 * nccl_device/net_device.h of RCCLX's NCCL-ABI library: the kinds of device-side networking a
 * network plugin of NCCL's can offer (GPU-initiated networking back-ends among them) and the
 * handle through which it describes one. RCCLX loads no network plugins and has none of these
 * back-ends; the names exist so that code naming a GIN back-end (ncclGin_BackendOne<...>)
 * compiles.
 */
#ifndef RCCLX_NCCL_DEVICE_NET_DEVICE_H_
#define RCCLX_NCCL_DEVICE_NET_DEVICE_H_

#include <stddef.h>

#define NCCL_NET_DEVICE_INVALID_VERSION 0x0
/* Bytes a device-side network transfer moves at most in one message. */
#define NCCL_NET_MTU_SIZE 4096
/* The version of the device unpack protocol a plugin must report. */
#define NCCL_NET_DEVICE_UNPACK_VERSION 0x7

typedef enum {
  NCCL_NET_DEVICE_HOST = 0,
  NCCL_NET_DEVICE_UNPACK = 1,
  NCCL_NET_DEVICE_GIN_PROXY = 2,
  NCCL_NET_DEVICE_GIN_GDAKI = 3,
  NCCL_NET_DEVICE_GIN_GPI = 4,
  NCCL_NET_DEVICE_GIN_EFA_GDA = 5
} ncclNetDeviceType;

/* A plugin's description of its device-side offload (versions 7 to 12 of the plugin interface
 * share this layout). */
typedef struct {
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
} ncclNetDeviceHandle_v7_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v10_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v11_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v12_t;
typedef ncclNetDeviceHandle_v12_t ncclNetDeviceHandle_t;

#endif /* RCCLX_NCCL_DEVICE_NET_DEVICE_H_ */

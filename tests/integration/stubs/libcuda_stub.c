/*
 * A stand-in for the CUDA driver library (libcuda.so.1) for tests on machines without a
 * GPU: it exports the driver API entry points farm-worker's probe calls and describes one
 * fake device. The environment of the process that loads it picks the device:
 *   FARM_STUB_GPU_NAME        device name (default "NVIDIA GeForce RTX 5080")
 *   FARM_STUB_GPU_CC          compute capability "MAJOR.MINOR" (default "12.0")
 *   FARM_STUB_GPU_MEMORY_MIB  total memory (default 16303)
 *   FARM_STUB_GPU_INTEGRATED  1: the device shares host memory (CU_DEVICE_ATTRIBUTE_INTEGRATED)
 *   FARM_STUB_CUINIT_ERROR    cuInit returns this CUDA error instead of 0
 * Nothing here runs kernels: a worker using it must not run its probe kernels.
 */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;

static int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

CUresult cuInit(unsigned int flags) {
  (void)flags;
  return EnvInt("FARM_STUB_CUINIT_ERROR", 0);
}

CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return 0;
}

CUresult cuDeviceGetCount(int* count) {
  *count = 1;
  return 0;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *device = 0;
  return 0;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  const char* v = getenv("FARM_STUB_GPU_NAME");
  (void)device;
  if (len <= 0) return 1;
  strncpy(name, v != NULL ? v : "NVIDIA GeForce RTX 5080", (size_t)len - 1);
  name[len - 1] = '\0';
  return 0;
}

CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  const char* cc = getenv("FARM_STUB_GPU_CC");
  const char* dot;
  (void)device;
  if (cc == NULL) cc = "12.0";
  dot = strchr(cc, '.');
  switch (attribute) {
    case 75: *value = atoi(cc); return 0;                       /* cc major */
    case 76: *value = dot != NULL ? atoi(dot + 1) : 0; return 0;  /* cc minor */
    case 18: *value = EnvInt("FARM_STUB_GPU_INTEGRATED", 0); return 0;
    default: *value = 0; return 0;
  }
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  (void)device;
  *bytes = (size_t)EnvInt("FARM_STUB_GPU_MEMORY_MIB", 16303) << 20;
  return 0;
}

CUresult cuDeviceGetUuid(unsigned char* uuid, CUdevice device) {
  int i;
  (void)device;
  for (i = 0; i < 16; ++i) uuid[i] = (unsigned char)(0xa0 + i);
  return 0;
}

// out = alpha * x + y over n floats, one thread per element, in blocks of the size the
// build read from tritonscale (CUDABLEND_BLOCK, generated into block.h).
#include <cuda_runtime.h>

#include "block.h"

__global__ void Blend(const float* x, const float* y, float* out, float alpha, long n) {
  long i = static_cast<long>(blockIdx.x) * CUDABLEND_BLOCK + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}

extern "C" int cudablend_axpy(const float* x, const float* y, float* out, float alpha, long n) {
  long blocks = (n + CUDABLEND_BLOCK - 1) / CUDABLEND_BLOCK;
  Blend<<<static_cast<unsigned>(blocks), CUDABLEND_BLOCK>>>(x, y, out, alpha, n);
  return static_cast<int>(cudaGetLastError());
}

extern "C" int cudablend_block() { return CUDABLEND_BLOCK; }

#include <cuda_runtime.h>

#include <algorithm>

#include "scaled_add.h"

namespace stable_abi_example {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // a grid-stride loop covers the rest

__global__ void ScaledAddKernel(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ out, int64_t n, float alpha) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = a[i] + alpha * b[i];
  }
}

}  // namespace

int LaunchScaledAdd(const float* a, const float* b, float* out, int64_t n, float alpha,
                    void* stream) {
  if (n <= 0) return 0;
  const int64_t blocks = std::min((n + kThreads - 1) / kThreads, kMaxBlocks);
  ScaledAddKernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                    static_cast<cudaStream_t>(stream)>>>(a, b, out, n, alpha);
  return static_cast<int>(cudaGetLastError());
}

const char* CudaErrorString(int code) {
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

}  // namespace stable_abi_example

// The CUDA side of stable_abi_example: plain CUDA, no torch header, so the kernel file
// cannot reach for torch's unstable C++ API by accident.
#ifndef STABLE_ABI_EXAMPLE_SCALED_ADD_H_
#define STABLE_ABI_EXAMPLE_SCALED_ADD_H_

#include <cstdint>

namespace stable_abi_example {

// Launches out[i] = a[i] + alpha * b[i] for i < n on `stream` (a cudaStream_t). Returns
// the cudaError_t of the launch as an int (0: launched).
int LaunchScaledAdd(const float* a, const float* b, float* out, int64_t n, float alpha,
                    void* stream);

// cudaGetErrorString of a code LaunchScaledAdd returned.
const char* CudaErrorString(int code);

}  // namespace stable_abi_example

#endif  // STABLE_ABI_EXAMPLE_SCALED_ADD_H_

// A tiny CUDA module compiled by the wheel tests for several targets; only the fatbinary
// layout nvcc gives it matters, not what the kernel computes.
__global__ void AddInPlace(float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += b[i];
}

extern "C" void LaunchAddInPlace(float* a, const float* b, int n) {
  AddInPlace<<<(n + 255) / 256, 256>>>(a, b, n);
}

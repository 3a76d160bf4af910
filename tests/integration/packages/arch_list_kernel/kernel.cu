// One trivial kernel, compiled for the archs of TORCH_CUDA_ARCH_LIST (setup.py).
extern "C" __global__ void arch_list_kernel_scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

// stable_abi_example: out = a + alpha * b for float32 tensors, on the CPU and on CUDA,
// written against torch's stable ABI only: the stable headers (torch/csrc/stable,
// torch/headeronly), ops registered with STABLE_TORCH_LIBRARY and boxed with TORCH_BOX, and
// the C shim for the current CUDA stream. Built with -DTORCH_TARGET_VERSION for the torch
// floor (setup.py), so an API newer than the floor does not compile, and -DTORCH_STABLE_ONLY,
// so including an unstable header fails; the library needs no Python API at all (it is
// loaded with torch.ops.load_library), which lets the wheel be abi3.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <cstdint>

#include "scaled_add.h"

namespace stable_abi_example {

using torch::stable::Tensor;

void CheckInputs(const Tensor& a, const Tensor& b) {
  STD_TORCH_CHECK(a.scalar_type() == torch::headeronly::ScalarType::Float &&
                      b.scalar_type() == torch::headeronly::ScalarType::Float,
                  "scaled_add: a and b must be float32");
  STD_TORCH_CHECK(a.dim() == b.dim(), "scaled_add: a has ", a.dim(), " dimensions, b ",
                  b.dim());
  for (int64_t d = 0; d < a.dim(); ++d) {
    STD_TORCH_CHECK(a.size(d) == b.size(d), "scaled_add: a and b differ in dimension ", d,
                    " (", a.size(d), " vs ", b.size(d), ")");
  }
  STD_TORCH_CHECK(a.is_contiguous() && b.is_contiguous(),
                  "scaled_add: a and b must be contiguous");
}

Tensor ScaledAddCpu(const Tensor& a, const Tensor& b, double alpha) {
  CheckInputs(a, b);
  STD_TORCH_CHECK(a.is_cpu() && b.is_cpu(), "scaled_add (CPU): a and b must be CPU tensors");
  Tensor out = torch::stable::empty_like(a);
  const float* pa = static_cast<const float*>(a.data_ptr());
  const float* pb = static_cast<const float*>(b.data_ptr());
  float* po = static_cast<float*>(out.data_ptr());
  const float k = static_cast<float>(alpha);
  for (int64_t i = 0, n = a.numel(); i < n; ++i) po[i] = pa[i] + k * pb[i];
  return out;
}

Tensor ScaledAddCuda(const Tensor& a, const Tensor& b, double alpha) {
  CheckInputs(a, b);
  STD_TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.get_device_index() == b.get_device_index(),
                  "scaled_add (CUDA): a and b must be on one CUDA device");
  torch::stable::accelerator::DeviceGuard guard(a.get_device_index());
  Tensor out = torch::stable::empty_like(a);
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(a.get_device_index(), &stream));
  int err = LaunchScaledAdd(static_cast<const float*>(a.data_ptr()),
                            static_cast<const float*>(b.data_ptr()),
                            static_cast<float*>(out.data_ptr()), a.numel(),
                            static_cast<float>(alpha), stream);
  STD_TORCH_CHECK(err == 0, "scaled_add (CUDA): kernel launch failed: ", CudaErrorString(err));
  return out;
}

}  // namespace stable_abi_example

STABLE_TORCH_LIBRARY(stable_abi_example, m) {
  m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor");
}

STABLE_TORCH_LIBRARY_IMPL(stable_abi_example, CPU, m) {
  m.impl("scaled_add", TORCH_BOX(&stable_abi_example::ScaledAddCpu));
}

STABLE_TORCH_LIBRARY_IMPL(stable_abi_example, CUDA, m) {
  m.impl("scaled_add", TORCH_BOX(&stable_abi_example::ScaledAddCuda));
}

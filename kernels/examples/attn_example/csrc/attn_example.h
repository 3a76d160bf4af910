// Plain C API of the attention example library (_attn_example.so), loaded by ctypes.
//
// Computes O = softmax(Q K^T * scale) V per (batch, head) on float32 tensors laid out
// [B, H, N, D] (row-major, contiguous), optionally with a causal mask (key j is visible
// to query i when j <= i). The CPU path accumulates in double and is the reference; the
// CUDA path is a tiled flash-style kernel with an online softmax and float32 accumulation.
// All functions are thread-compatible: calls on different buffers may run concurrently.
// The CUDA functions make `device` the calling thread's current device and synchronise
// before returning (buffers are the caller's host memory).
// No function throws; every function returns an AttnStatus and, on failure, writes a
// NUL-terminated message into `err` (when err != NULL and err_len > 0).
#ifndef ATTN_EXAMPLE_H_
#define ATTN_EXAMPLE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTN_API __attribute__((visibility("default")))

typedef enum AttnStatus {
  ATTN_OK = 0,
  ATTN_INVALID_ARGUMENT = 1,  // bad shape, null pointer, unsupported head dim
  ATTN_NO_DEVICE = 2,         // no CUDA driver or no device / bad device index
  ATTN_NO_KERNEL_IMAGE = 3,   // the library holds no code this GPU can load
  ATTN_CUDA_ERROR = 4,        // any other CUDA runtime error (message says which)
  ATTN_OUT_OF_MEMORY = 5,     // host or device allocation failed
} AttnStatus;

// Library version ("0.1.0"); static storage.
ATTN_API const char* attn_version(void);

// Reference attention on the CPU with double accumulation. scale <= 0 means 1/sqrt(D).
// threads <= 0 picks the hardware concurrency. On success fills out[B*H*N*D].
ATTN_API int attn_forward_cpu(const float* q, const float* k, const float* v, float* out, int B,
                              int H, int N, int D, int causal, float scale, int threads, char* err,
                              size_t err_len);

// Number of visible CUDA devices. On success *count >= 1. With no driver or no device
// returns ATTN_NO_DEVICE and sets *count = 0.
ATTN_API int attn_cuda_device_count(int* count, char* err, size_t err_len);

// Name and compute capability of `device`. On success fills name (NUL-terminated,
// truncated to name_len), *major and *minor.
ATTN_API int attn_cuda_device_info(int device, char* name, size_t name_len, int* major, int* minor,
                                   char* err, size_t err_len);

// Head dimensions the CUDA kernel supports: D % 32 == 0 and 32 <= D <= 128.
ATTN_API int attn_cuda_supports_head_dim(int D);

// Attention on `device` with host buffers: copies q, k, v in, runs the kernel, copies
// the result into out[B*H*N*D]. scale <= 0 means 1/sqrt(D).
ATTN_API int attn_forward_cuda(const float* q, const float* k, const float* v, float* out, int B,
                               int H, int N, int D, int causal, float scale, int device, char* err,
                               size_t err_len);

// Times the kernel alone on `device`: copies the host inputs once, runs `warmup`
// untimed launches, then `iters` launches each timed with CUDA events. On success
// times_ms[0..iters) holds the per-launch times in milliseconds.
ATTN_API int attn_benchmark_cuda(const float* q, const float* k, const float* v, int B, int H,
                                 int N, int D, int causal, float scale, int device, int warmup,
                                 int iters, float* times_ms, char* err, size_t err_len);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATTN_EXAMPLE_H_

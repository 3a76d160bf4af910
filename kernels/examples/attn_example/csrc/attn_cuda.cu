// CUDA attention forward: a flash-style tiled kernel in float32 with an online softmax.
//
// One block of 128 threads owns 64 query rows of one (batch, head). It keeps the scaled Q
// tile in shared memory and walks the key/value sequence in tiles of 64 rows: S = Q K^T
// for the tile (each thread a 4x8 register tile), the running row max and sum are
// updated (rows are shared by 8 adjacent lanes, reduced with shuffles), P goes to shared
// memory, and O += P V accumulates in registers (each thread 4 rows x D/8 columns).
// K and V share one shared-memory buffer so D = 128 fits the 99 KB limit of sm_120/121.
// Exceptions never leave this file; every entry point returns an AttnStatus.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <vector>

#include "attn_example.h"

namespace {

constexpr int kBq = 64;       // query rows per block
constexpr int kBk = 64;       // key rows per tile
constexpr int kThreads = 128;  // 16 row groups (4 rows each) x 8 lanes per row group
constexpr float kLog2e = 1.4426950408889634f;

void SetError(char* err, size_t err_len, const char* fmt, ...) {
  if (err == nullptr || err_len == 0) return;
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(err, err_len, fmt, args);
  va_end(args);
}

int StatusOf(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return ATTN_OK;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorInitializationError: return ATTN_NO_DEVICE;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorUnsupportedPtxVersion: return ATTN_NO_KERNEL_IMAGE;
    case cudaErrorMemoryAllocation: return ATTN_OUT_OF_MEMORY;
    default: return ATTN_CUDA_ERROR;
  }
}

// Fills err with "<what>: <cuda name> (<cuda message>)" and maps the error to a status.
int Fail(cudaError_t e, const char* what, char* err, size_t err_len) {
  SetError(err, err_len, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return StatusOf(e);
}

#define ATTN_CUDA_CHECK(call, what)                        \
  do {                                                     \
    cudaError_t e_ = (call);                               \
    if (e_ != cudaSuccess) return Fail(e_, what, err, err_len); \
  } while (0)

constexpr int SmemFloats(int d) { return (kBq + kBk) * (d + 4) + kBq * (kBk + 4); }

// Copies rows [row0, row0 + 64) of a [N, D] matrix into shared memory (row stride D + 4),
// multiplied by `mul`; rows past N become zeros so they add nothing downstream.
template <int D>
__device__ __forceinline__ void LoadTile(const float* __restrict__ src, float* dst, int row0,
                                         int N, float mul) {
  constexpr int kVecPerRow = D / 4;
  for (int idx = threadIdx.x; idx < kBq * kVecPerRow; idx += kThreads) {
    const int r = idx / kVecPerRow, c = (idx % kVecPerRow) * 4;
    float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row0 + r < N) {
      val = __ldg(reinterpret_cast<const float4*>(src + size_t(row0 + r) * D + c));
      val.x *= mul, val.y *= mul, val.z *= mul, val.w *= mul;
    }
    *reinterpret_cast<float4*>(dst + r * (D + 4) + c) = val;
  }
}

__device__ __forceinline__ float RowReduceMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 4));
}

__device__ __forceinline__ float RowReduceSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  return x + __shfl_xor_sync(0xffffffffu, x, 4);
}

// s[i][j] = dot(Q row ty*4+i, K row tx+8j) over D, from shared memory.
template <int D>
__device__ __forceinline__ void TileScores(const float* qs, const float* ks, int tx, int ty,
                                           float (&s)[4][8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) s[i][j] = 0.f;
#pragma unroll 2
  for (int d = 0; d < D; d += 4) {
    float4 a[4], b[8];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      a[i] = *reinterpret_cast<const float4*>(qs + (ty * 4 + i) * (D + 4) + d);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      b[j] = *reinterpret_cast<const float4*>(ks + (tx + 8 * j) * (D + 4) + d);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        s[i][j] += a[i].x * b[j].x + a[i].y * b[j].y + a[i].z * b[j].z + a[i].w * b[j].w;
  }
}

// acc[i][g*4+c] += sum_k P[row i][k] * V[k][tx*4 + 32g + c].
template <int D>
__device__ __forceinline__ void AccumulatePV(const float* ps, const float* vs, int tx, int ty,
                                             float (&acc)[4][D / 8]) {
#pragma unroll 2
  for (int kk = 0; kk < kBk; kk += 4) {
    float4 p[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      p[i] = *reinterpret_cast<const float4*>(ps + (ty * 4 + i) * (kBk + 4) + kk);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
      for (int g = 0; g < D / 32; ++g) {
        const float4 vv =
            *reinterpret_cast<const float4*>(vs + (kk + u) * (D + 4) + tx * 4 + 32 * g);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float pu = u == 0 ? p[i].x : u == 1 ? p[i].y : u == 2 ? p[i].z : p[i].w;
          acc[i][g * 4 + 0] += pu * vv.x;
          acc[i][g * 4 + 1] += pu * vv.y;
          acc[i][g * 4 + 2] += pu * vv.z;
          acc[i][g * 4 + 3] += pu * vv.w;
        }
      }
    }
  }
}

// Masks s, updates the running max m and sum l of each row, rescales acc, writes P.
template <int D>
__device__ __forceinline__ void OnlineSoftmax(float (&s)[4][8], float (&m)[4], float (&l)[4],
                                              float (&acc)[4][D / 8], float* ps, int q0,
                                              int k0, int N, bool causal, int tx, int ty) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = q0 + ty * 4 + i;
    float row_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = k0 + tx + 8 * j;
      if (col >= N || (causal && col > row)) s[i][j] = -INFINITY;
      row_max = fmaxf(row_max, s[i][j]);
    }
    const float m_new = fmaxf(m[i], RowReduceMax(row_max));
    // A row with nothing visible yet keeps offset 0 so exp2 never sees inf - inf.
    const float offset = m_new == -INFINITY ? 0.f : m_new;
    const float alpha = exp2f(m[i] - offset);
    float row_sum = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float p = exp2f(s[i][j] - offset);
      row_sum += p;
      ps[(ty * 4 + i) * (kBk + 4) + tx + 8 * j] = p;
    }
    l[i] = l[i] * alpha + RowReduceSum(row_sum);
    m[i] = m_new;
#pragma unroll
    for (int c = 0; c < D / 8; ++c) acc[i][c] *= alpha;
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    AttnForwardKernel(const float* __restrict__ q, const float* __restrict__ k,
                      const float* __restrict__ v, float* __restrict__ o, int N, int causal,
                      float scale_log2) {
  extern __shared__ float4 smem4[];
  float* qs = reinterpret_cast<float*>(smem4);
  float* kvs = qs + kBq * (D + 4);
  float* ps = kvs + kBk * (D + 4);
  const int tx = threadIdx.x & 7, ty = threadIdx.x >> 3;
  const int q0 = blockIdx.y * kBq;
  const size_t head = size_t(blockIdx.x) * N * D;
  q += head, k += head, v += head, o += head;

  LoadTile<D>(q, qs, q0, N, scale_log2);
  float m[4], l[4], acc[4][D / 8], s[4][8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY, l[i] = 0.f;
#pragma unroll
    for (int c = 0; c < D / 8; ++c) acc[i][c] = 0.f;
  }
  const int kv_end = causal ? min(N, q0 + kBq) : N;
  for (int k0 = 0; k0 < kv_end; k0 += kBk) {
    __syncthreads();  // the previous tile's P V reads are done
    LoadTile<D>(k, kvs, k0, N, 1.f);
    __syncthreads();
    TileScores<D>(qs, kvs, tx, ty, s);
    OnlineSoftmax<D>(s, m, l, acc, ps, q0, k0, N, causal != 0, tx, ty);
    __syncthreads();  // K reads are done before V overwrites the buffer
    LoadTile<D>(v, kvs, k0, N, 1.f);
    __syncthreads();
    AccumulatePV<D>(ps, kvs, tx, ty, acc);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = q0 + ty * 4 + i;
    if (row >= N) continue;
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
#pragma unroll
    for (int g = 0; g < D / 32; ++g) {
      const float4 out = make_float4(acc[i][g * 4] * inv, acc[i][g * 4 + 1] * inv,
                                     acc[i][g * 4 + 2] * inv, acc[i][g * 4 + 3] * inv);
      *reinterpret_cast<float4*>(o + size_t(row) * D + tx * 4 + 32 * g) = out;
    }
  }
}

using KernelFn = void (*)(const float*, const float*, const float*, float*, int, int, float);

KernelFn KernelFor(int D) {
  switch (D) {
    case 32: return AttnForwardKernel<32>;
    case 64: return AttnForwardKernel<64>;
    case 96: return AttnForwardKernel<96>;
    case 128: return AttnForwardKernel<128>;
    default: return nullptr;
  }
}

struct Launch {
  KernelFn fn = nullptr;
  dim3 grid, block;
  size_t smem = 0;
  float scale_log2 = 0.f;
};

// Checks the shape and device limits and opts the kernel into its shared memory.
int PrepareLaunch(int B, int H, int N, int D, float scale, int device, Launch* launch,
                  char* err, size_t err_len) {
  if (B <= 0 || H <= 0 || N <= 0) {
    SetError(err, err_len, "shape must be positive, got B=%d H=%d N=%d D=%d", B, H, N, D);
    return ATTN_INVALID_ARGUMENT;
  }
  launch->fn = KernelFor(D);
  if (launch->fn == nullptr) {
    SetError(err, err_len, "head dim D=%d unsupported (need 32, 64, 96 or 128)", D);
    return ATTN_INVALID_ARGUMENT;
  }
  const long long q_tiles = (N + kBq - 1) / kBq;
  if (q_tiles > 65535 || (long long)B * H > 2147483647LL) {
    SetError(err, err_len, "shape too large for the grid: B*H=%lld N=%d", (long long)B * H, N);
    return ATTN_INVALID_ARGUMENT;
  }
  ATTN_CUDA_CHECK(cudaSetDevice(device), "cudaSetDevice");
  int optin = 0;
  ATTN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                  "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
  launch->smem = size_t(SmemFloats(D)) * sizeof(float);
  if (launch->smem > size_t(optin)) {
    SetError(err, err_len, "D=%d needs %zu bytes of shared memory per block, device allows %d",
             D, launch->smem, optin);
    return ATTN_INVALID_ARGUMENT;
  }
  ATTN_CUDA_CHECK(cudaFuncSetAttribute(launch->fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(launch->smem)),
                  "cudaFuncSetAttribute (does the library hold code for this GPU?)");
  launch->grid = dim3(unsigned(B) * unsigned(H), unsigned(q_tiles));
  launch->block = dim3(kThreads);
  launch->scale_log2 = (scale > 0 ? scale : 1.f / std::sqrt(float(D))) * kLog2e;
  return ATTN_OK;
}

// Device copies of q, k, v and the output, freed on scope exit.
struct DeviceBuffers {
  float* q = nullptr;
  float* k = nullptr;
  float* v = nullptr;
  float* o = nullptr;
  ~DeviceBuffers() {
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(o);
  }
};

int Upload(const float* q, const float* k, const float* v, size_t count, DeviceBuffers* buf,
           char* err, size_t err_len) {
  const size_t bytes = count * sizeof(float);
  ATTN_CUDA_CHECK(cudaMalloc(&buf->q, bytes), "cudaMalloc(q)");
  ATTN_CUDA_CHECK(cudaMalloc(&buf->k, bytes), "cudaMalloc(k)");
  ATTN_CUDA_CHECK(cudaMalloc(&buf->v, bytes), "cudaMalloc(v)");
  ATTN_CUDA_CHECK(cudaMalloc(&buf->o, bytes), "cudaMalloc(out)");
  ATTN_CUDA_CHECK(cudaMemcpy(buf->q, q, bytes, cudaMemcpyHostToDevice), "copy q to device");
  ATTN_CUDA_CHECK(cudaMemcpy(buf->k, k, bytes, cudaMemcpyHostToDevice), "copy k to device");
  ATTN_CUDA_CHECK(cudaMemcpy(buf->v, v, bytes, cudaMemcpyHostToDevice), "copy v to device");
  return ATTN_OK;
}

int LaunchOnce(const Launch& l, const DeviceBuffers& buf, int N, int causal, char* err,
               size_t err_len) {
  l.fn<<<l.grid, l.block, l.smem>>>(buf.q, buf.k, buf.v, buf.o, N, causal, l.scale_log2);
  ATTN_CUDA_CHECK(cudaGetLastError(), "kernel launch");
  return ATTN_OK;
}

// Launches warmup + iters times; records an event pair around each timed launch without
// host synchronisation in between, so launch latency does not inflate the times.
int TimeLaunches(const Launch& l, const DeviceBuffers& buf, int N, int causal, int warmup,
                 int iters, float* times_ms, char* err, size_t err_len) {
  for (int i = 0; i < warmup; ++i) {
    if (int st = LaunchOnce(l, buf, N, causal, err, err_len)) return st;
  }
  std::vector<cudaEvent_t> events(size_t(2) * iters, nullptr);
  int st = ATTN_OK;
  for (auto& e : events) {
    cudaError_t ce = cudaEventCreate(&e);
    if (ce != cudaSuccess) { st = Fail(ce, "cudaEventCreate", err, err_len); break; }
  }
  for (int i = 0; st == ATTN_OK && i < iters; ++i) {
    cudaEventRecord(events[2 * i]);
    st = LaunchOnce(l, buf, N, causal, err, err_len);
    cudaEventRecord(events[2 * i + 1]);
  }
  if (st == ATTN_OK) {
    cudaError_t ce = cudaEventSynchronize(events.back());
    if (ce != cudaSuccess) st = Fail(ce, "kernel execution", err, err_len);
  }
  for (int i = 0; st == ATTN_OK && i < iters; ++i) {
    cudaError_t ce = cudaEventElapsedTime(&times_ms[i], events[2 * i], events[2 * i + 1]);
    if (ce != cudaSuccess) st = Fail(ce, "cudaEventElapsedTime", err, err_len);
  }
  for (auto& e : events)
    if (e) cudaEventDestroy(e);
  return st;
}

}  // namespace

extern "C" ATTN_API int attn_cuda_device_count(int* count, char* err, size_t err_len) {
  if (count == nullptr) {
    SetError(err, err_len, "null count");
    return ATTN_INVALID_ARGUMENT;
  }
  *count = 0;
  cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess) {
    *count = 0;
    return Fail(e, "cudaGetDeviceCount", err, err_len);
  }
  if (*count == 0) {
    SetError(err, err_len, "no CUDA device visible");
    return ATTN_NO_DEVICE;
  }
  return ATTN_OK;
}

extern "C" ATTN_API int attn_cuda_device_info(int device, char* name, size_t name_len,
                                              int* major, int* minor, char* err,
                                              size_t err_len) {
  if (name == nullptr || name_len == 0 || major == nullptr || minor == nullptr) {
    SetError(err, err_len, "null output argument");
    return ATTN_INVALID_ARGUMENT;
  }
  cudaDeviceProp prop;
  ATTN_CUDA_CHECK(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::snprintf(name, name_len, "%s", prop.name);
  *major = prop.major;
  *minor = prop.minor;
  return ATTN_OK;
}

extern "C" ATTN_API int attn_cuda_supports_head_dim(int D) { return KernelFor(D) != nullptr; }

extern "C" ATTN_API int attn_forward_cuda(const float* q, const float* k, const float* v,
                                          float* out, int B, int H, int N, int D, int causal,
                                          float scale, int device, char* err,
                                          size_t err_len) {
  if (!q || !k || !v || !out) {
    SetError(err, err_len, "null buffer");
    return ATTN_INVALID_ARGUMENT;
  }
  Launch launch;
  if (int st = PrepareLaunch(B, H, N, D, scale, device, &launch, err, err_len)) return st;
  const size_t count = size_t(B) * H * N * D;
  DeviceBuffers buf;
  if (int st = Upload(q, k, v, count, &buf, err, err_len)) return st;
  if (int st = LaunchOnce(launch, buf, N, causal, err, err_len)) return st;
  ATTN_CUDA_CHECK(cudaMemcpy(out, buf.o, count * sizeof(float), cudaMemcpyDeviceToHost),
                  "kernel execution / copy out");
  return ATTN_OK;
}

extern "C" ATTN_API int attn_benchmark_cuda(const float* q, const float* k, const float* v,
                                            int B, int H, int N, int D, int causal,
                                            float scale, int device, int warmup, int iters,
                                            float* times_ms, char* err, size_t err_len) {
  if (!q || !k || !v || !times_ms || iters <= 0 || warmup < 0) {
    SetError(err, err_len, "null buffer or iters <= 0 or warmup < 0");
    return ATTN_INVALID_ARGUMENT;
  }
  Launch launch;
  if (int st = PrepareLaunch(B, H, N, D, scale, device, &launch, err, err_len)) return st;
  DeviceBuffers buf;
  if (int st = Upload(q, k, v, size_t(B) * H * N * D, &buf, err, err_len)) return st;
  try {
    return TimeLaunches(launch, buf, N, causal, warmup, iters, times_ms, err, err_len);
  } catch (const std::exception& e) {  // the event vector's allocation
    SetError(err, err_len, "benchmark: %s", e.what());
    return ATTN_OUT_OF_MEMORY;
  }
}

// farm probe: proves that this host's driver loads a module built for its GPU and that
// the GPU computes correctly. Plain CUDA C++, no dependencies beyond the CUDA runtime.
//
//   nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -o probe probe.cu
//   ./probe [--device N] [--n-saxpy N]
//
// Prints exactly one JSON line on stdout:
//   {"ok":true,"device":"NVIDIA H100 80GB HBM3","cc":"9.0","max_abs_err":1.1e-07,
//    "message":"...", "device_index":0, "binary_arch":"sm_90", "driver_version":"13.0",
//    "runtime_version":"13.0", "saxpy_max_abs_err":0, "attention_max_abs_err":1.1e-07,
//    "elapsed_ms":123.4}
// Exit codes: 0 ok; 1 wrong results; 2 bad usage; 3 no driver or no device;
// 4 the module does not load or a kernel fails (e.g. built for another arch).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;
constexpr int kExitKernel = 4;

// Tolerances: saxpy is one fused multiply-add per element (exact up to rounding);
// the attention sums D products and N softmax terms in float32.
constexpr double kSaxpyTol = 1e-5;
constexpr double kAttentionTol = 2e-4;

// Tiny attention shape: [B, H, N, D].
constexpr int kB = 1, kH = 2, kN = 48, kD = 32;

struct Result {
  bool ok = false;
  int exit_code = kExitKernel;
  int device_index = 0;
  std::string device, cc, message, binary_arch, driver_version, runtime_version;
  double saxpy_err = -1, attention_err = -1;
};

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string VersionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// A JSON number, or null for a value that was never measured.
std::string Number(double v) {
  if (v < 0 || !std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

void PrintJson(const Result& r, double elapsed_ms) {
  const double max_err = std::max(r.saxpy_err, r.attention_err);
  std::printf(
      "{\"ok\":%s,\"device\":\"%s\",\"cc\":\"%s\",\"max_abs_err\":%s,\"message\":\"%s\","
      "\"device_index\":%d,\"binary_arch\":\"%s\",\"driver_version\":\"%s\","
      "\"runtime_version\":\"%s\",\"saxpy_max_abs_err\":%s,\"attention_max_abs_err\":%s,"
      "\"elapsed_ms\":%.1f}\n",
      r.ok ? "true" : "false", JsonEscape(r.device).c_str(), JsonEscape(r.cc).c_str(),
      Number(max_err).c_str(), JsonEscape(r.message).c_str(), r.device_index,
      JsonEscape(r.binary_arch).c_str(), r.driver_version.c_str(), r.runtime_version.c_str(),
      Number(r.saxpy_err).c_str(), Number(r.attention_err).c_str(), elapsed_ms);
  std::fflush(stdout);
}

__global__ void SaxpyKernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// One thread per query row of one (batch, head): two passes, max then sum.
__global__ void TinyAttentionKernel(const float* q, const float* k, const float* v, float* o,
                                    int N, int D, float scale) {
  const int row = threadIdx.x;
  const size_t head = size_t(blockIdx.x) * N * D;
  if (row >= N) return;
  const float* qr = q + head + size_t(row) * D;
  float max_s = -INFINITY;
  for (int j = 0; j < N; ++j) {
    float s = 0.f;
    for (int d = 0; d < D; ++d) s += qr[d] * k[head + size_t(j) * D + d];
    max_s = fmaxf(max_s, s * scale);
  }
  float sum = 0.f;
  float* orow = o + head + size_t(row) * D;
  for (int d = 0; d < D; ++d) orow[d] = 0.f;
  for (int j = 0; j < N; ++j) {
    float s = 0.f;
    for (int d = 0; d < D; ++d) s += qr[d] * k[head + size_t(j) * D + d];
    const float p = expf(s * scale - max_s);
    sum += p;
    for (int d = 0; d < D; ++d) orow[d] += p * v[head + size_t(j) * D + d];
  }
  for (int d = 0; d < D; ++d) orow[d] /= sum;
}

// Deterministic inputs in [-1, 1): no library random generator, same on every host.
std::vector<float> Pattern(size_t n, unsigned seed) {
  std::vector<float> out(n);
  unsigned x = seed * 2654435761u + 1u;
  for (auto& f : out) {
    x = x * 1664525u + 1013904223u;
    f = float(x >> 8) / float(1u << 23) - 1.f;
  }
  return out;
}

void CpuAttention(const std::vector<float>& q, const std::vector<float>& k,
                  const std::vector<float>& v, std::vector<double>& o, double scale) {
  std::vector<double> s(kN);
  for (int h = 0; h < kB * kH; ++h) {
    const size_t base = size_t(h) * kN * kD;
    for (int i = 0; i < kN; ++i) {
      double m = -INFINITY, sum = 0;
      for (int j = 0; j < kN; ++j) {
        double dot = 0;
        for (int d = 0; d < kD; ++d) dot += double(q[base + i * kD + d]) * k[base + j * kD + d];
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      for (int d = 0; d < kD; ++d) o[base + i * kD + d] = 0;
      for (int j = 0; j < kN; ++j) {
        const double p = std::exp(s[j] - m);
        sum += p;
        for (int d = 0; d < kD; ++d) o[base + i * kD + d] += p * v[base + j * kD + d];
      }
      for (int d = 0; d < kD; ++d) o[base + i * kD + d] /= sum;
    }
  }
}

// Records a failed CUDA call in r; returns true when `e` is an error.
bool Failed(cudaError_t e, const char* what, Result& r) {
  if (e == cudaSuccess) return false;
  r.message = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  const bool no_device = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
                         e == cudaErrorInvalidDevice || e == cudaErrorInitializationError;
  r.exit_code = no_device ? kExitNoDevice : kExitKernel;
  return true;
}

#define PROBE_CHECK(call, what) \
  if (Failed((call), what, r)) return false

// Device buffers freed on scope exit.
struct DeviceBuffer {
  float* ptr = nullptr;
  ~DeviceBuffer() { cudaFree(ptr); }
};

bool Upload(const std::vector<float>& host, DeviceBuffer& buf, Result& r) {
  PROBE_CHECK(cudaMalloc(&buf.ptr, host.size() * sizeof(float)), "cudaMalloc");
  PROBE_CHECK(cudaMemcpy(buf.ptr, host.data(), host.size() * sizeof(float),
                         cudaMemcpyHostToDevice), "cudaMemcpy to device");
  return true;
}

bool RunSaxpy(int n, Result& r) {
  const float a = 1.5f;
  std::vector<float> x = Pattern(n, 1), y = Pattern(n, 2), out(n);
  DeviceBuffer dx, dy;
  if (!Upload(x, dx, r) || !Upload(y, dy, r)) return false;
  SaxpyKernel<<<(n + 255) / 256, 256>>>(n, a, dx.ptr, dy.ptr);
  PROBE_CHECK(cudaGetLastError(), "saxpy launch");
  PROBE_CHECK(cudaMemcpy(out.data(), dy.ptr, n * sizeof(float), cudaMemcpyDeviceToHost),
              "saxpy execution");
  r.saxpy_err = 0;
  for (int i = 0; i < n; ++i)
    r.saxpy_err = std::max(r.saxpy_err, std::fabs(double(out[i]) - (double(a) * x[i] + y[i])));
  return true;
}

bool RunAttention(Result& r) {
  const size_t count = size_t(kB) * kH * kN * kD;
  const double scale = 1.0 / std::sqrt(double(kD));
  std::vector<float> q = Pattern(count, 3), k = Pattern(count, 4), v = Pattern(count, 5);
  std::vector<float> out(count);
  std::vector<double> ref(count);
  DeviceBuffer dq, dk, dv, dout;
  if (!Upload(q, dq, r) || !Upload(k, dk, r) || !Upload(v, dv, r)) return false;
  PROBE_CHECK(cudaMalloc(&dout.ptr, count * sizeof(float)), "cudaMalloc");
  TinyAttentionKernel<<<kB * kH, kN>>>(dq.ptr, dk.ptr, dv.ptr, dout.ptr, kN, kD, float(scale));
  PROBE_CHECK(cudaGetLastError(), "attention launch");
  PROBE_CHECK(cudaMemcpy(out.data(), dout.ptr, count * sizeof(float), cudaMemcpyDeviceToHost),
              "attention execution");
  CpuAttention(q, k, v, ref, scale);
  r.attention_err = 0;
  for (size_t i = 0; i < count; ++i)
    r.attention_err = std::max(r.attention_err, std::fabs(double(out[i]) - ref[i]));
  return true;
}

// Device discovery and the module check: the saxpy kernel's attributes say which binary
// the driver picked (binaryVersion 90 = sm_90), or fail when none fits this GPU.
bool Describe(Result& r) {
  int driver = 0, runtime = 0, count = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  r.driver_version = driver > 0 ? VersionText(driver) : "none";
  r.runtime_version = VersionText(runtime);
  PROBE_CHECK(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (r.device_index >= count) {
    r.message = "device " + std::to_string(r.device_index) + " not present (" +
                std::to_string(count) + " visible)";
    r.exit_code = kExitNoDevice;
    return false;
  }
  PROBE_CHECK(cudaSetDevice(r.device_index), "cudaSetDevice");
  cudaDeviceProp prop;
  PROBE_CHECK(cudaGetDeviceProperties(&prop, r.device_index), "cudaGetDeviceProperties");
  r.device = prop.name;
  r.cc = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  cudaFuncAttributes attr;
  PROBE_CHECK(cudaFuncGetAttributes(&attr, SaxpyKernel), "loading the module");
  r.binary_arch = "sm_" + std::to_string(attr.binaryVersion);
  return true;
}

bool Run(int n_saxpy, Result& r) {
  if (!Describe(r) || !RunSaxpy(n_saxpy, r) || !RunAttention(r)) return false;
  const bool good = r.saxpy_err <= kSaxpyTol && r.attention_err <= kAttentionTol;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s: saxpy max err %.3g (tol %.0e), attention max err %.3g "
                "(tol %.0e)", good ? "ok" : "wrong results", r.saxpy_err, kSaxpyTol,
                r.attention_err, kAttentionTol);
  r.message = buf;
  r.ok = good;
  r.exit_code = good ? kExitOk : kExitWrong;
  return good;
}

bool ParseInt(const char* text, int lo, int hi, int* out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = int(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r;
  int n_saxpy = 1 << 20;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--device") == 0 && has_value &&
        ParseInt(argv[i + 1], 0, 1023, &r.device_index)) {
      ++i;
    } else if (std::strcmp(argv[i], "--n-saxpy") == 0 && has_value &&
               ParseInt(argv[i + 1], 1, 1 << 28, &n_saxpy)) {
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--device N] [--n-saxpy N]\n", argv[0]);
      r.message = std::string("bad argument: ") + argv[i];
      r.exit_code = kExitUsage;
      PrintJson(r, 0);
      return kExitUsage;
    }
  }
  Run(n_saxpy, r);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  PrintJson(r, ms);
  return r.exit_code;
}

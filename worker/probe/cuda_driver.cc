// GPU enumeration through the CUDA driver API, loaded at run time so farm-worker runs
// (and reports zero GPUs) on machines without an NVIDIA driver. On WSL2 the driver is the
// Windows one, mounted at /usr/lib/wsl/lib; a host that should have a GPU but cannot reach
// it says why in Capabilities.gpu_driver_error.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/fs.h"
#include "common/log.h"
#include "worker/probe/probe.h"

namespace farm::agent {
namespace {

// The driver API's C types, declared here so no CUDA header is needed to build.
using CUresult = int;
using CUdevice = int;
constexpr int kAttrIntegrated = 18;  // CU_DEVICE_ATTRIBUTE_INTEGRATED
constexpr int kAttrCcMajor = 75;     // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;     // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
// CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES
constexpr int kAttrHostPageTables = 100;

struct DriverApi {
  CUresult (*init)(unsigned int) = nullptr;
  CUresult (*driver_version)(int*) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*total_mem)(size_t*, CUdevice) = nullptr;
  CUresult (*device_uuid)(unsigned char*, CUdevice) = nullptr;  // optional

  bool Load(void* lib) {
    init = reinterpret_cast<decltype(init)>(dlsym(lib, "cuInit"));
    driver_version = reinterpret_cast<decltype(driver_version)>(dlsym(lib, "cuDriverGetVersion"));
    device_count = reinterpret_cast<decltype(device_count)>(dlsym(lib, "cuDeviceGetCount"));
    device_get = reinterpret_cast<decltype(device_get)>(dlsym(lib, "cuDeviceGet"));
    device_name = reinterpret_cast<decltype(device_name)>(dlsym(lib, "cuDeviceGetName"));
    device_attribute =
        reinterpret_cast<decltype(device_attribute)>(dlsym(lib, "cuDeviceGetAttribute"));
    total_mem = reinterpret_cast<decltype(total_mem)>(dlsym(lib, "cuDeviceTotalMem_v2"));
    device_uuid = reinterpret_cast<decltype(device_uuid)>(dlsym(lib, "cuDeviceGetUuid"));
    return init && driver_version && device_count && device_get && device_name &&
           device_attribute && total_mem;
  }
};

std::string FormatUuid(const unsigned char* b) {
  char out[64];
  std::snprintf(out, sizeof(out),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return out;
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  ..." -> "580.65.06".
std::string KernelDriverVersion() {
  auto text = fs::ReadFile("/sys/module/nvidia/version");
  if (text.ok()) return text->substr(0, text->find_first_of(" \n"));
  return "";
}

void AddDevice(const DriverApi& api, int index, farm::v1::Capabilities* caps) {
  CUdevice dev = 0;
  if (api.device_get(&dev, index) != 0) return;
  farm::v1::Gpu* gpu = caps->add_gpus();
  gpu->set_index(index);
  char name[256] = {0};
  if (api.device_name(name, sizeof(name) - 1, dev) == 0) gpu->set_name(name);
  int major = 0, minor = 0;
  api.device_attribute(&major, kAttrCcMajor, dev);
  api.device_attribute(&minor, kAttrCcMinor, dev);
  gpu->set_cc_major(major);
  gpu->set_cc_minor(minor);
  size_t bytes = 0;
  if (api.total_mem(&bytes, dev) == 0) gpu->set_memory_bytes(static_cast<int64_t>(bytes));
  int integrated = 0, host_page_tables = 0;
  api.device_attribute(&integrated, kAttrIntegrated, dev);
  api.device_attribute(&host_page_tables, kAttrHostPageTables, dev);
  if (IsUnifiedMemoryGpu(integrated != 0, host_page_tables != 0, gpu->memory_bytes(),
                         caps->ram_bytes())) {
    // Its memory is the host's: the RAM builds compile in, not memory of its own.
    gpu->set_unified_memory(true);
    gpu->set_memory_bytes(caps->ram_bytes());
  }
  unsigned char uuid[16] = {0};
  if (api.device_uuid != nullptr && api.device_uuid(uuid, dev) == 0)
    gpu->set_uuid(FormatUuid(uuid));
}

// CUDA_ERROR_NO_DEVICE: cuInit saw no device it may use.
constexpr CUresult kCudaErrorNoDevice = 100;

// An NVIDIA kernel module is loaded: the host has a GPU, whatever libcuda says.
bool NvidiaModuleLoaded() { return fs::Exists("/proc/driver/nvidia/version"); }

Wsl2DriverFacts Wsl2Facts(const std::string& load_error) {
  return {.driver_dir_exists = fs::Exists(kWslDriverDir),
          .libcuda_exists = fs::Exists(std::string(kWslDriverDir) + "/libcuda.so.1"),
          .dxg_exists = fs::Exists("/dev/dxg"),
          .load_error = load_error};
}

// Records why the host has no usable GPU driver where it should have one (WSL2, or a
// loaded NVIDIA kernel module). Elsewhere a missing driver is a CPU-only host (logged at
// debug level), and a broken one is only a warning (`broken`).
void DriverProblem(farm::v1::Capabilities* caps, const std::string& what, bool broken) {
  std::string error;
  if (caps->wsl2()) {
    error = Wsl2DriverError(Wsl2Facts(what));
  } else if (NvidiaModuleLoaded()) {
    error = "the NVIDIA kernel module is loaded but the CUDA driver cannot be used, so no GPU: " +
            what +
            ". Fix: install the driver's user-space libraries of the same version as "
            "the module (libcuda.so.1, e.g. the libnvidia-compute package) and start the "
            "worker again";
  }
  if (error.empty()) {
    broken ? log::Warn(what + ": reporting 0 GPUs")
           : log::Debug("no CUDA driver (" + what + "): 0 GPUs");
    return;
  }
  caps->set_gpu_driver_error(error);
}

// dlopens the first usable driver library of CudaDriverCandidates; "" and *error when none.
void* OpenDriver(bool wsl2, std::string* loaded, std::string* error) {
  for (const std::string& name : CudaDriverCandidates(wsl2)) {
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      *loaded = name;
      return lib;
    }
    const char* why = dlerror();
    if (error->empty()) *error = why != nullptr ? why : name + " not loadable";
  }
  return nullptr;
}

}  // namespace

bool CudaVisibleDevicesHidesEveryGpu(const char* value) {
  if (value == nullptr) return false;
  std::string first = std::string(value).substr(0, std::string(value).find(','));
  return first.empty() || first[0] == '-' || first == "none" || first == "NoDevFiles";
}

void ProbeGpus(farm::v1::Capabilities* caps) {
  std::string loaded, load_error;
  void* lib = OpenDriver(caps->wsl2(), &loaded, &load_error);
  if (lib == nullptr) {
    DriverProblem(caps, load_error, false);
    return;
  }
  caps->set_cuda_driver_library(loaded);
  DriverApi api;
  int count = 0, version = 0;
  if (!api.Load(lib)) {
    DriverProblem(caps, loaded + " lacks a CUDA driver API symbol the worker needs", true);
  } else if (CUresult rc = api.init(0);
             rc == kCudaErrorNoDevice &&
             CudaVisibleDevicesHidesEveryGpu(std::getenv("CUDA_VISIBLE_DEVICES"))) {
    // A worker told to use no GPU (CUDA_VISIBLE_DEVICES=-1 or "") is a CPU-only worker,
    // not a broken driver.
    log::Info("CUDA_VISIBLE_DEVICES hides every GPU: reporting 0 GPUs");
  } else if (rc != 0) {
    DriverProblem(caps, "cuInit failed with CUDA error " + std::to_string(rc), true);
  } else {
    if (api.driver_version(&version) == 0) {
      caps->set_driver_cuda_version(std::to_string(version / 1000) + "." +
                                    std::to_string((version % 1000) / 10));
    }
    caps->set_driver_version(KernelDriverVersion());
    if (api.device_count(&count) == 0) {
      for (int i = 0; i < count && i < 64; ++i) AddDevice(api, i, caps);
    }
  }
  // The library stays loaded: unloading a CUDA driver after cuInit is not supported.
}

}  // namespace farm::agent

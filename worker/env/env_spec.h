// What an environment is: (Python version, CUDA toolkit version, platform, and the lock of
// every distribution its venv holds: torch with its CUDA variant, what torch requires, the
// recipe's build requirements, all resolved by farmd). Every field arrives from a recipe or
// an assignment, so Validate() is strict and runs before anything is fetched or named on
// disk. Pure functions; safe from any thread.
#ifndef FARM_WORKER_ENV_ENV_SPEC_H_
#define FARM_WORKER_ENV_ENV_SPEC_H_

#include <string>
#include <vector>

#include "common/lock/env_lock.h"
#include "common/status.h"

namespace farm::env {

struct EnvSpec {
  std::string python;                     // "3.11" or "3.11.2"
  std::string cuda;                       // "13.0" or "13.0.2"; "" for no toolkit
  std::string platform = "linux_x86_64";  // the wheel platform of the build
  lock::EnvLock lock;                     // exactly what the venv gets
};

// Checks every field; the message names the first bad one.
Status Validate(const EnvSpec& spec);

// An index URL for torch CUDA variant `variant`: `template_url` with every "{variant}"
// replaced by it ("cu128"; "cpu" when empty), so one setting serves every variant
// ("https://download.pytorch.org/whl/{variant}/").
std::string ExpandVariant(const std::string& template_url, const std::string& variant);

// The torch version the lock installs ("2.8.0+cu128"); "" for none.
std::string TorchOf(const EnvSpec& spec);

// "3.11" of "3.11" or "3.11.2".
std::string MajorMinor(const std::string& version);

// A canonical one-line-per-field text of the spec (the lock by its digest), for digests.
std::string CanonicalText(const EnvSpec& spec);

// "python 3.11 + torch 2.8.0+cu128 + CUDA 13.0 (locked: 33 packages, 4.5 GiB)", for logs.
std::string Describe(const EnvSpec& spec);

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_ENV_SPEC_H_

// What an environment is: (Python version, torch version with its CUDA variant, the
// recipe's build requirements, CUDA toolkit version, platform). Every field arrives from a
// recipe or an assignment, so Validate() is strict and runs before anything is fetched or
// named on disk. Pure functions; safe from any thread.
#ifndef FARM_WORKER_ENV_ENV_SPEC_H_
#define FARM_WORKER_ENV_ENV_SPEC_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace farm::env {

struct EnvSpec {
  std::string python;  // "3.11" or "3.11.2"
  std::string torch;   // "2.8.0+cu128"; "" for none
  // Exact pins, pip's syntax: "setuptools==66.1.1", optionally followed by
  // " --hash=sha256:<hex>" (then the index must list that digest too).
  std::vector<std::string> requirements;
  std::string cuda;                       // "13.0" or "13.0.2"; "" for no toolkit
  std::string platform = "linux_x86_64";  // the wheel platform of the build
};

struct Requirement {
  std::string name;     // as written
  std::string version;  // exact, local label included
  std::string sha256;   // "" when not pinned by hash
  std::string Spec() const { return name + "==" + version; }
};

// Parses one pin. InvalidArgument for anything but NAME==VERSION [--hash=sha256:HEX]
// (no ranges, URLs, extras, markers or options).
Result<Requirement> ParseRequirement(const std::string& text);

// Checks every field; the message names the first bad one.
Status Validate(const EnvSpec& spec);

// The CUDA variant of a torch version's local label: "2.8.0+cu128" -> "cu128"; "" for
// none ("2.8.0", "2.8.0+cpu" -> "cpu").
std::string TorchVariant(const std::string& torch);

// An index URL for torch CUDA variant `variant`: `template_url` with every "{variant}"
// replaced by it ("cu128"; "cpu" when empty), so one setting serves every variant
// ("https://download.pytorch.org/whl/{variant}/").
std::string ExpandVariant(const std::string& template_url, const std::string& variant);

// "3.11" of "3.11" or "3.11.2".
std::string MajorMinor(const std::string& version);

// A canonical one-line-per-field text of the spec (requirements sorted), for digests.
std::string CanonicalText(const EnvSpec& spec);

// "python 3.11 + torch 2.8.0+cu128 + CUDA 13.0 (+2 requirements)", for logs.
std::string Describe(const EnvSpec& spec);

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_ENV_SPEC_H_

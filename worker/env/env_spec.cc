#include "worker/env/env_spec.h"

#include <regex>

namespace farm::env {

Status Validate(const EnvSpec& spec) {
  static const std::regex python_re(R"(3\.\d{1,2}(\.\d{1,3})?)");
  static const std::regex cuda_re(R"(\d{1,2}\.\d{1,2}(\.\d{1,3})?)");
  static const std::regex platform_re(R"([a-z0-9_]{1,60})");
  if (!std::regex_match(spec.python, python_re)) {
    return Status::InvalidArgument("python version '" + spec.python.substr(0, 40) +
                                   "' is not 3.X[.Y]");
  }
  if (!spec.cuda.empty() && !std::regex_match(spec.cuda, cuda_re)) {
    return Status::InvalidArgument("CUDA version '" + spec.cuda.substr(0, 40) + "' is not X.Y[.Z]");
  }
  if (!std::regex_match(spec.platform, platform_re)) {
    return Status::InvalidArgument("platform '" + spec.platform.substr(0, 60) + "' is not valid");
  }
  if (spec.lock.packages.empty()) return Status::InvalidArgument("the environment has no lock");
  if (!spec.lock.python.empty() && spec.lock.python != MajorMinor(spec.python)) {
    return Status::InvalidArgument("the lock is for Python " + spec.lock.python + ", not " +
                                   spec.python);
  }
  if (!spec.lock.platform.empty() && spec.lock.platform != spec.platform) {
    return Status::InvalidArgument("the lock is for " + spec.lock.platform + ", not " +
                                   spec.platform);
  }
  return Status::Ok();
}

std::string TorchOf(const EnvSpec& spec) {
  const lock::LockedPackage* torch = lock::Find(spec.lock, "torch");
  return torch == nullptr ? "" : torch->version;
}

std::string MajorMinor(const std::string& version) {
  size_t first = version.find('.');
  size_t second = first == std::string::npos ? first : version.find('.', first + 1);
  return version.substr(0, second);
}

std::string CanonicalText(const EnvSpec& spec) {
  return "python=" + spec.python + "\ncuda=" + spec.cuda + "\nplatform=" + spec.platform +
         "\nlock=" + lock::Digest(spec.lock) + "\n";
}

std::string Describe(const EnvSpec& spec) {
  std::string text = "python " + spec.python;
  if (std::string torch = TorchOf(spec); !torch.empty()) text += " + torch " + torch;
  if (!spec.cuda.empty()) text += " + CUDA " + spec.cuda;
  return text + " (locked: " + lock::DescribeSummary(lock::Summarize(spec.lock)) + ")";
}

std::string ExpandVariant(const std::string& template_url, const std::string& variant) {
  std::string out = template_url;
  const std::string name = variant.empty() ? "cpu" : variant;
  for (size_t at = out.find("{variant}"); at != std::string::npos; at = out.find("{variant}", at)) {
    out.replace(at, 9, name);
    at += name.size();
  }
  return out;
}

}  // namespace farm::env

#include "worker/env/env_spec.h"

#include <algorithm>
#include <regex>

namespace farm::env {

Result<Requirement> ParseRequirement(const std::string& text) {
  static const std::regex re(
      R"(([A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?)==([0-9][A-Za-z0-9.+!_-]{0,62}))"
      R"((?:\s+--hash=sha256:([0-9a-f]{64}))?)");
  std::smatch m;
  if (text.size() > 300 || !std::regex_match(text, m, re)) {
    return Status::InvalidArgument("requirement '" + text.substr(0, 100) +
                                   "' is not NAME==VERSION [--hash=sha256:HEX]");
  }
  return Requirement{m[1], m[2], m[3]};
}

Status Validate(const EnvSpec& spec) {
  static const std::regex python_re(R"(3\.\d{1,2}(\.\d{1,3})?)");
  static const std::regex torch_re(
      R"(\d{1,3}\.\d{1,3}(\.\d{1,3})?([a-z]+\d{0,4})?(\+[a-z0-9.]{1,40})?)");
  static const std::regex cuda_re(R"(\d{1,2}\.\d{1,2}(\.\d{1,3})?)");
  static const std::regex platform_re(R"([a-z0-9_]{1,60})");
  if (!std::regex_match(spec.python, python_re)) {
    return Status::InvalidArgument("python version '" + spec.python.substr(0, 40) +
                                   "' is not 3.X[.Y]");
  }
  if (!spec.torch.empty() && !std::regex_match(spec.torch, torch_re)) {
    return Status::InvalidArgument("torch version '" + spec.torch.substr(0, 60) + "' is not valid");
  }
  if (!spec.cuda.empty() && !std::regex_match(spec.cuda, cuda_re)) {
    return Status::InvalidArgument("CUDA version '" + spec.cuda.substr(0, 40) + "' is not X.Y[.Z]");
  }
  if (!std::regex_match(spec.platform, platform_re)) {
    return Status::InvalidArgument("platform '" + spec.platform.substr(0, 60) + "' is not valid");
  }
  if (spec.requirements.size() > 200) return Status::InvalidArgument("more than 200 requirements");
  for (const std::string& r : spec.requirements) FARM_RETURN_IF_ERROR(ParseRequirement(r).status());
  return Status::Ok();
}

std::string TorchVariant(const std::string& torch) {
  size_t plus = torch.find('+');
  return plus == std::string::npos ? "" : torch.substr(plus + 1);
}

std::string MajorMinor(const std::string& version) {
  size_t first = version.find('.');
  size_t second = first == std::string::npos ? first : version.find('.', first + 1);
  return version.substr(0, second);
}

std::string CanonicalText(const EnvSpec& spec) {
  std::vector<std::string> reqs = spec.requirements;
  std::sort(reqs.begin(), reqs.end());
  std::string text = "python=" + spec.python + "\ntorch=" + spec.torch + "\ncuda=" + spec.cuda +
                     "\nplatform=" + spec.platform + "\n";
  for (const std::string& r : reqs) text += "requirement=" + r + "\n";
  return text;
}

std::string Describe(const EnvSpec& spec) {
  std::string text = "python " + spec.python;
  if (!spec.torch.empty()) text += " + torch " + spec.torch;
  if (!spec.cuda.empty()) text += " + CUDA " + spec.cuda;
  if (!spec.requirements.empty()) {
    text += " (+" + std::to_string(spec.requirements.size()) + " requirement" +
            (spec.requirements.size() == 1 ? ")" : "s)");
  }
  return text;
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

#include "common/flags.h"

namespace farm {

const FlagSpec* Flags::Find(const std::string& name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Status Flags::Parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positionals_.push_back(argv[i]);
      break;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      positionals_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool inline_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const FlagSpec* spec = Find(name);
    if (!spec) return Status::InvalidArgument("unknown flag --" + name);
    if (spec->value.empty()) {
      if (inline_value && value != "true" && value != "false") {
        return Status::InvalidArgument("--" + name + " takes no value");
      }
      values_[name].push_back(inline_value ? value : "true");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) return Status::InvalidArgument("--" + name + " needs a " + spec->value);
      value = argv[++i];
    }
    values_[name].push_back(value);
  }
  return Status::Ok();
}

std::string Flags::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> Flags::GetAll(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>() : it->second;
}

Result<int64_t> Flags::GetInt(const std::string& name, int64_t fallback) const {
  if (!Has(name)) return fallback;
  std::string v = Get(name);
  try {
    size_t used = 0;
    int64_t n = std::stoll(v, &used);
    if (used == v.size()) return n;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument("--" + name + " must be an integer, got \"" + v + "\"");
}

std::string Flags::Usage() const {
  std::string out;
  for (const auto& s : specs_) {
    std::string left = "  --" + s.name + (s.value.empty() ? "" : " " + s.value);
    if (left.size() < 28) left.resize(28, ' ');
    out += left + " " + s.help + "\n";
  }
  return out;
}

}  // namespace farm

#include "common/flags.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

namespace farm {

namespace {

// Edits (insert, delete, replace one character) between `a` and `b`.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string Flags::Closest(const std::string& name) const {
  constexpr size_t kMaxEdits = 2;
  std::string best;
  size_t best_edits = kMaxEdits + 1;
  for (const auto& s : specs_) {
    size_t edits = EditDistance(name, s.name);
    if (edits < best_edits) {
      best = s.name;
      best_edits = edits;
    }
  }
  return best;
}

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
    if (!spec) {
      std::string near = Closest(name);
      return Status::InvalidArgument("unknown flag --" + name +
                                     (near.empty() ? "" : " (did you mean --" + near + "?)"));
    }
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

Status Flags::MergeConfigFile(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return Status::InvalidArgument(path + ": expected a mapping of flag names");
  for (const auto& entry : root) {
    std::string name = entry.first.as<std::string>("");
    std::string where = path + ":" + std::to_string(entry.first.Mark().line + 1) + ": ";
    const FlagSpec* spec = Find(name);
    if (!spec || name == "config" || name == "help") {
      return Status::InvalidArgument(where + "unknown setting \"" + name + "\"");
    }
    if (Has(name)) continue;  // the command line wins
    std::vector<std::string> values;
    if (entry.second.IsSequence()) {
      for (const auto& v : entry.second) values.push_back(v.as<std::string>(""));
    } else if (entry.second.IsScalar()) {
      values.push_back(entry.second.as<std::string>());
    } else {
      return Status::InvalidArgument(where + "\"" + name + "\" must be a value or a list");
    }
    if (spec->value.empty() && values.size() == 1 && values[0] == "false") continue;
    for (auto& v : values) values_[name].push_back(spec->value.empty() ? "true" : v);
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

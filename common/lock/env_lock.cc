#include "common/lock/env_lock.h"

#include <algorithm>
#include <map>
#include <set>

// Parse errors come back as values: no exception leaves this file.
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/wheel_name.h"

namespace farm::lock {
namespace {

constexpr size_t kMaxString = 4096;
constexpr size_t kMaxRequirements = 256;

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string Quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static const char* kHex = "0123456789abcdef";
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string QuotedList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + Quote(items[i]);
  return out + "]";
}

// The PEP 508 environment marker of a cell: which environments the lock is good for.
std::string EnvironmentMarker(const EnvLock& lock) {
  std::string machine = lock.platform;
  for (const char* prefix : {"linux_", "manylinux_"}) {
    if (machine.rfind(prefix, 0) == 0) machine = machine.substr(std::string(prefix).size());
  }
  return "python_version == '" + lock.python + "' and sys_platform == 'linux' and " +
         "platform_machine == '" + machine + "'";
}

bool IsHttpUrl(const std::string& url) {
  return url.rfind("https://", 0) == 0 || url.rfind("http://", 0) == 0;
}

bool Clean(const std::string& text) {
  return text.size() <= kMaxString && std::none_of(text.begin(), text.end(), [](unsigned char c) {
           return c < 0x20 || c == 0x7f;
         });
}

Status Problem(const std::string& where, const std::string& what) {
  return Status::InvalidArgument("pylock.toml: " + where + ": " + what);
}

// A string field of `table`; "" when absent. InvalidArgument when present but not a clean
// string.
Result<std::string> StringField(const toml::table& table, const char* key,
                                const std::string& where) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::string();
  std::optional<std::string> value = node->value<std::string>();
  if (!value || !Clean(*value)) return Problem(where, std::string(key) + " must be a short string");
  return *value;
}

Result<std::vector<std::string>> StringList(const toml::table& table, const char* key,
                                            const std::string& where) {
  std::vector<std::string> out;
  const toml::node* node = table.get(key);
  if (node == nullptr) return out;
  const toml::array* array = node->as_array();
  if (array == nullptr || array->size() > kMaxRequirements) {
    return Problem(where, std::string(key) + " must be a list of at most 256 strings");
  }
  for (const toml::node& item : *array) {
    std::optional<std::string> value = item.value<std::string>();
    if (!value || !Clean(*value)) return Problem(where, std::string(key) + " holds a non-string");
    out.push_back(*value);
  }
  return out;
}

Result<LockedPackage> ParseWheel(const toml::table& wheel, LockedPackage package,
                                 const std::string& where) {
  FARM_ASSIGN_OR_RETURN(package.filename, StringField(wheel, "name", where));
  FARM_ASSIGN_OR_RETURN(package.url, StringField(wheel, "url", where));
  if (wheel.get("path") != nullptr) {
    return Problem(where, "a wheel by local path cannot be fetched by a worker; give its url");
  }
  if (!IsHttpUrl(package.url)) return Problem(where, "the wheel's url must be http(s)");
  if (package.filename.empty()) {
    package.filename = package.url.substr(package.url.rfind('/') + 1);
  }
  Result<wheel::WheelFilename> parsed = wheel::ParseWheelFilename(package.filename);
  if (!parsed.ok() || package.filename.find('/') != std::string::npos) {
    return Problem(where, "'" + package.filename.substr(0, 200) + "' is not a wheel file name");
  }
  if (wheel::NormalizeProjectName(parsed->name) != package.name ||
      (!package.version.empty() && parsed->version != package.version)) {
    return Problem(
        where, "the wheel " + package.filename + " is not " + package.name + " " + package.version);
  }
  if (package.version.empty()) package.version = parsed->version;
  if (const toml::node* size = wheel.get("size")) {
    std::optional<int64_t> bytes = size->value<int64_t>();
    if (!bytes || *bytes < 0) return Problem(where, "size must be a number of bytes");
    package.size = *bytes;
  }
  const toml::table* hashes = wheel["hashes"].as_table();
  std::optional<std::string> sha = hashes ? (*hashes)["sha256"].value<std::string>() : std::nullopt;
  if (!sha || sha->size() != 64 ||
      !std::all_of(sha->begin(), sha->end(), [](char c) { return std::isxdigit(c) != 0; })) {
    return Problem(where, "the wheel needs hashes = {sha256 = \"<64 hex digits>\"}");
  }
  package.sha256 = *sha;
  std::transform(package.sha256.begin(), package.sha256.end(), package.sha256.begin(),
                 [](char c) { return static_cast<char>(std::tolower(c)); });
  return package;
}

Result<LockedPackage> ParsePackage(const toml::table& table, size_t n) {
  std::string where = "packages[" + std::to_string(n) + "]";
  LockedPackage package;
  FARM_ASSIGN_OR_RETURN(std::string name, StringField(table, "name", where));
  if (name.empty()) return Problem(where, "a package needs a name");
  package.name = wheel::NormalizeProjectName(name);
  where += " (" + package.name + ")";
  FARM_ASSIGN_OR_RETURN(package.version, StringField(table, "version", where));
  FARM_ASSIGN_OR_RETURN(package.index, StringField(table, "index", where));
  for (const char* source : {"vcs", "directory", "archive", "sdist"}) {
    if (table.get(source) != nullptr) {
      return Problem(where, std::string("a ") + source +
                                " source: the farm installs wheels only (give the package's "
                                "wheel)");
    }
  }
  const toml::array* wheels = table["wheels"].as_array();
  if (wheels == nullptr || wheels->empty()) return Problem(where, "no wheel");
  if (wheels->size() != 1 || !(*wheels)[0].is_table()) {
    return Problem(where, "more than one wheel: a cell's lock names the one wheel it installs");
  }
  return ParseWheel(*(*wheels)[0].as_table(), std::move(package), where);
}

Status ParseFarmTable(const toml::table& root, EnvLock* lock) {
  const toml::table* tool = root["tool"].as_table();
  const toml::table* farm = tool ? (*tool)["farm"].as_table() : nullptr;
  if (farm == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(lock->python, StringField(*farm, "python", "tool.farm"));
  FARM_ASSIGN_OR_RETURN(lock->platform, StringField(*farm, "platform", "tool.farm"));
  FARM_ASSIGN_OR_RETURN(lock->index_name, StringField(*farm, "index-name", "tool.farm"));
  FARM_ASSIGN_OR_RETURN(lock->requirements, StringList(*farm, "requirements", "tool.farm"));
  return Status::Ok();
}

}  // namespace

std::string ToToml(const EnvLock& in) {
  EnvLock lock = in;
  std::sort(lock.packages.begin(), lock.packages.end(),
            [](const LockedPackage& a, const LockedPackage& b) { return a.name < b.name; });
  std::string out = "lock-version = \"1.0\"\n";
  if (!lock.python.empty() && !lock.platform.empty()) {
    out += "environments = [" + Quote(EnvironmentMarker(lock)) + "]\n";
    out += "requires-python = " + Quote("==" + lock.python + ".*") + "\n";
  }
  out += "created-by = \"gpu-wheel-farm\"\n";
  for (const LockedPackage& p : lock.packages) {
    out += "\n[[packages]]\nname = " + Quote(p.name) + "\nversion = " + Quote(p.version) + "\n";
    if (!p.index.empty()) out += "index = " + Quote(p.index) + "\n";
    out += "\n[[packages.wheels]]\nname = " + Quote(p.filename) + "\nurl = " + Quote(p.url) + "\n";
    if (p.size >= 0) out += "size = " + std::to_string(p.size) + "\n";
    out += "hashes = {sha256 = " + Quote(p.sha256) + "}\n";
  }
  out += "\n[tool.farm]\n";
  out += "python = " + Quote(lock.python) + "\nplatform = " + Quote(lock.platform) + "\n";
  out += "index-name = " + Quote(lock.index_name) + "\n";
  out += "requirements = " + QuotedList(lock.requirements) + "\n";
  return out;
}

Result<EnvLock> ParseToml(const std::string& text) {
  if (static_cast<int64_t>(text.size()) > kMaxLockBytes) {
    return Status::InvalidArgument("pylock.toml: larger than " + fs::HumanBytes(kMaxLockBytes));
  }
  toml::parse_result parsed = toml::parse(std::string_view(text));
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    return Status::InvalidArgument("pylock.toml:" + std::to_string(error.source().begin.line) +
                                   ": " + std::string(error.description()));
  }
  const toml::table& root = parsed.table();
  std::optional<std::string> version = root["lock-version"].value<std::string>();
  if (!version || (version->rfind("1.", 0) != 0 && *version != "1")) {
    return Status::InvalidArgument("pylock.toml: lock-version must be 1.x (PEP 751)");
  }
  EnvLock lock;
  FARM_RETURN_IF_ERROR(ParseFarmTable(root, &lock));
  const toml::array* packages = root["packages"].as_array();
  if (packages == nullptr) return Status::InvalidArgument("pylock.toml: no [[packages]]");
  if (packages->size() > kMaxPackages) {
    return Status::InvalidArgument("pylock.toml: more than " + std::to_string(kMaxPackages) +
                                   " packages");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < packages->size(); ++i) {
    const toml::table* table = (*packages)[i].as_table();
    if (table == nullptr) return Problem("packages[" + std::to_string(i) + "]", "not a table");
    FARM_ASSIGN_OR_RETURN(LockedPackage package, ParsePackage(*table, i));
    if (!names.insert(package.name).second) {
      return Problem("packages[" + std::to_string(i) + "]", package.name + " is locked twice");
    }
    lock.packages.push_back(std::move(package));
  }
  std::sort(lock.packages.begin(), lock.packages.end(),
            [](const LockedPackage& a, const LockedPackage& b) { return a.name < b.name; });
  return lock;
}

std::string Digest(const EnvLock& lock) { return Sha256Hex(ToToml(lock)); }

LockSummary Summarize(const EnvLock& lock) {
  LockSummary s;
  for (const LockedPackage& p : lock.packages) {
    s.packages += 1;
    if (p.size >= 0)
      s.bytes += p.size;
    else
      s.unknown_sizes += 1;
  }
  return s;
}

std::string DescribeSummary(const LockSummary& s) {
  std::string out = std::to_string(s.packages) + (s.packages == 1 ? " package, " : " packages, ") +
                    fs::HumanBytes(s.bytes);
  if (s.unknown_sizes > 0) out += ", " + std::to_string(s.unknown_sizes) + " of unknown size";
  return out;
}

std::vector<std::string> Diff(const EnvLock& before, const EnvLock& after) {
  std::map<std::string, const LockedPackage*> old_by_name, new_by_name;
  for (const LockedPackage& p : before.packages) old_by_name[p.name] = &p;
  for (const LockedPackage& p : after.packages) new_by_name[p.name] = &p;
  std::vector<std::string> out;
  for (const auto& [name, now] : new_by_name) {
    auto was = old_by_name.find(name);
    if (was == old_by_name.end()) {
      out.push_back("+ " + name + " " + now->version);
    } else if (was->second->version != now->version) {
      out.push_back(name + " " + was->second->version + " -> " + now->version);
    } else if (was->second->sha256 != now->sha256) {
      out.push_back(name + " " + now->version + " (another file)");
    }
  }
  for (const auto& [name, was] : old_by_name) {
    if (!new_by_name.count(name)) out.push_back("- " + name + " " + was->version);
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    auto key = [](const std::string& s) {
      return s.rfind("+ ", 0) == 0 || s.rfind("- ", 0) == 0 ? s.substr(2) : s;
    };
    return key(a) < key(b);
  });
  return out;
}

const LockedPackage* Find(const EnvLock& lock, const std::string& name) {
  const std::string wanted = wheel::NormalizeProjectName(name);
  for (const LockedPackage& p : lock.packages) {
    if (p.name == wanted) return &p;
  }
  return nullptr;
}

}  // namespace farm::lock

// Command-line flags for the farm's executables: "--name value", "--name=value", repeated
// flags, and bare boolean flags. Unknown flags are errors, so a typo never goes unnoticed.
//
//   Flags flags({{"data-dir", "DIR", "where state lives"}, {"verbose", "", "more logs"}});
//   FARM_RETURN_IF_ERROR(flags.Parse(argc, argv));
//   std::string dir = flags.Get("data-dir", "data");
#ifndef FARM_COMMON_FLAGS_H_
#define FARM_COMMON_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm {

struct FlagSpec {
  std::string name;   // without dashes
  std::string value;  // placeholder for help ("DIR"); empty for a boolean flag
  std::string help;
};

class Flags {
 public:
  explicit Flags(std::vector<FlagSpec> specs) : specs_(std::move(specs)) {}

  // Parses argv[first..]; non-flag arguments are collected as positionals.
  Status Parse(int argc, char** argv, int first = 1);

  // Reads a YAML mapping of flag names to values (lists for repeated flags) and applies
  // every entry not already given on the command line, so flags override the file.
  // InvalidArgument with "file:line: ..." for unknown names or non-scalar values.
  Status MergeConfigFile(const std::string& path);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> GetAll(const std::string& name) const;
  // InvalidArgument when present but not an integer.
  Result<int64_t> GetInt(const std::string& name, int64_t fallback) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  // One line per flag, for --help.
  std::string Usage() const;

 private:
  const FlagSpec* Find(const std::string& name) const;
  // The known flag within two edits of `name` ("arch-list" for "arch-lists"), or "".
  std::string Closest(const std::string& name) const;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

}  // namespace farm

#endif  // FARM_COMMON_FLAGS_H_

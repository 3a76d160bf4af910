// IgnoreRules: .gitignore-style patterns deciding which files of a source tree stay on the
// client when farmctl packs it (gitignore(5): '#' comments, '!' negation, a trailing '/'
// for directories only, a leading or inner '/' anchoring the pattern to its file's
// directory, '*', '?', '[...]' and '**'). The last matching pattern wins. Files inside an
// ignored directory are never looked at, as with git. Value type; const methods are
// thread-safe.
#ifndef FARM_COMMON_ARCHIVE_IGNORE_RULES_H_
#define FARM_COMMON_ARCHIVE_IGNORE_RULES_H_

#include <string>
#include <string_view>
#include <vector>

namespace farm::archives {

class IgnoreRules {
 public:
  // Adds the patterns of one .gitignore-style text that lies in directory `base` (relative
  // to the tree's root, '/'-separated, "" for the root itself). Later calls take
  // precedence, so add a directory's file after its parents' files.
  void Add(std::string_view text, const std::string& base);
  // Whether `path` (relative to the root, '/'-separated, no leading or trailing '/') is
  // ignored by the patterns added so far; `is_dir` says whether it is a directory.
  bool Ignored(const std::string& path, bool is_dir) const;
  bool empty() const { return patterns_.empty(); }

 private:
  struct Pattern {
    std::string glob;  // without '!', the anchoring '/' and the trailing '/'
    std::string base;  // directory of the file that holds it, "" or "a/b"
    bool negated = false;
    bool dir_only = false;
    bool anchored = false;  // matched against the path below base, else the basename
  };
  std::vector<Pattern> patterns_;
};

// Whether `text` matches the glob `pattern`: '*' and '?' never match '/', '**' as a whole
// path component matches any number of components, "[a-z]" and "[!a-z]" match one
// character, '\' escapes the next character.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace farm::archives

#endif  // FARM_COMMON_ARCHIVE_IGNORE_RULES_H_

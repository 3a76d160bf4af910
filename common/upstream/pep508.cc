#include "common/upstream/pep508.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "common/strings.h"
#include "common/wheel/wheel_name.h"

namespace farm::upstream {
namespace {

constexpr int kMaxMarkerDepth = 16;

struct Token {
  enum Kind { kEnd, kOpen, kClose, kWord, kString, kOp } kind = kEnd;
  std::string text;
};

// Splits a marker into tokens; nullopt for a character outside the grammar.
std::optional<std::vector<Token>> Tokenize(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')') {
      out.push_back({c == '(' ? Token::kOpen : Token::kClose, std::string(1, c)});
      ++i;
    } else if (c == '\'' || c == '"') {
      size_t end = s.find(c, i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      out.push_back({Token::kString, std::string(s.substr(i + 1, end - i - 1))});
      i = end + 1;
    } else if (std::string_view("<>=!~").find(c) != std::string_view::npos) {
      size_t j = i;
      while (j < s.size() && j - i < 3 &&
             std::string_view("<>=!~").find(s[j]) != std::string_view::npos)
        ++j;
      out.push_back({Token::kOp, std::string(s.substr(i, j - i))});
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.'))
        ++j;
      out.push_back({Token::kWord, std::string(s.substr(i, j - i))});
      i = j;
    } else {
      return std::nullopt;
    }
  }
  out.push_back({Token::kEnd, ""});
  return out;
}

bool IsVariable(const std::string& word) {
  static const char* const kVariables[] = {
      "python_version",      "python_full_version",    "os_name",
      "sys_platform",        "platform_release",       "platform_system",
      "platform_version",    "platform_machine",       "platform_python_implementation",
      "implementation_name", "implementation_version", "extra"};
  return std::any_of(std::begin(kVariables), std::end(kVariables),
                     [&](const char* v) { return word == v; });
}

class MarkerParser {
 public:
  MarkerParser(std::vector<Token> tokens, const MarkerEnv& env, std::string extra)
      : tokens_(std::move(tokens)), env_(env), extra_(std::move(extra)) {}

  Result<bool> Run() {
    FARM_ASSIGN_OR_RETURN(bool value, Or(0));
    if (Peek().kind != Token::kEnd) return Bad("unexpected '" + Peek().text + "'");
    return value;
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  Status Bad(const std::string& why) const {
    return Status::InvalidArgument("environment marker: " + why);
  }

  Result<bool> Or(int depth) {
    FARM_ASSIGN_OR_RETURN(bool value, And(depth));
    while (Peek().kind == Token::kWord && Peek().text == "or") {
      Next();
      FARM_ASSIGN_OR_RETURN(bool rhs, And(depth));
      value = value || rhs;
    }
    return value;
  }

  Result<bool> And(int depth) {
    FARM_ASSIGN_OR_RETURN(bool value, Atom(depth));
    while (Peek().kind == Token::kWord && Peek().text == "and") {
      Next();
      FARM_ASSIGN_OR_RETURN(bool rhs, Atom(depth));
      value = value && rhs;
    }
    return value;
  }

  Result<bool> Atom(int depth) {
    if (depth > kMaxMarkerDepth) return Bad("nested too deeply");
    if (Peek().kind == Token::kOpen) {
      Next();
      FARM_ASSIGN_OR_RETURN(bool value, Or(depth + 1));
      if (Next().kind != Token::kClose) return Bad("missing ')'");
      return value;
    }
    FARM_ASSIGN_OR_RETURN(Value lhs, ReadValue());
    std::string op;
    if (Peek().kind == Token::kOp) {
      op = Next().text;
    } else if (Peek().kind == Token::kWord && Peek().text == "in") {
      op = Next().text;
    } else if (Peek().kind == Token::kWord && Peek().text == "not") {
      Next();
      if (Peek().kind != Token::kWord || Next().text != "in") return Bad("expected 'not in'");
      op = "not in";
    } else {
      return Bad("expected a comparison after '" + lhs.text + "'");
    }
    FARM_ASSIGN_OR_RETURN(Value rhs, ReadValue());
    return Compare(lhs, op, rhs);
  }

  struct Value {
    std::string text;
    bool is_extra = false;
  };

  Result<Value> ReadValue() {
    const Token& t = Next();
    if (t.kind == Token::kString) return Value{t.text, false};
    if (t.kind == Token::kWord && IsVariable(t.text)) {
      if (t.text == "extra") return Value{extra_, true};
      auto it = env_.find(t.text);
      return Value{it == env_.end() ? "" : it->second, false};
    }
    return Bad("'" + t.text + "' is not a marker variable or a quoted string");
  }

  Result<bool> Compare(const Value& lhs, const std::string& op, const Value& rhs) {
    if (op == "in") return rhs.text.find(lhs.text) != std::string::npos;
    if (op == "not in") return rhs.text.find(lhs.text) == std::string::npos;
    if (lhs.is_extra || rhs.is_extra) {
      if (op != "==" && op != "!=") return Bad("extra compares with == or != only");
      bool equal = wheel::NormalizeProjectName(lhs.text) == wheel::NormalizeProjectName(rhs.text);
      return op == "==" ? equal : !equal;
    }
    static const char* const kOps[] = {"<", "<=", ">", ">=", "==", "!=", "~=", "==="};
    if (std::none_of(std::begin(kOps), std::end(kOps), [&](const char* o) { return op == o; })) {
      return Bad("unknown operator '" + op + "'");
    }
    if (op != "===" && ParseReleaseVersion(lhs.text)) {
      Result<VersionSpec> spec = VersionSpec::Parse(op + rhs.text);
      if (spec.ok()) return spec->Matches(*ParseReleaseVersion(lhs.text));
    }
    if (op == "==" || op == "===") return lhs.text == rhs.text;
    if (op == "!=") return lhs.text != rhs.text;
    return Bad("cannot order \"" + lhs.text + "\" and \"" + rhs.text + "\" as versions");
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  const MarkerEnv& env_;
  std::string extra_;
};

}  // namespace

MarkerEnv LinuxCpythonEnv(const std::string& python_version, const std::string& machine) {
  size_t first = python_version.find('.');
  size_t second = first == std::string::npos ? first : python_version.find('.', first + 1);
  std::string full = second == std::string::npos ? python_version + ".0" : python_version;
  return {{"python_version", python_version.substr(0, second)},
          {"python_full_version", full},
          {"implementation_version", full},
          {"implementation_name", "cpython"},
          {"platform_python_implementation", "CPython"},
          {"os_name", "posix"},
          {"sys_platform", "linux"},
          {"platform_system", "Linux"},
          {"platform_machine", machine}};
}

Result<bool> EvaluateMarker(std::string_view marker, const MarkerEnv& env,
                            const std::string& extra) {
  if (TrimSpace(marker).empty()) return true;
  if (marker.size() > wheel::kMaxDependencyBytes) {
    return Status::InvalidArgument("environment marker: too long");
  }
  std::optional<std::vector<Token>> tokens = Tokenize(marker);
  if (!tokens) {
    return Status::InvalidArgument("environment marker: unexpected character in \"" +
                                   std::string(marker.substr(0, 120)) + "\"");
  }
  return MarkerParser(std::move(*tokens), env, extra).Run();
}

Result<bool> SpecifierMatches(const std::string& specifier, const std::string& version) {
  std::optional<ReleaseVersion> v = ParseReleaseVersion(version);
  if (!v) return Status::InvalidArgument("\"" + version + "\" is not a version");
  FARM_ASSIGN_OR_RETURN(VersionSpec spec, VersionSpec::Parse(specifier));
  return spec.Matches(*v);
}

}  // namespace farm::upstream

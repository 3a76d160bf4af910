#include "daemon/requests/state.h"

#include <array>
#include <utility>

namespace farm::requests {
namespace {

constexpr std::array<std::pair<State, std::string_view>, 6> kRequestStateNames = {{
    {State::kRequested, "requested"},
    {State::kApproved, "approved"},
    {State::kBuilding, "building"},
    {State::kBuilt, "built"},
    {State::kRefused, "refused"},
    {State::kFailed, "failed"},
}};

}  // namespace

std::string_view StateName(State state) {
  for (const auto& [s, name] : kRequestStateNames) {
    if (s == state) return name;
  }
  return "unknown";
}

std::optional<State> StateOf(int value) {
  for (const auto& [s, name] : kRequestStateNames) {
    if (static_cast<int>(s) == value) return s;
  }
  return std::nullopt;
}

std::optional<State> ParseState(std::string_view text) {
  for (const auto& [s, name] : kRequestStateNames) {
    if (name == text) return s;
  }
  return std::nullopt;
}

bool IsFinal(State state) {
  return state == State::kBuilt || state == State::kRefused || state == State::kFailed;
}

}  // namespace farm::requests

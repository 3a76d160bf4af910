// The states of a wheel request (docs/requests.md), with their one name table.
//
//   requested -> approved -> building -> built
//       |            |           '-----> failed
//       '------------'---------------> refused (with the reason)
//   requested -> built (the cell was built already: answered with the wheel)
//
// "requested" is where an anonymous request waits for an admin's approval; "approved" is
// held only while the build is submitted. Pure; thread-safe.
#ifndef FARM_DAEMON_REQUESTS_STATE_H_
#define FARM_DAEMON_REQUESTS_STATE_H_

#include <optional>
#include <string_view>

namespace farm::requests {

enum class State {
  kRequested = 1,
  kApproved = 2,
  kBuilding = 3,
  kBuilt = 4,
  kRefused = 5,
  kFailed = 6,
};

inline constexpr State kAllStates[] = {State::kRequested, State::kApproved, State::kBuilding,
                                       State::kBuilt,     State::kRefused,  State::kFailed};

// "requested", "approved", "building", "built", "refused", "failed".
std::string_view StateName(State state);
// The state of a stored value or of a name; nullopt for anything else.
std::optional<State> StateOf(int value);
std::optional<State> ParseState(std::string_view name);
// Whether nothing more happens to a request in `state` by itself.
bool IsFinal(State state);

}  // namespace farm::requests

#endif  // FARM_DAEMON_REQUESTS_STATE_H_

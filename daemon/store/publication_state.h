// The states of a publication (one wheel, asset or file bound for GitHub or the Hub), with
// their one name table. The store keeps the name (a TEXT column, also matched by name in
// its SQL); the outbox, the API and the dashboard read the enum.
#ifndef FARM_DAEMON_STORE_PUBLICATION_STATE_H_
#define FARM_DAEMON_STORE_PUBLICATION_STATE_H_

#include <optional>
#include <string_view>

namespace farm::store {

enum class PublicationState {
  kPending,    // waiting for its turn (or its not_before time after a transient failure)
  kUploading,  // the outbox is sending it; picked up again after a farmd restart
  kUploaded,   // a GitHub asset on a draft release, published with its release
  kPublished,  // visible at its target
  kFailed,     // gave up (or needs a person: a missing token, a refused upload)
  // The wheel is larger than the destination takes: nothing was uploaded, nothing will be
  // retried, and the build's release goes out without it (docs/publishing.md, "Size limits").
  kRefused,
};

inline constexpr PublicationState kPublicationStates[] = {
    PublicationState::kPending,   PublicationState::kUploading, PublicationState::kUploaded,
    PublicationState::kPublished, PublicationState::kFailed,    PublicationState::kRefused};

// "pending", "uploading", "uploaded", "published", "failed", "refused".
std::string_view PublicationStateName(PublicationState state);

// The state named `name`; nullopt for any other text.
std::optional<PublicationState> ParsePublicationState(std::string_view name);

// Uploaded or published: the bytes are at the target.
bool IsDelivered(PublicationState state);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PUBLICATION_STATE_H_

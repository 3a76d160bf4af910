#include "daemon/store/publication_state.h"

namespace farm::store {

std::string_view PublicationStateName(PublicationState state) {
  switch (state) {
    case PublicationState::kPending:
      return "pending";
    case PublicationState::kUploading:
      return "uploading";
    case PublicationState::kUploaded:
      return "uploaded";
    case PublicationState::kPublished:
      return "published";
    case PublicationState::kFailed:
      return "failed";
    case PublicationState::kRefused:
      return "refused";
  }
  return "failed";
}

std::optional<PublicationState> ParsePublicationState(std::string_view name) {
  for (PublicationState s : kPublicationStates) {
    if (PublicationStateName(s) == name) return s;
  }
  return std::nullopt;
}

bool IsDelivered(PublicationState state) {
  return state == PublicationState::kUploaded || state == PublicationState::kPublished;
}

}  // namespace farm::store

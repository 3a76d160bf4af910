#include "daemon/store/publication_state.h"

#include <set>
#include <string>

#include "tests/support/test_util.h"

namespace farm::store {
namespace {

TEST(PublicationStateTest, EveryStateHasOneNameThatReadsBack) {
  std::set<std::string> names;
  for (PublicationState s : kPublicationStates) {
    std::string name(PublicationStateName(s));
    EXPECT_TRUE(names.insert(name).second) << "two states named " << name;
    EXPECT_EQ(ParsePublicationState(name), s) << name;
  }
  // The store's SQL matches these names ('pending', 'uploading', ...): they never change.
  EXPECT_EQ(names, (std::set<std::string>{"pending", "uploading", "uploaded", "published", "failed",
                                          "refused"}));
  EXPECT_EQ(ParsePublicationState("Published"), std::nullopt);
  EXPECT_EQ(ParsePublicationState(""), std::nullopt);
}

TEST(PublicationStateTest, DeliveredMeansTheBytesAreAtTheTarget) {
  EXPECT_TRUE(IsDelivered(PublicationState::kUploaded));
  EXPECT_TRUE(IsDelivered(PublicationState::kPublished));
  EXPECT_FALSE(IsDelivered(PublicationState::kPending));
  EXPECT_FALSE(IsDelivered(PublicationState::kUploading));
  EXPECT_FALSE(IsDelivered(PublicationState::kFailed));
}

}  // namespace
}  // namespace farm::store

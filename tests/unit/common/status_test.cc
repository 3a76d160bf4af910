#include "common/status.h"

#include <gtest/gtest.h>

namespace farm {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  FARM_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(StatusTest, OkAndErrorsFormat) {
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  EXPECT_EQ(Status::NotFound("build 7").ToString(), "NOT_FOUND: build 7");
  EXPECT_EQ(Status::Internal("x").WithContext("store").message(), "store: x");
}

TEST(StatusTest, AssignOrReturnPropagates) {
  ASSERT_TRUE(Quarter(8).ok());
  EXPECT_EQ(Quarter(8).value(), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "odd: 3");
}

}  // namespace
}  // namespace farm

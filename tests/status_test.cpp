#include "grammask/status.h"

#include <gtest/gtest.h>

namespace grammask {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.to_string(), "ok");
}

TEST(Status, FormatsLocation) {
  Status s(ErrorCode::kSyntax, "expected ']'", SourceLocation{3, 14, 40});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.to_string(), "3:14: error: expected ']'");
  EXPECT_EQ(Status(ErrorCode::kIo, "no file").to_string(), "error: no file");
}

TEST(Result, CarriesValueOrStatus) {
  Result<int> good(7);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  Result<int> bad(Status(ErrorCode::kInvalidArgument, "nope"));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace grammask

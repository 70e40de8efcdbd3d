#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/core/files/old_execd_files.h"

namespace abx::core {
namespace {

// execd's /directories/list order: each directory's entries by name in byte order, a
// directory's children right after it, before its next sibling. A plain string sort
// would put "/d/a-b" before "/d/a/x" ('-' < '/').
TEST(ListingOrderTest, ChildrenFollowTheirDirectory) {
  std::vector<std::string> paths = {"/d/b", "/d/a/x", "/d/a-b", "/d/a", "/d/a/x/y", "/d/B", "/d/a.txt"};
  std::sort(paths.begin(), paths.end(), ListingOrder);
  EXPECT_EQ(paths, (std::vector<std::string>{"/d/B", "/d/a", "/d/a/x", "/d/a/x/y", "/d/a-b", "/d/a.txt", "/d/b"}));
}

TEST(ListingOrderTest, IsAStrictOrder) {
  EXPECT_FALSE(ListingOrder("/d/a", "/d/a"));
  EXPECT_TRUE(ListingOrder("/d/a", "/d/a/b"));
  EXPECT_FALSE(ListingOrder("/d/a/b", "/d/a"));
}

}  // namespace
}  // namespace abx::core

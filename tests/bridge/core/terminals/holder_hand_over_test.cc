// Who holds a terminal and what each holder is owed (bridge/core/terminals/holder_hand_over.h).
#include "bridge/core/terminals/holder_hand_over.h"

#include <memory>

#include <gtest/gtest.h>

namespace abx::core {
namespace {

class NoHolder : public TerminalHolder {
 public:
  void OnOutput(const std::string&, uint64_t, const std::string&) override {}
  void OnExit(const std::string&, std::optional<int>, uint64_t, const std::optional<Error>&) override {}
  void OnDetached(const std::string&, uint64_t, const std::string&) override {}
};

TEST(HolderHandOverTest, TheFirstHolderTakesWithoutANoticeAndWaitsForItsAnswer) {
  HolderHandOver holders;
  auto a = std::make_shared<NoHolder>();
  EXPECT_EQ(holders.Take(a, 7), nullptr);
  EXPECT_TRUE(holders.Holds(a.get()));
  EXPECT_EQ(holders.next(), 7u);
  EXPECT_FALSE(holders.has_notice());
  EXPECT_TRUE(holders.paused());  // until the attach is answered
  holders.Resume();
  EXPECT_FALSE(holders.paused());
}

TEST(HolderHandOverTest, AnotherHolderTakingOverOwesTheEarlierOneItsPlace) {
  HolderHandOver holders;
  auto a = std::make_shared<NoHolder>();
  auto b = std::make_shared<NoHolder>();
  holders.Take(a, 0);
  holders.set_next(42);  // a has had 42 bytes
  EXPECT_EQ(holders.Take(b, 10), a);
  EXPECT_TRUE(holders.Holds(b.get()));
  EXPECT_FALSE(holders.Holds(a.get()));
  EXPECT_EQ(holders.next(), 10u);
  EXPECT_TRUE(holders.NoticeWaitingFor(a.get()));
  EXPECT_FALSE(holders.NoticeWaitingFor(b.get()));
  HolderHandOver::Notice notice = holders.PopNotice();
  EXPECT_EQ(notice.holder, a);
  EXPECT_EQ(notice.offset, 42u);
  EXPECT_EQ(notice.reason, "taken_over");
  EXPECT_FALSE(holders.NoticeWaitingFor(a.get()));
}

TEST(HolderHandOverTest, TheSameHolderTakingAgainIsOwedNothing) {
  HolderHandOver holders;
  auto a = std::make_shared<NoHolder>();
  holders.Take(a, 0);
  EXPECT_EQ(holders.Take(a, 3), nullptr);
  EXPECT_FALSE(holders.has_notice());
  EXPECT_EQ(holders.next(), 3u);
}

TEST(HolderHandOverTest, AHolderGivenUpIsToldWhereItStopped) {
  HolderHandOver holders;
  auto a = std::make_shared<NoHolder>();
  holders.Take(a, 0);
  holders.set_next(5);
  holders.GiveUp("lost");
  EXPECT_EQ(holders.holder(), nullptr);
  ASSERT_TRUE(holders.has_notice());
  HolderHandOver::Notice notice = holders.PopNotice();
  EXPECT_EQ(notice.offset, 5u);
  EXPECT_EQ(notice.reason, "lost");
  holders.GiveUp("lost");  // nobody holds it: nobody is owed
  EXPECT_FALSE(holders.has_notice());
}

TEST(HolderHandOverTest, ASessionThatEndsLosesItsNoticesAndItsHoldOnly) {
  HolderHandOver holders;
  auto a = std::make_shared<NoHolder>();
  auto b = std::make_shared<NoHolder>();
  auto c = std::make_shared<NoHolder>();
  holders.Take(a, 0);
  holders.Take(b, 0);  // a is owed a notice
  holders.GiveUp("lost");  // b is owed one
  holders.Take(c, 0);
  holders.DropNoticesFor(a.get());
  EXPECT_FALSE(holders.NoticeWaitingFor(a.get()));
  EXPECT_TRUE(holders.NoticeWaitingFor(b.get()));
  holders.Release(b.get());  // b does not hold it: c still does
  EXPECT_TRUE(holders.Holds(c.get()));
  holders.Release(c.get());
  EXPECT_EQ(holders.holder(), nullptr);
  holders.ReleaseAll();
  EXPECT_FALSE(holders.has_notice());
}

TEST(HolderHandOverTest, ACallUnderWayCountsAsANoticeComing) {
  HolderHandOver holders;
  auto a = std::make_shared<NoHolder>();
  holders.set_calling(a.get());
  EXPECT_TRUE(holders.NoticeWaitingFor(a.get()));
  holders.set_calling(nullptr);
  EXPECT_FALSE(holders.NoticeWaitingFor(a.get()));
}

TEST(HolderHandOverTest, TheLagAndWhatIsOwedFollowTheHolder) {
  HolderHandOver holders;
  EXPECT_EQ(holders.Lag(100), 0u);  // no holder: nothing owed
  EXPECT_EQ(holders.owed_from(), std::nullopt);
  auto a = std::make_shared<NoHolder>();
  holders.Take(a, 30);
  EXPECT_EQ(holders.Lag(100), 70u);
  EXPECT_EQ(holders.owed_from(), 30u);
  EXPECT_EQ(holders.Lag(20), 0u);  // a holder ahead of the end (since = end) owes nothing
}

TEST(HolderHandOverTest, EachNewHolderIsOwedTheExit) {
  HolderHandOver holders;
  auto a = std::make_shared<NoHolder>();
  auto b = std::make_shared<NoHolder>();
  holders.Take(a, 0);
  holders.set_exit_delivered();
  EXPECT_TRUE(holders.exit_delivered());
  holders.Take(b, 0);
  EXPECT_FALSE(holders.exit_delivered());
}

}  // namespace
}  // namespace abx::core

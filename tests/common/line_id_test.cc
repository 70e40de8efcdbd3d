#include "common/line_id.h"

#include <string>

#include "gtest/gtest.h"

namespace abx {
namespace {

std::string IdOf(const std::string& prefix) {
  std::string id;
  return ReadCutLineId(prefix, &id) ? id : "<none>";
}

TEST(LineIdTest, TakesACompleteIdBeforeTheCut) {
  EXPECT_EQ(IdOf(R"({"jsonrpc":"2.0","id":42,"method":"files.write","params":{"data":"AAAA)"),
            "42");
  EXPECT_EQ(IdOf(R"({"id":"q","params":{"data":"zz)"), R"("q")");
  EXPECT_EQ(IdOf(R"({"id":null,"params":{)"), "null");
  EXPECT_EQ(IdOf(R"({"id":1.0,"x":")"), "1.0");
  EXPECT_EQ(IdOf(R"({"id":"\u0061","x":")"), R"("a")");
}

TEST(LineIdTest, NoIdWhereItCouldBeWrong) {
  EXPECT_EQ(IdOf(R"({"method":"files.write","id":12)"), "<none>");  // digits may be lost
  EXPECT_EQ(IdOf(R"({"method":"m","id":"abc)"), "<none>");          // string not ended
  EXPECT_EQ(IdOf(R"({"method":"m","params":{"data":"xxx)"), "<none>");  // id after the cut
  EXPECT_EQ(IdOf(R"({"params":{"a":1},"id":5,"x":"yyy)"), "<none>");   // after a nested value
  EXPECT_EQ(IdOf(R"({"id":true,"x":")"), "<none>");                    // a boolean is no id
  EXPECT_EQ(IdOf(R"({"id":[1],"x":")"), "<none>");
  EXPECT_EQ(IdOf(R"({"id":1e400,"x":")"), "<none>");                   // infinite
  EXPECT_EQ(IdOf(R"([{"id":1},")"), "<none>");                         // not an object
  EXPECT_EQ(IdOf("{\"id\":\"\xff\",\"x\":\""), "<none>");              // not UTF-8
}

TEST(LineIdTest, TheFirstIdCounts) {
  EXPECT_EQ(IdOf(R"({"id":1,"id":2,"x":")"), "1");
}

TEST(LineIdTest, DeepNestingAfterTheIdDoesNotExhaustTheStack) {
  EXPECT_EQ(IdOf("{\"id\":7,\"p\":" + std::string(1 << 20, '[')), "7");
}

}  // namespace
}  // namespace abx

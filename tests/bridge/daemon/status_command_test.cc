// `abx-opensandbox-bridge status` prints JSON whatever bytes its socket path holds.

#include "bridge/daemon/status_command.h"

#include <rapidjson/document.h>

#include <gtest/gtest.h>

namespace abx::daemon {
namespace {

namespace pb = abx::opensandbox::v1;

TEST(StatusCommandTest, TheSocketPathIsEscaped) {
  pb::StatsReply reply;
  reply.set_pid(42);
  reply.set_build_id("0123abcd");
  reply.set_version("0.1.0");
  reply.set_sessions_active(2);
  reply.set_draining(true);
  const std::string socket = "/tmp/a \"quoted\" dir\\with\tcontrol\nbytes/bridge.sock";
  const std::string text = StatusJson(socket, reply);
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  ASSERT_FALSE(doc.HasParseError()) << text;
  ASSERT_TRUE(doc.IsObject());
  EXPECT_EQ(std::string(doc["socket"].GetString(), doc["socket"].GetStringLength()), socket);
  EXPECT_EQ(doc["pid"].GetInt(), 42);
  EXPECT_STREQ(doc["build_id"].GetString(), "0123abcd");
  EXPECT_EQ(doc["sessions_active"].GetInt64(), 2);
  EXPECT_TRUE(doc["draining"].GetBool());
  EXPECT_EQ(doc["early_writes_dropped"].GetInt64(), 0);
}

}  // namespace
}  // namespace abx::daemon

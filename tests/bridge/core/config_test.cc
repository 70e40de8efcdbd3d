#include "bridge/core/config.h"

#include <gtest/gtest.h>

namespace abx::core {
namespace {

TEST(ConfigTest, DefaultsPointAtLocalhost) {
  auto c = ParseConfig({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->lifecycle_url, "http://localhost:8080/v1");
  EXPECT_EQ(c->default_image, "python:3.12-slim");
  EXPECT_EQ(c->ready_timeout_s, 60);
  EXPECT_FALSE(c->use_server_proxy);
}

TEST(ConfigTest, BaseUrlWithOrWithoutV1) {
  EXPECT_EQ(ParseConfig({{"base_url", "http://h:1"}})->lifecycle_url, "http://h:1/v1");
  EXPECT_EQ(ParseConfig({{"base_url", "http://h:1/v1"}})->lifecycle_url, "http://h:1/v1");
  EXPECT_EQ(ParseConfig({{"base_url", "http://h:1/v1/"}})->lifecycle_url, "http://h:1/v1");
  EXPECT_EQ(ParseConfig({{"base_url", "https://h/prefix"}})->lifecycle_url, "https://h/prefix/v1");
}

TEST(ConfigTest, DomainAndProtocolAreTheAlternative) {
  auto c = ParseConfig({{"domain", "sbx.example.com:9000"}, {"protocol", "https"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->lifecycle_url, "https://sbx.example.com:9000/v1");
  // base_url wins over domain.
  EXPECT_EQ(ParseConfig({{"domain", "a"}, {"base_url", "http://b"}})->lifecycle_url, "http://b/v1");
}

TEST(ConfigTest, MalformedFieldsAreNamed) {
  struct Case {
    const char* field;
    const char* value;
  } cases[] = {
      {"ready_timeout", "abc"},      {"ready_timeout", "-1"},  {"use_server_proxy", "maybe"},
      {"network_policy", "{bad"},    {"network_policy", "[]"}, {"image_aliases", "nope"},
      {"entrypoint", "tail -f"},     {"base_url", "ftp://x"},  {"protocol", "gopher"},
      {"platform", "linux"},         {"default_timeout", "30"}, {"request_timeout", "0"},
  };
  for (const Case& c : cases) {
    auto r = ParseConfig({{c.field, c.value}});
    ASSERT_FALSE(r.ok()) << c.field << "=" << c.value;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidParams);
    EXPECT_EQ(r.error().field, c.field);
  }
}

TEST(ConfigTest, UnknownFieldAndFileErrorAreRefused) {
  EXPECT_EQ(ParseConfig({{"bogus", "1"}}).error().field, "bogus");
  EXPECT_EQ(ParseConfig({{"_config_file_error", "line 3"}}).error().field, "config_file");
}

TEST(ConfigTest, TypedFields) {
  auto c = ParseConfig({{"image_aliases", "{\"node\":\"node:22\"}"},
                        {"entrypoint", "[\"sleep\",\"infinity\"]"},
                        {"network_policy", "{\"defaultAction\":\"deny\"}"},
                        {"platform", "Linux/ARM64"},
                        {"use_server_proxy", "TRUE"},
                        {"registry_username", "u"},
                        {"registry_password", "p"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->image_aliases.at("node"), "node:22");
  EXPECT_EQ(c->entrypoint, (std::vector<std::string>{"sleep", "infinity"}));
  EXPECT_EQ(c->network_policy_json, "{\"defaultAction\":\"deny\"}");
  EXPECT_EQ(c->platform_os, "linux");
  EXPECT_EQ(c->platform_arch, "arm64");
  EXPECT_TRUE(c->use_server_proxy);
}

TEST(ConfigTest, RedactedViewHidesSecrets) {
  std::map<std::string, std::string> raw = {{"api_key", "sk-secret-1"},
                                            {"registry_username", "u"},
                                            {"registry_password", "pw-secret-2"},
                                            {"execd_access_token", "tok-secret-3"}};
  auto c = ParseConfig(raw);
  ASSERT_TRUE(c.ok());
  auto view = RedactedView(raw, *c);
  EXPECT_EQ(view["api_key"], "***");
  EXPECT_EQ(view["registry_password"], "***");
  EXPECT_EQ(view["execd_access_token"], "***");
  EXPECT_EQ(view["registry_username"], "u");
  for (const auto& [k, v] : view) EXPECT_EQ(v.find("secret"), std::string::npos) << k;
}

TEST(ConfigTest, CredentialScopeSeparatesKeys) {
  auto a = ParseConfig({{"api_key", "one"}});
  auto b = ParseConfig({{"api_key", "two"}});
  EXPECT_NE(a->CredentialScope(), b->CredentialScope());
}

}  // namespace
}  // namespace abx::core

#include "bridge/core/config.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <iterator>

#include "common/config_fields.h"

namespace abx::core {
namespace {

TEST(ConfigTest, DefaultsAreTheTablesOwn) {
  auto c = ParseConfig({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->lifecycle_url, "http://127.0.0.1:8080/v1");
  EXPECT_EQ(c->default_image, "python:3.12-slim");
  EXPECT_EQ(c->ready_timeout_s, 60);
  EXPECT_FALSE(c->use_server_proxy);
  EXPECT_EQ(c->image_aliases,
            (std::map<std::string, std::string>{{"code", "opensandbox/code-interpreter:v1.1.0"}}));
  EXPECT_EQ(c->entrypoint, (std::vector<std::string>{"tail", "-f", "/dev/null"}));
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
      {"image_aliases", "a=x,a=y"},  {"image_aliases", "=x"},  {"image_aliases", "a="},
      {"image_aliases", "a b=x"},    {"image_aliases", "a=x y"}, {"image_aliases", "a=x,,b=y"},
      {"image_aliases", "{\"a\":1}"},
      {"entrypoint", "python3 'my app.py"}, {"entrypoint", "run \\"}, {"entrypoint", "''"},
      {"entrypoint", "[\"x\",1]"},  {"base_url", "ftp://x"},  {"protocol", "gopher"},
      {"platform", "linux"},         {"default_timeout", "30"}, {"request_timeout", "0"},
  };
  for (const Case& c : cases) {
    auto r = ParseConfig({{c.field, c.value}});
    ASSERT_FALSE(r.ok()) << c.field << "=" << c.value;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidParams);
    EXPECT_EQ(r.error().field, c.field);
  }
}

TEST(ConfigTest, ImageAliasesAsNameEqualsImageAddToTheDefault) {
  auto c = ParseConfig({{"image_aliases", " node=node:22-slim , py = python:3.13 "}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->image_aliases,
            (std::map<std::string, std::string>{{"code", "opensandbox/code-interpreter:v1.1.0"},
                                                {"node", "node:22-slim"},
                                                {"py", "python:3.13"}}));
  // A configured name overrides the default's.
  auto own = ParseConfig({{"image_aliases", "code=registry.example.com/ci:2"}});
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->image_aliases.at("code"), "registry.example.com/ci:2");
  EXPECT_EQ(own->image_aliases.size(), 1u);
  // The JSON object (what the shim makes of a TOML table) still works; empty is unset.
  EXPECT_EQ(ParseConfig({{"image_aliases", "{\"n\":\"node:22\"}"}})->image_aliases.at("n"), "node:22");
  EXPECT_EQ(ParseConfig({{"image_aliases", "  "}})->image_aliases.size(), 1u);
}

TEST(ConfigTest, EntrypointIsACommandLineOrAJsonArray) {
  using Words = std::vector<std::string>;
  auto words = [](const std::string& text) { return ParseConfig({{"entrypoint", text}})->entrypoint; };
  EXPECT_EQ(words("python3 commands.py"), (Words{"python3", "commands.py"}));
  EXPECT_EQ(words("  sh -c 'sleep 1; echo \"$HOME\"'  "), (Words{"sh", "-c", "sleep 1; echo \"$HOME\""}));
  EXPECT_EQ(words("echo \"a \\\"b\\\" \\$x\" c\\ d ''"), (Words{"echo", "a \"b\" $x", "c d", ""}));
  EXPECT_EQ(words("[\"/bin/sh\",\"-c\",\"sleep infinity\"]"), (Words{"/bin/sh", "-c", "sleep infinity"}));
  EXPECT_EQ(words(""), (Words{"tail", "-f", "/dev/null"}));  // unset: the default
  // Not JSON after all: a command line that starts with '['.
  EXPECT_EQ(words("[ -f x ]"), (Words{"[", "-f", "x", "]"}));
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

TEST(ConfigTest, ANetworkPolicyInTheContractsSpellingIsSentInUpstreams) {
  auto c = ParseConfig({{"network_policy", R"({"default_action":"allow","egress":[{"action":"deny","target":"x.org"}]})"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->network_policy_json, R"({"defaultAction":"allow","egress":[{"action":"deny","target":"x.org"}]})");
  auto both = ParseConfig({{"network_policy", R"({"default_action":"allow","defaultAction":"deny"})"}});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().field, "network_policy");
  EXPECT_FALSE(ParseConfig({{"network_policy", R"({"default_action":"maybe"})"}}).ok());
}

TEST(ConfigTest, EffectiveViewIsTypedAndHidesSecrets) {
  std::map<std::string, std::string> raw = {{"api_key", "sk-secret-1"},
                                            {"base_url", "https://me:pw-secret-4@h.example.com/v1"},
                                            {"registry_username", "u"},
                                            {"registry_password", "pw-secret-2"},
                                            {"execd_access_token", "tok-secret-3"},
                                            {"image_aliases", "node=node:22"},
                                            {"entrypoint", "sleep infinity"},
                                            {"ready_timeout", "2.5"}};
  auto c = ParseConfig(raw);
  ASSERT_TRUE(c.ok());
  const std::string text = EffectiveConfigJson(raw, *c);
  rapidjson::Document view;
  view.Parse(text.c_str());
  ASSERT_TRUE(view.IsObject()) << text;
  for (const config::Field& f : config::kFields) EXPECT_TRUE(view.HasMember(f.name)) << f.name;
  EXPECT_EQ(view.MemberCount(), std::size(config::kFields));
  EXPECT_STREQ(view["api_key"].GetString(), "***");
  EXPECT_STREQ(view["registry_password"].GetString(), "***");
  EXPECT_STREQ(view["execd_access_token"].GetString(), "***");
  EXPECT_STREQ(view["registry_username"].GetString(), "u");
  EXPECT_STREQ(view["base_url"].GetString(), "https://h.example.com");
  EXPECT_STREQ(view["image_aliases"]["code"].GetString(), "opensandbox/code-interpreter:v1.1.0");
  EXPECT_STREQ(view["image_aliases"]["node"].GetString(), "node:22");
  ASSERT_TRUE(view["entrypoint"].IsArray());
  EXPECT_STREQ(view["entrypoint"][1].GetString(), "infinity");
  EXPECT_EQ(view["ready_timeout"].GetDouble(), 2.5);
  EXPECT_EQ(view["default_timeout"].GetInt(), 600);
  EXPECT_FALSE(view["use_server_proxy"].GetBool());
  EXPECT_TRUE(view["network_policy"].IsNull());
  EXPECT_EQ(text.find("secret"), std::string::npos) << text;
}

TEST(ConfigTest, CredentialScopeSeparatesKeys) {
  auto a = ParseConfig({{"api_key", "one"}});
  auto b = ParseConfig({{"api_key", "two"}});
  EXPECT_NE(a->CredentialScope(), b->CredentialScope());
}

}  // namespace
}  // namespace abx::core

// The POST /sandboxes body the provider sends: template resolution, entrypoint defaults,
// options. (Create's waiting and clean-up are end-to-end tests against the fake.)
#include <rapidjson/document.h>

#include <gtest/gtest.h>

#include "bridge/core/sandboxes.h"

namespace abx::core {
namespace {

rapidjson::Document Body(const std::map<std::string, std::string>& raw, const CreateSpec& spec) {
  auto config = ParseConfig(raw);
  EXPECT_TRUE(config.ok());
  EndpointCache upstream(nullptr, config->lifecycle_url, config->api_key);
  Sandboxes sandboxes(&upstream, &config.value());
  rapidjson::Document doc;
  doc.Parse(sandboxes.CreateBody(spec).c_str());
  EXPECT_FALSE(doc.HasParseError());
  return doc;
}

TEST(SandboxesBodyTest, TemplateResolution) {
  std::map<std::string, std::string> raw = {{"image_aliases", R"({"node":"node:22-slim"})"},
                                            {"default_image", "ubuntu:24.04"}};
  CreateSpec spec;
  spec.template_name = "node";
  EXPECT_STREQ(Body(raw, spec)["image"]["uri"].GetString(), "node:22-slim");
  spec.template_name = "base";
  EXPECT_STREQ(Body(raw, spec)["image"]["uri"].GetString(), "ubuntu:24.04");
  spec.template_name = "ghcr.io/me/img:1";
  EXPECT_STREQ(Body(raw, spec)["image"]["uri"].GetString(), "ghcr.io/me/img:1");
}

TEST(SandboxesBodyTest, EntrypointDefaultsAndTheCodeInterpreterException) {
  CreateSpec spec;
  auto doc = Body({}, spec);
  ASSERT_EQ(doc["entrypoint"].Size(), 3u);
  EXPECT_STREQ(doc["entrypoint"][0].GetString(), "tail");
  spec.template_name = "opensandbox/code-interpreter:v1.0.1";
  doc = Body({}, spec);
  ASSERT_EQ(doc["entrypoint"].Size(), 1u);
  EXPECT_STREQ(doc["entrypoint"][0].GetString(), "/opt/opensandbox/code-interpreter.sh");
  spec.entrypoint = {"sleep", "infinity"};
  EXPECT_STREQ(Body({}, spec)["entrypoint"][0].GetString(), "sleep");
}

TEST(SandboxesBodyTest, OptionsAndDefaults) {
  CreateSpec spec;
  auto doc = Body({{"registry_username", "u"}, {"registry_password", "p"},
                   {"network_policy", R"({"defaultAction":"deny"})"}, {"platform", "linux/arm64"},
                   {"secure_access", "true"}},
                  spec);
  EXPECT_STREQ(doc["image"]["auth"]["password"].GetString(), "p");
  EXPECT_STREQ(doc["networkPolicy"]["defaultAction"].GetString(), "deny");
  EXPECT_STREQ(doc["platform"]["arch"].GetString(), "arm64");
  EXPECT_TRUE(doc["secureAccess"].GetBool());
  EXPECT_EQ(doc["timeout"].GetInt(), 600);
  EXPECT_STREQ(doc["resourceLimits"]["memory"].GetString(), "2Gi");
  spec.timeout_s = 10;  // below the server's minimum
  EXPECT_EQ(Body({}, spec)["timeout"].GetInt(), 60);
  spec.timeout_s = 0;  // no expiry: the field is left out
  EXPECT_FALSE(Body({}, spec).HasMember("timeout"));
}

}  // namespace
}  // namespace abx::core

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
  std::map<std::string, std::string> raw = {{"image_aliases", "node=node:22-slim"},
                                            {"default_image", "ubuntu:24.04"}};
  CreateSpec spec;
  spec.template_name = "code";  // the default alias stays beside the configured ones
  EXPECT_STREQ(Body(raw, spec)["image"]["uri"].GetString(), "opensandbox/code-interpreter:v1.1.0");
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
  // A configured entrypoint is for stock images; the code-interpreter image keeps the
  // script that starts its Jupyter, under template "code" or any registry and tag.
  const std::map<std::string, std::string> configured = {{"entrypoint", "python3 app.py"}};
  EXPECT_STREQ(Body(configured, spec)["entrypoint"][0].GetString(), "python3");
  for (const char* image : {"code", "opensandbox/code-interpreter:v1.0.1",
                            "registry.example.com:5000/team/code-interpreter",
                            "opensandbox/code-interpreter@sha256:abcd"}) {
    spec.template_name = image;
    doc = Body(configured, spec);
    ASSERT_EQ(doc["entrypoint"].Size(), 1u) << image;
    EXPECT_STREQ(doc["entrypoint"][0].GetString(), "/opt/code-interpreter/code-interpreter.sh");
  }
  // The create call's own entrypoint applies to every image.
  spec.entrypoint = {"sleep", "infinity"};
  EXPECT_STREQ(Body({}, spec)["entrypoint"][0].GetString(), "sleep");
}

TEST(SandboxesBodyTest, OnlyARepositoryEndingInCodeInterpreterIsOne) {
  EXPECT_TRUE(IsCodeInterpreterImage("opensandbox/code-interpreter"));
  EXPECT_TRUE(IsCodeInterpreterImage("localhost:5000/my-code-interpreter:latest"));
  EXPECT_FALSE(IsCodeInterpreterImage("opensandbox/code-interpreter-base:latest"));
  EXPECT_FALSE(IsCodeInterpreterImage("code-interpreter.example.com/python:3.12"));
  EXPECT_FALSE(IsCodeInterpreterImage("python:code-interpreter"));
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

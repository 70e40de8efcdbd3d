// The POST /sandboxes body the provider sends: template resolution, entrypoint defaults,
// options. (Create's waiting and clean-up are end-to-end tests against the fake.)
#include <rapidjson/document.h>

#include <gtest/gtest.h>

#include "bridge/core/sandboxes/metadata_labels.h"
#include "bridge/core/sandboxes/sandboxes.h"
#include "bridge/core/sandboxes/snapshots.h"
#include "bridge/core/saved_entrypoint.h"

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

// A restore names the snapshot instead of an image, sends no registry credentials, and
// runs the launcher sandbox.snapshot kept unless the call names an entrypoint.
TEST(SandboxesBodyTest, ARestoreNamesItsSnapshotAndRunsTheSavedEntrypoint) {
  CreateSpec spec;
  spec.snapshot_id = "snap-1";
  auto doc = Body({{"registry_username", "u"}, {"registry_password", "p"}}, spec);
  EXPECT_STREQ(doc["snapshotId"].GetString(), "snap-1");
  EXPECT_FALSE(doc.HasMember("image"));
  ASSERT_EQ(doc["entrypoint"].Size(), 1u);
  EXPECT_STREQ(doc["entrypoint"][0].GetString(), "/.abx-opensandbox-entrypoint");
  spec.entrypoint = {"sleep", "infinity"};
  doc = Body({}, spec);
  ASSERT_EQ(doc["entrypoint"].Size(), 2u);
  EXPECT_STREQ(doc["entrypoint"][0].GetString(), "sleep");
}

TEST(SandboxesBodyTest, TheSavedEntrypointExecsEveryWordQuoted) {
  EXPECT_EQ(SavedEntrypointScript({"python3", "it's", "$HOME"}),
            "#!/bin/sh\n# The entrypoint this sandbox's source ran, kept by sandbox.snapshot.\n"
            "exec 'python3' 'it'\\''s' '$HOME'\n");
  EXPECT_TRUE(RunsSavedEntrypoint({"/.abx-opensandbox-entrypoint"}));
  EXPECT_FALSE(RunsSavedEntrypoint({"/.abx-opensandbox-entrypoint", "x"}));
}

TEST(SandboxesBodyTest, LabelRulesAsTheServerHasThemAndSnapshotNames) {
  for (const char* good : {"team", "a", "example.com/stage", "a.b_c-d", "x1/y"}) {
    EXPECT_EQ(LabelKeyProblem(good), "") << good;
  }
  for (const char* bad : {"", "-a", "a-", "opensandbox.io/x", "Example.com/x", "a b", "a/", "/a",
                          "this-name-is-much-too-long-for-a-label-because-it-has-64-chars-xx"}) {
    EXPECT_NE(LabelKeyProblem(bad), "") << bad;
  }
  EXPECT_EQ(LabelValueProblem(""), "");
  EXPECT_EQ(LabelValueProblem("v1.2"), "");
  EXPECT_NE(LabelValueProblem("no spaces"), "");
  EXPECT_TRUE(CheckSnapshotName("name", "checkpoint before import").ok());
  EXPECT_FALSE(CheckSnapshotName("name", "").ok());
  EXPECT_FALSE(CheckSnapshotName("name", std::string(129, 'x')).ok());
  EXPECT_TRUE(CheckSnapshotName("name", std::string(128, 'x')).ok());
  EXPECT_FALSE(CheckSnapshotName("name", "tab\there").ok());
  EXPECT_FALSE(CheckSnapshotName("name", "c1\xc2\x85").ok());
  EXPECT_TRUE(CheckSnapshotName("name", "\xc3\xa9t\xc3\xa9").ok());  // "été"
}

TEST(SandboxesBodyTest, VolumesGoOutInTheServersCamelCase) {
  CreateSpec spec;
  Volume host;
  host.name = "work";
  host.mount_path = "/work";
  host.read_only = true;
  host.host = Volume::Host{"/srv/data"};
  Volume pvc;
  pvc.name = "cache";
  pvc.mount_path = "/cache";
  pvc.sub_path = "pip";
  pvc.pvc = Volume::Pvc{"pip-cache", false, true, std::nullopt, std::string("1Gi"), std::nullopt};
  spec.volumes = {host, pvc};
  ASSERT_TRUE(CheckVolumes(spec.volumes).ok());
  auto doc = Body({}, spec);
  ASSERT_TRUE(doc["volumes"].IsArray());
  EXPECT_STREQ(doc["volumes"][0]["mountPath"].GetString(), "/work");
  EXPECT_TRUE(doc["volumes"][0]["readOnly"].GetBool());
  EXPECT_STREQ(doc["volumes"][0]["host"]["path"].GetString(), "/srv/data");
  EXPECT_STREQ(doc["volumes"][1]["subPath"].GetString(), "pip");
  EXPECT_STREQ(doc["volumes"][1]["pvc"]["claimName"].GetString(), "pip-cache");
  EXPECT_FALSE(doc["volumes"][1]["pvc"]["createIfNotExists"].GetBool());
  EXPECT_TRUE(doc["volumes"][1]["pvc"]["deleteOnSandboxTermination"].GetBool());
  EXPECT_STREQ(doc["volumes"][1]["pvc"]["storage"].GetString(), "1Gi");
  EXPECT_FALSE(doc["volumes"][1]["pvc"].HasMember("storageClass"));
}

TEST(SandboxesBodyTest, TheServersVolumeRulesAreCheckedHereWithoutARegexOnLongInput) {
  auto field_of = [](Volume v) {
    Status s = CheckVolumes({v});
    return s.ok() ? std::string("ok") : s.error().field;
  };
  Volume v;
  v.name = "a";
  v.mount_path = "/a";
  v.pvc = Volume::Pvc{"claim", std::nullopt, std::nullopt, std::nullopt, std::string(200000, '7'), std::nullopt};
  EXPECT_EQ(field_of(v), "ok");  // digits only: a size, and no stack spent on it
  v.pvc->storage = std::string(200000, '7') + "Xi";
  EXPECT_EQ(field_of(v), "volumes[0].pvc.storage");
  v.pvc->storage = "1.5Gi";
  EXPECT_EQ(field_of(v), "ok");
  v.pvc->claim_name = std::string(300000, 'a');
  EXPECT_EQ(field_of(v), "volumes[0].pvc.claim_name");
  v.pvc.reset();
  v.host = Volume::Host{"C:\\data"};
  EXPECT_EQ(field_of(v), "ok");
  v.host->path = "/a//b";
  EXPECT_EQ(field_of(v), "volumes[0].host.path");
  v.host->path = "/a/..b";  // the server's own substring rule
  EXPECT_EQ(field_of(v), "volumes[0].host.path");
  v.host.reset();
  v.ossfs = Volume::Ossfs{"My_Bucket", "oss.example.com", "id", "secret-value", std::nullopt, std::nullopt};
  EXPECT_EQ(field_of(v), "volumes[0].ossfs.bucket");
  v.ossfs->bucket = "my-bucket";
  v.ossfs->options = std::vector<std::string>{"allow_other", " -o"};
  EXPECT_EQ(field_of(v), "volumes[0].ossfs.options[1]");
  v.ossfs->options.reset();
  v.ossfs->access_key_secret.clear();
  Status missing = CheckVolumes({v});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().field, "volumes[0].ossfs.access_key_secret");
}

TEST(SandboxesBodyTest, APoolCreateSendsNoImageAndOnlyWhatTheCallNames) {
  CreateSpec spec;
  spec.pool_ref = "warm";
  spec.cpu = "2";
  const std::map<std::string, std::string> raw = {{"network_policy", R"({"defaultAction":"deny"})"},
                                                  {"platform", "linux/arm64"}};
  auto doc = Body(raw, spec);
  EXPECT_STREQ(doc["extensions"]["poolRef"].GetString(), "warm");
  EXPECT_FALSE(doc.HasMember("image"));
  EXPECT_FALSE(doc.HasMember("entrypoint"));
  EXPECT_FALSE(doc.HasMember("networkPolicy"));
  EXPECT_FALSE(doc.HasMember("platform"));
  EXPECT_STREQ(doc["resourceLimits"]["cpu"].GetString(), "2");
  EXPECT_FALSE(doc["resourceLimits"].HasMember("memory"));
  // The configured pool_ref serves the default template only.
  CreateSpec plain;
  auto configured = Body({{"pool_ref", "warm"}}, plain);
  EXPECT_STREQ(configured["extensions"]["poolRef"].GetString(), "warm");
  EXPECT_FALSE(configured.HasMember("resourceLimits"));
  plain.template_name = "python:3.11";
  auto named = Body({{"pool_ref", "warm"}}, plain);
  EXPECT_FALSE(named.HasMember("extensions"));
  EXPECT_STREQ(named["image"]["uri"].GetString(), "python:3.11");
}

}  // namespace
}  // namespace abx::core

// What sandbox.create makes of the configuration's forms and of templates, end to end
// (docs/epp1.md §3 sandbox.lifecycle and code.interpret, §6): the `code` template with no
// configuration at all, the code-interpreter image's own start script, `image_aliases`
// as name=image, `entrypoint` as a command line, and a sandbox whose entrypoint its image
// lacks, which fails at once with the server's reason instead of waiting out
// ready_timeout.

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

class CreateConfigTest : public TestEnv {
 protected:
  // The entrypoint the server recorded for a sandbox (the fake's GET shows it).
  std::vector<std::string> RecordedEntrypoint(const std::string& id) {
    HttpResponse r = fake().Http("GET", "/v1/sandboxes/" + id);
    rapidjson::Document doc;
    std::string error;
    if (r.status != 200 || !ParseJson(r.body, &doc, &error)) {
      ADD_FAILURE() << "GET sandbox " << id << ": " << r.status << " " << r.body;
      return {};
    }
    return GetStrings(doc, "entrypoint");
  }
};

TEST_F(CreateConfigTest, TemplateCodeStartsTheInterpreterImageWithItsScript) {
  REQUIRE_FAKE("reads the entrypoint the fake recorded");
  // The shim's environment names only the server: no image_aliases, no entrypoint.
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr r = shim->Request("sandbox.create", R"({"template":"code"})", Millis(30000));
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(GetString(r->result(), "template"), "code");
  EXPECT_EQ(GetString(r->result(), "image"), "opensandbox/code-interpreter:v1.1.0");
  const std::string id = GetString(r->result(), "id");
  EXPECT_EQ(RecordedEntrypoint(id),
            (std::vector<std::string>{"/opt/code-interpreter/code-interpreter.sh"}));
}

TEST_F(CreateConfigTest, ConfiguredFormsAsTheDocumentationWritesThem) {
  REQUIRE_FAKE("reads the entrypoint the fake recorded");
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_IMAGE_ALIASES", "py=python:3.13-slim, node=node:22"},
                                           {"ABX_OPENSANDBOX_ENTRYPOINT", "sleep infinity"}});
  ASSERT_NE(shim, nullptr);
  MessagePtr r = shim->Request("sandbox.create", R"({"template":"py"})", Millis(30000));
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(GetString(r->result(), "image"), "python:3.13-slim");
  EXPECT_EQ(GetString(r->result(), "template"), "py");
  EXPECT_EQ(RecordedEntrypoint(GetString(r->result(), "id")),
            (std::vector<std::string>{"sleep", "infinity"}));

  // The configured entrypoint is for stock images: template code keeps its script.
  r = shim->Request("sandbox.create", R"({"template":"code"})", Millis(30000));
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(RecordedEntrypoint(GetString(r->result(), "id")),
            (std::vector<std::string>{"/opt/code-interpreter/code-interpreter.sh"}));

  // provider_options adds an alias for one call and names the call's own entrypoint.
  r = shim->Request("sandbox.create",
                    R"({"template":"tiny","provider_options":{"image_aliases":"tiny=busybox:1",)"
                    R"("entrypoint":"tail -f /dev/null"}})",
                    Millis(30000));
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(GetString(r->result(), "image"), "busybox:1");
  EXPECT_EQ(RecordedEntrypoint(GetString(r->result(), "id")),
            (std::vector<std::string>{"tail", "-f", "/dev/null"}));

  // provider.info shows the effective values, typed.
  r = shim->Request("provider.info", "{}");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "config.image_aliases.code"), "opensandbox/code-interpreter:v1.1.0");
  EXPECT_EQ(GetString(r->result(), "config.image_aliases.node"), "node:22");
  EXPECT_EQ(GetStrings(r->result(), "config.entrypoint"), (std::vector<std::string>{"sleep", "infinity"}));
  EXPECT_EQ(GetString(r->result(), "config.base_url"), base_url());
}

TEST_F(CreateConfigTest, MalformedFormsAreRefusedNamingTheField) {
  for (const auto& [variable, value, field] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"ABX_OPENSANDBOX_IMAGE_ALIASES", "py=python:3.13,py=python:3.12", "image_aliases"},
           {"ABX_OPENSANDBOX_ENTRYPOINT", "python3 'app.py", "entrypoint"}}) {
    EppSession* shim = StartShim({{variable, value}});
    ASSERT_NE(shim, nullptr);
    MessagePtr r = shim->Request("initialize", R"({"protocol":"EPP/1","host":{"name":"e2e","version":"1"}})");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
    EXPECT_EQ(GetString(r->error(), "data.field"), field) << r->raw;
  }
}

TEST_F(CreateConfigTest, AnEntrypointTheImageLacksFailsAtOnceAndLeavesNoSandbox) {
  REQUIRE_FAKE("counts the fake's sandboxes");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const auto started = std::chrono::steady_clock::now();
  // The path the provider once chose for this image, which it does not have.
  MessagePtr r = shim->Request(
      "sandbox.create",
      R"({"template":"code","entrypoint":["/opt/opensandbox/code-interpreter.sh"]})", Millis(30000));
  ASSERT_NE(r, nullptr);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r->EppCode(), "E8010") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("Sandbox container exited with code 127"), std::string::npos)
      << r->raw;
  // Well inside ready_timeout (60 s): the failure is seen, not waited out.
  EXPECT_LT(took, std::chrono::seconds(10));
  HttpResponse list = fake().Http("GET", "/v1/sandboxes");
  EXPECT_NE(list.body.find("\"items\":[]"), std::string::npos) << list.body;
}

// The code-interpreter image before v1.1.0 keeps its start script elsewhere: the default
// entrypoint fails there with a message that names the old path, and naming that path
// as the call's entrypoint gives a working interpreter.
TEST_F(CreateConfigTest, AnOlderCodeInterpreterImageSaysWhereItsScriptIsAndRunsWithIt) {
  REQUIRE_FAKE("the fake's image catalogue");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr r = shim->Request("sandbox.create", R"({"template":"opensandbox/code-interpreter:v1.0.2"})", Millis(30000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8010") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("/opt/opensandbox/code-interpreter.sh"), std::string::npos) << r->raw;
  const std::string sandbox = CreateSandbox(
      shim, R"({"template":"opensandbox/code-interpreter:v1.0.2","entrypoint":["/opt/opensandbox/code-interpreter.sh"]})",
      Millis(60000));
  ASSERT_FALSE(sandbox.empty());
  MessagePtr ran = shim->Request("code.run", JsonObject().Str("sandbox_id", sandbox).Str("code", "6 * 7").str(), Millis(60000));
  ASSERT_NE(ran, nullptr);
  ASSERT_FALSE(ran->IsError()) << ran->raw;
  EXPECT_EQ(GetString(ran->result(), "results.0.data.text/plain"), "42") << ran->raw;
}

}  // namespace
}  // namespace abx::e2e

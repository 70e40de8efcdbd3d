#include "epp-shim/config_resolver.h"

#include "common/config_fields.h"
#include "tests/common/temp_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "gtest/gtest.h"

namespace abx {
namespace {

// A temporary $HOME with an optional ~/.abx/config.toml.
class FakeHome {
 public:
  void WriteConfig(const std::string& text) {
    mkdir((path() + "/.abx").c_str(), 0700);
    std::ofstream(ConfigFilePath(path())) << text;
  }
  const std::string& path() const { return dir_.path(); }
  std::string file_source() const { return "file:" + ConfigFilePath(path()); }

 private:
  testing::TempDir dir_{"abxcfg"};
};

class FakeEnvironment {
 public:
  explicit FakeEnvironment(std::map<std::string, std::string> variables)
      : variables_(std::move(variables)) {}
  EnvironmentLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto found = variables_.find(name);
      return found == variables_.end() ? nullptr : found->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> variables_;
};

TEST(ConfigResolverTest, NothingConfiguredIsEmpty) {
  FakeHome home;
  FakeEnvironment env({});
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  EXPECT_TRUE(config.values.empty());
  EXPECT_TRUE(config.sources.empty());
}

TEST(ConfigResolverTest, OurVariableBeatsNativeBeatsFile) {
  FakeHome home;
  home.WriteConfig(
      "[providers.opensandbox]\n"
      "api_key = \"from-file\"\n"
      "domain = \"file.example:8080\"\n"
      "protocol = \"http\"\n"
      "base_url = \"http://file.example\"\n");
  FakeEnvironment env({
      {"ABX_OPENSANDBOX_API_KEY", "ours"},
      {"OPEN_SANDBOX_API_KEY", "native"},
      {"OPEN_SANDBOX_DOMAIN", "native.example"},
      {"ABX_OPENSANDBOX_PROTOCOL", ""},  // empty counts as unset
  });
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  EXPECT_EQ(config.values["api_key"], "ours");
  EXPECT_EQ(config.sources["api_key"], "env:ABX_OPENSANDBOX_API_KEY");
  EXPECT_EQ(config.values["domain"], "native.example");
  EXPECT_EQ(config.sources["domain"], "env:OPEN_SANDBOX_DOMAIN");
  EXPECT_EQ(config.values["protocol"], "http");
  EXPECT_EQ(config.sources["protocol"], home.file_source());
  EXPECT_EQ(config.values["base_url"], "http://file.example");
  EXPECT_EQ(config.values.size(), 4u);
  EXPECT_EQ(config.sources.size(), 4u);
}

TEST(ConfigResolverTest, EveryFieldHasItsOwnVariable) {
  std::map<std::string, std::string> variables;
  for (const config::Field& field : config::kFields) {
    std::string name = "ABX_OPENSANDBOX_";
    for (const char* c = field.name; *c != '\0'; ++c) name += static_cast<char>(toupper(*c));
    variables[name] = std::string("v-") + field.name;
  }
  FakeEnvironment env(variables);
  ResolvedConfig config = ResolveConfig(env.lookup(), "");
  ASSERT_EQ(config.values.size(), std::size(config::kFields));
  EXPECT_EQ(config.values["execd_access_token"], "v-execd_access_token");
  EXPECT_EQ(config.sources["execd_access_token"], "env:ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN");
  EXPECT_EQ(config.sources["use_server_proxy"], "env:ABX_OPENSANDBOX_USE_SERVER_PROXY");
}

TEST(ConfigResolverTest, NativeVariablesOnlyForTheirFields) {
  FakeEnvironment env({
      {"OPEN_SANDBOX_PROTOCOL", "https"},
      {"OPEN_SANDBOX_USE_SERVER_PROXY", "true"},
      {"OPEN_SANDBOX_BASE_URL", "http://not-honoured"},
  });
  ResolvedConfig config = ResolveConfig(env.lookup(), "");
  EXPECT_EQ(config.values["protocol"], "https");
  EXPECT_EQ(config.values["use_server_proxy"], "true");
  EXPECT_EQ(config.values.count("base_url"), 0u);
}

TEST(ConfigResolverTest, NonStringFileValuesBecomeJson) {
  FakeHome home;
  home.WriteConfig(
      "[providers.opensandbox]\n"
      "ready_timeout = 60\n"
      "request_timeout = 2.5\n"
      "use_server_proxy = true\n"
      "entrypoint = [\"/bin/sh\", \"-c\", \"sleep infinity\"]\n"
      "default_image = \"python:3.12-slim\"\n"
      "network_policy = { defaultAction = \"deny\", egress = [{ action = \"allow\", "
      "target = \"pypi.org\" }] }\n"
      "\n"
      "[providers.opensandbox.image_aliases]\n"
      "py = \"python:3.12\"\n"
      "node = \"node:20\"\n"
      "\n"
      "[providers.other]\n"
      "api_key = \"not ours\"\n");
  FakeEnvironment env({});
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  EXPECT_EQ(config.values["ready_timeout"], "60");
  EXPECT_EQ(config.values["request_timeout"], "2.5");
  EXPECT_EQ(config.values["use_server_proxy"], "true");
  EXPECT_EQ(config.values["entrypoint"], R"(["/bin/sh","-c","sleep infinity"])");
  EXPECT_EQ(config.values["default_image"], "python:3.12-slim");
  EXPECT_EQ(config.values["network_policy"],
            R"({"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"}]})");
  // toml++ keeps keys ordered; both appear exactly once.
  const std::string aliases = config.values["image_aliases"];
  EXPECT_TRUE(aliases == R"({"node":"node:20","py":"python:3.12"})" ||
              aliases == R"({"py":"python:3.12","node":"node:20"})")
      << aliases;
  EXPECT_EQ(config.values.count("api_key"), 0u);
  for (const auto& [field, source] : config.sources) {
    EXPECT_EQ(source, home.file_source()) << field;
  }
}

TEST(ConfigResolverTest, StringsWithQuotesStayVerbatim) {
  FakeHome home;
  home.WriteConfig(
      "[providers.opensandbox]\n"
      "network_policy = '{\"defaultAction\": \"deny\"}'\n"
      "platform = \"linux/arm64\"\n"
      "registry_password = \"p\\\"ss\"\n");
  FakeEnvironment env({});
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  EXPECT_EQ(config.values["network_policy"], "{\"defaultAction\": \"deny\"}");
  EXPECT_EQ(config.values["platform"], "linux/arm64");
  EXPECT_EQ(config.values["registry_password"], "p\"ss");
}

TEST(ConfigResolverTest, DatesAndSpecialFloatsBecomeJsonStrings) {
  FakeHome home;
  home.WriteConfig(
      "[providers.opensandbox]\n"
      "ready_timeout = 1979-05-27\n"
      "request_timeout = inf\n");
  FakeEnvironment env({});
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  EXPECT_EQ(config.values["ready_timeout"], "\"1979-05-27\"");
  EXPECT_EQ(config.values["request_timeout"], "\"inf\"");
}

TEST(ConfigResolverTest, SyntaxErrorIsPassedOnAndFileValuesDropped) {
  FakeHome home;
  home.WriteConfig(
      "[providers.opensandbox]\n"
      "base_url = \"http://x\"\n"
      "ready_timeout = = 5\n");
  FakeEnvironment env(std::map<std::string, std::string>{{"ABX_OPENSANDBOX_API_KEY", "k"}});
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  ASSERT_EQ(config.values.count(kConfigFileErrorField), 1u);
  const std::string error = config.values[kConfigFileErrorField];
  EXPECT_NE(error.find(ConfigFilePath(home.path())), std::string::npos) << error;
  EXPECT_NE(error.find("line 3"), std::string::npos) << error;
  EXPECT_EQ(config.sources[kConfigFileErrorField], home.file_source());
  EXPECT_EQ(config.values.count("base_url"), 0u);
  EXPECT_EQ(config.values["api_key"], "k");  // the environment still counts
}

TEST(ConfigResolverTest, ProvidersThatIsNotATableIsAnError) {
  FakeHome home;
  home.WriteConfig("providers = 5\n");
  FakeEnvironment env({});
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  EXPECT_NE(config.values[kConfigFileErrorField].find("`providers` must be a table"),
            std::string::npos);
}

TEST(ConfigResolverTest, FileWithoutOurSectionIsFine) {
  FakeHome home;
  home.WriteConfig("[providers.e2b]\napi_key = \"x\"\n[other]\nz = 1\n");
  FakeEnvironment env({});
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  EXPECT_TRUE(config.values.empty());
}

TEST(ConfigResolverTest, UnreadableFileIsAnError) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any file";
  FakeHome home;
  home.WriteConfig("[providers.opensandbox]\n");
  chmod(ConfigFilePath(home.path()).c_str(), 0);
  FakeEnvironment env({});
  ResolvedConfig config = ResolveConfig(env.lookup(), home.path());
  EXPECT_EQ(config.values.count(kConfigFileErrorField), 1u);
}

TEST(ConfigResolverTest, ProcessVersionReadsHome) {
  FakeHome home;
  home.WriteConfig("[providers.opensandbox]\nplatform = \"linux/amd64\"\n");
  const char* old_home = getenv("HOME");
  std::string saved = old_home != nullptr ? old_home : "";
  setenv("HOME", home.path().c_str(), 1);
  unsetenv("ABX_OPENSANDBOX_PLATFORM");
  ResolvedConfig config = ResolveConfigFromProcess();
  if (old_home != nullptr) setenv("HOME", saved.c_str(), 1);
  EXPECT_EQ(config.values["platform"], "linux/amd64");
}

}  // namespace
}  // namespace abx

// abx-provider.toml must declare exactly what `initialize` returns (docs/epp1.md §5),
// and have a [config.*] entry, with the right secrecy, for every configuration field.
#include <toml++/toml.h>

#include <cstdlib>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "bridge/api/epp/features.h"
#include "bridge/core/config.h"
#include "common/config_fields.h"

namespace abx::epp {
namespace {

toml::table Manifest() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string path = std::string(srcdir ? srcdir : ".") + "/opensandbox_bridge/abx-provider.toml";
  return toml::parse_file(path);
}

std::set<std::string> Strings(const toml::array* array) {
  std::set<std::string> out;
  if (!array) return out;
  for (const auto& v : *array) out.insert(v.value_or(std::string()));
  return out;
}

TEST(ManifestTest, ProviderAndRuntime) {
  toml::table m = Manifest();
  EXPECT_EQ(m["provider"]["name"].value_or(std::string()), "opensandbox");
  EXPECT_EQ(m["provider"]["protocol"].value_or(std::string()), "EPP/1");
  EXPECT_EQ(m["runtime"]["command"].value_or(std::string()), "bin/abx-opensandbox-shim");
}

TEST(ManifestTest, FeaturesPartialAndExtensionsEqualInitialize) {
  toml::table m = Manifest();
  EXPECT_EQ(Strings(m["capabilities"]["features"].as_array()),
            std::set<std::string>(std::begin(kFeatures), std::end(kFeatures)));
  EXPECT_EQ(Strings(m["capabilities"]["extensions"].as_array()),
            std::set<std::string>(std::begin(kExtensions), std::end(kExtensions)));
  const toml::table* partial = m["capabilities"]["partial"].as_table();
  ASSERT_NE(partial, nullptr);
  EXPECT_EQ(partial->size(), std::size(kPartial));
  for (const Partial& p : kPartial) {
    EXPECT_EQ((*partial)[p.feature].value_or(std::string()), p.note) << p.feature;
  }
  EXPECT_EQ(m["capabilities"]["limits"]["code_output_bytes"].value_or(int64_t{0}),
            static_cast<int64_t>(kCodeOutputBytes));
  EXPECT_EQ(m["capabilities"]["limits"]["max_line_bytes"].value_or(int64_t{0}),
            static_cast<int64_t>(kMaxLineBytes));
  EXPECT_EQ(m["capabilities"]["limits"]["max_read_bytes"].value_or(int64_t{0}),
            static_cast<int64_t>(kMaxReadBytes));
  EXPECT_EQ(m["capabilities"]["limits"]["pty_buffer_bytes"].value_or(int64_t{0}),
            static_cast<int64_t>(kPtyBufferBytes));
}

TEST(ManifestTest, EveryConfigFieldIsDeclaredWithItsSecrecyAndEnvironment) {
  toml::table m = Manifest();
  const toml::table* config = m["config"].as_table();
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->size(), std::size(config::kFields));
  for (const config::Field& f : config::kFields) {
    const toml::table* entry = (*config)[f.name].as_table();
    ASSERT_NE(entry, nullptr) << f.name;
    EXPECT_EQ((*entry)["secret"].value_or(!f.secret), f.secret) << f.name;
    EXPECT_EQ((*entry)["default"].value_or(std::string("?")), f.default_text) << f.name;
    std::set<std::string> env = Strings((*entry)["env"].as_array());
    EXPECT_TRUE(env.count(config::OwnVariable(f))) << f.name;
    if (f.native_variable != nullptr) {
      EXPECT_TRUE(env.count(f.native_variable)) << f.name;
    }
    EXPECT_EQ(env.size(), f.native_variable ? 2u : 1u) << f.name;
    EXPECT_FALSE((*entry)["description"].value_or(std::string()).empty()) << f.name;
  }
}

}  // namespace
}  // namespace abx::epp

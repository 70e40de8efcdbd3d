// execd's code context bodies as the bridge reads them (bridge/opensandbox/execd_client.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "bridge/opensandbox/execd_client.h"

namespace abx::opensandbox {
namespace {

TEST(CodeContextsDecodeTest, ReadsExecdsArray) {
  auto contexts = DecodeCodeContexts(
      R"([{"id":"cb1baca9-a60e-4937-a1d0-18bc1fc45e60","language":"python"},{"id":"x","language":"bash"}])");
  ASSERT_TRUE(contexts.ok()) << contexts.error().message;
  ASSERT_EQ(contexts->size(), 2u);
  EXPECT_EQ((*contexts)[0].id, "cb1baca9-a60e-4937-a1d0-18bc1fc45e60");
  EXPECT_EQ((*contexts)[0].language, "python");
  EXPECT_EQ((*contexts)[1].language, "bash");
  EXPECT_TRUE(DecodeCodeContexts("[]")->empty());
  EXPECT_TRUE(DecodeCodeContexts("null")->empty());  // Go's empty slice
}

TEST(CodeContextsDecodeTest, AnythingElseIsNotItsApi) {
  for (const char* body : {"", "{}", R"([{"language":"python"}])", R"([{"id":""}])", R"([1])",
                           R"({"code":"RUNTIME_ERROR","message":"x"})"}) {
    auto contexts = DecodeCodeContexts(body);
    ASSERT_FALSE(contexts.ok()) << body;
    EXPECT_EQ(contexts.error().code, ErrorCode::kUpstream) << body;
  }
}

TEST(CodeContextsDecodeTest, KernelSpecsSkipIpykernelsOwnPython3) {
  auto kernels = DecodeKernelSpecs(
      R"({"default":"python3","kernelspecs":{"python3":{"name":"python3","spec":{"language":"python"}},)"
      R"("python":{"name":"python","spec":{"language":"python"}},"java":{"spec":{"language":"java"}}}})");
  ASSERT_TRUE(kernels.ok());
  EXPECT_EQ(kernels->reached, JupyterKernels::Reached::kYes);
  std::sort(kernels->languages.begin(), kernels->languages.end());
  EXPECT_EQ(kernels->languages, (std::vector<std::string>{"java", "python"}));
  auto only_python3 = DecodeKernelSpecs(
      R"({"kernelspecs":{"python3":{"name":"python3","spec":{"language":"python"}}}})");
  EXPECT_TRUE(only_python3->languages.empty());
  EXPECT_FALSE(DecodeKernelSpecs("Bad Gateway").ok());
}

}  // namespace
}  // namespace abx::opensandbox

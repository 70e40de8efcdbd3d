#include "tests/e2e/files_fixture.h"

namespace abx::e2e {

void FilesFixture::SetUp() {
  TestEnv::SetUp();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(StartShimWithSandbox(&shim_, &sandbox_));
  MessagePtr made = Call("files.mkdir", JsonObject().Str("path", dir_).Bool("parents", true));
  ASSERT_NE(made, nullptr);
  ASSERT_FALSE(made->IsError()) << made->raw;
}

MessagePtr FilesFixture::Call(const std::string& method, JsonObject params) {
  const std::string text = params.Str("sandbox_id", sandbox_).str();
  MessagePtr response = shim_->Request(method, text, Millis(20000));
  if (!response) ADD_FAILURE() << "no answer to " << method << " " << Abbreviate(text, 300);
  return response;
}

}  // namespace abx::e2e

#include "bridge/core/endpoint_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace abx::core {
namespace {

// The exec_id of a command is remembered for process.list: attached commands until their
// stream ends, detached ones up to a cap, so a bridge that runs for weeks does not keep
// one entry for every command it ever started.
TEST(UpstreamTest, RemembersExecsOnlyAsLongAsTheyCanBeListed) {
  EndpointCache upstream(nullptr, "http://127.0.0.1:1/v1", "");
  upstream.RememberExec("sbx", "attached", "exec-a");
  EXPECT_EQ(upstream.ExecIdForTag("sbx", "attached"), "exec-a");
  upstream.ForgetExec("sbx", "attached");
  EXPECT_EQ(upstream.ExecIdForTag("sbx", "attached"), "");

  upstream.RememberExec("sbx", "detached-first", "exec-first");
  const size_t cap = EndpointCache::kMaxRememberedExecs;
  for (size_t i = 0; i < 3 * cap; ++i) {
    // Attached commands come and go in between; they never push a detached one out.
    upstream.RememberExec("sbx", "tag-" + std::to_string(i), "exec-" + std::to_string(i));
    upstream.ForgetExec("sbx", "tag-" + std::to_string(i));
  }
  EXPECT_EQ(upstream.ExecIdForTag("sbx", "detached-first"), "exec-first");
  for (size_t i = 0; i < cap; ++i) {
    upstream.RememberExec("sbx", "detached-" + std::to_string(i), "d-" + std::to_string(i));
  }
  // Past the cap the oldest goes first.
  EXPECT_EQ(upstream.ExecIdForTag("sbx", "detached-first"), "");
  EXPECT_EQ(upstream.ExecIdForTag("sbx", "detached-0"), "d-0");
  EXPECT_EQ(upstream.ExecIdForTag("sbx", "detached-" + std::to_string(cap - 1)),
            "d-" + std::to_string(cap - 1));
  upstream.Forget("sbx");
  EXPECT_EQ(upstream.ExecIdForTag("sbx", "detached-0"), "");
}

}  // namespace
}  // namespace abx::core

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

// A Docker server's bridge-mode endpoint for execd names execd's own host port and then
// /proxy/44772, a second hop through execd's reverse proxy to itself: it is dropped.
// Every other shape (a server proxy's path, a gateway's, another port) is kept.
TEST(DirectExecdEndpointTest, DropsOnlyExecdsProxyToItself) {
  EXPECT_EQ(DirectExecdEndpoint("10.57.1.91:40109/proxy/44772"), "10.57.1.91:40109");
  EXPECT_EQ(DirectExecdEndpoint("127.0.0.1:40109/proxy/44772/"), "127.0.0.1:40109");
  EXPECT_EQ(DirectExecdEndpoint("http://host:1/proxy/44772"), "http://host:1");
  EXPECT_EQ(DirectExecdEndpoint("127.0.0.1:8080/sandboxes/abc/proxy/44772"),
            "127.0.0.1:8080/sandboxes/abc/proxy/44772");
  EXPECT_EQ(DirectExecdEndpoint("gateway.example/abc/44772"), "gateway.example/abc/44772");
  EXPECT_EQ(DirectExecdEndpoint("127.0.0.1:40109/proxy/8080"), "127.0.0.1:40109/proxy/8080");
  EXPECT_EQ(DirectExecdEndpoint("127.0.0.1:40109/proxy/447720"), "127.0.0.1:40109/proxy/447720");
  EXPECT_EQ(DirectExecdEndpoint("10.0.0.5:44772"), "10.0.0.5:44772");
}

}  // namespace
}  // namespace abx::core

// execd's GET /metrics body as the bridge reads it (bridge/opensandbox/execd_metrics.h).
#include "bridge/opensandbox/execd_metrics.h"

#include <gtest/gtest.h>

namespace abx::opensandbox {
namespace {

TEST(ExecdMetricsTest, ReadsExecdsObject) {
  auto m = DecodeMetrics(
      R"({"cpu_count":2,"cpu_used_pct":12.5,"mem_total_mib":24032.1,"mem_used_mib":3100,"timestamp":1764936000123})");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->cpu_count, 2);
  EXPECT_EQ(m->cpu_used_pct, 12.5);
  EXPECT_EQ(m->mem_total_mib, 24032.1);
  EXPECT_EQ(m->mem_used_mib, 3100);
  EXPECT_EQ(m->timestamp_ms, 1764936000123);
}

TEST(ExecdMetricsTest, AnythingElseIsNotItsApi) {
  for (const char* body : {"", "[]", "null", R"({"cpu_count":"2","cpu_used_pct":1,"mem_total_mib":1,"mem_used_mib":1,"timestamp":1})",
                           R"({"cpu_used_pct":1,"mem_total_mib":1,"mem_used_mib":1,"timestamp":1})",
                           R"({"cpu_count":1,"cpu_used_pct":1,"mem_total_mib":1,"mem_used_mib":1})",
                           R"({"error":"read /proc/stat: permission denied"})"}) {
    auto m = DecodeMetrics(body);
    ASSERT_FALSE(m.ok()) << body;
    EXPECT_EQ(m.error().code, ErrorCode::kUpstream) << body;
  }
}

}  // namespace
}  // namespace abx::opensandbox

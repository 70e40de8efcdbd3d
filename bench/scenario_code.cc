// Code: a sandbox of template "code" (the fake's contexts are real IPython kernels).
// 1. `code.run` of `1+1` in one live session, in a context of its own, against a direct
//    libcurl client POSTing execd's /code to another context of the same sandbox on a
//    kept-alive connection and reading the stream to its end. Alternated one by one
//    after a warm-up.
// 2. 16 contexts × 20 runs at once: 16 shim sessions, each running in a context of its
//    own back to back, against 16 direct clients doing the same; runs/s over the time
//    from the common start to the last answer, errors counted.
#include <atomic>
#include <thread>
#include <vector>

#include <rapidjson/document.h>

#include "bench/clock.h"
#include "bench/scenarios.h"
#include "bench/side_by_side.h"
#include "bench/stats.h"

namespace abx::bench {
namespace {

constexpr int kContexts = 16;
constexpr int kRunsPerContext = 20;

// POST /code {"code":…,"context":{"id":…,"language":"python"}} read to its end; true
// when the stream held the run's value and its completion.
bool RunCodeDirect(DirectClient& client, const std::string& execd_base, const std::string& context_id,
                   const std::string& code, std::string* error) {
  std::string tail;
  HttpResult r = client.PostStreaming(
      execd_base + "/code",
      "{\"code\":\"" + code + "\",\"context\":{\"id\":\"" + context_id + "\",\"language\":\"python\"}}",
      {"Accept: text/event-stream", "Content-Type: application/json"},
      [&](const char* data, size_t size) {
        tail.append(data, size);
        if (tail.size() > 4096) tail.erase(0, tail.size() - 1024);
      });
  if (!r.ok || r.status != 200) {
    *error = r.ok ? "HTTP " + std::to_string(r.status) : r.error;
    return false;
  }
  if (tail.find("\"type\":\"execution_complete\"") == std::string::npos) {
    *error = "the stream ended without execution_complete";
    return false;
  }
  return true;
}

std::string DirectContext(DirectClient& client, const std::string& execd_base, std::string* error) {
  HttpResult r = client.Post(execd_base + "/code/context", "{\"language\":\"python\"}",
                             {"Content-Type: application/json"});
  rapidjson::Document doc;
  doc.Parse(r.body.c_str(), r.body.size());
  if (!r.ok || r.status != 200 || !doc.IsObject() || !doc.HasMember("id")) {
    *error = "POST /code/context: HTTP " + std::to_string(r.status) + " " + r.error;
    return "";
  }
  return doc["id"].GetString();
}

std::string OursContext(ShimSession& s, const BenchContext& ctx, const std::string& sandbox, std::string* error) {
  Answer a = s.Call("code.context.create", "{\"sandbox_id\":\"" + sandbox + "\"}", 120000);
  if (!a.ok || !a.result->IsObject() || !a.result->HasMember("context_id")) {
    *error = "code.context.create: " + a.error;
    return "";
  }
  return (*a.result)["context_id"].GetString();
}

}  // namespace

void RunCode(BenchContext& ctx) {
  const std::string row1 = "code: code.run 1+1 in a live session (median)";
  const std::string row2 = "code: 16 contexts × 20 runs at once (runs/s)";
  auto fail_both = [&](const std::string& why) {
    ctx.report.Add({row1, why, "", "", "≤ 1.3×", "n/a"});
    ctx.report.Add({row2, why, "", "", "≥ 0.9×, 0 errors", "n/a"});
  };
  ShimSession s;
  std::string error;
  if (!ctx.OpenSession(&s, &error)) return fail_both("session failed: " + error);
  Answer created = s.Call("sandbox.create", "{\"template\":\"code\",\"timeout\":3600}", 120000);
  if (!created.ok || !created.result->IsObject() || !created.result->HasMember("id")) {
    return fail_both("sandbox.create: " + created.error);
  }
  const std::string sandbox = (*created.result)["id"].GetString();
  DirectClient lifecycle;
  HttpResult ep = lifecycle.Get(ctx.fake.base_url() + "/v1/sandboxes/" + sandbox +
                                    "/endpoints/44772?use_server_proxy=false",
                                {"OPEN-SANDBOX-API-KEY: " + ctx.api_key});
  rapidjson::Document doc;
  doc.Parse(ep.body.c_str(), ep.body.size());
  if (!ep.ok || !doc.IsObject() || !doc.HasMember("endpoint")) return fail_both("no execd endpoint");
  const std::string execd_base = std::string("http://") + doc["endpoint"].GetString();

  // 1. One run at a time.
  DirectClient direct;
  const std::string ours_context = OursContext(s, ctx, sandbox, &error);
  const std::string direct_context = ours_context.empty() ? "" : DirectContext(direct, execd_base, &error);
  if (ours_context.empty() || direct_context.empty()) {
    ctx.report.Add({row1, error, "", "", "≤ 1.3×", "n/a"});
  } else {
    const std::string params = "{\"sandbox_id\":\"" + sandbox + "\",\"context_id\":\"" + ours_context +
                               "\",\"code\":\"1+1\"}";
    const SideBySide r = Alternate(
        5, std::max(20, ctx.options.warm_runs / 2),
        [&](std::string* why) {
          Answer a = s.Call("code.run", params, 30000);
          if (!a.ok) *why = a.error;
          return a.ok;
        },
        [&](std::string* why) { return RunCodeDirect(direct, execd_base, direct_context, "1+1", why); });
    AddMedianRow(ctx, row1, "libcurl → execd /code", 1.3, "code", "code.run 1+1", r);
  }

  // 2. 16 contexts at once, each side with contexts of its own, made beforehand.
  std::vector<std::string> ours_contexts, direct_contexts;
  for (int i = 0; i < kContexts && error.find("failed") == std::string::npos; ++i) {
    ours_contexts.push_back(OursContext(s, ctx, sandbox, &error));
    direct_contexts.push_back(DirectContext(direct, execd_base, &error));
  }
  auto all_made = [](const std::vector<std::string>& ids) {
    for (const auto& id : ids) {
      if (id.empty()) return false;
    }
    return ids.size() == static_cast<size_t>(kContexts);
  };
  if (!all_made(ours_contexts) || !all_made(direct_contexts)) {
    ctx.report.Add({row2, "contexts: " + error, "", "", "≥ 0.9×, 0 errors", "n/a"});
  } else {
    auto measure = [&](bool through_shim, int* errors) {
      std::atomic<int> failed{0};
      std::vector<std::thread> threads;
      const int64_t start = NowNs();
      for (int c = 0; c < kContexts; ++c) {
        threads.emplace_back([&, c] {
          std::string why;
          if (through_shim) {
            ShimSession mine;
            if (!ctx.OpenSession(&mine, &why)) {
              failed += kRunsPerContext;
              return;
            }
            const std::string params = "{\"sandbox_id\":\"" + sandbox + "\",\"context_id\":\"" +
                                       ours_contexts[c] + "\",\"code\":\"1+1\"}";
            for (int i = 0; i < kRunsPerContext; ++i) {
              if (!mine.Call("code.run", params, 60000).ok) ++failed;
            }
            mine.Close();
          } else {
            DirectClient client;
            for (int i = 0; i < kRunsPerContext; ++i) {
              if (!RunCodeDirect(client, execd_base, direct_contexts[c], "1+1", &why)) ++failed;
            }
          }
        });
      }
      for (auto& t : threads) t.join();
      *errors = failed.load();
      const double seconds = static_cast<double>(NowNs() - start) / 1e9;
      return kContexts * kRunsPerContext / seconds;
    };
    int ours_errors = 0, base_errors = 0;
    const double ours_rate = measure(true, &ours_errors);
    const double base_rate = measure(false, &base_errors);
    char ours_text[64], base_text[64];
    std::snprintf(ours_text, sizeof ours_text, "%.0f runs/s, %d errors", ours_rate, ours_errors);
    std::snprintf(base_text, sizeof base_text, "%.0f runs/s, %d errors (16 libcurl clients)", base_rate, base_errors);
    Row row{row2, ours_text, base_text, Times(ours_rate / base_rate), "≥ 0.9×, 0 errors",
            Met(ours_rate / base_rate >= 0.9 && ours_errors == 0)};
    ctx.report.Add(row);
  }
  s.Call("sandbox.kill", "{\"sandbox_id\":\"" + sandbox + "\"}", 30000);
  s.Close();
}

}  // namespace abx::bench

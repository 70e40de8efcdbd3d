// Code: a sandbox of template "code" (the fake's contexts are real IPython kernels).
// 1. `code.run` of `1+1` in one live session, in a context of its own, against a direct
//    libcurl client POSTing execd's /code to another context of the same sandbox on a
//    kept-alive connection and reading the stream to its end. Alternated one by one
//    after a warm-up.
// 2. 16 contexts × 20 runs at once: 16 shim sessions, each running in a context of its
//    own back to back, against 16 direct clients doing the same; runs/s over the time
//    from the common start to the last answer, errors counted. Every context has run once
//    before (its kernel started).
// 3. 8 contexts, one 1-second run each, all at once: a `time.sleep(1)`, and a loop until
//    its kernel has used 1 s of CPU; each side in 8 of its 16 contexts; the wall time
//    from the common start to the last answer. The sandbox has the provider's default `resources` (one CPU), which
//    the real execd's sandboxes enforce as Docker does and the fake's own execd does not:
//    what runs at once shares that CPU.
#include <atomic>
#include <memory>
#include <mutex>
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
constexpr int kAtOnce = 8;  // part 3

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
  const std::string execd_base = DirectExecdBase(doc["endpoint"].GetString());

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
    std::mutex first_error_mu;
    std::string first_error[2];  // [through_shim]: what the first failed run said
    auto measure = [&](bool through_shim, int* errors) {
      std::atomic<int> failed{0};
      auto failure = [&](const std::string& why) {
        ++failed;
        std::lock_guard<std::mutex> lock(first_error_mu);
        if (first_error[through_shim].empty()) first_error[through_shim] = why.empty() ? "(no reason)" : why;
      };
      std::vector<std::thread> threads;
      const int64_t start = NowNs();
      for (int c = 0; c < kContexts; ++c) {
        threads.emplace_back([&, c] {
          std::string why;
          if (through_shim) {
            ShimSession mine;
            if (!ctx.OpenSession(&mine, &why)) {
              for (int i = 0; i < kRunsPerContext; ++i) failure(why);
              return;
            }
            const std::string params = "{\"sandbox_id\":\"" + sandbox + "\",\"context_id\":\"" +
                                       ours_contexts[c] + "\",\"code\":\"1+1\"}";
            for (int i = 0; i < kRunsPerContext; ++i) {
              Answer a = mine.Call("code.run", params, 60000);
              if (!a.ok) failure(a.error);
            }
            mine.Close();
          } else {
            DirectClient client;
            for (int i = 0; i < kRunsPerContext; ++i) {
              if (!RunCodeDirect(client, execd_base, direct_contexts[c], "1+1", &why)) failure(why);
            }
          }
        });
      }
      for (auto& t : threads) t.join();
      *errors = failed.load();
      const double seconds = static_cast<double>(NowNs() - start) / 1e9;
      return kContexts * kRunsPerContext / seconds;
    };
    // Untimed, one run in every context first: a context's kernel is still starting for a
    // while after execd answered its creation (32 of them at once take many CPU seconds,
    // more under the sandbox's CPU limit), and the side measured first would pay for it.
    {
      std::vector<std::thread> warm;
      for (int c = 0; c < kContexts; ++c) {
        warm.emplace_back([&, c] {
          std::string why;
          DirectClient client;
          RunCodeDirect(client, execd_base, direct_contexts[c], "1+1", &why);
        });
      }
      for (auto& t : warm) t.join();
      for (int c = 0; c < kContexts; ++c) {
        s.Call("code.run", "{\"sandbox_id\":\"" + sandbox + "\",\"context_id\":\"" + ours_contexts[c] +
                               "\",\"code\":\"1+1\"}", 120000);
      }
    }
    int ours_errors = 0, base_errors = 0;
    const double ours_rate = measure(true, &ours_errors);
    const double base_rate = measure(false, &base_errors);
    char ours_text[64], base_text[64];
    std::snprintf(ours_text, sizeof ours_text, "%.0f runs/s, %d errors", ours_rate, ours_errors);
    std::snprintf(base_text, sizeof base_text, "%.0f runs/s, %d errors (16 libcurl clients)", base_rate, base_errors);
    Row row{row2, ours_text, base_text, Times(ours_rate / base_rate), "≥ 0.9×, 0 errors",
            Met(ours_rate / base_rate >= 0.9 && ours_errors == 0)};
    ctx.report.Add(row);
    for (int side : {1, 0}) {
      if (!first_error[side].empty()) {
        ctx.report.Note("code", std::string("16 × 20: the first error ") + (side ? "of ours" : "of the direct side") +
                                    ": " + first_error[side]);
      }
    }

    // 3. One 1-second run in each of 8 contexts at once.
    // The wall seconds; negative when a session could not be opened (nothing ran).
    auto at_once = [&](bool through_shim, const std::string& code, int* errors) {
      std::vector<std::unique_ptr<ShimSession>> sessions;
      bool opened = true;
      for (int c = 0; through_shim && c < kAtOnce; ++c) {
        sessions.push_back(std::make_unique<ShimSession>());
        std::string why;
        opened = ctx.OpenSession(sessions.back().get(), &why) && opened;
      }
      if (!opened) {
        for (auto& session : sessions) session->Close();
        return -1.0;
      }
      std::atomic<int> failed{0};
      std::vector<std::thread> threads;
      const int64_t start = NowNs();
      for (int c = 0; c < kAtOnce; ++c) {
        threads.emplace_back([&, c] {
          std::string why;
          if (through_shim) {
            const std::string params = "{\"sandbox_id\":\"" + sandbox + "\",\"context_id\":\"" +
                                       ours_contexts[c] + "\",\"code\":\"" + code + "\"}";
            if (!sessions[c]->Call("code.run", params, 120000).ok) ++failed;
          } else {
            DirectClient client;
            if (!RunCodeDirect(client, execd_base, direct_contexts[c], code, &why)) ++failed;
          }
        });
      }
      for (auto& t : threads) t.join();
      const double seconds = static_cast<double>(NowNs() - start) / 1e9;
      for (auto& session : sessions) session->Close();
      *errors = failed.load();
      return seconds;
    };
    const struct {
      const char* row;
      const char* code;  // JSON-escaped
    } kinds[] = {
        {"code: 8 contexts, a time.sleep(1) each, at once (wall s)", "import time\\ntime.sleep(1)"},
        {"code: 8 contexts, 1 s of CPU each, at once (wall s)",
         "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 1: pass"},
    };
    for (const auto& kind : kinds) {
      int ours_failed = 0, base_failed = 0;
      const double ours_s = at_once(true, kind.code, &ours_failed);
      const double base_s = at_once(false, kind.code, &base_failed);
      if (ours_s < 0) {
        ctx.report.Add({kind.row, "a shim session did not open", "", "", "—", "n/a"});
        continue;
      }
      char ours_text[64], base_text[96];
      std::snprintf(ours_text, sizeof ours_text, "%.2f s, %d errors", ours_s, ours_failed);
      std::snprintf(base_text, sizeof base_text, "%.2f s, %d errors (8 libcurl clients)", base_s, base_failed);
      ctx.report.Add({kind.row, ours_text, base_text, Times(ours_s / base_s), "—", "—"});
    }
    ctx.report.Note("code", std::string("8 contexts at once: the sandbox has the provider's default resources "
                                        "(cpu \"1\"), ") +
                                (ctx.options.execd_binary.empty()
                                     ? "not enforced by the fake's own execd (its kernels share this host's cores)"
                                     : "enforced as Docker's nano_cpus (a CFS quota of one core) where the host "
                                       "lets the fake make a control group (else the fake's log says so)"));
  }
  s.Call("sandbox.kill", "{\"sandbox_id\":\"" + sandbox + "\"}", 30000);
  s.Close();
}

}  // namespace abx::bench

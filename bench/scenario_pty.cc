// Terminals, each against a direct WebSocket client (bench/websocket_direct.h) on a
// terminal of its own in the same sandbox of the same fake, in the same run:
// 1. keystroke round trip: one key typed (pty.input) until its echo arrives
//    (pty.output), alternating a letter and a backspace, one by one after a warm-up;
// 2. output throughput: `cat` of a 64 MiB text file in the terminal, from the typed
//    command until a marker printed after it, bytes of output per second;
// 3. bridge RSS with 32 idle terminals open (and held) in one session.
#include <string>
#include <vector>
#include <chrono>
#include <thread>

#include <rapidjson/document.h>

#include "bench/clock.h"
#include "bench/scenarios.h"
#include "bench/stats.h"
#include "bench/websocket_direct.h"
#include "bridge/base/base64.h"

namespace abx::bench {
namespace {

constexpr int kIdleTerminals = 32;
constexpr char kBigFile[] = "/tmp/abx-bench-pty.txt";
constexpr long long kBigBytes = 64LL << 20;

// Our side of one terminal: the output of pty.output notifications for `pty_id`, decoded.
class OurTerminal {
 public:
  OurTerminal(ShimSession* s, std::string sandbox, std::string pty_id)
      : s_(s), sandbox_(std::move(sandbox)), pty_id_(std::move(pty_id)) {}

  void Type(const std::string& bytes) {
    s_->Send("pty.input", "{\"sandbox_id\":\"" + sandbox_ + "\",\"pty_id\":\"" + pty_id_ +
                              "\",\"data\":\"" + Base64Encode(bytes) + "\",\"encoding\":\"base64\"}");
  }
  // Reads the shim's lines until the output holds `needle` (searched from `from`, kept
  // short), or any output at all when `needle` is empty; the bytes of output read.
  long long ReadUntil(const std::string& needle, int timeout_ms, bool* found) {
    long long bytes = 0;
    std::string tail;
    std::string line;
    *found = false;
    const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
    while (NowNs() < deadline) {
      if (!s_->ReadRawLine(&line, timeout_ms)) return bytes;
      if (line.find("\"pty.output\"") == std::string::npos) continue;
      const size_t at = line.find("\"data\":\"");
      if (at == std::string::npos) continue;
      const size_t end = line.find('"', at + 8);
      auto data = Base64Decode(std::string_view(line).substr(at + 8, end - at - 8));
      if (!data) continue;
      bytes += static_cast<long long>(data->size());
      if (needle.empty()) {
        *found = true;
        return bytes;
      }
      tail += *data;
      if (tail.find(needle) != std::string::npos) {
        *found = true;
        return bytes;
      }
      if (tail.size() > 4096) tail.erase(0, tail.size() - 256);
    }
    return bytes;
  }

 private:
  ShimSession* s_;
  std::string sandbox_, pty_id_;
};

std::string OpenOurs(ShimSession& s, const BenchContext& ctx, std::string* error) {
  Answer a = s.Call("pty.open", ctx.Params(""), 30000);
  if (!a.ok || !a.result->IsObject() || !a.result->HasMember("pty_id")) {
    *error = "pty.open: " + a.error;
    return "";
  }
  return (*a.result)["pty_id"].GetString();
}

}  // namespace

void RunPty(BenchContext& ctx) {
  const std::string row1 = "pty: keystroke round trip (median)";
  const std::string row2 = "pty: cat of a 64 MiB file in the terminal";
  const std::string row3 = "pty: bridge RSS with 32 idle terminals";
  auto fail = [&](const std::string& why) {
    ctx.report.Add({row1, why, "", "", "≤ 1.5×", "n/a"});
    ctx.report.Add({row2, why, "", "", "≥ 0.5×", "n/a"});
    ctx.report.Add({row3, why, "", "", "≤ 32 MiB", "n/a"});
  };
  ShimSession s;
  std::string error;
  if (!ctx.OpenSession(&s, &error)) return fail("session failed: " + error);
  Answer made = s.Call("exec.run", ctx.Params("\"command\":\"head -c " + std::to_string(kBigBytes / 4 * 3) +
                                               " /dev/urandom | base64 -w 1000 > " + kBigFile + "\""),
                       120000);
  if (!made.ok || !made.result->IsObject() || !(*made.result)["exit_code"].IsInt() ||
      (*made.result)["exit_code"].GetInt() != 0) {
    return fail("making the file: " + (made.ok ? std::string((*made.result)["stderr"].GetString()) : made.error));
  }

  const std::string pty = OpenOurs(s, ctx, &error);
  DirectTerminal direct;
  if (pty.empty() || !direct.Open(ctx.execd_base, &error)) return fail(error);
  OurTerminal ours(&s, ctx.sandbox_id, pty);
  bool found = false;
  // The prompts first.
  ours.Type("echo ready-$((1+1))\n");
  ours.ReadUntil("ready-2", 10000, &found);
  direct.Type("echo ready-$((1+1))\n");
  direct.ReadUntil("ready-2", 10000, &found);

  // 1. Keystrokes, one at a time: each a letter other than the last, timed until that
  // letter's echo arrives; every 20 keys the line is erased (^U) and what that prints
  // read out, untimed.
  auto drain = [&](auto& terminal) {
    bool more = true;
    while (more) terminal.ReadUntil("", 200, &more);
  };
  static const char kKeys[] = "qwertyuiopzxcvbnm";
  std::vector<double> our_ms, direct_ms;
  int errors = 0;
  const int warmup = 10, runs = std::max(100, ctx.options.warm_runs);
  for (int i = 0; i < warmup + runs; ++i) {
    if (i % 20 == 0) {
      ours.Type("\x15");
      drain(ours);
      direct.Type("\x15");
      drain(direct);
    }
    const std::string key(1, kKeys[i % (sizeof kKeys - 1)]);
    Stopwatch t;
    ours.Type(key);
    ours.ReadUntil(key, 5000, &found);
    const double ms = t.ElapsedMs();
    if (!found) ++errors;
    else if (i >= warmup) our_ms.push_back(ms);
    t.Restart();
    direct.Type(key);
    direct.ReadUntil(key, 5000, &found);
    const double dms = t.ElapsedMs();
    if (found && i >= warmup) direct_ms.push_back(dms);
  }
  // Answers to pty.input come as lines too; the reads above pass over them.
  const Summary o = Summarize(our_ms), d = Summarize(direct_ms);
  Row row{row1, Ms(o.median), Ms(d.median) + " (WebSocket → execd)", "", "≤ 1.5×", "n/a"};
  if (o.count && d.count) {
    row.ratio = Times(o.median / d.median);
    row.met = Met(o.median / d.median <= 1.5 && errors == 0);
  }
  ctx.report.Add(row);
  ctx.report.Note("pty", "keystroke: ours " + Describe(o, "ms") + ", direct " + Describe(d, "ms") +
                             (errors ? "; " + std::to_string(errors) + " keys without an echo" : ""));

  // 2. Throughput, from an empty command line.
  ours.Type("\x15");
  drain(ours);
  direct.Type("\x15");
  drain(direct);
  const std::string command = std::string("cat ") + kBigFile + "; echo DONE-$((2+3))-MARK\n";
  Stopwatch t;
  ours.Type(command);
  const long long our_bytes = ours.ReadUntil("DONE-5-MARK", 300000, &found);
  const double our_s = t.ElapsedMs() / 1000;
  const bool ours_ok = found && our_bytes >= kBigBytes;
  t.Restart();
  direct.Type(command);
  const long long direct_bytes = direct.ReadUntil("DONE-5-MARK", 300000, &found);
  found = found && direct_bytes >= kBigBytes;
  const double direct_s = t.ElapsedMs() / 1000;
  if (!ours_ok || !found) {
    ctx.report.Add({row2, ours_ok ? "" : "short: " + std::to_string(our_bytes) + " bytes",
                    found ? "" : "short: " + std::to_string(direct_bytes) + " bytes", "", "≥ 0.5×", "n/a"});
  } else {
    const double our_rate = static_cast<double>(our_bytes) / our_s, direct_rate = static_cast<double>(direct_bytes) / direct_s;
    ctx.report.Add({row2, Mib(our_rate) + "/s", Mib(direct_rate) + "/s (WebSocket → execd)",
                    Times(our_rate / direct_rate), "≥ 0.5×", Met(our_rate / direct_rate >= 0.5)});
  }
  direct.Close();
  s.Call("pty.close", ctx.Params("\"pty_id\":\"" + pty + "\""), 30000);

  // 3. 32 idle terminals held by one session.
  std::vector<std::string> idle;
  for (int i = 0; i < kIdleTerminals; ++i) {
    std::string id = OpenOurs(s, ctx, &error);
    if (id.empty()) break;
    idle.push_back(id);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const long long rss = ProcStatusBytes(ctx.bridge_pid, "VmRSS");
  if (idle.size() != kIdleTerminals || rss < 0) {
    ctx.report.Add({row3, "opened " + std::to_string(idle.size()) + ": " + error, "", "", "≤ 32 MiB", "n/a"});
  } else {
    ctx.report.Add({row3, Mib(static_cast<double>(rss)), "—", "", "≤ 32 MiB", Met(rss <= (32LL << 20))});
  }
  for (const std::string& id : idle) s.Call("pty.close", ctx.Params("\"pty_id\":\"" + id + "\""), 30000);
  s.Call("exec.run", ctx.Params(std::string("\"command\":\"rm -f ") + kBigFile + "\""), 30000);
  s.Close();
}

}  // namespace abx::bench

// Interactive stdin: a command started with stdin_stream in one live session.
//  - A line written to `cat` with process.stdin and its echo read back as exec.output,
//    against a warm `exec.run true` in the same session (the contract's bound: ≤ 2×),
//    alternated one by one after a warm-up.
//  - 1 MiB through process.stdin into `sha256sum` (one call, then eof): MiB/s from the
//    call to the exit, and the digest checked against this host's sha256sum of the same
//    bytes; beside it, the same 1 MiB written with files.write, for scale.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/clock.h"
#include "bench/scenarios.h"
#include "bench/side_by_side.h"
#include "bench/stats.h"
#include "bridge/base/base64.h"

namespace abx::bench {
namespace {

// The exec_id of a command started with a stdin stream, or "".
std::string StartPiped(ShimSession& s, BenchContext& ctx, const std::string& command, std::string* error) {
  Answer a = s.Call("exec.start", ctx.Params("\"command\":\"" + command + "\",\"stdin_stream\":true"), 30000);
  if (!a.ok || !a.result->IsObject() || !a.result->HasMember("exec_id")) {
    *error = "exec.start: " + a.error;
    return "";
  }
  return (*a.result)["exec_id"].GetString();
}

// Reads the session's lines until both the answer to `id` and an exec.output holding
// `needle` (or an exec.exit, when `needle` is empty) have come; *answered_ms (when given)
// gets the time the answer took on `clock`.
bool AwaitAnswerAndOutput(ShimSession& s, int64_t id, const std::string& needle, std::string* output,
                          std::string* error, const Stopwatch* clock = nullptr, double* answered_ms = nullptr) {
  const std::string id_key = "\"id\":" + std::to_string(id) + ",";
  bool answered = false, seen = false;
  std::string line;
  while (!(answered && seen)) {
    if (!s.ReadRawLine(&line, 60000)) {
      *error = "no answer or output in time";
      return false;
    }
    if (line.find(id_key) != std::string::npos) {
      if (line.find("\"error\"") != std::string::npos) {
        *error = line.substr(0, 300);
        return false;
      }
      answered = true;
      if (clock && answered_ms) *answered_ms = clock->ElapsedMs();
    } else if (needle.empty() ? line.find("\"exec.exit\"") != std::string::npos
                              : line.find("\"exec.output\"") != std::string::npos &&
                                    line.find(needle) != std::string::npos) {
      seen = true;
    }
    if (output && line.find("\"exec.output\"") != std::string::npos) *output += line;
  }
  return true;
}

std::string HostSha256(const std::string& bytes) {
  char path[] = "/tmp/abx-bench-stdin-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  const bool written = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  close(fd);
  std::string digest;
  if (written) {
    if (FILE* pipe = popen(("sha256sum " + std::string(path)).c_str(), "r")) {
      char buffer[128];
      if (fgets(buffer, sizeof buffer, pipe)) digest.assign(buffer, 64);
      pclose(pipe);
    }
  }
  unlink(path);
  return digest;
}

void RunEcho(BenchContext& ctx, ShimSession& s) {
  const std::string row = "stdin: a line to cat and its echo (median)";
  std::string error;
  const std::string exec_id = StartPiped(s, ctx, "cat", &error);
  if (exec_id.empty()) return ctx.report.Add({row, error, "", "", "≤ 2.0×", "n/a"});
  const std::string run_params = ctx.Params("\"command\":\"true\"");
  int n = 0;
  const int warmup = 5;
  std::vector<double> answered;  // when process.stdin itself answered, warm-up included
  const SideBySide r = Alternate(
      warmup, std::max(20, ctx.options.warm_runs / 2),
      [&](std::string* why) {
        const std::string line = "echo-" + std::to_string(n++);
        Stopwatch clock;
        double answer_ms = 0;
        const int64_t id = s.Send("process.stdin", ctx.Params("\"exec_id\":\"" + exec_id + "\",\"data\":\"" + line + "\\n\""));
        const bool ok = AwaitAnswerAndOutput(s, id, "\"" + line + "\\n\"", nullptr, why, &clock, &answer_ms);
        if (ok) answered.push_back(answer_ms);
        return ok;
      },
      [&](std::string* why) {
        Answer a = s.Call("exec.run", run_params, 30000);
        if (!a.ok) *why = a.error;
        return a.ok;
      });
  AddMedianRow(ctx, row, "exec.run true, same session", 2.0, "stdin", "a line to cat and back", r);
  // The write alone: its answer comes once the bytes are in the pipe. The echo also waits
  // for execd to pass the output on, which upstream's execd does at its 100 ms polls of a
  // running command's output files.
  if (answered.size() > static_cast<size_t>(warmup)) answered.erase(answered.begin(), answered.begin() + warmup);
  const Summary a = Summarize(answered);
  Row written{"stdin: process.stdin answered (median)", Ms(a.median), Ms(r.base.median) + " (exec.run true, same session)",
              "", "≤ 2.0×", "n/a"};
  if (a.count && r.base.count) {
    written.ratio = Times(a.median / r.base.median);
    written.met = Met(a.median / r.base.median <= 2.0);
  }
  ctx.report.Add(written);
  ctx.report.Note("stdin", "process.stdin answered: " + Describe(a, "ms"));
  const int64_t id = s.Send("process.stdin", ctx.Params("\"exec_id\":\"" + exec_id + "\",\"eof\":true"));
  AwaitAnswerAndOutput(s, id, "", nullptr, &error);
}

void RunMegabyte(BenchContext& ctx, ShimSession& s) {
  const std::string row = "stdin: 1 MiB into sha256sum";
  std::string bytes(1 << 20, '\0');
  uint32_t x = 2463534242u;
  for (char& c : bytes) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    c = static_cast<char>(x);
  }
  const std::string expected = HostSha256(bytes);
  const std::string data = Base64Encode(bytes);
  std::string error;
  const std::string exec_id = StartPiped(s, ctx, "sha256sum", &error);
  if (exec_id.empty()) return ctx.report.Add({row, error, "", "", "—", "n/a"});
  Stopwatch t;
  const int64_t id = s.Send("process.stdin", ctx.Params("\"exec_id\":\"" + exec_id + "\",\"data\":\"" + data +
                                                           "\",\"encoding\":\"base64\",\"eof\":true"));
  std::string output;
  const bool ok = AwaitAnswerAndOutput(s, id, "", &output, &error);
  const double seconds = t.ElapsedMs() / 1000;
  if (!ok) return ctx.report.Add({row, error, "", "", "—", "n/a"});
  const bool exact = !expected.empty() && output.find(expected) != std::string::npos;

  t.Restart();
  Answer w = s.Call("files.write", ctx.Params("\"path\":\"/tmp/bench-stdin-1mib\",\"data\":\"" + data +
                                                   "\",\"encoding\":\"base64\""), 60000);
  const double write_seconds = t.ElapsedMs() / 1000;
  s.Call("files.remove", ctx.Params("\"path\":\"/tmp/bench-stdin-1mib\""), 30000);
  ctx.report.Add({row, MiBps(bytes.size() / seconds) + (exact ? ", digest exact" : ", DIGEST WRONG"),
                  w.ok ? MiBps(bytes.size() / write_seconds) + " (files.write of the same MiB)" : "files.write: " + w.error,
                  w.ok ? Times(write_seconds / seconds) : "", "exact", Met(exact)});
  ctx.report.Note("stdin", "1 MiB into sha256sum: " + Ms(seconds * 1000) + " from the call to exec.exit; files.write " +
                               Ms(write_seconds * 1000));
}

}  // namespace

void RunStdin(BenchContext& ctx) {
  ShimSession s;
  std::string error;
  if (!ctx.OpenSession(&s, &error)) {
    return ctx.report.Add({"stdin: a line to cat and its echo (median)", "session failed: " + error, "", "", "≤ 2.0×", "n/a"});
  }
  RunEcho(ctx, s);
  RunMegabyte(ctx, s);
  s.Close();
}

}  // namespace abx::bench

#include "tests/soak/workload.h"

#include <thread>

#include "tests/e2e/base64_encode.h"
#include "tests/e2e/json_util.h"

namespace abx::soak {
namespace {

using e2e::GetBool;
using e2e::GetInt;
using e2e::GetString;
using e2e::JsonObject;

// Generous: a loaded 2-core machine runs 64 sessions at once.
using e2e::Base64;

constexpr Millis kCallTimeout{90000};
constexpr size_t kKeptFailures = 8;
constexpr uint64_t kMaxThinkMs = 1000;
// Sandboxes live an hour: the default lifetime (600 s) would let the fake expire the
// sessions' own sandboxes near the end of a soak run at its longest (600 s).
constexpr int64_t kSandboxLifetimeSeconds = 3600;

// Where two strings first differ, and the text around it, for a failure message.
std::string FirstDifference(const std::string& got, const std::string& want) {
  size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  const size_t from = at < 40 ? 0 : at - 40;
  return "got " + std::to_string(got.size()) + " bytes, want " + std::to_string(want.size()) +
         "; first difference at byte " + std::to_string(at) + ": got \"" +
         e2e::Abbreviate(got.substr(from, 100), 100) + "\" want \"" +
         e2e::Abbreviate(want.substr(from, 100), 100) + "\"";
}

std::string Describe(const std::shared_ptr<const rapidjson::Document>& doc) {
  return doc ? e2e::Abbreviate(e2e::ToJson(*doc), 400) : "no answer";
}

}  // namespace

SessionWorkload::SessionWorkload(SoakClient* client, CommandSlots* slots, int index,
                                 int extra_creates)
    : client_(client), slots_(slots), index_(index), extra_creates_(extra_creates),
      rng_(0x50a6ULL * 1000003ULL + static_cast<uint64_t>(index)) {}

void SessionWorkload::Fail(const std::string& message) {
  ++report_.failures;
  if (report_.failure_messages.size() < kKeptFailures) {
    report_.failure_messages.push_back("session " + std::to_string(index_) + ": " + message);
  }
}

void SessionWorkload::Record(const std::string& op, Clock::time_point since) {
  ++report_.ops;
  report_.latency_us[op].push_back(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - since).count());
}

std::shared_ptr<const rapidjson::Document> SessionWorkload::Ok(const std::string& op,
                                                               const std::string& method,
                                                               const std::string& params) {
  const auto start = Clock::now();
  auto response = client_->Call(method, params, kCallTimeout);
  if (!response || !response->HasMember("result")) {
    Fail(op + ": " + method + " failed: " + Describe(response));
    return nullptr;
  }
  Record(op, start);
  return response;
}

std::string SessionWorkload::CreateSandbox(const std::string& metadata_json) {
  auto response = Ok("sandbox.create", "sandbox.create",
                     JsonObject()
                         .Str("template", "base")
                         .Int("timeout", kSandboxLifetimeSeconds)
                         .Raw("metadata", metadata_json)
                         .str());
  if (!response) return "";
  ++report_.creates;
  const std::string id = GetString(*response, "result.id");
  if (id.empty() || GetString(*response, "result.state") != "Running") {
    Fail("sandbox.create gave no Running sandbox: " + Describe(response));
    return "";
  }
  return id;
}

void SessionWorkload::Kill(const std::string& sandbox_id) {
  auto response =
      Ok("sandbox.kill", "sandbox.kill", JsonObject().Str("sandbox_id", sandbox_id).str());
  if (!response) return;
  ++report_.kills;
  if (!GetBool(*response, "result.killed", false)) {
    Fail("sandbox.kill of a live sandbox said killed:false: " + Describe(response));
  }
}

bool SessionWorkload::Prepare() {
  sandbox_ = CreateSandbox(JsonObject().Str("soak-session", "s" + std::to_string(index_)).str());
  return !sandbox_.empty();
}

void SessionWorkload::Cleanup() {
  if (!sandbox_.empty()) Kill(sandbox_);
  sandbox_.clear();
}

SessionWorkload::Command SessionWorkload::NextCommand() {
  Command c;
  const int roll = static_cast<int>(rng_() % 100);
  // Most commands are small; some write a thousand lines or two; a few ~0.25 MB.
  int lines = roll < 80 ? 1 + static_cast<int>(rng_() % 100)
              : roll < 98 ? 500 + static_cast<int>(rng_() % 1500)
                          : 10000 + static_cast<int>(rng_() % 10000);
  int error_lines = static_cast<int>(rng_() % 50);
  c.exit_code = static_cast<int>(rng_() % 4);
  const std::string tag = "s" + std::to_string(index_) + "o" + std::to_string(++op_counter_) + "-";
  // seq's %g is exact for integers below 10^6.
  c.text = "seq -f '" + tag + "%g' 1 " + std::to_string(lines) + "; seq -f '" + tag +
           "e%g' 1 " + std::to_string(error_lines) + " >&2; exit " + std::to_string(c.exit_code);
  for (int i = 1; i <= lines; ++i) c.stdout_data += tag + std::to_string(i) + "\n";
  for (int i = 1; i <= error_lines; ++i) c.stderr_data += tag + "e" + std::to_string(i) + "\n";
  return c;
}

void SessionWorkload::ExecStream() {
  const Command c = NextCommand();
  const auto start = Clock::now();
  std::shared_ptr<const rapidjson::Document> response;
  StreamResult r = client_->Stream(
      JsonObject().Str("sandbox_id", sandbox_).Str("command", c.text).str(), kCallTimeout,
      &response);
  for (const std::string& problem : r.problems) Fail("exec.start: " + problem);
  if (!r.exited) return;
  Record("exec.start", start);
  if (r.stdout_data != c.stdout_data) {
    Fail("exec.start stdout of `" + c.text + "`: " + FirstDifference(r.stdout_data, c.stdout_data));
  }
  if (r.stderr_data != c.stderr_data) {
    Fail("exec.start stderr of `" + c.text + "`: " + FirstDifference(r.stderr_data, c.stderr_data));
  }
  if (r.exit_code != c.exit_code) {
    Fail("exec.start of `" + c.text + "` exited " +
         (r.exit_code ? std::to_string(*r.exit_code) : std::string("null")));
  }
  report_.checked_bytes += static_cast<int64_t>(r.stdout_data.size() + r.stderr_data.size());
}

void SessionWorkload::ExecRun() {
  const Command c = NextCommand();
  auto response = Ok("exec.run", "exec.run",
                     JsonObject().Str("sandbox_id", sandbox_).Str("command", c.text).str());
  if (!response) return;
  const std::string out = GetString(*response, "result.stdout");
  const std::string err = GetString(*response, "result.stderr");
  if (out != c.stdout_data) Fail("exec.run stdout of `" + c.text + "`: " + FirstDifference(out, c.stdout_data));
  if (err != c.stderr_data) Fail("exec.run stderr of `" + c.text + "`: " + FirstDifference(err, c.stderr_data));
  if (GetInt(*response, "result.exit_code", -1) != c.exit_code) {
    Fail("exec.run of `" + c.text + "`: " + Describe(response).substr(0, 200));
  }
  report_.checked_bytes += static_cast<int64_t>(out.size() + err.size());
}

void SessionWorkload::FileRoundTrip() {
  const int roll = static_cast<int>(rng_() % 100);
  const size_t size = roll < 60 ? rng_() % 4096
                      : roll < 90 ? 4096 + rng_() % (60 * 1024)
                                  : 64 * 1024 + rng_() % (448 * 1024);
  const bool binary = rng_() % 2 == 0;
  std::string content(size, '\0');
  for (char& ch : content) {
    ch = binary ? static_cast<char>(rng_() & 0xff) : static_cast<char>(' ' + rng_() % 95);
  }
  const std::string path =
      "/tmp/soak-" + std::to_string(index_) + "-" + std::to_string(op_counter_++ % 4) + ".bin";
  const std::string data = binary ? Base64(content) : content;
  const std::string encoding = binary ? "base64" : "utf8";
  auto written = Ok("files.write", "files.write",
                    JsonObject()
                        .Str("sandbox_id", sandbox_)
                        .Str("path", path)
                        .Str("data", data)
                        .Str("encoding", encoding)
                        .str());
  if (!written) return;
  if (GetInt(*written, "result.size", -1) != static_cast<int64_t>(size)) {
    Fail("files.write of " + std::to_string(size) + " bytes: " + Describe(written));
  }
  auto read = Ok("files.read", "files.read",
                 JsonObject().Str("sandbox_id", sandbox_).Str("path", path).Str("encoding", encoding).str());
  if (!read) return;
  const std::string back = GetString(*read, "result.data");
  if (back != data) Fail("files.read of " + path + ": " + FirstDifference(back, data));
  if (GetInt(*read, "result.size", -1) != static_cast<int64_t>(size) ||
      !GetBool(*read, "result.eof", false)) {
    Fail("files.read of " + path + ": size/eof wrong: " + Describe(read).substr(0, 300));
  }
  report_.checked_bytes += static_cast<int64_t>(2 * size);
}

void SessionWorkload::GetAndList() {
  auto got = Ok("sandbox.get", "sandbox.get", JsonObject().Str("sandbox_id", sandbox_).str());
  if (got && (GetString(*got, "result.id") != sandbox_ ||
              GetString(*got, "result.state") != "Running")) {
    Fail("sandbox.get of the session's sandbox: " + Describe(got));
  }
  auto listed = Ok("sandbox.list", "sandbox.list",
                   JsonObject()
                       .Raw("metadata", JsonObject().Str("soak-session", "s" + std::to_string(index_)).str())
                       .str());
  if (!listed) return;
  const std::vector<std::string> ids = [&] {
    std::vector<std::string> out;
    const rapidjson::Value* list = e2e::Find(*listed, "result.sandboxes");
    if (list && list->IsArray()) {
      for (const auto& s : list->GetArray()) out.push_back(GetString(s, "id"));
    }
    return out;
  }();
  if (ids != std::vector<std::string>{sandbox_}) {
    Fail("sandbox.list by this session's metadata is not exactly its sandbox: " + Describe(listed));
  }
}

void SessionWorkload::CreateAndKillExtra() {
  ++extras_done_;
  const std::string extra =
      CreateSandbox(JsonObject().Str("soak-extra", "s" + std::to_string(index_)).str());
  if (extra.empty()) return;
  slots_->Acquire();
  auto ran = Ok("exec.run", "exec.run",
                JsonObject().Str("sandbox_id", extra).Str("command", "echo extra").str());
  slots_->Release();
  if (ran && GetString(*ran, "result.stdout") != "extra\n") Fail("exec.run in the extra sandbox: " + Describe(ran));
  Kill(extra);
  auto gone = client_->Call("sandbox.get", JsonObject().Str("sandbox_id", extra).str(), kCallTimeout);
  const std::string code = gone ? GetString(*gone, "error.data.epp_code") : "";
  if (code != "E8005") {
    Fail("sandbox.get of a killed sandbox is not E8005: " + Describe(gone));
  } else {
    ++report_.ops;
  }
}

void SessionWorkload::Run(Clock::time_point start, Clock::time_point end) {
  const auto total = end - start;
  while (Clock::now() < end) {
    // The extra create/kill cycles fall evenly over the run.
    if (extras_done_ < extra_creates_ &&
        Clock::now() >= start + total * (extras_done_ + 1) / (extra_creates_ + 1)) {
      CreateAndKillExtra();
      continue;
    }
    // A host's think time between calls.
    std::this_thread::sleep_for(Millis(static_cast<int64_t>(rng_() % kMaxThinkMs)));
    if (Clock::now() >= end) break;
    const int roll = static_cast<int>(rng_() % 100);
    if (roll < 55) {
      slots_->Acquire();
      roll < 30 ? ExecStream() : ExecRun();
      slots_->Release();
    } else if (roll < 85) {
      FileRoundTrip();
    } else {
      GetAndList();
    }
  }
}

}  // namespace abx::soak

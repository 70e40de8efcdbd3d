#include "tests/bridge/api/epp/session_fixture.h"

#include <unistd.h>

#include <random>
#include <thread>
#include <vector>

#include "tests/e2e/json_util.h"
#include "tests/e2e/process.h"

namespace abx::epp::testing {

using e2e::GetBool;
using e2e::GetString;
using e2e::JsonObject;

std::string SeqOutput(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += std::to_string(i) + "\n";
  return out;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

std::string UniqueSleep(int seconds) {
  return "sleep " + std::to_string(seconds) + "." + std::to_string(::getpid()) + "1";
}

bool GoneWithin(const std::string& command, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!e2e::FindProcesses({command}).empty()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(Millis(100));
  }
  return true;
}

std::string Describe(const MessagePtr& message) {
  return message ? message->raw : std::string("(no answer)");
}

void OnThreads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  for (std::thread& t : threads) t.join();
}

std::unique_ptr<InProcessHost> SessionTest::HostWithSandbox(std::string* sandbox_id,
                                                            const std::string& key) {
  auto host = std::make_unique<InProcessHost>(core(), Config(key));
  MessagePtr init = host->Initialize();
  if (!init || init->IsError()) {
    ADD_FAILURE() << "initialize: " << Describe(init);
    return nullptr;
  }
  *sandbox_id = CreateSandbox(host.get(), "{}");
  if (sandbox_id->empty()) return nullptr;
  return host;
}

std::string SessionTest::CreateSandbox(InProcessHost* host, const std::string& metadata_json) {
  MessagePtr created = host->Call(
      "sandbox.create", JsonObject().Str("template", "base").Raw("metadata", metadata_json).str(),
      kAnswerTimeout);
  const std::string id = created ? GetString(created->result(), "id") : "";
  if (id.empty() || GetString(created->result(), "state") != "Running") {
    ADD_FAILURE() << "sandbox.create: " << Describe(created);
    return "";
  }
  return id;
}

void SessionTest::KillSandbox(const std::string& sandbox_id) {
  InProcessHost host(core(), Config(kKeyA));
  ASSERT_NE(host.Initialize(), nullptr);
  MessagePtr killed = host.Call("sandbox.kill", JsonObject().Str("sandbox_id", sandbox_id).str(),
                                kAnswerTimeout);
  EXPECT_TRUE(killed && GetBool(killed->result(), "killed")) << Describe(killed);
}

}  // namespace abx::epp::testing

#include "tests/bridge/fake_sandbox.h"

#include <chrono>
#include <thread>

#include <rapidjson/document.h>

#include "tests/e2e/process.h"

namespace abx::bridge_test {
namespace {

constexpr int64_t kTimeoutMs = 15000;

std::string Member(const std::string& json, const char* name) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  return doc.IsObject() && doc.HasMember(name) && doc[name].IsString() ? doc[name].GetString() : "";
}

}  // namespace

std::unique_ptr<FakeSandbox> FakeSandbox::Start(std::string* error) {
  std::unique_ptr<FakeSandbox> sandbox(new FakeSandbox());
  sandbox->dir_ = std::make_unique<abx::testing::TempDir>("abxfs");
  if (sandbox->dir_->path().empty()) {
    *error = "mkdtemp failed";
    return nullptr;
  }
  sandbox->fake_ = e2e::FakeServer::Start({}, sandbox->dir_->path() + "/fake.log", error);
  if (!sandbox->fake_) return nullptr;
  auto created = sandbox->fake_->Http(
      "POST", "/v1/sandboxes", R"({"image":{"uri":"ubuntu"},"entrypoint":["sleep","infinity"],"resourceLimits":{}})");
  sandbox->sandbox_id_ = Member(created.body, "id");
  if (created.status != 202 || sandbox->sandbox_id_.empty()) {
    *error = "create sandbox: " + std::to_string(created.status) + " " + created.body;
    return nullptr;
  }
  auto endpoint = sandbox->fake_->Http("GET", "/v1/sandboxes/" + sandbox->sandbox_id_ + "/endpoints/44772");
  if (endpoint.status != 200) {
    *error = "execd endpoint: " + std::to_string(endpoint.status) + " " + endpoint.body;
    return nullptr;
  }
  sandbox->execd_url_ = "http://" + Member(endpoint.body, "endpoint");
  auto http = opensandbox::HttpCaller::Create();
  if (!http.ok()) {
    *error = http.error().message;
    return nullptr;
  }
  sandbox->http_ = std::move(http).value();
  sandbox->execd_.emplace(sandbox->http_.get(), opensandbox::ExecdTarget{sandbox->execd_url_, {}}, kTimeoutMs);
  CancelToken never;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  Status ping = sandbox->execd_->Ping(&never, 2000);
  while (!ping.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ping = sandbox->execd_->Ping(&never, 2000);
  }
  if (!ping.ok()) {
    *error = "execd does not answer: " + ping.error().message;
    return nullptr;
  }
  return sandbox;
}

FakeSandbox::~FakeSandbox() {
  execd_.reset();
  http_.reset();
  fake_.reset();
}

std::string FakeSandbox::LogTail(size_t bytes) const {
  if (!fake_) return "";
  const std::string log = e2e::ReadFile(fake_->log_path());
  return log.substr(log.size() > bytes ? log.size() - bytes : 0);
}

}  // namespace abx::bridge_test

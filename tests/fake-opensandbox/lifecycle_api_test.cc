// The lifecycle API of an in-process fake, checked against docs/opensandbox.md §1 and
// "What is faithful" in tests/fake-opensandbox/README.md.

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/fake-opensandbox/sandbox_cgroup.h"
#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

constexpr char kCreateBody[] =
    R"({"image":{"uri":"python:3.11","auth":{"username":"u","password":"hunter2"}},)"
    R"("entrypoint":["tail","-f","/dev/null"],"resourceLimits":{"cpu":"1"},"timeout":600})";

std::string Field(const std::string& body, const char* name) {
  rapidjson::Document doc = ParseJson(body);
  if (!doc.IsObject() || !doc.HasMember(name) || !doc[name].IsString()) return "";
  return doc[name].GetString();
}

TEST(CpuLimitTest, ReadAsDockersNanoCpusAndIgnoredWhenUnparseable) {
  EXPECT_EQ(ParseCpuLimit("500m"), 0.5);
  EXPECT_EQ(ParseCpuLimit("2"), 2.0);
  EXPECT_EQ(ParseCpuLimit("1.5"), 1.5);
  EXPECT_EQ(ParseCpuLimit(" 250M "), 0.25);
  EXPECT_EQ(ParseCpuLimit("+1"), 1.0);
  EXPECT_EQ(ParseCpuLimit("1e1"), 10.0);
  for (const char* bad : {"", " ", "m", "one", "2 cores", "0", "0m", "-1", "1e", "inf", "0x10"}) {
    EXPECT_FALSE(ParseCpuLimit(bad).has_value()) << bad;
  }
}

TEST(LifecycleAuthTest, MissingAndWrongKeyBodies) {
  FakeConfig config = TestConfig();
  config.api_key = "secret-key";
  TestFake fake(config);
  auto missing = fake.lifecycle->Get("/v1/sandboxes");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(missing->body,
            R"({"code":"MISSING_API_KEY","message":"Authentication credentials are missing. )"
            R"(Provide API key via OPEN-SANDBOX-API-KEY header."})");
  EXPECT_FALSE(missing->get_header_value("X-Request-ID").empty());

  auto wrong = fake.lifecycle->Get("/v1/sandboxes", {{"OPEN-SANDBOX-API-KEY", "nope"}});
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(wrong->body,
            R"({"code":"INVALID_API_KEY","message":"Authentication credentials are invalid. )"
            R"(Check your API key and try again."})");
  auto empty = fake.lifecycle->Get("/v1/sandboxes", {{"OPEN-SANDBOX-API-KEY", ""}});
  EXPECT_EQ(Field(empty->body, "code"), "MISSING_API_KEY");

  // Auth runs before routing: an unknown path without a key is 401, not 404.
  EXPECT_EQ(fake.lifecycle->Get("/no/such/route")->status, 401);
  auto unknown = fake.lifecycle->Get("/no/such/route", {{"open-sandbox-api-key", "secret-key"}});
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(unknown->body, R"({"detail":"Not Found"})");

  // Exempt: /health and the server proxy.
  auto health = fake.lifecycle->Get("/health");
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, R"({"status":"healthy"})");
  EXPECT_EQ(fake.lifecycle->Get("/sandboxes/x/proxy/44772/ping")->status, 404);  // not 401
  auto ok = fake.lifecycle->Get("/v1/sandboxes", {{"OPEN-SANDBOX-API-KEY", "secret-key"}});
  EXPECT_EQ(ok->status, 200);
}

TEST(LifecycleTest, RequestIdEchoedOrGeneratedAndDateHeader) {
  TestFake fake;
  auto echoed = fake.lifecycle->Get("/health", {{"X-Request-ID", "  my-id  "}});
  EXPECT_EQ(echoed->get_header_value("X-Request-ID"), "my-id");
  auto generated = fake.lifecycle->Get("/v1/sandboxes/none");
  std::string id = generated->get_header_value("X-Request-ID");
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find('-'), std::string::npos);
  EXPECT_NE(generated->get_header_value("Date").find(" GMT"), std::string::npos);
}

TEST(LifecycleTest, ClockSkewShowsInDateAndTimestamps) {
  FakeConfig config = TestConfig();
  config.clock_skew_s = -86400 * 2;  // two days behind
  TestFake fake(config);
  auto res = fake.lifecycle->Post("/v1/sandboxes", kCreateBody, "application/json");
  ASSERT_EQ(res->status, 202);
  auto created = ParseDateTime(Field(res->body, "createdAt"));
  ASSERT_TRUE(created);
  auto behind = std::chrono::system_clock::now() - *created;
  EXPECT_GT(behind, std::chrono::hours(47));
  EXPECT_LT(behind, std::chrono::hours(49));
  auto expires = ParseDateTime(Field(res->body, "expiresAt"));
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(*expires - *created).count(), 600);
  // The Date header is on the same clock.
  std::string date = res->get_header_value("Date");
  std::string expected_day = FormatHttpDate(*created).substr(0, 16);
  EXPECT_EQ(date.substr(0, 16), expected_day);
  // A renew that is in the future for the client but in the past for the server.
  std::string id = Field(res->body, "id");
  std::string client_soon = FormatPydanticTime(std::chrono::system_clock::now() -
                                               std::chrono::hours(47) - std::chrono::hours(2));
  auto past = fake.lifecycle->Post(("/v1/sandboxes/" + id + "/renew-expiration").c_str(),
                                   R"({"expiresAt":")" + client_soon + R"("})", "application/json");
  EXPECT_EQ(past->status, 400);
}

TEST(LifecycleTest, CreateAnswers202RunningWithoutNullsOrSecrets) {
  TestFake fake;
  auto res = fake.lifecycle->Post("/v1/sandboxes", kCreateBody, "application/json");
  ASSERT_EQ(res->status, 202);
  EXPECT_EQ(res->body.find("hunter2"), std::string::npos);
  EXPECT_EQ(res->body.find(":null"), std::string::npos);
  rapidjson::Document doc = ParseJson(res->body);
  std::string id = doc["id"].GetString();
  EXPECT_EQ(id.size(), 36u);
  EXPECT_EQ(id[14], '4');
  EXPECT_STREQ(doc["status"]["state"].GetString(), "Running");
  EXPECT_TRUE(doc.HasMember("expiresAt"));
  EXPECT_TRUE(doc.HasMember("createdAt"));
  EXPECT_FALSE(doc.HasMember("image"));     // not in the create response
  EXPECT_FALSE(doc.HasMember("metadata"));  // not sent

  auto get = fake.lifecycle->Get(("/sandboxes/" + id).c_str());  // also without /v1
  ASSERT_EQ(get->status, 200);
  rapidjson::Document sandbox = ParseJson(get->body);
  EXPECT_STREQ(sandbox["image"]["uri"].GetString(), "python:3.11");
  EXPECT_FALSE(sandbox["image"].HasMember("auth"));
  EXPECT_FALSE(sandbox.HasMember("metadata"));

  // Manual cleanup: expiresAt omitted; `{}` metadata echoed by create.
  auto manual = fake.lifecycle->Post(
      "/v1/sandboxes",
      R"({"image":{"uri":"x"},"entrypoint":["sleep","infinity"],"resourceLimits":{},"metadata":{}})",
      "application/json");
  ASSERT_EQ(manual->status, 202);
  rapidjson::Document m = ParseJson(manual->body);
  EXPECT_FALSE(m.HasMember("expiresAt"));
  EXPECT_TRUE(m["metadata"].IsObject());
}

struct Case {
  const char* body;
  int status;
  const char* needle;  // expected inside the answer
};

TEST(LifecycleTest, AStartDelayKeepsANewSandboxPendingThatLongAndItsExecdUnready) {
  TestFake fake;
  ASSERT_EQ(fake.lifecycle->Post("/_fake/faults", R"({"start_ms":400})", "application/json")->status, 200);
  const auto started = std::chrono::steady_clock::now();
  const std::string id = fake.CreateSandbox();
  ASSERT_FALSE(id.empty());
  auto state = [&] {
    auto res = fake.lifecycle->Get(("/v1/sandboxes/" + id).c_str());
    return res ? std::string(ParseJson(res->body)["status"]["state"].GetString()) : "";
  };
  EXPECT_EQ(state(), "Pending");
  EndpointClient execd(fake.ExecdEndpoint(id));
  auto ping = execd.client->Get(execd.Path("/ping").c_str());
  ASSERT_TRUE(ping);
  EXPECT_NE(ping->status, 200);
  while (state() == "Pending" && std::chrono::steady_clock::now() - started < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(state(), "Running");
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(400));
}

TEST(LifecycleTest, CreateValidation422And400) {
  FakeConfig config = TestConfig();
  config.max_timeout_s = 3600;
  TestFake fake(config);
  const Case cases[] = {
      {R"({"image":{"uri":"x"},"entrypoint":["a"],"resourceLimits":{},"timeout":30})", 422,
       R"({"detail":[{"type":"greater_than_equal","loc":["body","timeout"],"msg":"Input should be greater than or equal to 60","input":30,"ctx":{"ge":60}}]})"},
      {R"({"entrypoint":["a"],"resourceLimits":{}})", 422,
       R"("type":"value_error","loc":["body"],"msg":"Value error, Exactly one of image or snapshotId must be provided.")"},
      {R"({"image":{"uri":"x"},"resourceLimits":{}})", 422,
       R"("msg":"Value error, Entrypoint is required when image is provided.")"},
      {R"({"image":{"uri":"x"},"entrypoint":["a"]})", 422,
       R"("msg":"Value error, resourceLimits is required when poolRef is not provided.")"},
      {R"({"image":{"uri":"x"},"entrypoint":[],"resourceLimits":{}})", 422,
       R"("type":"too_short","loc":["body","entrypoint"])"},
      {R"({"image":{},"entrypoint":["a"],"resourceLimits":{}})", 422,
       R"("type":"missing","loc":["body","image","uri"],"msg":"Field required","input":{})"},
      {R"({"image":{"uri":"x"},"entrypoint":["a"],"resourceLimits":{"cpu":1}})", 422,
       R"("type":"string_type","loc":["body","resourceLimits","cpu"])"},
      {R"({"image":{"uri":"x","auth":{"username":"u","password":"p4ss"}},"resourceLimits":{}})",
       422, R"("password":"***")"},
      {"{not json", 422, R"("type":"json_invalid")"},
      {"", 422, R"({"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]})"},
      {R"({"image":{"uri":"x"},"entrypoint":["a"],"resourceLimits":{},"timeout":7200})", 400,
       R"("code":"SANDBOX::INVALID_PARAMETER")"},
      {R"({"image":{"uri":"x"},"entrypoint":["a"],"resourceLimits":{},"metadata":{"opensandbox.io/x":"1"}})",
       400, R"("code":"SANDBOX::INVALID_METADATA_LABEL")"},
      {R"({"image":{"uri":"x"},"entrypoint":["a"],"resourceLimits":{},"metadata":{"ok":"bad value!"}})",
       400, R"("code":"SANDBOX::INVALID_METADATA_LABEL")"},
      {R"({"image":{"uri":"x"},"entrypoint":["a"],"resourceLimits":{},"platform":{"os":"darwin","arch":"amd64"}})",
       400, R"("code":"SANDBOX::INVALID_PARAMETER")"},
      {R"({"image":{"uri":"x"},"entrypoint":["a"],"resourceLimits":{},"secureAccess":true})", 400,
       R"("code":"SANDBOX::INVALID_PARAMETER")"},
      {R"({"image":{"uri":"x"},"entrypoint":["  "],"resourceLimits":{}})", 400,
       R"("code":"DOCKER::INVALID_ENTRYPOINT")"},
  };
  for (const Case& c : cases) {
    auto res = fake.lifecycle->Post("/v1/sandboxes", c.body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << c.body << " -> " << res->body;
    EXPECT_NE(res->body.find(c.needle), std::string::npos) << c.body << " -> " << res->body;
  }
  // Accepted extras: network policy, upper-case platform, metadata with a prefix.
  auto ok = fake.lifecycle->Post(
      "/v1/sandboxes",
      R"({"image":{"uri":"x"},"entrypoint":["sleep","infinity"],"resourceLimits":{},"networkPolicy":{"defaultAction":"deny","egress":[]},)"
      R"("platform":{"os":"Linux","arch":"ARM64"},"metadata":{"example.com/team":"infra"},"unknownField":1})",
      "application/json");
  ASSERT_EQ(ok->status, 202) << ok->body;
  EXPECT_NE(ok->body.find(R"("platform":{"os":"linux","arch":"arm64"})"), std::string::npos);
  EXPECT_EQ(fake.server->port() > 0, true);
}

TEST(LifecycleTest, ListFiltersPagesNewestFirst) {
  TestFake fake;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(fake.CreateSandbox(R"("metadata":{"team":")" + std::string(i % 2 ? "a" : "b") +
                                     R"(","n":")" + std::to_string(i) + "\"}"));
    ASSERT_FALSE(ids.back().empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto page1 = fake.lifecycle->Get("/v1/sandboxes?pageSize=2");
  rapidjson::Document doc = ParseJson(page1->body);
  ASSERT_EQ(doc["items"].Size(), 2u);
  EXPECT_EQ(doc["items"][0]["id"].GetString(), ids[4]);  // newest first
  EXPECT_EQ(doc["items"][1]["id"].GetString(), ids[3]);
  EXPECT_EQ(doc["pagination"]["totalItems"].GetInt(), 5);
  EXPECT_EQ(doc["pagination"]["totalPages"].GetInt(), 3);
  EXPECT_TRUE(doc["pagination"]["hasNextPage"].GetBool());

  rapidjson::Document last = ParseJson(fake.lifecycle->Get("/v1/sandboxes?pageSize=2&page=3")->body);
  EXPECT_EQ(last["items"].Size(), 1u);
  EXPECT_FALSE(last["pagination"]["hasNextPage"].GetBool());
  rapidjson::Document past = ParseJson(fake.lifecycle->Get("/v1/sandboxes?pageSize=2&page=9")->body);
  EXPECT_EQ(past["items"].Size(), 0u);
  EXPECT_EQ(past["pagination"]["totalItems"].GetInt(), 5);

  // metadata is one parameter holding an inner query string.
  rapidjson::Document team_a =
      ParseJson(fake.lifecycle->Get("/v1/sandboxes?metadata=team%3Da%26n%3D3")->body);
  ASSERT_EQ(team_a["items"].Size(), 1u);
  EXPECT_EQ(team_a["items"][0]["id"].GetString(), ids[3]);
  auto bad = fake.lifecycle->Get("/v1/sandboxes?metadata=team%3Da%26broken");
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Field(bad->body, "code"), "INVALID_METADATA_FORMAT");
  EXPECT_NE(bad->body.find("bad query field"), std::string::npos);

  // State filter: OR, case-insensitive.
  ASSERT_EQ(fake.lifecycle->Post(("/v1/sandboxes/" + ids[0] + "/pause").c_str(), "", "")->status, 202);
  rapidjson::Document paused = ParseJson(fake.lifecycle->Get("/v1/sandboxes?state=paused")->body);
  ASSERT_EQ(paused["items"].Size(), 1u);
  EXPECT_EQ(paused["items"][0]["id"].GetString(), ids[0]);
  rapidjson::Document both =
      ParseJson(fake.lifecycle->Get("/v1/sandboxes?state=PAUSED&state=running")->body);
  EXPECT_EQ(both["pagination"]["totalItems"].GetInt(), 5);

  auto too_big = fake.lifecycle->Get("/v1/sandboxes?pageSize=201");
  EXPECT_EQ(too_big->status, 422);
  EXPECT_NE(too_big->body.find(R"("type":"less_than_equal","loc":["query","pageSize"])"),
            std::string::npos);
  EXPECT_EQ(fake.lifecycle->Get("/v1/sandboxes?page=0")->status, 422);
}

TEST(LifecycleTest, DeleteIs204ThenNotFound) {
  TestFake fake;
  std::string id = fake.CreateSandbox();
  std::string path = "/v1/sandboxes/" + id;
  auto first = fake.lifecycle->Delete(path.c_str());
  EXPECT_EQ(first->status, 204);
  EXPECT_TRUE(first->body.empty());
  auto get = fake.lifecycle->Get(path.c_str());
  EXPECT_EQ(get->status, 404);
  EXPECT_EQ(get->body,
            R"({"code":"DOCKER::SANDBOX_NOT_FOUND","message":"Sandbox )" + id + R"( not found."})");
  auto second = fake.lifecycle->Delete(path.c_str());
  EXPECT_EQ(second->status, 404);
  EXPECT_EQ(Field(second->body, "code"), "DOCKER::SANDBOX_NOT_FOUND");
}

TEST(LifecycleTest, PauseResumeDockerFlavour) {
  TestFake fake;
  std::string id = fake.CreateSandbox();
  std::string base = "/v1/sandboxes/" + id;
  auto resume_running = fake.lifecycle->Post((base + "/resume").c_str(), "", "");
  EXPECT_EQ(resume_running->status, 409);
  EXPECT_EQ(Field(resume_running->body, "code"), "DOCKER::SANDBOX_NOT_PAUSED");
  auto pause = fake.lifecycle->Post((base + "/pause").c_str(), "", "");
  EXPECT_EQ(pause->status, 202);
  EXPECT_TRUE(pause->body.empty());
  EXPECT_NE(fake.lifecycle->Get(base.c_str())->body.find(R"("state":"Paused")"), std::string::npos);
  EXPECT_EQ(Field(fake.lifecycle->Post((base + "/pause").c_str(), "", "")->body, "code"),
            "DOCKER::SANDBOX_PAUSE_FAILED");
  EXPECT_EQ(fake.lifecycle->Post((base + "/resume").c_str(), "", "")->status, 202);
  EXPECT_NE(fake.lifecycle->Get(base.c_str())->body.find(R"("state":"Running")"), std::string::npos);
}

TEST(LifecycleTest, PauseResumeKubernetesFlavourPassesThroughPausing) {
  FakeConfig config = TestConfig();
  config.runtime = Runtime::kKubernetes;
  TestFake fake(config);
  std::string id = fake.CreateSandbox();
  std::string base = "/v1/sandboxes/" + id;
  ASSERT_EQ(fake.lifecycle->Post((base + "/pause").c_str(), "", "")->status, 202);
  EXPECT_NE(fake.lifecycle->Get(base.c_str())->body.find(R"("state":"Pausing")"), std::string::npos);
  auto again = fake.lifecycle->Post((base + "/pause").c_str(), "", "");
  EXPECT_EQ(again->status, 409);
  EXPECT_EQ(Field(again->body, "code"), "KUBERNETES::INVALID_STATE");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_NE(fake.lifecycle->Get(base.c_str())->body.find(R"("state":"Paused")"), std::string::npos);
  ASSERT_EQ(fake.lifecycle->Post((base + "/resume").c_str(), "", "")->status, 202);
  EXPECT_NE(fake.lifecycle->Get(base.c_str())->body.find(R"("state":"Resuming")"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_NE(fake.lifecycle->Get(base.c_str())->body.find(R"("state":"Running")"), std::string::npos);
  auto missing = fake.lifecycle->Get("/v1/sandboxes/nope");
  EXPECT_EQ(missing->body,
            R"({"code":"KUBERNETES::SANDBOX_NOT_FOUND","message":"Sandbox 'nope' not found"})");
}

TEST(LifecycleTest, RenewChecks) {
  FakeConfig config = TestConfig();
  config.max_timeout_s = 7200;
  TestFake fake(config);
  std::string id = fake.CreateSandbox(R"("timeout":600)");
  std::string path = "/v1/sandboxes/" + id + "/renew-expiration";
  auto future = fake.lifecycle->Post(path.c_str(), R"({"expiresAt":"2999-01-01T00:00:00Z"})",
                                     "application/json");
  EXPECT_EQ(future->status, 400);  // beyond the maximum timeout
  EXPECT_EQ(Field(future->body, "code"), "SANDBOX::INVALID_PARAMETER");

  auto when = std::chrono::system_clock::now() + std::chrono::seconds(1800);
  std::string text = FormatPydanticTime(when);
  // Shortening or extending within the maximum: both fine (no "later than" rule).
  auto ok = fake.lifecycle->Post(path.c_str(), R"({"expiresAt":")" + text + R"("})",
                                 "application/json");
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(ok->body, R"({"expiresAt":")" + text + R"("})");
  EXPECT_NE(fake.lifecycle->Get(("/v1/sandboxes/" + id).c_str())->body.find(text),
            std::string::npos);

  auto past = fake.lifecycle->Post(path.c_str(), R"({"expiresAt":"2001-01-01T00:00:00Z"})",
                                   "application/json");
  EXPECT_EQ(past->status, 400);
  EXPECT_EQ(past->body,
            R"({"code":"DOCKER::INVALID_EXPIRATION","message":"New expiration time must be in the future."})");
  auto missing = fake.lifecycle->Post("/v1/sandboxes/none/renew-expiration",
                                      R"({"expiresAt":"2001-01-01T00:00:00Z"})", "application/json");
  EXPECT_EQ(missing->status, 404);  // Docker looks the sandbox up first
  EXPECT_EQ(fake.lifecycle->Post(path.c_str(), R"({"expiresAt":"soon"})", "application/json")->status,
            422);

  std::string manual = fake.CreateSandbox();
  auto conflict = fake.lifecycle->Post(("/v1/sandboxes/" + manual + "/renew-expiration").c_str(),
                                       R"({"expiresAt":")" + text + R"("})", "application/json");
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(Field(conflict->body, "code"), "DOCKER::INVALID_EXPIRATION");
}

TEST(LifecycleTest, ExpiryRemovesTheSandboxAndKillsItsProcesses) {
  TestFake fake;
  std::string id = fake.CreateSandbox(R"("timeout":60)");
  ASSERT_FALSE(id.empty());
  // Renewing may shorten the life: expire in 1.5 s.
  std::string soon = FormatPydanticTime(std::chrono::system_clock::now() +
                                        std::chrono::milliseconds(1500));
  ASSERT_EQ(fake.lifecycle->Post(("/v1/sandboxes/" + id + "/renew-expiration").c_str(),
                                 R"({"expiresAt":")" + soon + R"("})", "application/json")
                ->status,
            200);
  EndpointClient execd(fake.ExecdEndpoint(id));
  auto bg = execd.client->Post(execd.Path("/command").c_str(),
                               R"({"command":"sleep 613.7","background":true})", "application/json");
  ASSERT_EQ(bg->status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(ProcessRunning("sleep 613.7"));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(fake.lifecycle->Get(("/v1/sandboxes/" + id).c_str())->status, 404);
  auto stats = ParseJson(fake.lifecycle->Get("/_fake/stats")->body);
  EXPECT_EQ(stats["live_sandboxes"].GetInt(), 0);
  // No `sleep 613.7` of that sandbox survives.
  EXPECT_FALSE(ProcessRunning("sleep 613.7"));
}

TEST(LifecycleTest, PendingPollsThenRunning) {
  FakeConfig config = TestConfig();
  config.pending_polls = 2;
  TestFake fake(config);
  auto res = fake.lifecycle->Post("/v1/sandboxes", kCreateBody, "application/json");
  ASSERT_EQ(res->status, 202);
  EXPECT_NE(res->body.find(R"("state":"Pending")"), std::string::npos);
  std::string id = Field(res->body, "id");
  std::string path = "/v1/sandboxes/" + id;
  EXPECT_NE(fake.lifecycle->Get(path.c_str())->body.find("Pending"), std::string::npos);
  EXPECT_NE(fake.lifecycle->Get(path.c_str())->body.find("Pending"), std::string::npos);
  EXPECT_NE(fake.lifecycle->Get(path.c_str())->body.find("Running"), std::string::npos);
}

// A real container whose entrypoint names a file its image does not have starts, exits
// 127 at once, and its sandbox turns Failed: the fake does the same (image_catalog.h),
// so a wrong entrypoint can never pass the tests.
TEST(LifecycleTest, AnEntrypointTheImageLacksFailsTheSandbox) {
  TestFake fake;
  auto create = [&](const std::string& image, const std::string& entrypoint) {
    auto res = fake.lifecycle->Post(
        "/v1/sandboxes",
        R"({"image":{"uri":")" + image + R"("},"entrypoint":)" + entrypoint + R"(,"resourceLimits":{}})",
        "application/json");
    EXPECT_EQ(res->status, 202) << res->body;
    return Field(res->body, "id");
  };
  const std::string script = R"(["/opt/code-interpreter/code-interpreter.sh"])";
  const std::string stock = create("python:3.12-slim", script);
  const std::string wrong_path = create("opensandbox/code-interpreter:v1.1.0",
                                        R"(["/opt/opensandbox/code-interpreter.sh"])");
  const std::string interpreter = create("registry.example.com:5000/opensandbox/code-interpreter:v1.1.0", script);
  const std::string shell_line = create("python:3.12-slim", R"(["tail -f /dev/null"])");
  const std::string unknown_program = create("python:3.12-slim", R"(["no-such-program-here"])");
  // Image v1.0.2 and older keep the script at the old path (docker/code-interpreter/v1.0.2).
  const std::string old_layout_new_path = create("opensandbox/code-interpreter:v1.0.2", script);
  const std::string old_layout = create("opensandbox/code-interpreter:v1.0.2", R"(["/opt/opensandbox/code-interpreter.sh"])");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto state = [&](const std::string& id) {
    return ParseJson(fake.lifecycle->Get(("/v1/sandboxes/" + id).c_str())->body);
  };
  for (const std::string& id : {stock, wrong_path, unknown_program, old_layout_new_path}) {
    rapidjson::Document doc = state(id);
    EXPECT_STREQ(doc["status"]["state"].GetString(), "Failed") << id;
    EXPECT_STREQ(doc["status"]["reason"].GetString(), "CONTAINER_EXITED_ERROR");
    EXPECT_STREQ(doc["status"]["message"].GetString(), "Sandbox container exited with code 127.");
  }
  for (const std::string& id : {interpreter, shell_line, old_layout}) {
    EXPECT_STREQ(state(id)["status"]["state"].GetString(), "Running") << id;
  }
  // The failed container's execd is gone with it.
  EndpointClient execd(fake.ExecdEndpoint(stock));
  EXPECT_EQ(execd.client->Get(execd.Path("/ping").c_str())->status, 503);
}

TEST(LifecycleTest, MetadataPatch) {
  TestFake fake;
  std::string id = fake.CreateSandbox(R"("metadata":{"a":"1","b":"2"})");
  std::string path = "/v1/sandboxes/" + id + "/metadata";
  auto res = fake.lifecycle->Patch(path.c_str(), R"({"a":null,"c":"3","zz":null})",
                                   "application/json");
  ASSERT_EQ(res->status, 200);
  rapidjson::Document doc = ParseJson(res->body);
  EXPECT_FALSE(doc["metadata"].HasMember("a"));
  EXPECT_STREQ(doc["metadata"]["b"].GetString(), "2");
  EXPECT_STREQ(doc["metadata"]["c"].GetString(), "3");
  EXPECT_EQ(fake.lifecycle->Patch(path.c_str(), R"({"a":1})", "application/json")->status, 422);
  EXPECT_EQ(Field(fake.lifecycle->Patch(path.c_str(), R"({"opensandbox.io/x":"1"})",
                                        "application/json")->body, "code"),
            "INVALID_METADATA_LABEL");
  EXPECT_EQ(Field(fake.lifecycle->Patch(path.c_str(), R"({"bad key!":"1"})", "application/json")->body,
                  "code"),
            "SANDBOX::INVALID_METADATA_LABEL");
}

TEST(LifecycleTest, EndpointsShapes) {
  TestFake fake;
  std::string id = fake.CreateSandbox(R"("networkPolicy":{"defaultAction":"deny"})");
  auto info = ParseJson(fake.lifecycle->Get(("/_fake/sandboxes/" + id).c_str())->body);
  int execd_port = info["execd_port"].GetInt();
  std::string base = "/v1/sandboxes/" + id + "/endpoints/";
  auto direct = fake.lifecycle->Get((base + "44772").c_str());
  EXPECT_EQ(direct->body,
            R"({"endpoint":"127.0.0.1:)" + std::to_string(execd_port) + R"(/proxy/44772"})");
  auto proxied = fake.lifecycle->Get((base + "8080?use_server_proxy=true").c_str());
  EXPECT_EQ(Field(proxied->body, "endpoint"),
            "127.0.0.1:" + std::to_string(fake.server->port()) + "/sandboxes/" + id + "/proxy/8080");
  auto egress = ParseJson(fake.lifecycle->Get((base + "18080").c_str())->body);
  EXPECT_TRUE(egress["headers"].HasMember("OPENSANDBOX-EGRESS-AUTH"));
  auto signed_route = fake.lifecycle->Get((base + "44772?expires=4102444800").c_str());
  EXPECT_EQ(signed_route->status, 400);
  EXPECT_EQ(Field(signed_route->body, "code"), "SANDBOX::API_NOT_SUPPORTED");
  EXPECT_EQ(fake.lifecycle->Get((base + "abc").c_str())->status, 422);
  EXPECT_EQ(fake.lifecycle->Get((base + "80?use_server_proxy=maybe").c_str())->status, 422);
  EXPECT_EQ(fake.lifecycle->Get("/v1/sandboxes/none/endpoints/44772")->status, 404);
  // Wrong method on a known path.
  auto wrong = fake.lifecycle->Put(("/v1/sandboxes/" + id).c_str(), "{}", "application/json");
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->body, R"({"detail":"Method Not Allowed"})");
}

TEST(LifecycleFaultsTest, ErrorRateGarbageAndNeverRunning) {
  TestFake fake;
  auto set = fake.lifecycle->Post("/_fake/faults", R"({"error_rate":1})", "application/json");
  ASSERT_EQ(set->status, 200);
  auto failed = fake.lifecycle->Get("/v1/sandboxes");
  EXPECT_EQ(failed->status, 503);
  EXPECT_EQ(Field(failed->body, "code"), "DOCKER::INITIALIZATION_ERROR");
  EXPECT_EQ(fake.lifecycle->Get("/_fake/stats")->status, 200);  // control stays usable
  fake.lifecycle->Delete("/_fake/faults");

  fake.lifecycle->Post("/_fake/faults", R"({"garbage_body":true})", "application/json");
  auto garbage = fake.lifecycle->Get("/v1/sandboxes");
  EXPECT_EQ(garbage->status, 200);
  EXPECT_TRUE(ParseJson(garbage->body).IsNull());
  fake.lifecycle->Post("/_fake/faults", R"({"garbage_body":0,"never_running":true})",
                       "application/json");
  std::string body = fake.lifecycle->Post("/v1/sandboxes", kCreateBody, "application/json")->body;
  std::string id = Field(body, "id");
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(fake.lifecycle->Get(("/v1/sandboxes/" + id).c_str())->body.find("Pending"),
              std::string::npos);
  }
  EXPECT_EQ(fake.lifecycle->Post("/_fake/faults", R"({"bogus":1})", "application/json")->status, 400);
}

TEST(LifecycleFaultsTest, LatencyAndSilent) {
  TestFake fake;
  fake.lifecycle->Post("/_fake/faults", R"({"latency_ms":300})", "application/json");
  auto start = std::chrono::steady_clock::now();
  fake.lifecycle->Get("/health");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(290));
  fake.lifecycle->Post("/_fake/faults", R"({"latency_ms":0,"silent":true})", "application/json");
  httplib::Client impatient("127.0.0.1", fake.server->port());
  impatient.set_read_timeout(0, 400000);
  auto res = impatient.Get("/health");
  EXPECT_FALSE(res);  // accepted, never answered
  fake.lifecycle->Delete("/_fake/faults");
  EXPECT_EQ(fake.lifecycle->Get("/health")->status, 200);
}

TEST(LifecycleStatsTest, CountsAcceptedConnections) {
  TestFake fake;
  auto read_stats = [&] {
    return ParseJson(fake.lifecycle->Get("/_fake/stats")->body);
  };
  uint64_t before = read_stats()["connections_accepted"].GetUint64();
  {
    httplib::Client reusing("127.0.0.1", fake.server->port());
    reusing.set_keep_alive(true);
    for (int i = 0; i < 5; ++i) ASSERT_EQ(reusing.Get("/health")->status, 200);
  }
  // One for the reusing client, one per stats read (the test client does not keep alive).
  uint64_t after = read_stats()["connections_accepted"].GetUint64();
  EXPECT_EQ(after - before, 2u);
  {
    httplib::Client fresh("127.0.0.1", fake.server->port());
    for (int i = 0; i < 3; ++i) ASSERT_EQ(fresh.Get("/health")->status, 200);
  }
  EXPECT_EQ(read_stats()["connections_accepted"].GetUint64() - after, 4u);
}

}  // namespace
}  // namespace fake_opensandbox

// The fake's code interpreter (/code routes) against docs/opensandbox.md's account of
// execd: real IPython kernels behind the contexts, execd's events and their order, its
// error bodies, the interrupt, a busy context, the kernel-dies fault, and what a plain
// image answers.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

constexpr char kInterpreterBody[] =
    R"({"image":{"uri":"opensandbox/code-interpreter:v1.1.0"},)"
    R"("entrypoint":["/opt/code-interpreter/code-interpreter.sh"],"resourceLimits":{}})";

std::string Create(TestFake& fake, const char* body) {
  auto res = fake.lifecycle->Post("/v1/sandboxes", body, "application/json");
  EXPECT_EQ(res->status, 202) << res->body;
  return ParseJson(res->body)["id"].GetString();
}

std::vector<std::string> Types(const std::vector<StreamEvent>& events) {
  std::vector<std::string> types;
  for (const auto& e : events) {
    if (e.type != "ping") types.push_back(e.type);
  }
  return types;
}

class CodeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fake_ = new TestFake();
    const std::string id = Create(*fake_, kInterpreterBody);
    execd_ = new EndpointClient(fake_->ExecdEndpoint(id));
  }
  static void TearDownTestSuite() {
    delete execd_;
    delete fake_;
  }

  static std::string NewContext() {
    auto res = execd_->client->Post(execd_->Path("/code/context").c_str(), R"({"language":"python"})",
                                    "application/json");
    EXPECT_EQ(res->status, 200) << res->body;
    rapidjson::Document doc = ParseJson(res->body);
    EXPECT_STREQ(doc["language"].GetString(), "python");
    EXPECT_FALSE(doc.HasMember("cwd"));
    return doc["id"].GetString();
  }
  // On `client` (one per thread: a client is one connection), by default the suite's.
  static httplib::Result Run(const std::string& context_id, const std::string& code,
                             EndpointClient* client = nullptr) {
    rapidjson::StringBuffer body;
    rapidjson::Writer<rapidjson::StringBuffer> w(body);
    w.StartObject();
    w.Key("code");
    w.String(code.c_str());
    w.Key("context");
    w.StartObject();
    if (!context_id.empty()) {
      w.Key("id");
      w.String(context_id.c_str());
    }
    w.Key("language");
    w.String("python");
    w.EndObject();
    w.EndObject();
    EndpointClient* via = client ? client : execd_;
    return via->client->Post(via->Path("/code").c_str(), body.GetString(), "application/json");
  }
  static std::vector<StreamEvent> RunEvents(const std::string& context_id, const std::string& code,
                                            EndpointClient* client = nullptr) {
    auto res = Run(context_id, code, client);
    EXPECT_EQ(res->status, 200);
    bool framed = false;
    auto events = ParseEvents(res->body, &framed);
    EXPECT_TRUE(framed) << res->body;
    return events;
  }
  static std::string Field(const StreamEvent& e, const char* path1, const char* path2 = nullptr) {
    rapidjson::Document doc = ParseJson(e.raw);
    const rapidjson::Value* v = &doc[path1];
    if (path2) v = &(*v)[path2];
    return v->IsString() ? v->GetString() : "";
  }

  static TestFake* fake_;
  static EndpointClient* execd_;
};
TestFake* CodeTest::fake_ = nullptr;
EndpointClient* CodeTest::execd_ = nullptr;

TEST_F(CodeTest, StateStreamsAndTheValueAsExecdSendsThem) {
  const std::string id = NewContext();
  auto events = RunEvents(id, "x = 41\nprint('hi')\nimport sys; sys.stderr.write('err\\n')\nx + 1");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].type, "init");
  EXPECT_EQ(events[0].text, id);  // a run's init names its context
  EXPECT_EQ(events[1].type, "ping");
  EXPECT_EQ(Types(events), (std::vector<std::string>{"init", "stdout", "stderr", "execution_count",
                                                     "result", "execution_complete"}))
      << events.back().raw;
  EXPECT_EQ(events[2].text, "hi\n");  // the kernel's chunk, newline kept
  EXPECT_EQ(events[3].text, "err\n");
  rapidjson::Document count = ParseJson(events[4].raw);
  EXPECT_EQ(count["execution_count"].GetInt(), 1);
  EXPECT_NE(events[5].raw.find(R"("results":{"text":"42"})"), std::string::npos) << events[5].raw;

  // The same kernel next time: x is still there.
  events = RunEvents(id, "x");
  EXPECT_NE(events[events.size() - 2].raw.find(R"("results":{"text":"41"})"), std::string::npos);

  // Another context is another kernel.
  events = RunEvents(NewContext(), "x");
  EXPECT_EQ(Types(events), (std::vector<std::string>{"init", "status", "error", "execution_complete"}));
  EXPECT_EQ(events[events.size() - 2].raw.find("NameError") != std::string::npos, true);
}

TEST_F(CodeTest, AnExceptionIsStatusErrorThenComplete) {
  auto events = RunEvents(NewContext(), "print('before')\n1/0");
  EXPECT_EQ(Types(events),
            (std::vector<std::string>{"init", "stdout", "status", "error", "execution_complete"}));
  const StreamEvent& error = events[events.size() - 2];
  rapidjson::Document doc = ParseJson(error.raw);
  EXPECT_STREQ(doc["error"]["ename"].GetString(), "ZeroDivisionError");
  EXPECT_STREQ(doc["error"]["evalue"].GetString(), "division by zero");
  ASSERT_TRUE(doc["error"]["traceback"].IsArray());
  EXPECT_GT(doc["error"]["traceback"].Size(), 0u);
  EXPECT_STREQ(ParseJson(events[events.size() - 3].raw)["text"].GetString(), "error");
}

TEST_F(CodeTest, RichResultsKeepTheirMimeKeysAsGoWritesThem) {
  auto events = RunEvents(NewContext(),
                          "class Page:\n"
                          "    def _repr_html_(self): return '<b>bold</b> & more'\n"
                          "    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\nfake'\n"
                          "Page()");
  const std::string& result = events[events.size() - 2].raw;
  EXPECT_NE(result.find(R"("text/html":"\u003cb\u003ebold\u003c/b\u003e \u0026 more")"), std::string::npos)
      << result;
  // The kernel's own base64 (IPython ends it with a newline).
  EXPECT_NE(result.find(R"("image/png":"iVBORw0KGgpmYWtl\n")"), std::string::npos) << result;
  // Sorted keys, text/plain renamed "text".
  EXPECT_LT(result.find("\"image/png\""), result.find("\"text\""));
  EXPECT_LT(result.find("\"text\""), result.find("\"text/html\""));
}

TEST_F(CodeTest, InterruptStopsTheRunAndKeepsTheState) {
  const std::string id = NewContext();
  RunEvents(id, "kept = 'yes'");
  EndpointClient second(execd_->host + ":" + std::to_string(execd_->port) + execd_->prefix);
  auto running =
      std::async(std::launch::async, [&] { return RunEvents(id, "while True: pass", &second); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Busy meanwhile: init, ping, then the bare error object, unframed.
  auto busy = Run(id, "1");
  EXPECT_EQ(busy->status, 200);
  const std::string bare = R"({"code":"RUNTIME_ERROR","message":"error running codes session is busy"})";
  ASSERT_GE(busy->body.size(), bare.size());
  EXPECT_EQ(busy->body.substr(busy->body.size() - bare.size()), bare) << busy->body;
  const auto sent = std::chrono::steady_clock::now();
  auto interrupted = execd_->client->Delete(execd_->Path("/code?id=" + id).c_str());
  EXPECT_EQ(interrupted->status, 200);
  auto events = running.get();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(2));
  EXPECT_NE(events[events.size() - 2].raw.find("KeyboardInterrupt"), std::string::npos);
  // The kernel runs code with stop_on_error, as execd asks: a request that reaches it in
  // the moment after the interrupt's error is aborted and answers empty (the provider
  // waits that moment out, docs/mapping.md). A slow build can hit that moment: ask again.
  bool kept = false;
  for (int attempt = 0; attempt < 20 && !kept; ++attempt) {
    if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    events = RunEvents(id, "kept");
    kept = events.size() >= 2 && events[events.size() - 2].raw.find(R"("text":"'yes'")") != std::string::npos;
  }
  EXPECT_TRUE(kept) << "the context lost its state: " << events.back().raw;
}

// An interrupt that lands as the kernel takes the cell (just after init, or a few
// milliseconds later) is either lost (the kernel was not executing yet: the cell runs to
// its end) or leaves the kernel idle with no execute_reply. Every such run's stream
// still ends, as execd ends a run at idle. The stream's pings (every 3 s) defeat a
// read timeout, so the receiver itself gives up at a deadline.
TEST_F(CodeTest, AnInterruptAtTheFirstInstantOfACellEndsItsStream) {
  const std::string id = NewContext();
  EndpointClient second(execd_->host + ":" + std::to_string(execd_->port) + execd_->prefix);
  // Runs `code`; with interrupt_after >= 0, interrupts the context that many ms after the
  // init event. False when the stream has not ended 15 s after it began.
  auto run_within = [&](const std::string& code, int interrupt_after, std::string* body) {
    httplib::Request req;
    req.method = "POST";
    req.path = second.Path("/code");
    req.body = R"({"code":")" + code + R"(","context":{"id":")" + id + R"(","language":"python"}})";
    req.set_header("Content-Type", "application/json");
    bool interrupted = interrupt_after < 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      body->append(data, size);
      if (!interrupted && body->find(R"("type":"init")") != std::string::npos) {
        interrupted = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(interrupt_after));
        EXPECT_EQ(execd_->client->Delete(execd_->Path("/code?id=" + id).c_str())->status, 200);
      }
      return std::chrono::steady_clock::now() < deadline;
    };
    httplib::Response res;
    httplib::Error error;
    return second.client->send(req, res, error);
  };
  constexpr int kRounds = 16;
  for (int round = 0; round < kRounds; ++round) {
    std::string body;
    // Half the rounds interrupt at once, the others 1 to 11 ms into the cell.
    const int after = round % 2 ? 1 + round % 11 : 0;
    EXPECT_TRUE(run_within("import time\\ntime.sleep(1)", after, &body))
        << "round " << round << ": the stream did not end: " << body;
    // stop_on_error aborts a request that reaches the kernel just after the interrupt's
    // error: let that moment pass, as the provider does.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // The context still serves runs (asked again past stop_on_error's moment, as above).
  std::string body;
  bool served = false;
  for (int attempt = 0; attempt < 20 && !served; ++attempt) {
    body.clear();
    EXPECT_TRUE(run_within("1 + 1", -1, &body)) << body;
    served = body.find(R"("results":{"text":"2"})") != std::string::npos;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served) << body;
}

TEST_F(CodeTest, ContextsAreListedFoundAndDeleted) {
  const std::string id = NewContext();
  auto got = execd_->client->Get(execd_->Path("/code/contexts/" + id).c_str());
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, R"({"id":")" + id + R"(","language":"python"})");
  auto listed = execd_->client->Get(execd_->Path("/code/contexts?language=python").c_str());
  EXPECT_NE(listed->body.find(id), std::string::npos);
  EXPECT_EQ(execd_->client->Get(execd_->Path("/code/contexts?language=go").c_str())->body, "[]");
  EXPECT_EQ(execd_->client->Get(execd_->Path("/code/contexts?language=sql").c_str())->status, 500);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/code/contexts/" + id).c_str())->status, 200);
  auto gone = execd_->client->Get(execd_->Path("/code/contexts/" + id).c_str());
  EXPECT_EQ(gone->status, 404);
  EXPECT_EQ(gone->body, R"({"code":"CONTEXT_NOT_FOUND","message":"context )" + id + R"( not found"})");
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/code/contexts/" + id).c_str())->status, 404);
  auto run = Run(id, "1");
  EXPECT_EQ(run->status, 500);
  EXPECT_EQ(run->body, R"({"code":"RUNTIME_ERROR","message":"error running codes context not found"})");
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/code/contexts").c_str())->status, 400);
  auto bad = execd_->client->Post(execd_->Path("/code").c_str(), R"({"code":""})", "application/json");
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/code?id=nope").c_str())->body,
            R"({"code":"RUNTIME_ERROR","message":"error interruptting code context. no such session"})");
}

TEST_F(CodeTest, WithoutAContextTheLanguageDefaultKeepsState) {
  RunEvents("", "default_var = 7");
  auto events = RunEvents("", "default_var * 6");
  EXPECT_NE(events[events.size() - 2].raw.find(R"("text":"42")"), std::string::npos);
  // The kernel lives in the sandbox, in the image's working directory (when the fake
  // can chroot, as root; else in that directory on the host).
  events = RunEvents("", "import os; os.getcwd()");
  const std::string cwd = geteuid() == 0 ? R"("text":"'/workspace'")" : "/workspace'\"";
  EXPECT_NE(events[events.size() - 2].raw.find(cwd), std::string::npos) << events[events.size() - 2].raw;
  // Listed under its language.
  auto listed = execd_->client->Get(execd_->Path("/code/contexts?language=python").c_str());
  EXPECT_NE(listed->body.find(events[0].text), std::string::npos);
}

TEST_F(CodeTest, WithoutALanguageTheCodeRunsInBash) {
  auto res = execd_->client->Post(execd_->Path("/code").c_str(), R"({"code":"echo from bash"})",
                                  "application/json");
  auto events = ParseEvents(res->body);
  EXPECT_EQ(Types(events), (std::vector<std::string>{"init", "stdout", "execution_complete"}));
  EXPECT_EQ(events[2].text, "from bash");
}

TEST_F(CodeTest, AKernelThatDiesEndsTheStreamAndTheNextRunIsServed) {
  const std::string id = NewContext();
  RunEvents(id, "lost = 1");
  fake_->lifecycle->Post("/_fake/faults", R"({"kernel_dies_mid_run":true})", "application/json");
  auto res = Run(id, "print('going', flush=True)\nimport time; time.sleep(30)");
  fake_->lifecycle->Delete("/_fake/faults");
  auto events = ParseEvents(res->body);
  EXPECT_EQ(Types(events), (std::vector<std::string>{"init", "stdout"})) << res->body;
  // A fresh kernel: the state is gone, the run works.
  events = RunEvents(id, "'lost' in globals()");
  EXPECT_NE(events[events.size() - 2].raw.find(R"("text":"False")"), std::string::npos);
}

TEST_F(CodeTest, JupyterListsItsKernelsThroughExecdsProxy) {
  const std::string path = execd_->Path("/proxy/44771/api/kernelspecs");
  EXPECT_EQ(execd_->client->Get(path.c_str())->status, 403);
  auto res = execd_->client->Get(path.c_str(), {{"Authorization", "token opensandboxcodeinterpreterjupyter"}});
  ASSERT_EQ(res->status, 200);
  rapidjson::Document doc = ParseJson(res->body);
  EXPECT_STREQ(doc["kernelspecs"]["python"]["spec"]["language"].GetString(), "python");
}

TEST(CodeWithoutJupyterTest, APlainImageAnswersAsExecdWithoutJupyter) {
  TestFake fake;
  EndpointClient execd(fake.ExecdEndpoint(fake.CreateSandbox()));
  auto run = execd.client->Post(execd.Path("/code").c_str(),
                                R"({"code":"1","context":{"language":"python"}})", "application/json");
  EXPECT_EQ(run->status, 500);
  EXPECT_EQ(run->body,
            R"({"code":"RUNTIME_ERROR","message":"error running codes language runtime server not configured, please check your image runtime"})");
  EXPECT_EQ(execd.client->Get(execd.Path("/code/contexts").c_str())->body, "[]");
  // Nothing listens where Jupyter would.
  EXPECT_EQ(execd.client->Get(execd.Path("/proxy/44771/api/kernelspecs").c_str())->status, 502);
  // Context creation waits as upstream's retry loop does: no answer in 2 s.
  execd.client->set_read_timeout(2, 0);
  auto created = execd.client->Post(execd.Path("/code/context").c_str(), R"({"language":"python"})",
                                    "application/json");
  EXPECT_FALSE(created);
}

}  // namespace
}  // namespace fake_opensandbox

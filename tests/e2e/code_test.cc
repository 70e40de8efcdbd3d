// code.interpret end to end (docs/epp1.md §3): the real shim and bridge against the fake,
// whose contexts are real IPython kernels. State kept from run to run, the streams in
// order, values and rich results with their MIME keys, tracebacks, contexts made, listed
// and deleted, timeout and $/cancel interrupting the kernel and keeping the context, a
// kernel that dies, a run whose stream broke off, and a sandbox without an interpreter.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/cpu_hog.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

class CodeTest : public TestEnv {
 protected:
  void SetUp() override {
    TestEnv::SetUp();
    shim_ = StartInitializedShim();
    ASSERT_NE(shim_, nullptr);
    sandbox_ = CreateSandbox(shim_, R"({"template":"code"})", Millis(60000));
    ASSERT_FALSE(sandbox_.empty());
  }

  MessagePtr Run(const std::string& code, const std::string& extra = "", Millis timeout = Millis(60000)) {
    std::string params = JsonObject().Str("sandbox_id", sandbox_).Str("code", code).str();
    if (!extra.empty()) params = params.substr(0, params.size() - 1) + "," + extra + "}";
    MessagePtr r = shim_->Request("code.run", params, timeout);
    if (!r) ADD_FAILURE() << "no answer to code.run " << code;
    return r;
  }
  // The value of the Execution's main result as text/plain.
  static std::string Value(const MessagePtr& r) {
    return GetString(r->result(), "results.0.data.text/plain");
  }
  std::string NewContext(const std::string& extra = "") {
    std::string params = JsonObject().Str("sandbox_id", sandbox_).str();
    if (!extra.empty()) params = params.substr(0, params.size() - 1) + "," + extra + "}";
    MessagePtr r = shim_->Request("code.context.create", params, Millis(60000));
    if (!r || r->IsError()) {
      ADD_FAILURE() << "code.context.create: " << (r ? r->raw : "no answer");
      return "";
    }
    EXPECT_EQ(GetString(r->result(), "language"), "python");
    return GetString(r->result(), "context_id");
  }

  EppSession* shim_ = nullptr;
  std::string sandbox_;
};

TEST_F(CodeTest, TheDefaultContextKeepsStateAndStreamsInOrder) {
  // Flushed, so that the kernel sends each piece when it is written (IPython batches
  // stdout otherwise; the order passed on is the kernel's).
  MessagePtr r = Run("x = 41\nprint('out one', flush=True)\nimport sys; sys.stderr.write('err two\\n'); sys.stderr.flush()\n"
                     "print('out three', flush=True)\nx + 1");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(Value(r), "42");
  EXPECT_EQ(GetString(r->result(), "stdout"), "out one\nout three\n");
  EXPECT_EQ(GetString(r->result(), "stderr"), "err two\n");
  EXPECT_FALSE(GetString(r->result(), "context_id").empty());
  EXPECT_GE(GetInt(r->result(), "execution_count"), 1);
  EXPECT_TRUE(IsNull(r->result(), "error"));
  EXPECT_FALSE(GetBool(r->result(), "timed_out"));
  EXPECT_FALSE(GetBool(r->result(), "truncated"));
  EXPECT_TRUE(GetBool(r->result(), "results.0.main"));

  // Notifications carry the request's id, one seq sequence, all before the answer,
  // each stream in the order the kernel wrote it.
  std::vector<std::string> seen;
  int64_t expected_seq = 0;
  for (const MessagePtr& n : shim_->AllMessages()) {
    if (!n->IsNotification() || (n->method() != "code.output" && n->method() != "code.result")) continue;
    EXPECT_LT(n->index, r->index);
    const rapidjson::Value* id = Find(n->params(), "id");
    ASSERT_TRUE(id && r->id().IsInt64() && id->IsInt64()) << n->raw;
    EXPECT_EQ(id->GetInt64(), r->id().GetInt64());
    EXPECT_EQ(GetInt(n->params(), "seq"), expected_seq++);
    seen.push_back(n->method() == "code.result" ? "result:" + GetString(n->params(), "result.data.text/plain")
                                                : GetString(n->params(), "stream") + ":" + GetString(n->params(), "data"));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"stdout:out one\n", "stderr:err two\n", "stdout:out three\n",
                                            "result:42"}));

  // A run sent as the last one ends can meet that run's late "idle" status on the real
  // execd, which then ends it with its result lost (docs/opensandbox.md §2.18, seen once
  // on 1.0.13). Reading x changes nothing, so it is asked again when its answer holds none.
  for (int attempt = 0; attempt < 3; ++attempt) {
    r = Run("x");
    ASSERT_NE(r, nullptr);
    if (r->IsError() || !Value(r).empty()) break;
  }
  EXPECT_EQ(Value(r), "41") << r->raw;
}

TEST_F(CodeTest, ExceptionsAreExecutionsWithTheirTraceback) {
  MessagePtr r = Run("1/0");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(GetString(r->result(), "error.name"), "ZeroDivisionError");
  EXPECT_EQ(GetString(r->result(), "error.value"), "division by zero");
  EXPECT_FALSE(GetStrings(r->result(), "error.traceback").empty());
  const rapidjson::Value* results = Find(r->result(), "results");
  ASSERT_TRUE(results && results->IsArray()) << r->raw;
  EXPECT_EQ(results->Size(), 0u);
}

TEST_F(CodeTest, RichResultsKeepTheInterpretersMimeKeys) {
  MessagePtr r = Run(
      "class Page:\n"
      "    def _repr_html_(self): return '<b>bold</b>'\n"
      "    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\n'\n"
      "Page()");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(GetString(r->result(), "results.0.data.text/html"), "<b>bold</b>");
  EXPECT_EQ(GetString(r->result(), "results.0.data.image/png"), "iVBORw0KGgo=\n");  // the kernel's base64
  EXPECT_NE(GetString(r->result(), "results.0.data.text/plain").find("Page"), std::string::npos);
}

TEST_F(CodeTest, ContextsAreMadeListedAndDeleted) {
  const std::string a = NewContext();
  const std::string b = NewContext(R"("cwd":"/tmp/abx-code-cwd")");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  auto in = [&](const std::string& context, const std::string& code) {
    return Run(code, "\"context_id\":\"" + context + "\"");
  };
  MessagePtr r = in(a, "y = 'in a'");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "context_id"), a);
  r = in(b, "y");  // another kernel: no y
  EXPECT_EQ(GetString(r->result(), "error.name"), "NameError") << r->raw;
  r = in(b, "import os; os.getcwd()");
  EXPECT_EQ(Value(r), "'/tmp/abx-code-cwd'") << r->raw;
  r = in(a, "y");
  EXPECT_EQ(Value(r), "'in a'");

  r = shim_->Request("code.context.list", JsonObject().Str("sandbox_id", sandbox_).str());
  ASSERT_NE(r, nullptr);
  std::string listed = r->raw;
  EXPECT_NE(listed.find(a), std::string::npos);
  EXPECT_NE(listed.find(b), std::string::npos);

  r = shim_->Request("code.context.delete", JsonObject().Str("sandbox_id", sandbox_).Str("context_id", a).str());
  EXPECT_TRUE(GetBool(r->result(), "deleted")) << r->raw;
  r = shim_->Request("code.context.delete", JsonObject().Str("sandbox_id", sandbox_).Str("context_id", a).str());
  EXPECT_FALSE(GetBool(r->result(), "deleted")) << r->raw;
  r = in(a, "1");
  EXPECT_EQ(r->EppCode(), "E8005") << r->raw;
  r = Run("1", R"("language":"ruby")");
  EXPECT_EQ(r->ErrorCode(), -32602);
  EXPECT_EQ(GetString(r->error(), "data.field"), "language");
  r = Run("1", R"("env":{"A":"1"})");
  EXPECT_EQ(r->EppCode(), "E8004") << r->raw;
}

TEST_F(CodeTest, ATimeoutInterruptsTheKernelAndTheContextKeepsItsState) {
  MessagePtr set = Run("kept = 'still here'");
  ASSERT_TRUE(set && !set->IsError());
  const auto started = steady_clock::now();
  MessagePtr r = Run("while True: pass", R"("timeout":1)");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  // 1 s, then the interrupt: well before the 10 s the bridge grants a kernel to stop
  // (after which the run would be E8007, not a result).
  EXPECT_LT(steady_clock::now() - started, seconds(8));
  EXPECT_TRUE(GetBool(r->result(), "timed_out"));
  EXPECT_EQ(GetString(r->result(), "error.name"), "KeyboardInterrupt");
  r = Run("kept");
  EXPECT_EQ(Value(r), "'still here'") << r->raw;
}

TEST_F(CodeTest, CancelInterruptsTheRunAndLeavesNoRunBehind) {
  REQUIRE_FAKE("reads the fake's count of running code");
  MessagePtr set = Run("kept = 2");
  ASSERT_TRUE(set && !set->IsError());
  const int64_t id = shim_->SendRequest(
      "code.run", JsonObject()
                      .Str("sandbox_id", sandbox_)
                      .Str("code", "print('running', flush=True)\nimport time\nwhile True: time.sleep(0.01)")
                      .str());
  // Cancelled once the code runs (its first output has arrived).
  const auto until = steady_clock::now() + seconds(30);
  while (shim_->NotificationsByMethod("code.output").empty() && steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_FALSE(shim_->NotificationsByMethod("code.output").empty());
  shim_->Notify("$/cancel", "{\"id\":" + std::to_string(id) + "}");
  MessagePtr r = shim_->WaitResponse(id, Millis(20000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8009") << r->raw;
  // The fake counts a run until its kernel is idle, a moment after the stream ended (its
  // own execd only; with the real one the next run's answer below shows the kernel idle).
  if (RealExecdTier().empty()) {
    int64_t active = -1;
    for (int i = 0; i < 100 && active != 0; ++i) {
      active = fake().Stats()->code_runs_active;
      if (active != 0) std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_EQ(active, 0);
  }
  r = Run("kept * 21");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(Value(r), "42") << r->raw;
}

TEST_F(CodeTest, RunsOfOneContextTakeTurnsInArrivalOrder) {
  const std::string context = NewContext();
  ASSERT_FALSE(context.empty());
  auto params = [&](const std::string& code, const std::string& extra = "") {
    std::string p = JsonObject().Str("sandbox_id", sandbox_).Str("context_id", context).Str("code", code).str();
    return extra.empty() ? p : p.substr(0, p.size() - 1) + "," + extra + "}";
  };
  const int64_t first = shim_->SendRequest("code.run", params("import time; time.sleep(1.5); order = ['first']"));
  std::this_thread::sleep_for(milliseconds(200));
  const int64_t second = shim_->SendRequest("code.run", params("order.append('second'); order"));
  // Its timeout passes while it waits: it never runs.
  const int64_t late = shim_->SendRequest("code.run", params("order.append('late')", R"("timeout":0.5)"));
  MessagePtr r = shim_->WaitResponse(late, Millis(20000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8006") << r->raw;
  r = shim_->WaitResponse(second, Millis(20000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(Value(r), "['first', 'second']") << r->raw;  // upstream would have said "busy"
  ASSERT_NE(shim_->WaitResponse(first, Millis(20000)), nullptr);
  r = Run("order", "\"context_id\":\"" + context + "\"");
  EXPECT_EQ(Value(r), "['first', 'second']") << r->raw;
  // A context runs its own language.
  r = Run("1", "\"context_id\":\"" + context + "\",\"language\":\"bash\"");
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
}

// Runs a host sends back to back, without waiting for answers, run in the order sent,
// also on a loaded machine: each takes its place in line as its line arrives.
TEST_F(CodeTest, PipelinedRunsKeepTheirOrderUnderLoad) {
  CpuHog hog;
  ASSERT_GT(hog.running(), 0);
  constexpr int kPairs = 100;
  constexpr size_t kInFlight = 60;  // a context queues at most 64 runs (docs/epp1.md §3)
  ASSERT_NE(Run("seen = []"), nullptr);
  std::vector<int64_t> ids;
  int failed = 0;
  size_t answered = 0;
  auto answer_next = [&] {
    MessagePtr r = shim_->WaitResponse(ids[answered++], Millis(120000));
    ASSERT_NE(r, nullptr) << "no answer to request " << ids[answered - 1];
    const rapidjson::Value* error = r->IsError() ? nullptr : Find(r->result(), "error");
    if (r->IsError() || (error && !error->IsNull())) {
      if (++failed <= 3) ADD_FAILURE() << "out of order: " << r->raw;
    }
  };
  for (int i = 0; i < kPairs; ++i) {
    while (ids.size() - answered + 2 > kInFlight) answer_next();
    const std::string n = std::to_string(i);
    ids.push_back(shim_->SendRequest("code.run", JsonObject().Str("sandbox_id", sandbox_).Str("code", "x = " + n).str()));
    ids.push_back(shim_->SendRequest(
        "code.run", JsonObject().Str("sandbox_id", sandbox_).Str("code", "assert x == " + n + "; seen.append(x)").str()));
  }
  while (answered < ids.size()) answer_next();
  EXPECT_EQ(failed, 0);
  // The real execd ends a run at the kernel's first "idle" status, whichever request it
  // belongs to, so under load a run can end with its result lost (docs/opensandbox.md
  // §2.18). This check changes nothing, so it is asked again when its answer holds none.
  MessagePtr seen;
  for (int attempt = 0; attempt < 3; ++attempt) {
    seen = Run("seen == list(range(" + std::to_string(kPairs) + "))");
    ASSERT_NE(seen, nullptr);
    if (seen->IsError() || !Value(seen).empty()) break;
  }
  EXPECT_EQ(Value(seen), "True") << seen->raw;
}

// Once the interpreter has run code, its kernel list is complete: a language it lacks
// is E8007 naming it at once, not after ready_timeout.
TEST_F(CodeTest, ALanguageTheRunningInterpreterLacksIsE8007AtOnce) {
  ASSERT_NE(Run("1"), nullptr);
  const auto start = steady_clock::now();
  MessagePtr r = Run("package main", "\"language\":\"go\"");
  const auto took = steady_clock::now() - start;
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("go"), std::string::npos) << r->raw;
  // At once: not after the ready_timeout (60 s) a missing kernel would be waited for.
  EXPECT_LT(took, seconds(10)) << "answered after " << std::chrono::duration_cast<milliseconds>(took).count() << " ms";
}

TEST_F(CodeTest, SixteenContextsRunAtOnce) {
  constexpr int kContexts = 16;
  // Sixteen kernels starting at once on a small machine can take longer than the
  // default request_timeout (30 s) for the last context: this session allows 120 s.
  shim_ = StartInitializedShim({{"ABX_OPENSANDBOX_REQUEST_TIMEOUT", "120"}});
  ASSERT_NE(shim_, nullptr);
  // A sandbox with the machine's two cores, as one would size it for sixteen kernels: under
  // the default one (which a real-execd sandbox enforces), sixteen fresh kernels at once
  // can leave one run of the real execd streaming pings for good (docs/opensandbox.md
  // §2.18), which is upstream's to fix and not what this test is about. The set-up's
  // sandbox goes first, so that its Jupyter takes none of those cores.
  ASSERT_NE(shim_->Request("sandbox.kill", JsonObject().Str("sandbox_id", sandbox_).str(), Millis(30000)), nullptr);
  sandbox_ = CreateSandbox(shim_, R"({"template":"code","resources":{"cpu":"2"}})", Millis(60000));
  ASSERT_FALSE(sandbox_.empty());
  std::vector<int64_t> creates;
  for (int i = 0; i < kContexts; ++i) {
    creates.push_back(shim_->SendRequest("code.context.create", JsonObject().Str("sandbox_id", sandbox_).str()));
  }
  std::vector<std::string> contexts;
  for (int64_t id : creates) {
    MessagePtr r = shim_->WaitResponse(id, Millis(120000));
    ASSERT_TRUE(r && !r->IsError()) << (r ? r->raw : "no answer to code.context.create");
    contexts.push_back(GetString(r->result(), "context_id"));
  }
  std::vector<int64_t> runs;
  for (int i = 0; i < kContexts; ++i) {
    runs.push_back(shim_->SendRequest(
        "code.run", JsonObject()
                        .Str("sandbox_id", sandbox_)
                        .Str("context_id", contexts[i])
                        .Str("code", "import time; time.sleep(0.5); mine = " + std::to_string(i) + "; mine * 2")
                        .str()));
  }
  for (int i = 0; i < kContexts; ++i) {
    MessagePtr r = shim_->WaitResponse(runs[i], Millis(120000));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(Value(r), std::to_string(i * 2)) << r->raw;
    EXPECT_EQ(GetString(r->result(), "context_id"), contexts[i]);
  }
}

TEST_F(CodeTest, AKernelThatIgnoresItsInterruptPoisonsItsContext) {
  REQUIRE_FAKE("uses the fake's slow_interrupt_ms switch");
  REQUIRE_FAKE_EXECD("the slow_interrupt_ms switch acts inside the fake's execd");
  const std::string context = NewContext();
  ASSERT_FALSE(context.empty());
  const std::string in_context = "\"context_id\":\"" + context + "\"";
  // Every interrupt reaches the kernel only after 30 s: for the bridge it ignores them.
  ASSERT_TRUE(fake().SetFaults(R"({"slow_interrupt_ms":30000})"));
  const int64_t stuck = shim_->SendRequest(
      "code.run", JsonObject().Str("sandbox_id", sandbox_).Str("context_id", context)
                      .Str("code", "import time\nwhile True: time.sleep(0.01)").Int("timeout", 1).str());
  std::this_thread::sleep_for(milliseconds(300));
  const int64_t queued = shim_->SendRequest(
      "code.run", JsonObject().Str("sandbox_id", sandbox_).Str("context_id", context).Str("code", "1").str());
  const auto started = steady_clock::now();
  MessagePtr r = shim_->WaitResponse(stuck, Millis(30000));
  ASSERT_TRUE(fake().ClearFaults());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("does not respond to interrupt"), std::string::npos) << r->raw;
  // About 1 s of timeout and 10 s of grace, not the 30 s the interrupt takes.
  EXPECT_LT(steady_clock::now() - started, seconds(20));
  r = shim_->WaitResponse(queued, Millis(30000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;  // the run behind it, too
  // Until the context is deleted; another context is not touched.
  r = shim_->Request("code.context.delete", JsonObject().Str("sandbox_id", sandbox_).Str("context_id", context).str());
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(GetBool(r->result(), "deleted")) << r->raw;
  r = Run("6 * 7");
  EXPECT_EQ(Value(r), "42") << r->raw;
}

TEST_F(CodeTest, CancellingAQueuedRunTouchesNothingThatRuns) {
  const std::string context = NewContext();
  ASSERT_FALSE(context.empty());
  auto params = [&](const std::string& code) {
    return JsonObject().Str("sandbox_id", sandbox_).Str("context_id", context).Str("code", code).str();
  };
  // The running run holds its turn until the test writes `release`, however slow the
  // machine: the cancel is sure to find the other one waiting.
  const std::string release = "/tmp/abx-code-release-" + context;
  const int64_t running = shim_->SendRequest(
      "code.run", params("import os, time\nwhile not os.path.exists('" + release + "'): time.sleep(0.02)\ndone = 'yes'"));
  const int64_t queued = shim_->SendRequest("code.run", params("done = 'overwritten'"));
  shim_->Notify("$/cancel", "{\"id\":" + std::to_string(queued) + "}");
  MessagePtr r = shim_->WaitResponse(queued, Millis(20000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8009") << r->raw;
  r = shim_->Request("files.write", JsonObject().Str("sandbox_id", sandbox_).Str("path", release).Str("data", "go").str());
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  r = shim_->WaitResponse(running, Millis(20000));
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->IsError()) << r->raw;  // the running one was not interrupted
  r = Run("done", "\"context_id\":\"" + context + "\"");
  EXPECT_EQ(Value(r), "'yes'") << r->raw;
  shim_->Request("files.remove", JsonObject().Str("sandbox_id", sandbox_).Str("path", release).str());
}

TEST_F(CodeTest, ContextsMadeWithoutKeepGoWithTheSession) {
  EppSession* other = StartInitializedShim();
  ASSERT_NE(other, nullptr);
  auto create = [&](bool keep) {
    MessagePtr r = other->Request(
        "code.context.create", JsonObject().Str("sandbox_id", sandbox_).Bool("keep", keep).str(), Millis(60000));
    EXPECT_TRUE(r && !r->IsError()) << (r ? r->raw : "no answer");
    return r ? GetString(r->result(), "context_id") : "";
  };
  const std::string temporary = create(false);
  const std::string kept = create(true);
  other->CloseStdin();
  ASSERT_TRUE(other->WaitExit(Millis(20000)).has_value());
  // The bridge closes the context as the session ends; the shim waits for that only so
  // long (1.5 s), and a real Jupyter server takes a second or more to shut a kernel down
  // on a busy machine (the fake's at once): the list may show it a moment longer.
  MessagePtr r;
  for (int i = 0; i < 50; ++i) {
    r = shim_->Request("code.context.list", JsonObject().Str("sandbox_id", sandbox_).str());
    ASSERT_NE(r, nullptr);
    if (r->raw.find(temporary) == std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(200));
  }
  EXPECT_EQ(r->raw.find(temporary), std::string::npos) << r->raw;
  EXPECT_NE(r->raw.find(kept), std::string::npos) << r->raw;
}

TEST_F(CodeTest, AKernelThatDiesIsAClearErrorAndTheNextRunIsServed) {
  REQUIRE_FAKE("uses the fake's kernel_dies_mid_run switch");
  REQUIRE_FAKE_EXECD("the kernel_dies_mid_run switch acts inside the fake's execd");
  ASSERT_TRUE(fake().SetFaults(R"({"kernel_dies_mid_run":true})"));
  MessagePtr r = Run("print('about to go', flush=True)\nimport time; time.sleep(30)");
  ASSERT_TRUE(fake().ClearFaults());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8010") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("without a result"), std::string::npos) << r->raw;
  r = Run("6 * 7");
  EXPECT_EQ(Value(r), "42") << r->raw;
}

TEST_F(CodeTest, ARunWhoseStreamBrokeOffIsInterruptedAndItsContextServesTheNext) {
  REQUIRE_FAKE("uses the fake's reset_stream_after_events switch");
  REQUIRE_FAKE_EXECD("reset_stream_after_events cuts the fake's execd streams");
  const std::string context = NewContext();
  ASSERT_FALSE(context.empty());
  const std::string in_context = "\"context_id\":\"" + context + "\"";
  MessagePtr r = Run("kept = 41", in_context);
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  // The stream breaks off after execd's init: the kernel goes on sleeping, and execd
  // answers every other run of the context "session is busy" until it ends.
  ASSERT_TRUE(fake().SetFaults(R"({"reset_stream_after_events":1})"));
  r = Run("import time\ntime.sleep(120)", in_context, Millis(30000));
  ASSERT_TRUE(fake().ClearFaults());
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->IsError()) << "a run whose stream broke off made up an answer: " << r->raw;
  // The next run finds the context busy with the bridge's own leftover: the bridge
  // interrupts it instead of waiting two minutes or blaming another client.
  const auto sent = steady_clock::now();
  r = Run("kept + 1", in_context, Millis(60000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(Value(r), "42") << r->raw;
  EXPECT_LT(steady_clock::now() - sent, seconds(15)) << "the leftover run was waited out, not interrupted";
}

class PlainSandboxCodeTest : public TestEnv {};

TEST_F(PlainSandboxCodeTest, ASandboxWithoutAnInterpreterSaysHowToGetOne) {
  EppSession* shim = nullptr;
  std::string id;
  ASSERT_TRUE(StartShimWithSandbox(&shim, &id));
  const auto started = steady_clock::now();
  MessagePtr r = shim->Request("code.run", JsonObject().Str("sandbox_id", id).Str("code", "1").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("template \"code\""), std::string::npos) << r->raw;
  EXPECT_LT(steady_clock::now() - started, seconds(5));
  r = shim->Request("code.context.create", JsonObject().Str("sandbox_id", id).str());
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;
}

}  // namespace
}  // namespace abx::e2e

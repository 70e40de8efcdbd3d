// execd of an in-process fake, checked against docs/opensandbox.md §2 and "What is
// faithful" in tests/fake-opensandbox/README.md.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

using Texts = std::vector<std::string>;

class ExecdTest : public ::testing::Test {
 protected:
  void Start(FakeConfig config = TestConfig()) {
    fake_ = std::make_unique<TestFake>(config);
    id_ = fake_->CreateSandbox();
    ASSERT_FALSE(id_.empty());
    execd_ = std::make_unique<EndpointClient>(fake_->ExecdEndpoint(id_));
    root_ = ParseJson(fake_->lifecycle->Get(("/_fake/sandboxes/" + id_).c_str())->body)["root"]
                .GetString();
  }
  void SetUp() override { Start(); }

  httplib::Result Run(const std::string& body) {
    return execd_->client->Post(execd_->Path("/command").c_str(), body, "application/json");
  }
  std::vector<StreamEvent> RunEvents(const std::string& command) {
    std::string body = "{\"command\":" + JsonQuoted(command) + "}";
    auto res = Run(body);
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
    bool framed = false;
    auto events = ParseEvents(res->body, &framed);
    EXPECT_TRUE(framed) << res->body;
    return events;
  }
  std::string ReadHostFile(const std::string& sandbox_path) {
    std::ifstream in(root_ + sandbox_path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::unique_ptr<TestFake> fake_;
  std::string id_;
  std::unique_ptr<EndpointClient> execd_;
  std::string root_;
};

TEST_F(ExecdTest, StreamShapeAndLineFraming) {
  auto events = RunEvents("printf 'a\\n\\nb\\r\\nc\\rd'; echo oops >&2");
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].type, "init");
  EXPECT_EQ(events[0].text.size(), 32u);
  EXPECT_EQ(events[1].type, "ping");
  EXPECT_EQ(events.back().type, "execution_complete");
  EXPECT_EQ(events.front().raw.find("data:"), std::string::npos);
  EXPECT_EQ(OutputTexts(events, "stdout"), (Texts{"a", "\n", "b", "c", "d"}));
  EXPECT_EQ(OutputTexts(events, "stderr"), (Texts{"oops"}));
  int terminal = 0;
  for (const auto& e : events) terminal += e.type == "execution_complete" || e.type == "error";
  EXPECT_EQ(terminal, 1);
}

TEST_F(ExecdTest, PingsEveryThreeSecondsOnLongRuns) {
  auto events = RunEvents("sleep 3.4; echo late");
  int pings = 0;
  for (const auto& e : events) pings += e.type == "ping";
  EXPECT_GE(pings, 2);  // one after init, one at ~3 s
  EXPECT_EQ(OutputTexts(events, "stdout"), (Texts{"late"}));
}

TEST_F(ExecdTest, GoEscapingInEvents) {
  auto events = RunEvents("printf '<a&b>\\n\\377\\n'");
  auto texts = OutputTexts(events, "stdout");
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[0], "<a&b>");
  EXPECT_NE(events[2].raw.find("\\u003ca\\u0026b\\u003e"), std::string::npos);
  EXPECT_EQ(texts[1], "\xef\xbf\xbd");  // U+FFFD
}

TEST_F(ExecdTest, ExitCodesAndSignals) {
  auto failed = RunEvents("exit 3");
  ASSERT_FALSE(failed.empty());
  EXPECT_EQ(failed.back().type, "error");
  EXPECT_EQ(failed.back().evalue, "3");
  EXPECT_EQ(failed.back().traceback, "exit status 3");
  EXPECT_NE(failed.back().raw.find(R"("ename":"CommandExecError")"), std::string::npos);

  auto start = std::chrono::steady_clock::now();
  auto timed_out = Run(R"({"command":"echo before; sleep 30","timeout":300})");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  auto events = ParseEvents(timed_out->body);
  EXPECT_EQ(OutputTexts(events, "stdout"), (Texts{"before"}));
  EXPECT_EQ(events.back().evalue, "-1");
  EXPECT_EQ(events.back().traceback, "signal: killed");
}

TEST_F(ExecdTest, RequestValidationIsPlainJson400) {
  auto missing = Run(R"({"cwd":"/"})");
  EXPECT_EQ(missing->status, 400);
  EXPECT_NE(missing->body.find(R"("code":"INVALID_REQUEST_BODY")"), std::string::npos);
  EXPECT_EQ(Run("not json")->status, 400);
  EXPECT_EQ(Run(R"({"command":"true","gid":5})")->status, 400);
  EXPECT_EQ(Run(R"({"command":"true","timeout":-1})")->status, 400);
  auto bad_cwd = Run(R"({"command":"true","cwd":"/does/not/exist"})");
  EXPECT_EQ(bad_cwd->status, 400);
  EXPECT_NE(bad_cwd->body.find("working directory does not exist"), std::string::npos);
}

// Run as root, commands are chrooted into the sandbox root and see its paths, the same
// ones the files API maps; otherwise they run unconfined in the mapped host directory.
TEST_F(ExecdTest, CwdAndEnvs) {
  ASSERT_EQ(mkdir((root_ + "/work").c_str(), 0755), 0);
  const bool confined = geteuid() == 0;
  auto res = Run(R"({"command":"pwd; echo $GREETING","cwd":"/work","envs":{"GREETING":"hi"}})");
  EXPECT_EQ(OutputTexts(ParseEvents(res->body), "stdout"),
            (Texts{confined ? "/work" : root_ + "/work", "hi"}));
  EXPECT_EQ(OutputTexts(RunEvents("pwd"), "stdout"), (Texts{confined ? "/" : root_}));
}

TEST_F(ExecdTest, CommandsSeeTheFilesApisPaths) {
  if (geteuid() != 0) GTEST_SKIP() << "the chroot needs root";
  ASSERT_EQ(mkdir((root_ + "/tmp").c_str(), 0755) == 0 || errno == EEXIST, true);
  auto res = Run(R"({"command":"echo inside > /tmp/made-by-command; cat /etc/hostname >/dev/null && echo ok"})");
  EXPECT_EQ(OutputTexts(ParseEvents(res->body), "stdout"), (Texts{"ok"}));
  struct stat st;
  EXPECT_EQ(stat((root_ + "/tmp/made-by-command").c_str(), &st), 0)
      << "a command's /tmp is the sandbox's /tmp";
  // System directories are read-only inside.
  auto write = Run(R"({"command":"touch /etc/abx-should-fail 2>/dev/null && echo wrote || echo refused"})");
  EXPECT_EQ(OutputTexts(ParseEvents(write->body), "stdout"), (Texts{"refused"}));
}

// Whether this process may switch to another uid (not as non-root, nor inside some
// sandboxes' user namespaces).
bool CanSetUid(uid_t uid) {
  pid_t pid = fork();
  if (pid == 0) _exit(setgid(uid) == 0 && setuid(uid) == 0 ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_F(ExecdTest, UidIsAppliedOrTheStartErrorReported) {
  auto res = Run(R"({"command":"id -u","uid":65534})");
  ASSERT_EQ(res->status, 200);  // even a start failure is a stream
  auto events = ParseEvents(res->body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].type, "init");
  if (CanSetUid(65534)) {
    EXPECT_EQ(OutputTexts(events, "stdout"), (Texts{"65534"}));
    EXPECT_EQ(events.back().type, "execution_complete");
  } else {
    EXPECT_EQ(events.back().type, "error");
    EXPECT_NE(events.back().evalue.find("fork/exec"), std::string::npos) << events.back().evalue;
  }
}

TEST_F(ExecdTest, BackgroundStatusAndLogs) {
  auto res = Run(R"({"command":"echo one; echo two >&2; sleep 0.3; printf three","background":true})");
  auto events = ParseEvents(res->body);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, "init");
  EXPECT_EQ(events[1].type, "ping");
  EXPECT_EQ(events[2].type, "execution_complete");
  std::string id = events[0].text;
  std::string status_path = execd_->Path("/command/status/" + id);
  auto running = execd_->client->Get(status_path.c_str());
  rapidjson::Document doc = ParseJson(running->body);
  EXPECT_TRUE(doc["running"].GetBool());
  EXPECT_FALSE(doc.HasMember("exit_code"));
  EXPECT_FALSE(doc.HasMember("finished_at"));
  for (int i = 0; i < 100 && ParseJson(execd_->client->Get(status_path.c_str())->body)["running"].GetBool(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  rapidjson::Document done = ParseJson(execd_->client->Get(status_path.c_str())->body);
  EXPECT_FALSE(done["running"].GetBool());
  EXPECT_EQ(done["exit_code"].GetInt(), 0);
  EXPECT_TRUE(done.HasMember("finished_at"));
  std::string started = done["started_at"].GetString();
  EXPECT_EQ(started.back(), 'Z');

  auto logs = execd_->client->Get(execd_->Path("/command/" + id + "/logs").c_str());
  EXPECT_EQ(logs->body, "one\ntwo\nthree");
  EXPECT_EQ(logs->get_header_value("EXECD-COMMANDS-TAIL-CURSOR"), "13");
  auto tail = execd_->client->Get(execd_->Path("/command/" + id + "/logs?cursor=8").c_str());
  EXPECT_EQ(tail->body, "three");
  EXPECT_EQ(execd_->client->Get(execd_->Path("/command/nope/logs").c_str())->status, 400);
  EXPECT_EQ(execd_->client->Get(execd_->Path("/command/status/nope").c_str())->status, 404);
}

TEST_F(ExecdTest, InterruptKillsAndIsNotIdempotent) {
  auto res = Run(R"({"command":"sleep 30","background":true})");
  std::string id = ParseEvents(res->body)[0].text;
  auto start = std::chrono::steady_clock::now();
  auto interrupted = execd_->client->Delete(execd_->Path("/command?id=" + id).c_str());
  EXPECT_EQ(interrupted->status, 200);
  EXPECT_TRUE(interrupted->body.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  rapidjson::Document status =
      ParseJson(execd_->client->Get(execd_->Path("/command/status/" + id).c_str())->body);
  EXPECT_FALSE(status["running"].GetBool());
  EXPECT_EQ(status["exit_code"].GetInt(), -1);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/command?id=" + id).c_str())->status, 500);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/command?id=unknown").c_str())->status, 500);
}

TEST_F(ExecdTest, ForegroundCommandSurvivesClientDisconnect) {
  {
    httplib::Client impatient(execd_->host, execd_->port);
    impatient.set_read_timeout(0, 300000);
    impatient.Post(execd_->Path("/command").c_str(),
                   R"({"command":"sleep 0.6; echo done > /dev/null; touch marker"})",
                   "application/json");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  struct stat st;
  EXPECT_EQ(stat((root_ + "/marker").c_str(), &st), 0);
}

TEST_F(ExecdTest, UploadNeedsMetadataAsFilePart) {
  httplib::MultipartFormDataItems good = {
      {"metadata", R"({"path":"/data/deep/x.txt","mode":640})", "metadata", "application/json"},
      {"file", "hello\n", "x.txt", "text/plain; charset=utf-8"},
  };
  auto ok = execd_->client->Post(execd_->Path("/files/upload").c_str(), good);
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_TRUE(ok->body.empty());
  EXPECT_EQ(ReadHostFile("/data/deep/x.txt"), "hello\n");
  struct stat st;
  stat((root_ + "/data/deep/x.txt").c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0640u);

  httplib::MultipartFormDataItems value_metadata = {
      {"metadata", R"({"path":"/y.txt"})", "", "application/json"},  // no filename
      {"file", "data", "y.txt", "application/octet-stream"},
  };
  auto rejected = execd_->client->Post(execd_->Path("/files/upload").c_str(), value_metadata);
  EXPECT_EQ(rejected->status, 400);
  EXPECT_EQ(rejected->body, R"({"code":"INVALID_FILE_METADATA","message":"metadata file is missing"})");

  httplib::MultipartFormDataItems no_file = {
      {"metadata", R"({"path":"/y.txt"})", "metadata", "application/json"},
  };
  auto no_content = execd_->client->Post(execd_->Path("/files/upload").c_str(), no_file);
  EXPECT_NE(no_content->body.find("INVALID_FILE_CONTENT"), std::string::npos);
  auto not_multipart = execd_->client->Post(execd_->Path("/files/upload").c_str(), "x", "text/plain");
  EXPECT_NE(not_multipart->body.find(R"("code":"INVALID_FILE")"), std::string::npos);
  httplib::MultipartFormDataItems escape = {
      {"metadata", R"({"path":"/../outside.txt"})", "metadata", "application/json"},
      {"file", "x", "f", "application/octet-stream"},
  };
  EXPECT_EQ(execd_->client->Post(execd_->Path("/files/upload").c_str(), escape)->status, 400);
}

TEST_F(ExecdTest, DownloadPlainRangeAndLines) {
  {
    std::ofstream out(root_ + "/tmp/f.txt", std::ios::binary);
    out << "line1\r\nline2\nline3\n";
  }
  std::string path = execd_->Path("/files/download?path=/tmp/f.txt");
  auto plain = execd_->client->Get(path.c_str());
  EXPECT_EQ(plain->status, 200);
  EXPECT_EQ(plain->body, "line1\r\nline2\nline3\n");
  EXPECT_EQ(plain->get_header_value("Accept-Ranges"), "bytes");
  EXPECT_EQ(plain->get_header_value("Content-Disposition"), "attachment; filename=\"f.txt\"");

  auto range = execd_->client->Get(path.c_str(), {{"Range", "bytes=7-11"}});
  EXPECT_EQ(range->status, 206);
  EXPECT_EQ(range->body, "line2");
  EXPECT_EQ(range->get_header_value("Content-Range"), "bytes 7-11/19");
  auto suffix = execd_->client->Get(path.c_str(), {{"Range", "bytes=-6"}});
  EXPECT_EQ(suffix->body, "line3\n");
  auto open_end = execd_->client->Get(path.c_str(), {{"Range", "bytes=13-"}});
  EXPECT_EQ(open_end->body, "line3\n");
  EXPECT_EQ(execd_->client->Get(path.c_str(), {{"Range", "bytes=50-60"}})->status, 416);
  auto malformed = execd_->client->Get(path.c_str(), {{"Range", "bytes=9-2"}});
  EXPECT_EQ(malformed->status, 416);
  EXPECT_EQ(malformed->body, R"({"code":"UNKNOWN"})");

  auto lines = execd_->client->Get((path + "&offset=2").c_str());
  EXPECT_EQ(lines->body, "line2\nline3");
  EXPECT_EQ(execd_->client->Get((path + "&offset=1&limit=2").c_str())->body, "line1\nline2");
  EXPECT_EQ(execd_->client->Get((path + "&offset=2").c_str(), {{"Range", "bytes=0-1"}})->status, 400);
  auto missing = execd_->client->Get(execd_->Path("/files/download?path=/nope").c_str());
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("FILE_NOT_FOUND"), std::string::npos);
}

TEST_F(ExecdTest, FilesInfoMoveSearchReplaceDirectories) {
  auto mk = execd_->client->Post(execd_->Path("/directories").c_str(),
                                 R"({"/a/b":{"mode":700}})", "application/json");
  ASSERT_EQ(mk->status, 200);
  { std::ofstream(root_ + "/a/b/one.go") << "package x // x"; }
  { std::ofstream(root_ + "/a/two.txt") << "t"; }
  auto info = execd_->client->Get(execd_->Path("/files/info?path=/a/b&path=a/b/../b/one.go").c_str());
  ASSERT_EQ(info->status, 200);
  rapidjson::Document doc = ParseJson(info->body);
  EXPECT_EQ(doc["/a/b"]["mode"].GetInt(), 700);
  EXPECT_STREQ(doc["/a/b"]["type"].GetString(), "directory");
  EXPECT_STREQ(doc["a/b/../b/one.go"]["path"].GetString(), "/a/b/one.go");
  EXPECT_EQ(execd_->client->Get(execd_->Path("/files/info?path=/nope").c_str())->status, 404);

  auto search = ParseJson(
      execd_->client->Get(execd_->Path("/files/search?path=/a&pattern=*.go").c_str())->body);
  ASSERT_EQ(search.Size(), 1u);
  EXPECT_STREQ(search[0]["path"].GetString(), "/a/b/one.go");

  auto replace = execd_->client->Post(execd_->Path("/files/replace?verbose=true").c_str(),
                                      R"({"/a/b/one.go":{"old":"x","new":"yy"}})", "application/json");
  EXPECT_EQ(replace->body, R"({"/a/b/one.go":{"replacedCount":2}})");
  EXPECT_EQ(ReadHostFile("/a/b/one.go"), "package yy // yy");

  auto mv = execd_->client->Post(execd_->Path("/files/mv").c_str(),
                                 R"([{"src":"/a/two.txt","dest":"/c/d/two.txt"}])", "application/json");
  EXPECT_EQ(mv->status, 200);
  EXPECT_EQ(ReadHostFile("/c/d/two.txt"), "t");
  { std::ofstream(root_ + "/a/three.txt") << "3"; }
  EXPECT_EQ(execd_->client->Post(execd_->Path("/files/mv").c_str(),
                                 R"([{"src":"/a/three.txt","dest":"/c/d/two.txt"}])",
                                 "application/json")->status,
            500);

  auto list = ParseJson(execd_->client->Get(execd_->Path("/directories/list?path=/a&depth=2").c_str())->body);
  ASSERT_EQ(list.Size(), 3u);
  EXPECT_STREQ(list[0]["path"].GetString(), "/a/b");
  EXPECT_STREQ(list[1]["path"].GetString(), "/a/b/one.go");
  EXPECT_STREQ(list[2]["path"].GetString(), "/a/three.txt");

  EXPECT_EQ(execd_->client->Delete(execd_->Path("/files?path=/a/three.txt").c_str())->status, 200);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/files?path=/a/three.txt").c_str())->status, 200);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/files?path=/a").c_str())->status, 500);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/directories?path=/a").c_str())->status, 200);
  struct stat st;
  EXPECT_NE(stat((root_ + "/a").c_str(), &st), 0);
}

TEST_F(ExecdTest, ServerProxyStreamsAndCountsConnections) {
  EndpointClient proxied(fake_->ExecdEndpoint(id_, /*server_proxy=*/true));
  auto res = proxied.client->Post(proxied.Path("/command").c_str(),
                                  R"({"command":"echo via proxy; exit 4"})", "application/json");
  ASSERT_EQ(res->status, 200);
  auto events = ParseEvents(res->body);
  EXPECT_EQ(OutputTexts(events, "stdout"), (Texts{"via proxy"}));
  EXPECT_EQ(events.back().evalue, "4");
  EXPECT_EQ(proxied.client->Get(proxied.Path("/ping").c_str())->status, 200);
  // Another port of the sandbox: nothing listens there.
  httplib::Client lifecycle("127.0.0.1", fake_->server->port());
  auto nothing = lifecycle.Get(("/sandboxes/" + id_ + "/proxy/1/").c_str());
  EXPECT_EQ(nothing->status, 502);

  auto stats = ParseJson(fake_->lifecycle->Get("/_fake/stats")->body);
  EXPECT_GE(stats["server_proxy_upstream_connections"].GetUint64(), 2u);
  uint64_t before = stats["execd_connections_accepted"].GetUint64();
  httplib::Client reusing(execd_->host, execd_->port);
  reusing.set_keep_alive(true);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(reusing.Get("/ping")->status, 200);
  auto after = ParseJson(fake_->lifecycle->Get("/_fake/stats")->body);
  EXPECT_EQ(after["execd_connections_accepted"].GetUint64() - before, 1u);
}

TEST_F(ExecdTest, ServerProxyRelaysEventsAsTheyHappenAndBytesIntact) {
  EndpointClient proxied(fake_->ExecdEndpoint(id_, /*server_proxy=*/true));
  httplib::Request req;
  req.method = "POST";
  req.path = proxied.Path("/command");
  req.body = R"({"command":"echo first; sleep 1; echo second"})";
  req.set_header("Content-Type", "application/json");
  auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration first_seen{};
  std::string body;
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    body.append(data, size);
    if (first_seen == std::chrono::steady_clock::duration{} &&
        body.find("\"first\"") != std::string::npos) {
      first_seen = std::chrono::steady_clock::now() - start;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error;
  ASSERT_TRUE(proxied.client->send(req, res, error));
  EXPECT_GT(first_seen, std::chrono::steady_clock::duration{});
  EXPECT_LT(first_seen, std::chrono::milliseconds(800));  // not held until the end
  EXPECT_EQ(OutputTexts(ParseEvents(body), "stdout"), (Texts{"first", "second"}));

  std::string blob;
  blob.reserve(3 << 20);
  for (uint32_t i = 0; i < (3u << 20); ++i) blob += static_cast<char>((i * 7919u) >> 3);
  { std::ofstream(root_ + "/tmp/blob.bin", std::ios::binary) << blob; }
  auto download = proxied.client->Get(proxied.Path("/files/download?path=/tmp/blob.bin").c_str());
  ASSERT_EQ(download->status, 200);
  EXPECT_TRUE(download->body == blob);
  auto range = proxied.client->Get(proxied.Path("/files/download?path=/tmp/blob.bin").c_str(),
                                   {{"Range", "bytes=100-199"}});
  EXPECT_EQ(range->status, 206);
  EXPECT_TRUE(range->body == blob.substr(100, 100));
}

TEST_F(ExecdTest, ResetStreamFaultCutsAfterNEvents) {
  fake_->lifecycle->Post("/_fake/faults", R"({"reset_stream_after_events":3})", "application/json");
  auto res = Run(R"({"command":"for i in 1 2 3 4 5; do echo $i; done"})");
  EXPECT_FALSE(res);  // the chunked answer never ends properly
  fake_->lifecycle->Delete("/_fake/faults");
  fake_->lifecycle->Post("/_fake/faults", R"({"execd_down":true})", "application/json");
  EXPECT_EQ(execd_->client->Get(execd_->Path("/ping").c_str())->status, 503);
}

TEST(ExecdReadinessTest, FirstPingsFailAndTokenIsChecked) {
  FakeConfig config = TestConfig();
  config.execd_ready_after = 2;
  config.execd_token = "tok";
  TestFake fake(config);
  std::string id = fake.CreateSandbox();
  EndpointClient execd(fake.ExecdEndpoint(id));
  auto no_token = execd.client->Get(execd.Path("/ping").c_str());
  EXPECT_EQ(no_token->status, 401);
  EXPECT_EQ(no_token->body,
            R"({"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"})");
  httplib::Headers token = {{"X-EXECD-ACCESS-TOKEN", "tok"}};
  auto first = execd.client->Get(execd.Path("/ping").c_str(), token);
  EXPECT_EQ(first->status, 503);
  EXPECT_FALSE(first->body.empty());
  EXPECT_EQ(execd.client->Get(execd.Path("/ping").c_str(), token)->status, 503);
  auto ready = execd.client->Get(execd.Path("/ping").c_str(), token);
  EXPECT_EQ(ready->status, 200);
  EXPECT_TRUE(ready->body.empty());
  // Root paths work as well as the /proxy/44772 prefix.
  EXPECT_EQ(execd.client->Get("/ping", token)->status, 200);
  auto unknown = execd.client->Get("/nope", token);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(unknown->body, "404 page not found");
}

TEST(ExecdFramingVersionTest, OldExecdDropsBlankLines) {
  FakeConfig config = TestConfig();
  config.execd_version = "1.0.16";
  TestFake fake(config);
  std::string id = fake.CreateSandbox();
  EndpointClient execd(fake.ExecdEndpoint(id));
  auto res = execd.client->Post(execd.Path("/command").c_str(),
                                R"({"command":"printf 'a\\n\\n\\nb\\n'"})", "application/json");
  EXPECT_EQ(OutputTexts(ParseEvents(res->body), "stdout"), (Texts{"a", "b"}));
}

TEST(ExecdPauseTest, PausedSandboxFreezesProcessesAndExecd) {
  TestFake fake;
  std::string id = fake.CreateSandbox();
  EndpointClient execd(fake.ExecdEndpoint(id));
  ASSERT_EQ(fake.lifecycle->Post(("/v1/sandboxes/" + id + "/pause").c_str(), "", "")->status, 202);
  std::thread resumer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    httplib::Client c("127.0.0.1", fake.server->port());
    c.Post(("/v1/sandboxes/" + id + "/resume").c_str(), "", "");
  });
  auto start = std::chrono::steady_clock::now();
  auto ping = execd.client->Get(execd.Path("/ping").c_str());
  EXPECT_EQ(ping->status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(400));
  resumer.join();
}

}  // namespace
}  // namespace fake_opensandbox

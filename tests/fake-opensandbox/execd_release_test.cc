// The fake plays each execd release (`--execd-version`): every behaviour that differs
// between releases, checked per release against the upstream change that made it differ
// (docs/opensandbox.md, "execd releases"; ExecdRelease in fake_config.h). The ownership
// checks give files to `nobody` first, so they need root (as CI runs); they skip without.

#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

constexpr uid_t kNobody = 65534;

TEST(ExecdReleaseOfTest, EachReleaseHasItsBehaviours) {
  const ExecdRelease v108 = ReleaseOf("1.0.8");
  EXPECT_EQ(v108.session_api, SessionApi::kCode);
  EXPECT_EQ(v108.pty_api, PtyApi::kNone);
  EXPECT_FALSE(v108.keep_blank_lines);
  const ExecdRelease v113 = ReleaseOf("v1.0.13");
  EXPECT_EQ(v113.session_api, SessionApi::kCommand);
  EXPECT_EQ(v113.pty_api, PtyApi::kBasic);
  EXPECT_FALSE(v113.keep_blank_lines);
  EXPECT_FALSE(v113.interrupt_kills_group);
  const ExecdRelease v118 = ReleaseOf("1.0.18");
  EXPECT_TRUE(v118.keep_blank_lines);
  EXPECT_TRUE(v118.interrupt_kills_group);
  EXPECT_EQ(v118.pty_api, PtyApi::kBasic);
  for (const ExecdRelease& old : {v108, v113, v118}) {
    EXPECT_FALSE(old.mkdir_leaves_existing);
    EXPECT_FALSE(old.chown_only_named);
    EXPECT_FALSE(old.missing_path_404);
    EXPECT_FALSE(old.directory_list);
  }
  const ExecdRelease v119 = ReleaseOf("1.0.19");
  EXPECT_EQ(v119.pty_api, PtyApi::kFull);
  EXPECT_TRUE(v119.mkdir_leaves_existing && v119.chown_only_named && v119.missing_path_404 &&
              v119.directory_list);
}

class ExecdReleaseTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    FakeConfig config = TestConfig();
    config.execd_version = GetParam();
    release_ = ReleaseOf(config.execd_version);
    fake_ = std::make_unique<TestFake>(config);
    id_ = fake_->CreateSandbox();
    ASSERT_FALSE(id_.empty());
    execd_ = std::make_unique<EndpointClient>(fake_->ExecdEndpoint(id_));
    root_ = ParseJson(fake_->lifecycle->Get(("/_fake/sandboxes/" + id_).c_str())->body)["root"].GetString();
  }

  httplib::Result PostJson(const std::string& path, const std::string& body) {
    return execd_->client->Post(execd_->Path(path).c_str(), body, "application/json");
  }
  struct stat Stat(const std::string& sandbox_path) {
    struct stat st {};
    EXPECT_EQ(lstat((root_ + sandbox_path).c_str(), &st), 0) << sandbox_path;
    return st;
  }
  // A file or directory of `nobody`, made behind execd's back.
  void GiveToNobody(const std::string& sandbox_path) {
    ASSERT_EQ(chown((root_ + sandbox_path).c_str(), kNobody, kNobody), 0);
  }
  static bool Root() { return geteuid() == 0; }
  bool Newest() const { return release_.chown_only_named; }

  ExecdRelease release_;
  std::unique_ptr<TestFake> fake_;
  std::string id_;
  std::unique_ptr<EndpointClient> execd_;
  std::string root_;
};

// 987154ee: MakeDir leaves a directory that exists alone from 1.0.19; before, it chmods
// it to the requested mode and chowns it to execd's user.
TEST_P(ExecdReleaseTest, MkdirOnAnExistingDirectory) {
  if (!Root()) GTEST_SKIP() << "chown needs root";
  ASSERT_EQ(mkdir((root_ + "/home/user").c_str(), 0700), 0);
  GiveToNobody("/home/user");
  auto res = PostJson("/directories", R"({"/tmp":{"mode":755},"/home/user":{"mode":755}})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  const struct stat tmp = Stat("/tmp"), home = Stat("/home/user");
  if (Newest()) {
    EXPECT_EQ(tmp.st_mode & 07777, 01777u);
    EXPECT_EQ(home.st_mode & 07777, 0700u);
    EXPECT_EQ(home.st_uid, kNobody);
  } else {
    EXPECT_EQ(tmp.st_mode & 07777, 0755u);  // sticky bit and world-write gone
    EXPECT_EQ(home.st_mode & 07777, 0755u);
    EXPECT_EQ(home.st_uid, getuid());
    EXPECT_EQ(home.st_gid, getgid());
  }
}

// c6332b40: from 1.0.19 a chmod without owner and group changes no owner and an unknown
// name is an error; before, the file goes to execd's user and the name is only logged.
TEST_P(ExecdReleaseTest, PermissionsWithoutOwnerAndWithAnUnknownOne) {
  if (!Root()) GTEST_SKIP() << "chown needs root";
  std::ofstream(root_ + "/tmp/f") << "x";
  GiveToNobody("/tmp/f");
  auto res = PostJson("/files/permissions", R"({"/tmp/f":{"mode":600}})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Stat("/tmp/f").st_mode & 07777, 0600u);
  EXPECT_EQ(Stat("/tmp/f").st_uid, Newest() ? kNobody : getuid());

  GiveToNobody("/tmp/f");
  res = PostJson("/files/permissions", R"({"/tmp/f":{"mode":640,"owner":"no-such-user-x"}})");
  ASSERT_TRUE(res);
  if (Newest()) {
    EXPECT_EQ(res->status, 500);
    EXPECT_NE(res->body.find("unknown user no-such-user-x"), std::string::npos) << res->body;
    EXPECT_EQ(Stat("/tmp/f").st_uid, kNobody);
  } else {
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(Stat("/tmp/f").st_uid, getuid());
  }
  EXPECT_EQ(Stat("/tmp/f").st_mode & 07777, 0640u);  // ChmodFile chmods before the owner
}

// filesystem_upload.go: a new file is 0777 less the umask; every upload then runs
// ChmodFile, which before 1.0.19 chowns even an existing file to execd's user.
TEST_P(ExecdReleaseTest, UploadModeAndOwner) {
  httplib::MultipartFormDataItems items = {
      {"metadata", R"({"path":"/tmp/new"})", "metadata", "application/json"},
      {"file", "data", "file", "application/octet-stream"}};
  auto res = execd_->client->Post(execd_->Path("/files/upload").c_str(), items);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const mode_t mask = umask(022);
  umask(mask);
  EXPECT_EQ(Stat("/tmp/new").st_mode & 07777, 0777u & ~mask);

  if (!Root()) GTEST_SKIP() << "chown needs root";
  GiveToNobody("/tmp/new");
  items[0].content = R"({"path":"/tmp/new"})";
  res = execd_->client->Post(execd_->Path("/files/upload").c_str(), items);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(Stat("/tmp/new").st_uid, Newest() ? kNobody : getuid());
}

// cdd490dc, 9aad0a75: a missing path is 404 from 1.0.19, a 500 before.
TEST_P(ExecdReleaseTest, MissingPathStatus) {
  auto info = execd_->client->Get(execd_->Path("/files/info?path=/tmp/none").c_str());
  ASSERT_TRUE(info);
  auto move = PostJson("/files/mv", R"([{"src":"/tmp/none","dest":"/tmp/other"}])");
  ASSERT_TRUE(move);
  if (release_.missing_path_404) {
    EXPECT_EQ(info->status, 404);
    EXPECT_NE(info->body.find("FILE_NOT_FOUND"), std::string::npos);
    EXPECT_EQ(move->status, 404);
  } else {
    EXPECT_EQ(info->status, 500);
    EXPECT_NE(info->body.find("RUNTIME_ERROR"), std::string::npos);
    EXPECT_NE(info->body.find("file not found: /tmp/none"), std::string::npos) << info->body;
    EXPECT_EQ(move->status, 500);
    EXPECT_NE(move->body.find("source path not found: /tmp/none"), std::string::npos) << move->body;
  }
}

// 83beafec, 1505483a: GET /directories/list from 1.0.19; gin's plain 404 before.
TEST_P(ExecdReleaseTest, DirectoryListRoute) {
  auto res = execd_->client->Get(execd_->Path("/directories/list?path=/tmp").c_str());
  ASSERT_TRUE(res);
  if (release_.directory_list) {
    EXPECT_EQ(res->status, 200);
  } else {
    EXPECT_EQ(res->status, 404);
    EXPECT_EQ(res->body, "404 page not found");
  }
}

// runtime/bash_session.go on every release: a run is a script file in /tmp that holds the
// session's exports and the command, and stays there.
TEST_P(ExecdReleaseTest, SessionRunLeavesItsScript) {
  if (release_.session_api == SessionApi::kNone) GTEST_SKIP() << "no bash sessions";
  auto created = PostJson("/session", "{}");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 200) << created->body;
  const std::string sid = ParseJson(created->body)["session_id"].GetString();
  const char* field = release_.session_api == SessionApi::kCode ? "code" : "command";
  auto run = PostJson("/session/" + sid + "/run",
                      std::string("{\"") + field + "\":\"export TOKEN=s3cret; echo $0\"}");
  ASSERT_TRUE(run);
  ASSERT_EQ(OutputTexts(ParseEvents(run->body), "stdout").size(), 1u) << run->body;
  const std::string script_path = OutputTexts(ParseEvents(run->body), "stdout")[0];
  EXPECT_NE(script_path.find("/tmp/execd_bash_"), std::string::npos) << script_path;  // host path without root
  run = PostJson("/session/" + sid + "/run", std::string("{\"") + field + "\":\"true\"}");
  ASSERT_TRUE(run);
  std::vector<std::string> scripts;
  if (DIR* dir = opendir((root_ + "/tmp").c_str())) {
    while (dirent* entry = readdir(dir)) {
      if (std::string(entry->d_name).rfind("execd_bash_", 0) == 0) scripts.push_back(entry->d_name);
    }
    closedir(dir);
  }
  ASSERT_EQ(scripts.size(), 2u);
  bool secret_on_disk = false;
  for (const std::string& name : scripts) {
    std::ifstream in(root_ + "/tmp/" + name);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    secret_on_disk |= text.find("export TOKEN='s3cret'") != std::string::npos;
    EXPECT_EQ(Stat("/tmp/" + name).st_mode & 0777, 0600u);
  }
  EXPECT_TRUE(secret_on_disk);  // the second run's script exports the saved session env
}

// 27726236: from 1.0.18 an interrupt signals the command's whole process group; before,
// only its leader, so a child bash started lives on.
TEST_P(ExecdReleaseTest, InterruptReachesTheGroupFrom1018) {
  auto started = PostJson("/command", R"({"command":"sleep 300 & echo $! > /tmp/child; wait","background":true})");
  ASSERT_TRUE(started);
  ASSERT_EQ(started->status, 200) << started->body;
  const std::string id = ParseEvents(started->body).at(0).text;
  pid_t child = 0;
  for (int i = 0; i < 200 && child == 0; ++i) {
    std::ifstream in(root_ + "/tmp/child");
    if (!(in >> child)) child = 0;
    if (child == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(child, 0) << "the command never wrote its child's pid";
  std::this_thread::sleep_for(kBackgroundRecordDelay * 2);
  auto interrupted = execd_->client->Delete(execd_->Path("/command?id=" + id).c_str());
  ASSERT_TRUE(interrupted);
  ASSERT_EQ(interrupted->status, 200) << interrupted->body;
  // Alive: listed and not a zombie (whoever inherits it may not have reaped it yet).
  auto running = [child] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t paren = text.rfind(')');
    return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
  };
  bool alive = running();
  for (int i = 0; i < 100 && alive && release_.interrupt_kills_group; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    alive = running();
  }
  EXPECT_EQ(alive, !release_.interrupt_kills_group);
  kill(child, SIGKILL);
}

// Every profile: the tree a Debian image has, so a cwd of /var works.
TEST_P(ExecdReleaseTest, SandboxRootHasTheUsualTree) {
  for (const char* dir : {"/home", "/var", "/var/tmp", "/mnt", "/srv", "/run", "/tmp", "/root"}) {
    EXPECT_TRUE(S_ISDIR(Stat(dir).st_mode)) << dir;
  }
  auto res = PostJson("/command", R"({"command":"pwd","cwd":"/var"})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(OutputTexts(ParseEvents(res->body), "stdout"), std::vector<std::string>{"/var"});
}

INSTANTIATE_TEST_SUITE_P(Releases, ExecdReleaseTest,
                         ::testing::Values("1.0.8", "1.0.13", "1.0.18", "1.0.19"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = std::string("v") + info.param;
                           for (char& c : name) c = c == '.' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace fake_opensandbox

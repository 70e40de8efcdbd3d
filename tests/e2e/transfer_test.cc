// files.transfer end to end (docs/epp1.md "files.transfer"): files.download and
// files.upload between the fake's sandbox and files on this host, through the real shim
// and bridge. The shim opens the local files; the bridge moves the bytes.
//
// Each test checks what the user is promised besides the bytes: the whole file or an
// error, nothing left behind on either side after a failure, a cut stream or a cancel,
// and the old files untouched.

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/files_fixture.h"
#include "tests/e2e/runfiles.h"

namespace abx::e2e {
namespace {

std::string RandomBytes(size_t size, unsigned seed) {
  std::mt19937_64 random(seed);
  std::string out(size, '\0');
  for (size_t i = 0; i + 8 <= size; i += 8) {
    const uint64_t word = random();
    memcpy(&out[i], &word, 8);
  }
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteAll(const std::string& path, const std::string& bytes, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  chmod(path.c_str(), mode);
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool Exists(const std::string& path) {
  struct stat seen;
  return lstat(path.c_str(), &seen) == 0;
}

class TransferTest : public FilesFixture {
 protected:
  TransferTest() : FilesFixture(kDir) {}
  static constexpr char kDir[] = "/tmp/e2e-transfer";

  void SetUp() override {
    FilesFixture::SetUp();
    if (HasFatalFailure()) return;
    local_ = root_dir() + "/local";
    ASSERT_EQ(mkdir(local_.c_str(), 0755), 0);
    HttpResponse sandbox = fake().Http("GET", "/_fake/sandboxes/" + sandbox_);
    rapidjson::Document doc;
    std::string error;
    ASSERT_TRUE(ParseJson(sandbox.body, &doc, &error)) << sandbox.body;
    sandbox_root_ = GetString(doc, "root");
    ASSERT_FALSE(sandbox_root_.empty()) << sandbox.body;
  }

  // A sandbox path, and where the fake keeps it on this host.
  std::string Remote(const std::string& name) const { return std::string(kDir) + "/" + name; }
  std::string RemoteOnHost(const std::string& name) const { return sandbox_root_ + Remote(name); }
  std::string Local(const std::string& name) const { return local_ + "/" + name; }

  MessagePtr Download(const std::string& name, const std::string& local_path, bool overwrite = false) {
    return Call("files.download",
                JsonObject().Str("path", Remote(name)).Str("local_path", local_path).Bool("overwrite", overwrite));
  }

  // Nothing but `expected` in the local directory and the sandbox's: no new file of a
  // download, no part file of an upload.
  void ExpectOnly(const std::vector<std::string>& local, const std::vector<std::string>& remote) {
    EXPECT_EQ(Entries(local_), local);
    EXPECT_EQ(Entries(sandbox_root_ + kDir), remote);
  }

  // The $/progress notifications of request `id`, checked against the contract: at least
  // one, bytes never falling, the last with bytes == total, all before the response.
  void ExpectProgress(EppSession* shim, const MessagePtr& response, int64_t total) {
    int64_t last = -1;
    size_t count = 0;
    for (const MessagePtr& note : shim->NotificationsByMethod("$/progress")) {
      if (ToJson(*Find(note->params(), "id")) != ToJson(response->id())) continue;
      ++count;
      EXPECT_LT(note->index, response->index) << "a progress after the response";
      EXPECT_EQ(GetInt(note->params(), "total", -1), total) << note->raw;
      const int64_t bytes = GetInt(note->params(), "bytes", -1);
      EXPECT_GE(bytes, last) << note->raw;
      last = bytes;
    }
    EXPECT_GE(count, 1u);
    EXPECT_EQ(last, total);
  }

  std::string local_;
  std::string sandbox_root_;
};

TEST_F(TransferTest, DownloadLandsWholeWithTheRemoteModeAndTime) {
  const std::string bytes = RandomBytes(3 << 20, 1);
  WriteAll(RemoteOnHost("data.bin"), bytes, 0640);
  const timespec when[2] = {{1700000000, 0}, {1700000000, 250000000}};
  ASSERT_EQ(utimensat(AT_FDCWD, RemoteOnHost("data.bin").c_str(), when, 0), 0);
  // Slowed to about 0.3 s, so progress comes while the bytes move.
  ASSERT_TRUE(fake().SetFaults(R"({"transfer_ms_per_mib":100})"));

  MessagePtr done = Download("data.bin", Local("copy.bin"));
  ASSERT_NE(done, nullptr);
  ASSERT_FALSE(done->IsError()) << done->raw;
  EXPECT_EQ(GetString(done->result(), "path"), Remote("data.bin"));
  EXPECT_EQ(GetString(done->result(), "local_path"), Local("copy.bin"));
  EXPECT_EQ(GetInt(done->result(), "size", -1), 3 << 20);
  EXPECT_TRUE(ReadAll(Local("copy.bin")) == bytes);
  struct stat seen;
  ASSERT_EQ(stat(Local("copy.bin").c_str(), &seen), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(seen.st_mode & 07777, 0640 & ~mask);
  EXPECT_EQ(seen.st_mtim.tv_sec, 1700000000);
  EXPECT_EQ(seen.st_mtim.tv_nsec, 250000000);
  ExpectProgress(shim_, done, 3 << 20);
  ExpectOnly({"copy.bin"}, {"data.bin"});
}

TEST_F(TransferTest, DirectoryTargetsAndOverwrite) {
  WriteAll(RemoteOnHost("a.txt"), "new contents\n");
  // A directory stands for the file of the remote name in it.
  MessagePtr into_dir = Download("a.txt", local_);
  ASSERT_NE(into_dir, nullptr);
  ASSERT_FALSE(into_dir->IsError()) << into_dir->raw;
  EXPECT_EQ(GetString(into_dir->result(), "local_path"), Local("a.txt"));
  EXPECT_EQ(ReadAll(Local("a.txt")), "new contents\n");

  // An existing target is refused before any byte moves, and left as it was.
  WriteAll(Local("a.txt"), "old\n");
  for (const std::string& target : {local_, Local("a.txt")}) {
    MessagePtr refused = Download("a.txt", target);
    ASSERT_NE(refused, nullptr);
    EXPECT_EQ(refused->EppCode(), "E8007") << refused->raw;
    EXPECT_EQ(GetString(refused->error(), "data.field"), "local_path") << refused->raw;
    EXPECT_EQ(ReadAll(Local("a.txt")), "old\n");
  }
  MessagePtr replaced = Download("a.txt", Local("a.txt"), /*overwrite=*/true);
  ASSERT_NE(replaced, nullptr);
  ASSERT_FALSE(replaced->IsError()) << replaced->raw;
  EXPECT_EQ(ReadAll(Local("a.txt")), "new contents\n");

  // A directory in the way of the resolved target: refused even with overwrite.
  ASSERT_EQ(mkdir(Local("sub").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(Local("sub/a.txt").c_str(), 0755), 0);
  MessagePtr onto_dir = Download("a.txt", Local("sub"), /*overwrite=*/true);
  ASSERT_NE(onto_dir, nullptr);
  EXPECT_EQ(onto_dir->EppCode(), "E8007") << onto_dir->raw;
  EXPECT_EQ(GetString(onto_dir->error(), "data.errno"), "EISDIR") << onto_dir->raw;
  ExpectOnly({"a.txt", "sub"}, {"a.txt"});
  EXPECT_EQ(Entries(Local("sub")), std::vector<std::string>{"a.txt"});
}

TEST_F(TransferTest, DownloadErrorsNameTheirSide) {
  WriteAll(RemoteOnHost("f.txt"), "x");
  MessagePtr relative = Download("f.txt", "relative/path");
  ASSERT_NE(relative, nullptr);
  EXPECT_EQ(relative->ErrorCode(), -32602) << relative->raw;
  EXPECT_EQ(GetString(relative->error(), "data.field"), "local_path") << relative->raw;

  MessagePtr no_parent = Download("f.txt", Local("missing/f.txt"));
  ASSERT_NE(no_parent, nullptr);
  EXPECT_EQ(no_parent->EppCode(), "E8005") << no_parent->raw;
  EXPECT_EQ(GetString(no_parent->error(), "data.field"), "local_path") << no_parent->raw;
  EXPECT_EQ(GetString(no_parent->error(), "data.errno"), "ENOENT") << no_parent->raw;

  ASSERT_EQ(mkdir(RemoteOnHost("adir").c_str(), 0755), 0);
  MessagePtr remote_dir = Download("adir", Local("adir"));
  ASSERT_NE(remote_dir, nullptr);
  EXPECT_EQ(remote_dir->EppCode(), "E8007") << remote_dir->raw;
  EXPECT_EQ(GetString(remote_dir->error(), "data.field"), "path") << remote_dir->raw;

  MessagePtr remote_missing = Download("nope", Local("nope"));
  ASSERT_NE(remote_missing, nullptr);
  EXPECT_EQ(remote_missing->EppCode(), "E8005") << remote_missing->raw;
  ExpectOnly({}, {"adir", "f.txt"});
}

TEST_F(TransferTest, DownloadCutAtHalfIsResumed) {
  const std::string bytes = RandomBytes(4 << 20, 2);
  WriteAll(RemoteOnHost("big.bin"), bytes);
  ASSERT_TRUE(fake().SetFaults(R"({"download_cut_after_bytes":2097152})"));
  MessagePtr done = Download("big.bin", Local("big.bin"));
  ASSERT_NE(done, nullptr);
  ASSERT_FALSE(done->IsError()) << done->raw;
  EXPECT_TRUE(ReadAll(Local("big.bin")) == bytes);
  ExpectOnly({"big.bin"}, {"big.bin"});
}

TEST_F(TransferTest, DownloadBrokenTooOftenLeavesNothing) {
  WriteAll(RemoteOnHost("big.bin"), RandomBytes(3 << 20, 3));
  WriteAll(Local("big.bin"), "the old file\n");
  // Every answer breaks after 512 KiB: three resumes reach 2 MiB of 3.
  ASSERT_TRUE(fake().SetFaults(R"({"download_cut_after_bytes":524288})"));
  MessagePtr failed = Download("big.bin", Local("big.bin"), /*overwrite=*/true);
  ASSERT_NE(failed, nullptr);
  ASSERT_TRUE(failed->IsError()) << failed->raw;
  EXPECT_NE(failed->ErrorMessage().find("after 3 resumes"), std::string::npos) << failed->raw;
  EXPECT_EQ(ReadAll(Local("big.bin")), "the old file\n");
  ExpectOnly({"big.bin"}, {"big.bin"});
}

TEST_F(TransferTest, CancelledDownloadsLeaveNothing) {
  WriteAll(RemoteOnHost("big.bin"), RandomBytes(8 << 20, 4));
  // Before any byte: execd is slow to answer the stat.
  ASSERT_TRUE(fake().SetFaults(R"({"latency_ms":1500})"));
  const int64_t early = shim_->SendRequest(
      "files.download",
      JsonObject().Str("sandbox_id", sandbox_).Str("path", Remote("big.bin")).Str("local_path", Local("a")).str());
  std::this_thread::sleep_for(Millis(300));
  shim_->Notify("$/cancel", "{\"id\":" + std::to_string(early) + "}");
  MessagePtr cancelled = shim_->WaitResponse(early, Millis(20000));
  ASSERT_NE(cancelled, nullptr);
  EXPECT_EQ(cancelled->EppCode(), "E8009") << cancelled->raw;

  // While the bytes move: 8 MiB at 250 ms each.
  ASSERT_TRUE(fake().SetFaults(R"({"transfer_ms_per_mib":250})"));
  const int64_t moving = shim_->SendRequest(
      "files.download",
      JsonObject().Str("sandbox_id", sandbox_).Str("path", Remote("big.bin")).Str("local_path", Local("b")).str());
  const auto deadline = Clock::now() + Millis(10000);
  while (Clock::now() < deadline && Entries(local_).empty()) std::this_thread::sleep_for(Millis(20));
  std::this_thread::sleep_for(Millis(500));
  ASSERT_EQ(Entries(local_).size(), 1u) << "the new file beside the target, while the bytes move";
  shim_->Notify("$/cancel", "{\"id\":" + std::to_string(moving) + "}");
  MessagePtr stopped = shim_->WaitResponse(moving, Millis(20000));
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->EppCode(), "E8009") << stopped->raw;
  ExpectOnly({}, {"big.bin"});
}

TEST_F(TransferTest, EndOfInputAndADeadBridgeRemoveTheNewFile) {
  WriteAll(RemoteOnHost("big.bin"), RandomBytes(8 << 20, 5));
  ASSERT_TRUE(fake().SetFaults(R"({"transfer_ms_per_mib":250})"));
  auto start_download = [&](EppSession* shim, const std::string& sandbox, const std::string& target) {
    shim->SendRequest("files.download", JsonObject()
                                            .Str("sandbox_id", sandbox)
                                            .Str("path", Remote("big.bin"))
                                            .Str("local_path", target)
                                            .str());
    const auto deadline = Clock::now() + Millis(10000);
    while (Clock::now() < deadline && Entries(local_).empty()) std::this_thread::sleep_for(Millis(20));
    ASSERT_EQ(Entries(local_).size(), 1u);
  };
  // The host goes away: the transfer is cancelled and its new file removed before the
  // shim exits.
  start_download(shim_, sandbox_, Local("a"));
  shim_->CloseStdin();
  ASSERT_TRUE(shim_->WaitExit(Millis(5000)).has_value());
  ExpectOnly({}, {"big.bin"});

  // The bridge dies: the shim answers E8002 and removes the new file itself.
  EppSession* second = StartInitializedShim();
  ASSERT_NE(second, nullptr);
  start_download(second, sandbox_, Local("b"));
  std::optional<pid_t> bridge = BridgePid();
  ASSERT_TRUE(bridge.has_value());
  kill(*bridge, SIGKILL);
  MessagePtr lost = second->WaitResponse(1 + 1, Millis(10000));  // initialize was 1
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->EppCode(), "E8002") << lost->raw;
  ExpectOnly({}, {"big.bin"});
}

TEST_F(TransferTest, UploadLandsWithModeAndReplaces) {
  const std::string bytes = RandomBytes(5 << 20, 6);
  WriteAll(Local("up.bin"), bytes, 0750);
  ASSERT_TRUE(fake().SetFaults(R"({"transfer_ms_per_mib":60})"));
  MessagePtr done = Call("files.upload",
                         JsonObject().Str("local_path", Local("up.bin")).Str("path", Remote("deep/er/up.bin")));
  ASSERT_NE(done, nullptr);
  ASSERT_FALSE(done->IsError()) << done->raw;
  EXPECT_EQ(GetString(done->result(), "path"), Remote("deep/er/up.bin"));
  EXPECT_EQ(GetInt(done->result(), "size", -1), 5 << 20);
  EXPECT_TRUE(ReadAll(RemoteOnHost("deep/er/up.bin")) == bytes);
  struct stat seen;
  ASSERT_EQ(stat(RemoteOnHost("deep/er/up.bin").c_str(), &seen), 0);
  EXPECT_EQ(seen.st_mode & 07777, 0750u) << "without mode, the local file's";
  ExpectProgress(shim_, done, 5 << 20);

  WriteAll(Local("small.txt"), "replacement\n");
  MessagePtr replaced = Call("files.upload", JsonObject()
                                                 .Str("local_path", Local("small.txt"))
                                                 .Str("path", Remote("deep/er/up.bin"))
                                                 .Str("mode", "0600"));
  ASSERT_NE(replaced, nullptr);
  ASSERT_FALSE(replaced->IsError()) << replaced->raw;
  EXPECT_EQ(ReadAll(RemoteOnHost("deep/er/up.bin")), "replacement\n");
  ASSERT_EQ(stat(RemoteOnHost("deep/er/up.bin").c_str(), &seen), 0);
  EXPECT_EQ(seen.st_mode & 07777, 0600u);
  EXPECT_EQ(Entries(RemoteOnHost("deep/er")), std::vector<std::string>{"up.bin"});
}

TEST_F(TransferTest, UploadErrorsNameLocalPath) {
  ASSERT_EQ(mkfifo(Local("fifo").c_str(), 0644), 0);
  for (const std::string& not_a_file : {local_, Local("fifo")}) {
    MessagePtr refused = Call("files.upload", JsonObject().Str("local_path", not_a_file).Str("path", Remote("x")));
    ASSERT_NE(refused, nullptr);
    EXPECT_EQ(refused->ErrorCode(), -32602) << refused->raw;
    EXPECT_EQ(GetString(refused->error(), "data.field"), "local_path") << refused->raw;
  }
  MessagePtr missing = Call("files.upload", JsonObject().Str("local_path", Local("none")).Str("path", Remote("x")));
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->EppCode(), "E8005") << missing->raw;
  EXPECT_EQ(GetString(missing->error(), "data.field"), "local_path") << missing->raw;
  MessagePtr relative = Call("files.upload", JsonObject().Str("local_path", "up.bin").Str("path", Remote("x")));
  ASSERT_NE(relative, nullptr);
  EXPECT_EQ(relative->ErrorCode(), -32602) << relative->raw;
  ExpectOnly({"fifo"}, {});
}

TEST_F(TransferTest, FailedAndCancelledUploadsLeaveTheOldFile) {
  WriteAll(RemoteOnHost("target.bin"), "the old file\n");
  WriteAll(Local("up.bin"), RandomBytes(6 << 20, 7));
  // execd fails half way through the body.
  ASSERT_TRUE(fake().SetFaults(R"({"upload_fail_after_bytes":3145728})"));
  MessagePtr failed =
      Call("files.upload", JsonObject().Str("local_path", Local("up.bin")).Str("path", Remote("target.bin")));
  ASSERT_NE(failed, nullptr);
  ASSERT_TRUE(failed->IsError()) << failed->raw;
  EXPECT_EQ(ReadAll(RemoteOnHost("target.bin")), "the old file\n");
  ExpectOnly({"up.bin"}, {"target.bin"});

  // Cancelled while the bytes move (6 MiB at 250 ms each).
  ASSERT_TRUE(fake().SetFaults(R"({"transfer_ms_per_mib":250})"));
  const int64_t moving = shim_->SendRequest(
      "files.upload",
      JsonObject().Str("sandbox_id", sandbox_).Str("local_path", Local("up.bin")).Str("path", Remote("target.bin")).str());
  std::this_thread::sleep_for(Millis(700));
  shim_->Notify("$/cancel", "{\"id\":" + std::to_string(moving) + "}");
  MessagePtr cancelled = shim_->WaitResponse(moving, Millis(20000));
  ASSERT_NE(cancelled, nullptr);
  EXPECT_EQ(cancelled->EppCode(), "E8009") << cancelled->raw;
  EXPECT_EQ(ReadAll(RemoteOnHost("target.bin")), "the old file\n");
  ExpectOnly({"up.bin"}, {"target.bin"});
}

// The host's view of its files is the shim's: a tmpfs that only the shim's mount
// namespace has. The download lands there, the upload reads it back from there, and
// the test (outside) sees neither. A full disk and a file-size limit are E8008.
TEST_F(TransferTest, TheHostsNamespaceLimitsAndDisk) {
  const std::string bytes = RandomBytes(3 << 20, 8);
  WriteAll(RemoteOnHost("data.bin"), bytes);
  const std::string private_dir = Local("private");
  const std::string listing = root_dir() + "/listing.txt";
  ASSERT_EQ(mkdir(private_dir.c_str(), 0755), 0);
  // `sh -c '…' sh SHIM`: the shim ends up as "$1", after the mounts.
  EppSession* inside = StartShimUnder(
      {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
       "mount -t tmpfs -o size=16m tmpfs " + private_dir + " && mkdir " + private_dir + "/small && mount -t tmpfs -o size=1m tmpfs " +
           private_dir + "/small && \"$1\"; ls -A " + private_dir + " " + private_dir + "/small > " + listing,
       "sh"});
  ASSERT_NE(inside, nullptr);
  ASSERT_NE(inside->Initialize(), nullptr);
  auto call = [&](const std::string& method, JsonObject params) {
    return inside->Request(method, params.Str("sandbox_id", sandbox_).str(), Millis(20000));
  };
  MessagePtr down = call("files.download",
                         JsonObject().Str("path", Remote("data.bin")).Str("local_path", private_dir + "/data.bin"));
  ASSERT_NE(down, nullptr);
  ASSERT_FALSE(down->IsError()) << down->raw;
  EXPECT_FALSE(Exists(private_dir + "/data.bin")) << "visible outside the shim's namespace";
  MessagePtr up = call("files.upload",
                       JsonObject().Str("local_path", private_dir + "/data.bin").Str("path", Remote("back.bin")));
  ASSERT_NE(up, nullptr);
  ASSERT_FALSE(up->IsError()) << up->raw;
  EXPECT_TRUE(ReadAll(RemoteOnHost("back.bin")) == bytes);

  MessagePtr full = call("files.download",
                         JsonObject().Str("path", Remote("data.bin")).Str("local_path", private_dir + "/small/data.bin"));
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->EppCode(), "E8008") << full->raw;
  EXPECT_EQ(GetString(full->error(), "data.errno"), "ENOSPC") << full->raw;
  EXPECT_EQ(GetString(full->error(), "data.field"), "local_path") << full->raw;
  inside->CloseStdin();
  ASSERT_TRUE(inside->WaitExit(Millis(5000)).has_value());
  // Both directories as the namespace saw them at the end: the download, nothing else.
  EXPECT_EQ(ReadAll(listing), private_dir + ":\ndata.bin\nsmall\n\n" + private_dir + "/small:\n");

  // The host's file-size limit (the bridge, which writes, has none).
  EppSession* limited = StartShimUnder({"/usr/bin/prlimit", "--fsize=1048576"});
  ASSERT_NE(limited, nullptr);
  ASSERT_NE(limited->Initialize(), nullptr);
  MessagePtr too_big = limited->Request("files.download", JsonObject()
                                                              .Str("sandbox_id", sandbox_)
                                                              .Str("path", Remote("data.bin"))
                                                              .Str("local_path", Local("limited.bin"))
                                                              .str(),
                                        Millis(20000));
  ASSERT_NE(too_big, nullptr);
  EXPECT_EQ(too_big->EppCode(), "E8008") << too_big->raw;
  EXPECT_EQ(GetString(too_big->error(), "data.errno"), "EFBIG") << too_big->raw;
  ExpectOnly({"private"}, {"back.bin", "data.bin"});
}

// The shim runs as the host's user, here `nobody` (everything else runs as root), with a
// bridge of its own: a file that user may not read, and a directory it may not write,
// are refused with E8007 naming local_path and the errno, even though the bridge of
// root could have opened both.
TEST_F(TransferTest, PathsTheHostsUserMayNotUseAreRefused) {
  constexpr uid_t kNobody = 65534;
  const std::string base = root_dir() + "/nobody";
  ASSERT_EQ(chmod(root_dir().c_str(), 0755), 0);
  for (const char* dir : {"", "/bin", "/run", "/home"}) ASSERT_EQ(mkdir((base + dir).c_str(), 0755), 0);
  ASSERT_EQ(chown((base + "/run").c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(chmod((base + "/run").c_str(), 0700), 0);
  ASSERT_EQ(chown((base + "/home").c_str(), kNobody, kNobody), 0);
  // The binaries under /root are out of nobody's reach: copies.
  for (const auto& [from, to] : {std::pair{ShimBinary(), base + "/bin/shim"}, {BridgeBinary(), base + "/bin/bridge"}}) {
    WriteAll(to, ReadAll(from), 0755);
  }
  WriteAll(RemoteOnHost("f.txt"), "remote\n");
  WriteAll(Local("secret.txt"), "root only\n", 0600);
  EppSession* nobody = StartShimUnder(
      {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"},
      {{"ABX_OPENSANDBOX_BRIDGE_SOCKET", base + "/run/bridge.sock"},
       {"ABX_OPENSANDBOX_BRIDGE_BIN", base + "/bin/bridge"},
       {"HOME", base + "/home"}},
      base + "/bin/shim");
  ASSERT_NE(nobody, nullptr);
  MessagePtr hello = nobody->Initialize();
  ASSERT_NE(hello, nullptr);
  ASSERT_FALSE(hello->IsError()) << hello->raw;
  auto call = [&](const std::string& method, JsonObject params) {
    return nobody->Request(method, params.Str("sandbox_id", sandbox_).str(), Millis(20000));
  };
  MessagePtr read = call("files.upload", JsonObject().Str("local_path", Local("secret.txt")).Str("path", Remote("s")));
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->EppCode(), "E8007") << read->raw;
  EXPECT_EQ(GetString(read->error(), "data.errno"), "EACCES") << read->raw;
  EXPECT_EQ(GetString(read->error(), "data.field"), "local_path") << read->raw;
  MessagePtr write = call("files.download", JsonObject().Str("path", Remote("f.txt")).Str("local_path", Local("f.txt")));
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->EppCode(), "E8007") << write->raw;
  EXPECT_EQ(GetString(write->error(), "data.errno"), "EACCES") << write->raw;
  EXPECT_EQ(GetString(write->error(), "data.field"), "local_path") << write->raw;
  // What nobody may use works: its own home.
  MessagePtr own = call("files.download", JsonObject().Str("path", Remote("f.txt")).Str("local_path", base + "/home"));
  ASSERT_NE(own, nullptr);
  ASSERT_FALSE(own->IsError()) << own->raw;
  struct stat seen;
  ASSERT_EQ(stat((base + "/home/f.txt").c_str(), &seen), 0);
  EXPECT_EQ(seen.st_uid, kNobody);
  ExpectOnly({"secret.txt"}, {"f.txt"});
  nobody->CloseStdin();
  nobody->WaitExit(Millis(5000));
  // Its bridge is not the fixture's: stopped here.
  const std::string pid_text = ReadAll(base + "/run/bridge.sock.lock");
  if (!pid_text.empty()) kill(static_cast<pid_t>(std::stol(pid_text)), SIGTERM);
}

}  // namespace
}  // namespace abx::e2e

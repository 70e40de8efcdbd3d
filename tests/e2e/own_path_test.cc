// On every execd release a files method changes nothing but the path it names
// (docs/epp1.md §3, general rules; docs/opensandbox.md, "execd releases"). Before 1.0.19
// execd chmods and chowns a directory that exists when asked to make it, chowns to its
// own user whatever it chmods or uploads, answers a missing path with a 500 and has no
// /directories/list. BUILD.bazel runs this suite on the newest and the oldest profile.
//
// The sandbox's own files are read and set up with exec.run (`stat`, `chown`), as a user
// would, so the checks hold against any server where commands run as root.

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/e2e/files_fixture.h"

namespace abx::e2e {
namespace {

class OwnPathTest : public FilesFixture {
 protected:
  OwnPathTest() : FilesFixture("/tmp/e2e-own-path") {}

  // stdout of `command` run in the sandbox; a failure when it does not exit 0.
  std::string Shell(const std::string& command) {
    MessagePtr ran = Call("exec.run", JsonObject().Str("command", command));
    if (!ran || ran->IsError()) {
      ADD_FAILURE() << command << ": " << (ran ? ran->raw : "no answer");
      return "";
    }
    EXPECT_EQ(GetInt(ran->result(), "exit_code", -1), 0) << command << ": " << ran->raw;
    return GetString(ran->result(), "stdout");
  }
  // "mode uid:gid" of each path, one line each.
  std::string Owners(const std::string& paths) { return Shell("stat -c '%a %u:%g %n' " + paths); }

  void ExpectOk(const MessagePtr& answer) {
    ASSERT_NE(answer, nullptr);
    EXPECT_FALSE(answer->IsError()) << answer->raw;
  }
};

TEST_F(OwnPathTest, WritesUploadsAndMkdirsLeaveTheDirectoriesAroundThemAlone) {
  Shell("mkdir -p /home/user && chown 65534:65534 /home/user && chmod 0750 /home/user && "
        "printf old > /home/user/notes.txt && chown 65534:65534 /home/user/notes.txt");
  const std::string before = Owners("/tmp /home/user /home/user/notes.txt");
  ASSERT_NE(before.find("1777 0:0 /tmp"), std::string::npos) << before;

  ExpectOk(Call("files.write", JsonObject().Str("path", "/tmp/x.txt").Str("data", "x")));
  ExpectOk(Call("files.write", JsonObject().Str("path", "/home/user/new.txt").Str("data", "n").Str("mode", "0600")));
  ExpectOk(Call("files.write", JsonObject().Str("path", "/home/user/notes.txt").Str("data", "new")));
  ExpectOk(Call("files.mkdir", JsonObject().Str("path", "/home/user").Bool("parents", true)));
  ExpectOk(Call("files.mkdir", JsonObject().Str("path", "/tmp").Bool("parents", false)));
  const std::string local = root_dir() + "/upload.bin";
  std::ofstream(local) << "uploaded";
  ExpectOk(Call("files.upload", JsonObject().Str("local_path", local).Str("path", "/tmp/up.bin")));
  ExpectOk(Call("files.upload", JsonObject().Str("local_path", local).Str("path", "/home/user/up.bin")));

  // The directories as they were; the replaced file keeps its owner.
  EXPECT_EQ(Owners("/tmp /home/user /home/user/notes.txt"), before);
  EXPECT_EQ(Shell("cat /home/user/notes.txt"), "new\n");
}

// A file replaced keeps its owner however the sandbox knows it (a name, or an id with no
// name), whether it is written, uploaded over, or reached through a symlink; a directory
// behind a symlink is left alone by files.mkdir.
TEST_F(OwnPathTest, ReplacedFilesKeepTheirOwnersAndLinkedDirectoriesTheirModes) {
  const std::string d = "/tmp/e2e-own-path";
  Shell("cd " + d + " && printf a > by-id && chown 4242:4242 by-id && printf b > uploaded && "
        "chown 65534:65534 uploaded && printf c > behind && chown 65534:65534 behind && ln -s behind link && "
        "mkdir real && chown 65534:65534 real && chmod 0750 real && ln -s real dirlink");
  const std::string before = Owners(d + "/by-id " + d + "/uploaded " + d + "/behind " + d + "/real");
  ExpectOk(Call("files.write", JsonObject().Str("path", d + "/by-id").Str("data", "A")));
  const std::string local = root_dir() + "/replacement.bin";
  std::ofstream(local) << "B";
  ExpectOk(Call("files.upload", JsonObject().Str("local_path", local).Str("path", d + "/uploaded").Str("mode", "0644")));
  ExpectOk(Call("files.write", JsonObject().Str("path", d + "/link").Str("data", "C")));
  ExpectOk(Call("files.mkdir", JsonObject().Str("path", d + "/dirlink").Bool("parents", true)));
  EXPECT_EQ(Owners(d + "/by-id " + d + "/uploaded " + d + "/behind " + d + "/real"), before);
  EXPECT_EQ(Shell("cat " + d + "/by-id " + d + "/uploaded " + d + "/behind"), "ABC\n");  // a last line gains its newline
}

// A symlink is itself to files.stat and files.remove, whatever it leads to: one that
// leads nowhere exists, and removing one to a directory leaves the directory alone (execd
// looks through links, differently per release: docs/opensandbox.md §2.11).
TEST_F(OwnPathTest, ADanglingLinkAndALinkToADirectoryAreStatedAndRemovedAsLinks) {
  const std::string d = "/tmp/e2e-own-path";
  Shell("cd " + d + " && ln -s nowhere dangling && mkdir kept && printf x > kept/f && ln -s kept dirlink");
  MessagePtr stat = Call("files.stat", JsonObject().Str("path", d + "/dangling"));
  ASSERT_NE(stat, nullptr);
  ASSERT_FALSE(stat->IsError()) << stat->raw;
  EXPECT_EQ(GetString(stat->result(), "type"), "symlink") << stat->raw;
  EXPECT_EQ(GetInt(stat->result(), "size", -1), 7) << stat->raw;  // "nowhere"
  ExpectOk(Call("files.remove", JsonObject().Str("path", d + "/dangling")));
  ExpectOk(Call("files.remove", JsonObject().Str("path", d + "/dirlink")));
  EXPECT_EQ(Shell("cd " + d + " && ls -A kept; for l in dangling dirlink; do [ -L $l ] && echo $l stayed; done; true"), "f\n");
  MessagePtr gone = Call("files.stat", JsonObject().Str("path", d + "/dangling"));
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->EppCode(), "E8005") << gone->raw;
}

TEST_F(OwnPathTest, ChmodKeepsTheOwnerAndRefusesAnUnknownOneBeforeChanging) {
  Shell("printf x > /tmp/e2e-own-path/f && chown 65534:65534 /tmp/e2e-own-path/f && chmod 0644 /tmp/e2e-own-path/f");
  ExpectOk(Call("files.chmod", JsonObject().Str("path", "/tmp/e2e-own-path/f").Str("mode", "0600")));
  EXPECT_EQ(Owners("/tmp/e2e-own-path/f"), "600 65534:65534 /tmp/e2e-own-path/f\n");

  MessagePtr unknown = Call("files.chmod", JsonObject()
                                               .Str("path", "/tmp/e2e-own-path/f")
                                               .Str("mode", "0640")
                                               .Str("owner", "no-such-user-e2e"));
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->ErrorCode(), -32602) << unknown->raw;
  EXPECT_NE(unknown->raw.find("no-such-user-e2e"), std::string::npos) << unknown->raw;
  EXPECT_EQ(Owners("/tmp/e2e-own-path/f"), "600 65534:65534 /tmp/e2e-own-path/f\n");

  ExpectOk(Call("files.chmod", JsonObject().Str("path", "/tmp/e2e-own-path/f").Str("owner", "root")));
  EXPECT_EQ(Owners("/tmp/e2e-own-path/f"), "600 0:65534 /tmp/e2e-own-path/f\n");
}

TEST_F(OwnPathTest, MissingPathsAreE8005AndAppendCreates) {
  for (const char* method : {"files.stat", "files.read", "files.remove"}) {
    MessagePtr missing = Call(method, JsonObject().Str("path", "/tmp/e2e-own-path/none"));
    ASSERT_NE(missing, nullptr);
    EXPECT_EQ(missing->EppCode(), "E8005") << method << ": " << missing->raw;
  }
  MessagePtr moved = Call("files.move", JsonObject().Str("from", "/tmp/e2e-own-path/none").Str("to", "/tmp/e2e-own-path/b"));
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->EppCode(), "E8005") << moved->raw;

  ExpectOk(Call("files.write", JsonObject().Str("path", "/tmp/e2e-own-path/log").Str("data", "a\n").Bool("append", true)));
  ExpectOk(Call("files.write", JsonObject().Str("path", "/tmp/e2e-own-path/log").Str("data", "b\n").Bool("append", true)));
  EXPECT_EQ(Shell("cat /tmp/e2e-own-path/log"), "a\nb\n");
}

TEST_F(OwnPathTest, ListAndRemoveOfDirectories) {
  Shell("cd /tmp/e2e-own-path && mkdir -p a/b empty && printf 1 > a/one && printf 22 > a/b/two && "
        "ln -s a link && printf x > 'new\nline'");
  MessagePtr listed = Call("files.list", JsonObject().Str("path", "/tmp/e2e-own-path").Int("depth", 3));
  ASSERT_NE(listed, nullptr);
  ASSERT_FALSE(listed->IsError()) << listed->raw;
  auto entries = [](const MessagePtr& answer) {
    std::string seen;
    for (const rapidjson::Value& entry : Find(answer->result(), "entries")->GetArray()) {
      seen += GetString(entry, "path") + " " + GetString(entry, "type");
      if (GetString(entry, "type") == "file") seen += " " + std::to_string(GetInt(entry, "size", -1));
      seen += "|";
    }
    return seen;
  };
  // execd's order: each directory's entries by name, its children right after it.
  EXPECT_EQ(entries(listed),
            "/tmp/e2e-own-path/a dir|/tmp/e2e-own-path/a/b dir|/tmp/e2e-own-path/a/b/two file 2|"
            "/tmp/e2e-own-path/a/one file 1|/tmp/e2e-own-path/empty dir|/tmp/e2e-own-path/link symlink|"
            "/tmp/e2e-own-path/new\nline file 1|");

  MessagePtr full = Call("files.remove", JsonObject().Str("path", "/tmp/e2e-own-path/a"));
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->EppCode(), "E8007") << full->raw;
  ExpectOk(Call("files.remove", JsonObject().Str("path", "/tmp/e2e-own-path/empty")));
  ExpectOk(Call("files.remove", JsonObject().Str("path", "/tmp/e2e-own-path/a").Bool("recursive", true)));
  listed = Call("files.list", JsonObject().Str("path", "/tmp/e2e-own-path"));
  ASSERT_NE(listed, nullptr);
  ASSERT_FALSE(listed->IsError()) << listed->raw;
  EXPECT_EQ(entries(listed), "/tmp/e2e-own-path/link symlink|/tmp/e2e-own-path/new\nline file 1|");
}

}  // namespace
}  // namespace abx::e2e

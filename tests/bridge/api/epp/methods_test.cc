#include "bridge/api/epp/methods.h"

#include <gtest/gtest.h>

namespace abx::epp {
namespace {

TEST(MethodsTest, EveryMethodOfTheContractIsServed) {
  for (const char* m :
       {"sandbox.create", "sandbox.connect", "sandbox.get", "sandbox.list", "sandbox.kill",
        "sandbox.set_timeout", "sandbox.pause", "sandbox.resume", "sandbox.snapshot", "snapshot.get", "sandbox.set_metadata", "templates.build",
        "templates.list", "templates.delete",
        "snapshot.list", "snapshot.delete", "exec.start", "exec.run",
        "exec.logs", "process.list", "process.kill", "process.signal", "files.read",
        "files.write", "files.list", "files.stat", "files.mkdir", "files.remove", "files.move",
        "files.search", "files.chmod", "files.download", "files.upload", "sandbox.metrics", "ports.url", "code.context.create",
        "code.context.list", "code.context.delete", "code.run", "shell.create", "shell.close", "pty.open",
        "pty.input", "pty.resize", "pty.signal", "pty.attach", "pty.list", "pty.close", "provider.info",
        "process.stdin", "files.watch", "files.unwatch", "network.policy.get", "network.policy.patch",
        "network.policy.delete", "provider.doctor"}) {
    EXPECT_NE(FindHandler(m), nullptr) << m;
    EXPECT_FALSE(IsUnsupported(m)) << m;
  }
}

TEST(MethodsTest, UnsupportedMethodsAreKnownAsSuch) {
  for (const char* m : {"files.upload_url", "files.download_url"}) {
    EXPECT_TRUE(IsUnsupported(m)) << m;
    EXPECT_EQ(FindHandler(m), nullptr) << m;
  }
  EXPECT_FALSE(IsUnsupported("no.such.method"));
  EXPECT_EQ(FindHandler("no.such.method"), nullptr);
}

}  // namespace
}  // namespace abx::epp

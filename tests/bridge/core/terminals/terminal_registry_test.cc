// The terminals a bridge holds per server and credential (bridge/core/terminals/terminal_registry.h).
#include "bridge/core/terminals/terminal_registry.h"

#include <memory>

#include <gtest/gtest.h>

#include "bridge/core/endpoint_cache.h"
#include "bridge/core/terminals/terminal.h"

namespace abx::core {
namespace {

// A terminal that is never connected: the registry only keeps it.
std::shared_ptr<Terminal> Unconnected(const std::string& sandbox_id, const std::string& pty_id) {
  return std::make_shared<Terminal>(sandbox_id, pty_id, /*keep=*/false,
                                    opensandbox::ExecdClient(nullptr, opensandbox::ExecdTarget{}, 0),
                                    [] { return false; });
}

TEST(TerminalRegistryTest, FindsATerminalBySandboxAndId) {
  TerminalRegistry registry;
  auto t = Unconnected("sbx-1", "pty-1");
  registry.Add(t);
  EXPECT_EQ(registry.Find("sbx-1", "pty-1"), t);
  EXPECT_EQ(registry.Find("sbx-2", "pty-1"), nullptr);  // the same id in another sandbox
  EXPECT_EQ(registry.Find("sbx-1", "pty-2"), nullptr);
}

TEST(TerminalRegistryTest, ListsASandboxsTerminalsOrAll) {
  TerminalRegistry registry;
  registry.Add(Unconnected("sbx-1", "a"));
  registry.Add(Unconnected("sbx-1", "b"));
  registry.Add(Unconnected("sbx-10", "c"));  // a sandbox id that begins with the other's
  EXPECT_EQ(registry.Of("sbx-1").size(), 2u);
  EXPECT_EQ(registry.Of("sbx-10").size(), 1u);
  EXPECT_EQ(registry.Of("").size(), 3u);
  EXPECT_TRUE(registry.Of("sbx-2").empty());
}

TEST(TerminalRegistryTest, RemovingAReplacedTerminalKeepsItsSuccessor) {
  TerminalRegistry registry;
  auto first = Unconnected("sbx-1", "pty-1");
  auto second = Unconnected("sbx-1", "pty-1");  // attached again after the first was lost
  registry.Add(first);
  registry.Add(second);
  registry.Remove(first.get());
  EXPECT_EQ(registry.Find("sbx-1", "pty-1"), second);
  registry.Remove(second.get());
  EXPECT_EQ(registry.Find("sbx-1", "pty-1"), nullptr);
}

TEST(TerminalRegistryTest, IsOnePerEndpointCache) {
  EndpointCache one(nullptr, "http://server-a", "key");
  EndpointCache other(nullptr, "http://server-b", "key");
  TerminalsOf(one).Add(Unconnected("sbx-1", "pty-1"));
  EXPECT_EQ(&TerminalsOf(one), &TerminalsOf(one));
  EXPECT_NE(TerminalsOf(one).Find("sbx-1", "pty-1"), nullptr);
  EXPECT_EQ(TerminalsOf(other).Find("sbx-1", "pty-1"), nullptr);
}

}  // namespace
}  // namespace abx::core

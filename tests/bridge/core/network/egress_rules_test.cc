// What an egress rule may name, and the checks of a change before it is sent
// (bridge/core/egress_target.h, network.h).
#include <gtest/gtest.h>

#include "bridge/core/egress_target.h"
#include "bridge/core/network/network.h"

namespace abx::core {
namespace {

TEST(EgressTargetTest, HostNamesWildcardsAddressesAndCidrsAreTargets) {
  for (const char* target : {"pypi.org", "files.pythonhosted.org", "PyPI.org", "localhost", "_dmarc.example.com",
                             "xn--bcher-kva.example", "*.pypi.org", "*.com", "10.0.0.1", "10.0.0.0/8", "0.0.0.0/0",
                             "::1", "2001:db8::/32", "2001:db8::1/128"}) {
    EXPECT_EQ(EgressTargetProblem(target), std::nullopt) << target;
  }
}

TEST(EgressTargetTest, AnythingElseIsRefusedWithAReason) {
  for (const char* target : {"", "not a host", "pypi.org.", ".pypi.org", "pypi..org", "-pypi.org", "pypi-.org",
                             "*", "*.", "pypi.*", "a.*.org", "**.org", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/8/8",
                             "::1/129", "10.0.0.0/08", "b\xc3\xbc" "cher.example", "https://pypi.org", "pypi.org:443", "pypi.org/simple"}) {
    auto problem = EgressTargetProblem(target);
    ASSERT_NE(problem, std::nullopt) << target;
    EXPECT_FALSE(problem->empty());
  }
  EXPECT_NE(EgressTargetProblem(std::string(64, 'a') + ".org"), std::nullopt) << "a label over 63";
  std::string long_name;
  for (int i = 0; i < 64; ++i) long_name += "abc.";
  EXPECT_NE(EgressTargetProblem(long_name + "org"), std::nullopt) << "over 253";
}

TEST(EgressRulesTest, AChangeNamesTheFirstFieldItRefuses) {
  EXPECT_TRUE(Network::CheckRules({{"allow", "pypi.org"}, {"deny", "*.example.com"}}).ok());
  Status bad = Network::CheckRules({{"allow", "pypi.org"}, {"Allow", "x.org"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidParams);
  EXPECT_EQ(bad.error().field, "rules[1].action") << "exactly allow or deny";
  EXPECT_EQ(Network::CheckRules({{"deny", "x y"}}).error().field, "rules[0].target");
  EXPECT_EQ(Network::CheckRules({}).error().field, "rules");
  EXPECT_EQ(Network::CheckRules(std::vector<opensandbox::EgressRule>(kMaxEgressRules + 1, {"allow", "a.org"})).error().field,
            "rules");
  EXPECT_TRUE(Network::CheckTargets({"a.org", "10.0.0.0/8"}).ok());
  EXPECT_EQ(Network::CheckTargets({"a.org", ""}).error().field, "targets[1]");
  EXPECT_EQ(Network::CheckTargets({}).error().field, "targets");
}

TEST(EgressRulesTest, AChangeLargerThanTheSidecarReadsIsTooLarge) {
  // 4096 names of 250 characters: over the 1 MiB the sidecar reads of a body.
  std::string name;
  while (name.size() < 240) name += "abcdefghi.";
  name += "org";
  std::vector<opensandbox::EgressRule> rules(kMaxEgressRules, {"allow", name});
  Status big = Network::CheckRules(rules);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::kTooLarge);
  rules.resize(kMaxEgressRules / 2);
  EXPECT_TRUE(Network::CheckRules(rules).ok());
}

}  // namespace
}  // namespace abx::core

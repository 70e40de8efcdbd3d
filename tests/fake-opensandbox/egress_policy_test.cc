// The fake egress sidecar's /policy API against upstream's behaviour (egress_policy.h).
#include "tests/fake-opensandbox/egress_policy.h"

#include <memory>

#include <gtest/gtest.h>

namespace fake_opensandbox {
namespace {

constexpr char kToken[] = "tok-ABCdef_0123456789-abcdefghijk";

std::unique_ptr<EgressPolicy> Make(const std::string& initial, EgressRelease release = {}, size_t max_rules = 4096) {
  std::string error;
  auto policy = std::make_unique<EgressPolicy>(initial, kToken, release, "dns", max_rules, &error);
  EXPECT_EQ(error, "");
  return policy;
}

EgressAnswer Call(const std::unique_ptr<EgressPolicy>& policy, const std::string& method, const std::string& body = "") {
  return policy->Handle(method, std::string(kToken), body);
}

TEST(EgressPolicyTest, AuthorisationComesFirstAndNeedsTheExactToken) {
  auto policy = Make("");
  for (const std::optional<std::string>& auth :
       {std::optional<std::string>(), std::optional<std::string>(""), std::optional<std::string>("x"),
        std::optional<std::string>(std::string(kToken) + " "), std::optional<std::string>("tok-ABCdef_0123456789-abcdefghijK")}) {
    EgressAnswer answer = policy->Handle("PATCH", auth, "");
    EXPECT_EQ(answer.status, 401);
    EXPECT_EQ(answer.body, "unauthorized\n");
    EXPECT_EQ(answer.content_type, "text/plain; charset=utf-8");
  }
  std::string error;
  EgressPolicy open("", "", EgressRelease{}, "dns", 4096, &error);
  EXPECT_EQ(open.Handle("GET", std::nullopt, "").status, 200) << "no token: no authorisation";
}

TEST(EgressPolicyTest, GetShowsThePolicyAsStoredWithItsMode) {
  auto none = Make("");
  EXPECT_EQ(Call(none, "GET").body,
            "{\"status\":\"ok\",\"mode\":\"deny_all\",\"enforcementMode\":\"dns\","
            "\"policy\":{\"egress\":null,\"defaultAction\":\"deny\"}}\n");
  auto empty = Make(R"({"egress":[]})");
  EXPECT_EQ(Call(empty, "GET").body,
            "{\"status\":\"ok\",\"mode\":\"deny_all\",\"enforcementMode\":\"dns\","
            "\"policy\":{\"egress\":[],\"defaultAction\":\"deny\"}}\n");
  auto open = Make(R"({"defaultAction":"allow","egress":[]})");
  EXPECT_NE(Call(open, "GET").body.find("\"mode\":\"allow_all\""), std::string::npos);
  auto rules = Make(R"({"defaultAction":"deny","egress":[{"action":" ALLOW ","target":" PyPI.org "}]})");
  EgressAnswer got = Call(rules, "GET");
  EXPECT_EQ(got.content_type, "application/json");
  EXPECT_EQ(got.body,
            "{\"status\":\"ok\",\"mode\":\"enforcing\",\"enforcementMode\":\"dns\","
            "\"policy\":{\"egress\":[{\"action\":\"allow\",\"target\":\"PyPI.org\"}],\"defaultAction\":\"deny\"}}\n");
}

TEST(EgressPolicyTest, PatchPutsItsRulesFirstAndReplacesByTargetWhateverTheCase) {
  auto policy = Make(R"({"egress":[{"action":"allow","target":"a.com"},{"action":"deny","target":"B.com"},{"action":"allow","target":"10.0.0.0/8"}]})");
  EgressAnswer patched = Call(policy, "PATCH",
                              R"([{"action":"deny","target":"b.COM"},{"action":"allow","target":"c.com"},{"action":"deny","target":"C.com"}])");
  EXPECT_EQ(patched.status, 200);
  EXPECT_EQ(patched.body, "{\"status\":\"ok\",\"mode\":\"enforcing\",\"enforcementMode\":\"dns\"}\n")
      << "the answer carries no policy";
  auto rules = policy->rules();
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_EQ(rules[0].target, "b.COM");  // the patch's spelling
  EXPECT_EQ(rules[1].target, "c.com");  // the first of a target in the patch wins
  EXPECT_EQ(rules[1].action, "allow");
  EXPECT_EQ(rules[2].target, "a.com");
  EXPECT_EQ(rules[3].target, "10.0.0.0/8");
  EXPECT_NE(Call(policy, "GET").body.find("\"defaultAction\":\"deny\""), std::string::npos) << "never changed";
}

TEST(EgressPolicyTest, PatchRefusalsComeInUpstreamsOrder) {
  auto policy = Make(R"({"egress":[{"action":"allow","target":"a.com"}]})", EgressRelease{}, 2);
  EXPECT_EQ(Call(policy, "PATCH", "  ").body, "empty body\n");
  EXPECT_EQ(Call(policy, "PATCH", "{}").body,
            "invalid patch rules: json: cannot unmarshal object into Go value of type []policy.EgressRule\n");
  EXPECT_EQ(Call(policy, "PATCH", "[]").body, "invalid patch rules: empty array\n");
  EXPECT_EQ(Call(policy, "PATCH", R"([{"action":"block","target":"x.com"}])").body,
            "invalid merged policy: unsupported action \"block\"\n");
  EXPECT_EQ(Call(policy, "PATCH", R"([{"action":"allow","target":"  "}])").body,
            "invalid merged policy: egress target cannot be empty\n");
  EgressAnswer over = Call(policy, "PATCH", R"([{"action":"allow","target":"b.com"},{"action":"allow","target":"c.com"}])");
  EXPECT_EQ(over.status, 413);
  EXPECT_EQ(over.body, "egress rule total count 3 exceeds limit 2\n");
  EXPECT_EQ(policy->rules().size(), 1u) << "a refused patch changes nothing";
  EXPECT_EQ(Call(policy, "PATCH", R"([{"action":"deny","target":"A.COM"},{"target":"b.com"}])").status, 200)
      << "a target replaced counts once; an empty action is deny";
  EXPECT_EQ(policy->rules()[1].action, "deny");
}

TEST(EgressPolicyTest, DeleteRemovesByTargetAndIgnoresUnknownOnes) {
  auto policy = Make(R"({"egress":[{"action":"allow","target":"A.com"},{"action":"deny","target":"b.com"}]})");
  EXPECT_EQ(Call(policy, "DELETE", "[]").body, "invalid delete targets: empty array\n");
  EXPECT_EQ(Call(policy, "DELETE", R"({"a":1})").body,
            "invalid delete targets: json: cannot unmarshal object into Go value of type []string\n");
  EgressAnswer unknown = Call(policy, "DELETE", R"(["nothing.org"])");
  EXPECT_EQ(unknown.status, 200);
  EXPECT_EQ(unknown.body,
            "{\"status\":\"ok\",\"mode\":\"enforcing\",\"enforcementMode\":\"dns\",\"reason\":\"no matching targets found\"}\n");
  EXPECT_EQ(Call(policy, "DELETE", R"([" a.COM ","nothing.org"])").status, 200);
  ASSERT_EQ(policy->rules().size(), 1u);
  EXPECT_EQ(policy->rules()[0].target, "b.com");
  EXPECT_EQ(Call(policy, "DELETE", R"(["b.com"])").body, "{\"status\":\"ok\",\"mode\":\"deny_all\",\"enforcementMode\":\"dns\"}\n");
  EXPECT_NE(Call(policy, "GET").body.find("\"egress\":[]"), std::string::npos) << "empty, not null";
}

TEST(EgressPolicyTest, OldReleasesLackMethods) {
  auto v1012 = Make("", *EgressReleaseFor("1.0.12"));
  EgressAnswer no_delete = Call(v1012, "DELETE", R"(["a.com"])");
  EXPECT_EQ(no_delete.status, 405);
  EXPECT_EQ(no_delete.body, "method not allowed\n");
  ASSERT_EQ(no_delete.headers.size(), 2u);
  EXPECT_EQ(no_delete.headers[1], std::make_pair(std::string("Allow"), std::string("GET, POST, PUT, PATCH")));
  EXPECT_EQ(Call(v1012, "PATCH", R"([{"action":"allow","target":"a.com"}])").status, 200);

  auto v101 = Make("", *EgressReleaseFor("1.0.1"));
  EXPECT_EQ(Call(v101, "PATCH", "[]").status, 405);
  EXPECT_EQ(Call(v101, "GET").body,
            "{\"enforcementMode\":\"dns\",\"mode\":\"deny_all\",\"policy\":{\"egress\":null,\"defaultAction\":\"deny\"}}\n");
  EXPECT_FALSE(EgressReleaseFor("latest").has_value());
}

}  // namespace
}  // namespace fake_opensandbox

// Signed route tokens as upstream mints and reads them (signed_route.h), against the
// worked example computed from upstream's algorithm.
#include "tests/fake-opensandbox/signed_route.h"

#include <gtest/gtest.h>

namespace fake_opensandbox {
namespace {

constexpr char kSandbox[] = "3f1c2a4e-9b7d-4c1e-8a2f-0d5e6b7c8a90";

TEST(SignedRouteTest, MintsUpstreamsSignature) {
  auto secret = DecodeBase64("c2VjcmV0LWtleS0xMjM0NTY3ODkw");
  ASSERT_TRUE(secret.has_value());
  EXPECT_EQ(*secret, "secret-key-1234567890");
  EXPECT_EQ(Base36(2000000000), "x2qxvk");
  EXPECT_EQ(Base36(1781000000), "tgd0e8");
  EXPECT_EQ(Base36(0), "0");
  EXPECT_EQ(RouteSignature(*secret, 'a', kSandbox, 8080, 2000000000), "0330494ea");
  EXPECT_EQ(RouteSignature(*secret, 'a', kSandbox, 8081, 2000000000), "be03fb58a") << "the port is signed";
  EXPECT_EQ(SignedRouteToken(*secret, 'a', kSandbox, 8080, 2000000000),
            std::string(kSandbox) + "-8080-x2qxvk-0330494ea");
}

TEST(SignedRouteTest, ReadsTokensFromTheRight) {
  auto token = ParseRouteToken(std::string(kSandbox) + "-8080-x2qxvk-0330494ea");
  ASSERT_TRUE(token.has_value());
  EXPECT_EQ(token->sandbox_id, kSandbox);
  EXPECT_EQ(token->port, 8080);
  EXPECT_TRUE(token->signed_route);
  EXPECT_EQ(token->expires, 2000000000u);
  EXPECT_EQ(token->signature, "0330494ea");

  auto plain = ParseRouteToken(std::string(kSandbox) + "-8080");
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->signed_route);
  EXPECT_EQ(plain->sandbox_id, kSandbox);
  EXPECT_EQ(plain->port, 8080);

  // A malformed signature (upper case, ten characters) is not a signed route; read as a
  // plain one its last part is no port.
  EXPECT_FALSE(ParseRouteToken(std::string(kSandbox) + "-8080-x2qxvk-0330494EA").has_value());
  EXPECT_FALSE(ParseRouteToken(std::string(kSandbox) + "-8080-x2qxvk-0330494eab").has_value());
  EXPECT_FALSE(ParseRouteToken(std::string(kSandbox) + "-08080").has_value());
  EXPECT_FALSE(ParseRouteToken("-8080").has_value());
}

TEST(SignedRouteTest, Base36AndBase64RefuseWhatUpstreamRefuses) {
  EXPECT_EQ(ParseBase36("x2qxvk"), 2000000000u);
  EXPECT_FALSE(ParseBase36("0x2").has_value()) << "a leading zero";
  EXPECT_FALSE(ParseBase36("X2QXVK").has_value()) << "upper case";
  EXPECT_FALSE(ParseBase36("zzzzzzzzzzzzz").has_value()) << "past uint64";
  EXPECT_EQ(ParseBase36("3w5e11264sgsf"), UINT64_MAX);
  EXPECT_FALSE(DecodeBase64("c2VjcmV0").value().empty());
  EXPECT_FALSE(DecodeBase64("c2VjcmV0LWtleS0xMjM0NTY3ODkw=").has_value()) << "not a multiple of 4";
  EXPECT_FALSE(DecodeBase64("c2Vj*mV0").has_value());
  EXPECT_EQ(DecodeBase64("YQ=="), "a");
  EXPECT_EQ(DecodeBase64("YWI="), "ab");
}

}  // namespace
}  // namespace fake_opensandbox

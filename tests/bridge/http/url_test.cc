#include "bridge/http/url.h"

#include "gtest/gtest.h"

namespace abx::http {
namespace {

TEST(QueryTest, BuildsAndAppends) {
  EXPECT_EQ(BuildQuery({}), "");
  EXPECT_EQ(BuildQuery({{"path", "/a b"}, {"depth", "1"}}), "path=%2Fa%20b&depth=1");
  EXPECT_EQ(AppendQuery("http://h/files", {{"path", "/x"}}), "http://h/files?path=%2Fx");
  EXPECT_EQ(AppendQuery("http://h/files?a=1", {{"b", "2"}}), "http://h/files?a=1&b=2");
  EXPECT_EQ(AppendQuery("http://h/files", {}), "http://h/files");
}

TEST(JoinUrlTest, PutsExactlyOneSlashBetween) {
  EXPECT_EQ(JoinUrl("http://h:1/proxy/44772", "/command"), "http://h:1/proxy/44772/command");
  EXPECT_EQ(JoinUrl("http://h:1/proxy/44772/", "/command"), "http://h:1/proxy/44772/command");
  EXPECT_EQ(JoinUrl("http://h:1/proxy/44772/", "command"), "http://h:1/proxy/44772/command");
  EXPECT_EQ(JoinUrl("http://h:1", "command"), "http://h:1/command");
  EXPECT_EQ(JoinUrl("http://h:1//", "//v1/sandboxes"), "http://h:1/v1/sandboxes");
  EXPECT_EQ(JoinUrl("http://h:1/v1", ""), "http://h:1/v1");
  EXPECT_EQ(JoinUrl("http://h:1/files", "?path=x"), "http://h:1/files?path=x");
  // Slashes inside the path are kept.
  EXPECT_EQ(JoinUrl("http://h", "/a//b/"), "http://h/a//b/");
}

TEST(UrlFromEndpointTest, AddsSchemeAndKeepsPathPrefix) {
  EXPECT_EQ(UrlFromEndpoint("10.57.1.91:40109/proxy/44772"), "http://10.57.1.91:40109/proxy/44772");
  EXPECT_EQ(UrlFromEndpoint("gw:8080/sandboxes/abc/proxy/44772/"),
            "http://gw:8080/sandboxes/abc/proxy/44772");
  EXPECT_EQ(UrlFromEndpoint("  host:1  "), "http://host:1");
  EXPECT_EQ(UrlFromEndpoint("id-44772.example.com", "https"), "https://id-44772.example.com");
  EXPECT_EQ(UrlFromEndpoint("host:1", ""), "http://host:1");
}

TEST(UrlFromEndpointTest, NeverDoublesAScheme) {
  EXPECT_EQ(UrlFromEndpoint("http://host:1/p"), "http://host:1/p");
  EXPECT_EQ(UrlFromEndpoint("https://host:1/p", "http"), "https://host:1/p");
}

TEST(UrlSchemeTest, ReadsTheScheme) {
  EXPECT_EQ(UrlScheme("HTTPS://h/x"), "https");
  EXPECT_EQ(UrlScheme("http://h"), "http");
  EXPECT_EQ(UrlScheme("h:8080/x"), "");
  EXPECT_EQ(UrlScheme("://h"), "");
  EXPECT_EQ(UrlScheme("1http://h"), "");
}

TEST(UrlForMessagesTest, DropsUserInfoAndQuery) {
  EXPECT_EQ(UrlForMessages("http://user:pw@h:1/a/b?token=secret#frag"), "http://h:1/a/b");
  EXPECT_EQ(UrlForMessages("https://h/files/download?path=%2Fetc"), "https://h/files/download");
  EXPECT_EQ(UrlForMessages("http://h:1"), "http://h:1");
  // An "@" in the path is not user info.
  EXPECT_EQ(UrlForMessages("http://h/a@b"), "http://h/a@b");
  EXPECT_EQ(UrlForMessages("h:1/x?y"), "h:1/x");
}

}  // namespace
}  // namespace abx::http

// How the in-process tests judge ThreadSanitizer reports from the fake server's log
// (fake_upstream.h): only a report whose accesses run through the fake's own code fails
// a test. The samples are reports the fake gave under --config=tsan, cut to their frames.

#include "tests/bridge/fake_upstream.h"

#include <gtest/gtest.h>

namespace abx::bridge_test {
namespace {

// Both accesses inside Debian's cpp-httplib; the fake's code appears only as context.
constexpr char kLibraryRace[] = R"(==================
WARNING: ThreadSanitizer: data race (pid=18716)
  Read of size 1 at 0x7f3a2458e711 by thread T26:
    #0 send ../../../../src/libsanitizer/sanitizer_common/sanitizer_common_interceptors.inc:6798 (libtsan.so.2+0x55cbd)
    #1 httplib::detail::send_socket(int, void const*, unsigned long, int) <null> (libcpp-httplib.so.0.11+0x2ac02)
    #2 <null> <null> (libstdc++.so.6+0xd44a2)

  Previous write of size 1 at 0x7f3a2458e711 by thread T23:
    #0 memcpy ../../../../src/libsanitizer/sanitizer_common/sanitizer_common_interceptors.inc:827 (libtsan.so.2+0x5dda6)
    #1 <null> <null> (libcpp-httplib.so.0.11+0x6e553)

  As if synchronized via sleep:
    #0 nanosleep ../../../../src/libsanitizer/tsan/tsan_interceptors_posix.cpp:358 (libtsan.so.2+0x620f6)
    #1 fake_opensandbox::(anonymous namespace)::StreamCommand(std::shared_ptr<fake_opensandbox::Command> const&) <null> (fake-opensandbox+0xd3ca8)

  Location is global '<null>' at 0x000000000000 (libcpp-httplib.so.0.11+0x8e711)

  Thread T26 (tid=18764, running) created by thread T22 at:
    #0 pthread_create ../../../../src/libsanitizer/tsan/tsan_interceptors_posix.cpp:1001 (libtsan.so.2+0x5e686)
    #1 fake_opensandbox::FakeServer::Start() tests/fake-opensandbox/fake_server.cc:80 (fake-opensandbox+0x3f154)

SUMMARY: ThreadSanitizer: data race (/lib/x86_64-linux-gnu/libcpp-httplib.so.0.11+0x2ac02) in httplib::detail::send_socket(int, void const*, unsigned long, int)
==================
)";

// A fake handler calls into cpp-httplib, which races on a function-local static regex
// it made: the accesses are the library's, though the fake's handler is on the stack.
constexpr char kRegexInLibrary[] = R"(==================
WARNING: ThreadSanitizer: data race (pid=3887)
  Read of size 1 at 0x7b8800000078 by thread T38:
    #0 std::_Function_handler<bool (char), std::__detail::_CharMatcher<std::__cxx11::regex_traits<char>, true, false> >::_M_invoke(std::_Any_data const&, char&&) <null> (fake-opensandbox+0x1ee3f)
    #1 <null> <null> (libcpp-httplib.so.0.11+0x6808b)
    #2 std::_Function_handler<void (httplib::Request const&, httplib::Response&, httplib::ContentReader const&), fake_opensandbox::RegisterUploadRoute(httplib::Server&, fake_opensandbox::ExecdContext*)::{lambda(httplib::Request const&, httplib::Response&, httplib::ContentReader const&)#1}>::_M_invoke(std::_Any_data const&, httplib::Request const&, httplib::Response&, httplib::ContentReader const&) <null> (fake-opensandbox+0xe90b8)

  Previous write of size 8 at 0x7b8800000078 by thread T35:
    #0 operator new(unsigned long) ../../../../src/libsanitizer/tsan/tsan_new_delete.cpp:64 (libtsan.so.2+0x87323)
    #1 <null> <null> (libcpp-httplib.so.0.11+0x65b8a)
    #2 std::_Function_handler<void (httplib::Request const&, httplib::Response&, httplib::ContentReader const&), fake_opensandbox::RegisterUploadRoute(httplib::Server&, fake_opensandbox::ExecdContext*)::{lambda(httplib::Request const&, httplib::Response&, httplib::ContentReader const&)#1}>::_M_invoke(std::_Any_data const&, httplib::Request const&, httplib::Response&, httplib::ContentReader const&) <null> (fake-opensandbox+0xe90b8)

SUMMARY: ThreadSanitizer: data race (/root/bin/tests/fake-opensandbox/fake-opensandbox+0x1ee3f) in std::_Function_handler<bool (char), std::__detail::_CharMatcher<std::__cxx11::regex_traits<char>, true, false> >::_M_invoke(std::_Any_data const&, char&&)
==================
)";

// The second access is the fake's own, below a C++ library template.
constexpr char kFakeRace[] = R"(==================
WARNING: ThreadSanitizer: data race (pid=2)
  Write of size 8 at 0x7b0400000010 by thread T4:
    #0 <null> <null> (libcpp-httplib.so.0.11+0x6e553)

  Previous read of size 8 at 0x7b0400000010 by thread T3:
    #0 std::_Rb_tree<std::string, std::string>::find(std::string const&) <null> (fake-opensandbox+0x2000)
    #1 fake_opensandbox::CommandRegistry::Find(std::string const&) tests/fake-opensandbox/command_registry.cc:60 (fake-opensandbox+0x2345)

SUMMARY: ThreadSanitizer: data race (libcpp-httplib.so.0.11+0x6e553) in fake_opensandbox::CommandRegistry::Find(std::string const&)
==================
)";

TEST(TsanReportsTest, ReportInsideTheLibraryIsNotTheFakes) {
  std::vector<TsanReport> reports = TsanReports(kLibraryRace);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(reports[0].in_fake_code);
  EXPECT_EQ(reports[0].summary.rfind("SUMMARY: ThreadSanitizer: data race", 0), 0u)
      << reports[0].summary;
}

TEST(TsanReportsTest, FakeHandlerCallingIntoTheLibraryDoesNotMakeItTheFakes) {
  std::vector<TsanReport> reports = TsanReports(kRegexInLibrary);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(reports[0].in_fake_code);
}

TEST(TsanReportsTest, ReportWithAnAccessInTheFakeIsTheFakes) {
  std::vector<TsanReport> reports =
      TsanReports(std::string("listening on 127.0.0.1:1\n") + kLibraryRace + kFakeRace);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_FALSE(reports[0].in_fake_code);
  EXPECT_TRUE(reports[1].in_fake_code);
  EXPECT_NE(reports[1].summary.find("CommandRegistry::Find"), std::string::npos);
}

TEST(TsanReportsTest, LogWithoutReportsHasNone) {
  EXPECT_TRUE(TsanReports("listening on 127.0.0.1:4242\nsome request log\n").empty());
  EXPECT_TRUE(TsanReports("").empty());
}

}  // namespace
}  // namespace abx::bridge_test

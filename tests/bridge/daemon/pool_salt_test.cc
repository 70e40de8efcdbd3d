// The warm pool's salt: made once, private, the same for every daemon of the user that
// reads it, also when several make it at once; a directory it cannot be kept in gives a
// salt of the process's own and says so.

#include "bridge/daemon/pool_salt.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace abx {
namespace {

class PoolSaltTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/pool-salt-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_;
};

bool LooksLikeSalt(const std::string& s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST_F(PoolSaltTest, MadeOncePrivateAndReadBack) {
  std::string error;
  const std::string first = LoadOrCreatePoolSalt(dir_, &error);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_TRUE(LooksLikeSalt(first)) << first;
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/pool-salt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(LoadOrCreatePoolSalt(dir_, &error), first);
  std::ifstream file(dir_ + "/pool-salt");
  std::string stored((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(stored, first);
  // Nothing else is left in the directory (the temporary name is gone).
  EXPECT_EQ(std::system(("test $(ls -A " + dir_ + " | wc -l) -eq 1").c_str()), 0);
}

TEST_F(PoolSaltTest, DaemonsStartingAtOnceAgree) {
  for (int round = 0; round < 20; ++round) {
    std::system(("rm -f " + dir_ + "/pool-salt").c_str());
    std::vector<std::string> salts(8);
    std::vector<std::thread> threads;
    for (std::string& salt : salts) {
      threads.emplace_back([&] {
        std::string error;
        salt = LoadOrCreatePoolSalt(dir_, &error);
        EXPECT_TRUE(error.empty()) << error;
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(std::set<std::string>(salts.begin(), salts.end()).size(), 1u) << "round " << round;
  }
}

TEST_F(PoolSaltTest, AFileThatIsNoSaltIsReplaced) {
  { std::ofstream(dir_ + "/pool-salt") << ""; }
  std::string error;
  const std::string made = LoadOrCreatePoolSalt(dir_, &error);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_TRUE(LooksLikeSalt(made)) << made;
  EXPECT_EQ(LoadOrCreatePoolSalt(dir_, &error), made) << "kept, and read by the next daemon";
}

TEST_F(PoolSaltTest, ADirectoryItCannotBeKeptInGivesAFreshSaltAndSaysSo) {
  std::string error;
  const std::string a = LoadOrCreatePoolSalt(dir_ + "/missing", &error);
  EXPECT_TRUE(LooksLikeSalt(a)) << a;
  EXPECT_NE(error.find("will not be adopted"), std::string::npos) << error;
  std::string again;
  EXPECT_NE(LoadOrCreatePoolSalt(dir_ + "/missing", &again), a) << "random each time";
}

}  // namespace
}  // namespace abx

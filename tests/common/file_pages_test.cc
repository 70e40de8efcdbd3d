#include "common/file_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace abx {
namespace {

// Resident KiB of the mapping that starts at `start`, from /proc/self/smaps.
long ResidentKib(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_it = false;
  while (std::getline(smaps, line)) {
    unsigned long long from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &from, &to) == 2 && line.find(' ') != std::string::npos &&
        line.find(':') > line.find(' ')) {
      in_it = from == reinterpret_cast<uintptr_t>(start);
      continue;
    }
    long kib = 0;
    if (in_it && std::sscanf(line.c_str(), "Rss: %ld kB", &kib) == 1) return kib;
  }
  return -1;
}

class FilePagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/abx-file-pages-XXXXXX";
    fd_ = mkstemp(path);
    ASSERT_GE(fd_, 0);
    unlink(path);
    std::string bytes(kSize, '\0');
    for (size_t i = 0; i < kSize; ++i) bytes[i] = static_cast<char>(i * 31 + 7);
    ASSERT_EQ(write(fd_, bytes.data(), kSize), static_cast<ssize_t>(kSize));
  }
  void TearDown() override { close(fd_); }

  static constexpr size_t kSize = 1 << 20;
  int fd_ = -1;
};

TEST_F(FilePagesTest, DropsUnwrittenReadOnlyMappingsAndTheirBytesStay) {
  auto* map = static_cast<unsigned char*>(mmap(nullptr, kSize, PROT_READ, MAP_PRIVATE, fd_, 0));
  ASSERT_NE(map, MAP_FAILED);
  unsigned sum = 0;
  for (size_t i = 0; i < kSize; i += 4096) sum += map[i];
  ASSERT_GT(ResidentKib(map), 0);

  const ReleasedFilePages released = ReleaseCleanFilePages();
  EXPECT_GE(released.mappings, 1u);
  EXPECT_EQ(ResidentKib(map), 0);
  unsigned again = 0;
  for (size_t i = 0; i < kSize; i += 4096) again += map[i];  // mapped back from the file
  EXPECT_EQ(again, sum);
  EXPECT_EQ(map[12345], static_cast<unsigned char>(12345 * 31 + 7));
  munmap(map, kSize);
}

// A private mapping written before it was made read-only (as relocated read-only data
// is) holds its own copies of those pages: they are not the file's, so it is left alone.
TEST_F(FilePagesTest, LeavesMappingsWithWrittenPages) {
  auto* map = static_cast<unsigned char*>(
      mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, 0));
  ASSERT_NE(map, MAP_FAILED);
  map[100] = 0xAB;
  for (size_t i = 0; i < kSize; i += 4096) (void)*static_cast<volatile unsigned char*>(map + i);
  ASSERT_EQ(mprotect(map, kSize, PROT_READ), 0);
  const long before = ResidentKib(map);
  ReleaseCleanFilePages();
  EXPECT_EQ(ResidentKib(map), before);
  EXPECT_EQ(map[100], 0xAB);
  munmap(map, kSize);
}

}  // namespace
}  // namespace abx

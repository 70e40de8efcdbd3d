// The bridge's allocator (bridge/daemon/allocator.h), linked into this test as into the bridge:
// jemalloc in a normal (or UBSan) build, the C library's under ASan and TSan.

#include "bridge/daemon/allocator.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace abx::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Resident bytes of this process (/proc/self/statm), 0 if unreadable.
size_t ResidentBytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int read = std::fscanf(statm, "%lu %lu", &size, &resident);
  std::fclose(statm);
  return read == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

bool OnTheCLibraryMalloc() { return allocator::Name() == "C library"; }

TEST(AllocatorTest, TheBridgeRunsOnJemallocButUnderSanitizers) {
  const std::string name = allocator::Name();
  if (OnTheCLibraryMalloc()) GTEST_SKIP() << "ASan/TSan build: the C library's malloc, as meant";
  EXPECT_EQ(name.rfind("jemalloc ", 0), 0u) << name;
}

// What the bridge frees goes back to the system when ReleaseFreeMemory is called, without
// waiting for the allocator's own delay: 64 MiB of written blocks, freed, then released.
TEST(AllocatorTest, ReleaseGivesFreedMemoryBackAtOnce) {
  if (OnTheCLibraryMalloc()) GTEST_SKIP() << "the sanitizer's allocator keeps freed memory on purpose";
  constexpr size_t kBlock = 1 << 20;
  constexpr int kBlocks = 64;
  const size_t before = ResidentBytes();
  std::vector<char*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(kBlock)));
    ASSERT_NE(blocks.back(), nullptr);
    std::memset(blocks.back(), i + 1, kBlock);
  }
  const size_t holding = ResidentBytes();
  ASSERT_GE(holding, before + kBlocks * kBlock * 3 / 4) << "the blocks were never resident";
  for (char* block : blocks) std::free(block);
  allocator::ReleaseFreeMemory();
  const size_t after = ResidentBytes();
  EXPECT_LE(after, before + kBlocks * kBlock / 8)
      << "resident: " << before << " before, " << holding << " holding, " << after << " after";
}

// The daemon releases while its other threads allocate and free (the trimmer's thread,
// gRPC's): a release beside them is safe and leaves their blocks intact.
TEST(AllocatorTest, ReleasesBesideAllocatingThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> damaged{0};
  const auto until = Clock::now() + std::chrono::milliseconds(300);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, until, &damaged] {
      size_t size = 4096 << t;
      while (Clock::now() < until) {
        std::vector<unsigned char*> blocks;
        for (int i = 0; i < 64; ++i) {
          const size_t n = size + i * 64;
          auto* block = static_cast<unsigned char*>(std::malloc(n));
          std::memset(block, i, n);
          blocks.push_back(block);
        }
        for (int i = 0; i < 64; ++i) {
          const size_t n = size + i * 64;
          if (blocks[i][0] != i || blocks[i][n - 1] != i) damaged.fetch_add(1);
          std::free(blocks[i]);
        }
        size = size >= (512 << 10) ? 4096 : size * 2;
      }
    });
  }
  int releases = 0;
  while (Clock::now() < until) {
    allocator::ReleaseFreeMemory();
    ++releases;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(damaged.load(), 0);
  EXPECT_GT(releases, 10);
}

}  // namespace
}  // namespace abx::daemon

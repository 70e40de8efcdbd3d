#include "tests/e2e/cpu_hog.h"

#include <unistd.h>

#include <string>

namespace abx::e2e {

CpuHog::CpuHog(int processes) {
  if (processes <= 0) processes = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  for (int i = 0; i < processes; ++i) {
    Process::Options options;
    options.argv = {"/bin/sh", "-c", "while :; do :; done"};
    std::string error;
    if (auto process = Process::Start(options, &error)) processes_.push_back(std::move(process));
  }
}

CpuHog::~CpuHog() = default;  // each Process kills and reaps its child

}  // namespace abx::e2e

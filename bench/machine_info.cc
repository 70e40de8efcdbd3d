#include "bench/machine_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace abx::bench {

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

std::string MachineSummary() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  utsname u{};
  uname(&u);
  std::ostringstream out;
  out << sysconf(_SC_NPROCESSORS_ONLN) << " cores (nproc), " << model << ", " << u.sysname << " " << u.release
      << ", load average " << LoadAverage();
  return out.str();
}

}  // namespace abx::bench

#include "bench/cpu_meter.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace abx::bench {

double ProcessCpuSeconds(pid_t pid, bool reaped_children) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (pid <= 0 || !std::getline(in, stat)) return 0;
  // The command name may hold spaces; fields are counted after its closing parenthesis.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 > stat.size()) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 17 && fields >> field; ++i) {
    if (i == 14 || i == 15 || (reaped_children && (i == 16 || i == 17))) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

CpuUsage ReadCpu(pid_t bridge, pid_t fake) {
  CpuUsage u;
  u.bridge = ProcessCpuSeconds(bridge, false);
  u.fake = ProcessCpuSeconds(fake, false);
  u.commands = ProcessCpuSeconds(fake, true) - u.fake;
  auto seconds = [](const rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  u.driver = seconds(self);
  u.children = seconds(children);
  return u;
}

std::string CpuUsage::Text(const char* children_name, double scale, const char* unit) const {
  const std::string head = std::string("CPU ") + unit + ":";
  std::string out = head;
  auto part = [&](const char* name, double s) {
    s *= scale;
    if (s < 0.005) return;
    char text[64];
    std::snprintf(text, sizeof text, "%s %s %.2f", out.size() > head.size() ? "," : "", name, s);
    out += text;
  };
  part("bridge", bridge);
  part(children_name, children);
  part("fake", fake);
  part("fake's commands", commands);
  part("driver", driver);
  return out;
}

}  // namespace abx::bench

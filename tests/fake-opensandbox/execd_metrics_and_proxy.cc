// GET /metrics (simple host numbers over a 1 s sample, as upstream takes >= 1 s) and
// the execd port proxy /proxy/<P>/... -> 127.0.0.1:<P>/... (docs/opensandbox.md §2.12).

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "tests/fake-opensandbox/egress_sidecar.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/go_json.h"
#include "tests/fake-opensandbox/http_forwarder.h"

namespace fake_opensandbox {
namespace {

bool ReadCpuTimes(unsigned long long* busy, unsigned long long* total) {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  unsigned long long v[8] = {0};
  if (!(stat >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7])) {
    return false;
  }
  *total = 0;
  for (auto x : v) *total += x;
  *busy = *total - v[3] - v[4];
  return true;
}

double MemInfoMiB(const std::string& key) {
  std::ifstream info("/proc/meminfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.compare(0, key.size(), key) == 0) {
      std::istringstream in(line.substr(key.size()));
      double kib = 0;
      in >> kib;
      return kib / 1024.0;
    }
  }
  return 0;
}

void HandleMetrics(const httplib::Request&, httplib::Response& res, ExecdContext* context) {
  unsigned long long busy1 = 0, total1 = 0, busy2 = 0, total2 = 0;
  ReadCpuTimes(&busy1, &total1);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ReadCpuTimes(&busy2, &total2);
  double used = total2 > total1 ? 100.0 * (busy2 - busy1) / (total2 - total1) : 0;
  double mem_total = MemInfoMiB("MemTotal:");
  double mem_used = mem_total - MemInfoMiB("MemAvailable:");
  GoJsonWriter w;
  w.StartObject();
  w.Key("cpu_count").Double(static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)));
  w.Key("cpu_used_pct").Double(used);
  w.Key("mem_total_mib").Double(mem_total);
  w.Key("mem_used_mib").Double(mem_used);
  w.Key("timestamp").Int(context->clock.NowUnixMillis());
  w.EndObject();
  res.status = 200;
  res.set_content(w.Take(), "application/json; charset=utf-8");
}

void HandlePortProxy(const httplib::Request& req, httplib::Response& res, const ExecdContext* context) {
  int port = atoi(std::string(req.matches[1]).c_str());
  std::string rest = req.matches[2];
  if (port == kExecdPort) {  // execd itself: the route did not match anything above
    res.status = 404;
    res.set_content("404 page not found", "text/plain");
    return;
  }
  if (port <= 0 || port > 65535) {
    res.status = 502;
    res.set_content("Bad Gateway", "text/plain; charset=utf-8");
    return;
  }
  // Forward the raw (still encoded) path and query.
  std::string raw_path = req.target.substr(0, req.target.find('?'));
  std::string prefix = "/proxy/" + std::string(req.matches[1]);
  std::string raw_rest = raw_path.size() > prefix.size() ? raw_path.substr(prefix.size()) : "";
  if (raw_rest.empty()) raw_rest = rest.empty() ? "/" : rest;
  ForwardTarget target;
  // The sandbox's 127.0.0.1:18080 is its egress sidecar, where it has one.
  target.port = port == kEgressPort && context->egress_port > 0 ? context->egress_port : port;
  target.path_and_query = raw_rest + RawQuery(req);
  if (!ForwardRequest(req, res, target)) {
    res.status = 502;
    res.set_content("Bad Gateway", "text/plain; charset=utf-8");
  }
}

}  // namespace

void RegisterMetricsRoutes(httplib::Server& server, ExecdContext* context) {
  server.Get(std::string(kExecdRoutePrefix) + "/metrics",
             [context](const httplib::Request& req, httplib::Response& res) {
               HandleMetrics(req, res, context);
             });
}

void RegisterPortProxyRoute(httplib::Server& server, ExecdContext* context) {
  const std::string pattern = R"(/proxy/(\d+)(/.*)?)";
  auto HandlePortProxy = [context](const httplib::Request& req, httplib::Response& res) {
    fake_opensandbox::HandlePortProxy(req, res, context);
  };
  server.Get(pattern, HandlePortProxy);
  server.Post(pattern, HandlePortProxy);
  server.Put(pattern, HandlePortProxy);
  server.Patch(pattern, HandlePortProxy);
  server.Delete(pattern, HandlePortProxy);
  server.Options(pattern, HandlePortProxy);
}

}  // namespace fake_opensandbox

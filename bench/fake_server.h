#pragma once
// The fake OpenSandbox server the whole run talks to: started once, measured through its
// /_fake/stats counters, stopped at the end.

#include <string>
#include <vector>

#include "bench/child.h"
#include "bench/direct_client.h"

namespace abx::bench {

struct FakeStats {
  long long connections_accepted = 0;        // lifecycle listener
  long long execd_connections_accepted = 0;  // every execd listener
  long long requests = 0;
  long long execd_requests = 0;
};

class FakeServer {
 public:
  // Starts `binary` with `args` and waits for its "listening on" line.
  bool Start(const std::string& binary, const std::vector<std::string>& args,
             const std::string& stderr_path, std::string* error);
  void Stop();

  const std::string& base_url() const { return base_url_; }  // http://127.0.0.1:PORT
  const std::string& address() const { return address_; }    // 127.0.0.1:PORT
  pid_t pid() const { return child_.pid(); }

  // Reads the counters. Its own requests open connections to the lifecycle listener
  // too (a new one whenever the fake's 5 s keep-alive closed the last), which the fake
  // counts; those are subtracted, so two reads bracket exactly the connections others
  // opened in between.
  bool Stats(FakeStats* stats, std::string* error);

 private:
  Child child_;
  std::string address_, base_url_;
  DirectClient control_;
  long long control_connections_ = 0;  // opened by Stats() itself
};

}  // namespace abx::bench

#pragma once

// POST /sandboxes body: pydantic's field checks (422 with FastAPI's detail list), the
// model validator (422 value_error), then the Docker/Kubernetes service checks (400
// {code,message}), in upstream's order (docs/opensandbox.md §1.3).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/fake-opensandbox/fake_config.h"
#include "tests/fake-opensandbox/sandbox_volumes.h"

namespace fake_opensandbox {

using StringPairs = std::vector<std::pair<std::string, std::string>>;

struct CreateSpec {
  std::optional<std::string> image_uri;  // the auth part is accepted and dropped at once
  std::optional<std::string> snapshot_id;
  std::optional<std::pair<std::string, std::string>> platform;  // (os, arch), lower-cased
  std::optional<int64_t> timeout_s;     // nullopt: manual cleanup
  bool metadata_given = false;          // `{}` is echoed on create, absence is not
  StringPairs metadata;                 // request order
  std::vector<std::string> entrypoint;           // as sent (echoed by create)
  std::vector<std::string> resolved_entrypoint;  // after Docker's shell split (GET)
  StringPairs env;                      // request order; null values dropped, as Docker drops them
  double cpu_limit = 0;                 // resourceLimits.cpu in cores (Docker's nano_cpus); 0 = none
  bool has_network_policy = false;
  bool secure_access = false;           // allowed only with the ingress gateway
  std::string network_policy_json;      // as the server hands it to the egress sidecar
  std::vector<VolumeSpec> volumes;  // pydantic-valid; the service's checks come later
  // Kubernetes pool mode (extensions.poolRef): the pool's image, already resolved.
  std::optional<std::string> pool_ref;
};

struct Rejection {
  int status = 0;
  std::string body;
};

// Returns true with *spec filled, or false with the answer to send.
bool ParseCreateRequest(const std::string& body, const FakeConfig& config, CreateSpec* spec,
                        Rejection* rejection);

// Python's shlex.split (POSIX mode); false on an unterminated quote.
bool ShellSplit(const std::string& text, std::vector<std::string>* words);

}  // namespace fake_opensandbox

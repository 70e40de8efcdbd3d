#pragma once

// The sandboxes of the fake lifecycle server: their records, their state machine
// (docs/opensandbox.md §1.5–1.9, Docker or Kubernetes flavour) and a timer thread that makes TTL
// expiry and the Kubernetes Pausing/Resuming transitions really happen.
//
// A sandbox is a directory <root>/<id>/ plus an execd listener; "removing" one kills its
// processes, stops the listener and deletes the directory, so afterwards it is simply
// not found (404), as upstream.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/fake-opensandbox/create_request.h"
#include "tests/fake-opensandbox/egress_sidecar.h"
#include "tests/fake-opensandbox/execd_server.h"
#include "tests/fake-opensandbox/fake_config.h"
#include "tests/fake-opensandbox/fault_state.h"
#include "tests/fake-opensandbox/real_execd.h"
#include "tests/fake-opensandbox/sandbox_gate.h"
#include "tests/fake-opensandbox/server_clock.h"
#include "tests/fake-opensandbox/server_stats.h"
#include "tests/fake-opensandbox/sandbox_volumes.h"
#include "tests/fake-opensandbox/snapshot_store.h"

namespace fake_opensandbox {

// A copy of what the API shows of one sandbox.
struct SandboxInfo {
  std::string id;
  std::optional<std::string> image_uri;
  std::optional<std::string> snapshot_id;   // restored from this snapshot
  // The image the sandbox's files first came from (its own, or its snapshot's origin):
  // the fake's image facts (image_catalog.h) follow the files, not the API's `image`.
  std::optional<std::string> origin_image;
  std::optional<std::pair<std::string, std::string>> platform;
  StringPairs metadata;
  std::vector<std::string> entrypoint;
  std::optional<TimePoint> expires_at;
  TimePoint created_at;
  std::string state;
  std::string reason;
  std::string message;
  TimePoint last_transition_at;
  bool has_network_policy = false;
  std::string egress_token;  // OPENSANDBOX-EGRESS-AUTH value (with a network policy)
  int egress_port = 0;       // its egress sidecar's own listener (egress_sidecar.h); 0: none
  // Created with secureAccess: the OpenSandbox-Secure-Access value the ingress gateway
  // wants (ingress_gateway.h); empty: not secure.
  std::string secure_access_token;
  std::string host_root;
  int execd_port = 0;
  bool real_execd = false;   // upstream's execd runs it (--execd-binary)
  uint64_t sequence = 0;     // creation order, for stable newest-first sorting
};

class SandboxRegistry {
 public:
  // `root_dir` holds one directory per sandbox; `work_dir` (outside it) holds the
  // fake's own files: upload staging and background logs.
  SandboxRegistry(const FakeConfig& config, ServerClock clock, std::shared_ptr<FaultState> faults,
                  std::shared_ptr<ServerStats> stats, std::string root_dir, std::string work_dir);
  ~SandboxRegistry();

  // `from`: the snapshot a restore starts from (its files and origin image). A volume
  // the runtime cannot provide is `*refused` (the answer to send), else `*error`.
  bool Create(const CreateSpec& spec, const SnapshotSource* from, SandboxInfo* created,
              std::optional<VolumeRefusal>* refused, std::string* error);
  // `count_poll`: this GET counts towards --pending-polls.
  std::optional<SandboxInfo> Get(const std::string& id, bool count_poll);
  std::vector<SandboxInfo> List();
  bool Delete(const std::string& id);

  enum class OpResult { kOk, kNotFound, kWrongState, kFailed };
  OpResult Pause(const std::string& id);
  OpResult Resume(const std::string& id);
  // kWrongState: the sandbox has no expiry (manual cleanup).
  OpResult Renew(const std::string& id, TimePoint expires_at);
  // Applies a merge patch (value nullopt = delete). Returns nullopt if not found.
  std::optional<SandboxInfo> PatchMetadata(
      const std::string& id,
      const std::vector<std::pair<std::string, std::optional<std::string>>>& patch);

  // A connection to `port` inside a sandbox that runs the real execd (its own network);
  // -1 with *error otherwise.
  int DialSandbox(const std::string& id, int port, std::string* error);

  size_t LiveCount();
  // Kills every sandbox (process exit).
  void RemoveAll();

 private:
  struct Record {
    SandboxInfo info;
    int64_t pending_gets_left = 0;
    bool stuck_pending = false;
    std::optional<TimePoint> transition_at;  // server clock
    std::string transition_to;
    int exit_code = 0;  // the entrypoint's, once it has failed
    std::shared_ptr<SandboxGate> gate;
    std::unique_ptr<EgressSidecar> egress;  // with a networkPolicy; outlives the execd
    std::unique_ptr<ExecdServer> execd;     // the fake's execd, or
    std::unique_ptr<RealExecd> real_execd;  // upstream's, with --execd-binary
    std::vector<std::string> delete_volumes;  // named volumes that end with the sandbox
    std::vector<std::string> claims;          // every named volume it mounts
  };

  void SetState(Record& record, const std::string& state);
  void TimerLoop();
  // Detaches a record from the map (caller holds mutex_); teardown happens outside.
  std::unique_ptr<Record> TakeLocked(const std::string& id);
  void Teardown(std::unique_ptr<Record> record);
  // A real-execd sandbox's main process ended by itself (RealExecdOptions::on_exit):
  // Terminated after exit 0, else Failed with the code, as Docker reports an exited
  // container. One that ends before its record is in the map waits in early_exits_.
  void ContainerExited(const std::string& id, int exit_code);

  const FakeConfig config_;
  const ServerClock clock_;
  std::shared_ptr<FaultState> faults_;
  std::shared_ptr<ServerStats> stats_;
  const std::string root_dir_;
  const std::string staging_dir_;
  const std::string logs_dir_;
  const std::string layers_dir_;  // overlayfs work directories of real-execd sandboxes
  VolumeStore volumes_;

  std::mutex mutex_;
  std::map<std::string, int> early_exits_;  // sandbox id → exit code (mutex_)
  std::condition_variable timer_cv_;
  bool stopping_ = false;
  uint64_t next_sequence_ = 0;
  std::map<std::string, std::unique_ptr<Record>> records_;
  std::thread timer_;
};

// rm -rf; best effort.
void RemoveTreeQuietly(const std::string& path);

}  // namespace fake_opensandbox

#include "tests/fake-opensandbox/sandbox_registry.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/fake-opensandbox/child_process.h"
#include "tests/fake-opensandbox/ids.h"
#include "tests/fake-opensandbox/image_catalog.h"

namespace fake_opensandbox {
namespace {

// How long a container whose entrypoint is missing shows Running before it is Failed.
constexpr int64_t kEntrypointFailureMs = 100;

struct StateText {
  const char* reason;
  const char* message;  // Docker only
};

StateText DescribeState(const std::string& state, bool docker) {
  if (docker) {
    if (state == "Running") return {"CONTAINER_RUNNING", "Sandbox container is running."};
    if (state == "Paused") return {"CONTAINER_PAUSED", "Sandbox container is paused."};
    if (state == "Pending") return {"CONTAINER_STARTING", "Sandbox container is starting."};
    if (state == "Terminated") return {"CONTAINER_EXITED", "Sandbox container exited successfully."};
    return {"CONTAINER_STATE_UNKNOWN", ""};
  }
  if (state == "Running") return {"RUNNING", ""};
  if (state == "Pausing") return {"PAUSING", ""};
  if (state == "Paused") return {"PAUSED", ""};
  if (state == "Resuming") return {"RESUMING", ""};
  if (state == "Pending") return {"CREATING", ""};
  return {"", ""};
}

SandboxGate::State GateFor(const std::string& state) {
  if (state == "Running") return SandboxGate::State::kRunning;
  if (state == "Pending") return SandboxGate::State::kStarting;
  if (state == "Failed" || state == "Terminated") return SandboxGate::State::kGone;
  return SandboxGate::State::kFrozen;
}

}  // namespace

void RemoveTreeQuietly(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    chmod(path.c_str(), 0700);  // a sandbox may have made its directories unwritable
    if (DIR* dir = opendir(path.c_str())) {
      std::vector<std::string> names;
      while (dirent* entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      closedir(dir);
      for (const auto& name : names) RemoveTreeQuietly(path + "/" + name);
    }
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

SandboxRegistry::SandboxRegistry(const FakeConfig& config, ServerClock clock,
                                 std::shared_ptr<FaultState> faults,
                                 std::shared_ptr<ServerStats> stats, std::string root_dir,
                                 std::string work_dir)
    : config_(config),
      clock_(clock),
      faults_(std::move(faults)),
      stats_(std::move(stats)),
      root_dir_(std::move(root_dir)),
      staging_dir_(work_dir + "/staging"),
      logs_dir_(work_dir + "/logs"),
      layers_dir_(work_dir + "/layers"),
      volumes_(work_dir + "/volumes") {
  mkdir(work_dir.c_str(), 0700);
  chmod(work_dir.c_str(), 0700);  // the volume store may have made it first
  mkdir(staging_dir_.c_str(), 0700);
  mkdir(logs_dir_.c_str(), 0700);
  mkdir(layers_dir_.c_str(), 0700);
  timer_ = std::thread([this] { TimerLoop(); });
}

SandboxRegistry::~SandboxRegistry() {
  RemoveAll();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    timer_cv_.notify_all();
  }
  if (timer_.joinable()) timer_.join();
}

void SandboxRegistry::SetState(Record& record, const std::string& state) {
  const bool docker = config_.runtime == Runtime::kDocker;
  const std::string previous = record.info.state;
  StateText text = DescribeState(state, docker);
  record.info.state = state;
  record.info.reason = text.reason;
  record.info.message = text.message;
  if (state == "Failed" && record.exit_code != 0 && docker) {
    record.info.reason = "CONTAINER_EXITED_ERROR";
    record.info.message = "Sandbox container exited with code " + std::to_string(record.exit_code) + ".";
  }
  record.info.last_transition_at = clock_.Now();
  // A paused container is frozen: so are its processes.
  if (state == "Paused" && previous != "Paused") {
    if (record.real_execd) {
      record.real_execd->Freeze();
    } else {
      record.execd->commands().SignalAll(SIGSTOP);
    }
  }
  if (state == "Running" && (previous == "Paused" || previous == "Resuming")) {
    if (record.real_execd) {
      record.real_execd->Thaw();
    } else {
      record.execd->commands().SignalAll(SIGCONT);
    }
  }
  record.gate->Set(GateFor(state));
}

bool SandboxRegistry::Create(const CreateSpec& spec, const SnapshotSource* from, SandboxInfo* created,
                             std::optional<VolumeRefusal>* refused, std::string* error) {
  auto record = std::make_unique<Record>();
  const std::string start_failed =
      std::string(config_.runtime == Runtime::kDocker ? "DOCKER" : "KUBERNETES") + "::SANDBOX_START_FAILED";
  for (const VolumeSpec& volume : spec.volumes) {
    bool escaped = false;
    if (UnderBoundSystemDir(CleanAbsolutePath(volume.mount_path, &escaped))) {
      *refused = VolumeRefusal{500, start_failed,
                               "Failed to start sandbox: fake-opensandbox cannot mount volume '" + volume.name +
                                   "' at " + volume.mount_path + ", under a host directory it binds into sandboxes"};
      return false;
    }
    if (volume.backend == VolumeSpec::Backend::kPvc) record->claims.push_back(volume.claim_name);
  }
  std::vector<VolumeMount> mounts;
  *refused = volumes_.Resolve(spec.volumes, &mounts, &record->delete_volumes);
  if (*refused) return false;
  SandboxInfo& info = record->info;
  info.id = NewUuid4();
  info.image_uri = spec.image_uri;
  info.snapshot_id = spec.snapshot_id;
  info.origin_image = from ? from->origin_image : spec.image_uri;
  info.platform = spec.platform;
  info.metadata = spec.metadata;
  info.entrypoint = spec.resolved_entrypoint;
  info.created_at = clock_.Now();
  if (spec.timeout_s) info.expires_at = info.created_at + std::chrono::seconds(*spec.timeout_s);
  info.has_network_policy = spec.has_network_policy;
  // The server's secrets.token_urlsafe(24), kept in a workload annotation.
  if (spec.secure_access) info.secure_access_token = NewEgressToken();
  if (spec.has_network_policy) {
    // The sidecar upstream starts beside the sandbox, with the policy of the request.
    info.egress_token = NewEgressToken();
    EgressSidecarOptions egress;
    egress.initial_policy = spec.network_policy_json;
    egress.token = info.egress_token;
    egress.release = EgressReleaseFor(config_.egress_version).value_or(EgressRelease{});
    egress.enforcement = config_.egress_mode;
    egress.max_rules = static_cast<size_t>(config_.egress_max_rules);
    egress.execd_token_seen = &stats_->egress_requests_with_execd_token;
    record->egress = EgressSidecar::Start(egress, error);
    if (!record->egress) return false;
    info.egress_port = record->egress->port();
  }
  info.host_root = root_dir_ + "/" + info.id;
  if (from) {
    // A restore: the snapshot's files, as a container from the committed image has them.
    if (!CopyTree(from->dir, info.host_root, error)) {
      RemoveTreeQuietly(info.host_root);
      return false;
    }
  } else if (mkdir(info.host_root.c_str(), 0755) != 0) {
    *error = "create sandbox directory: " + std::string(strerror(errno));
    return false;
  } else {
    // The tree a Debian image has (the system directories bound in for commands aside),
    // so a `cwd` of /var or a path under /home works as it would on a real server.
    for (const char* dir : {"/boot", "/home", "/media", "/mnt", "/run", "/srv", "/var",
                            "/var/cache", "/var/lib", "/var/log", "/var/mail", "/var/opt",
                            "/var/spool"}) {
      mkdir((info.host_root + dir).c_str(), 0755);
    }
    for (const char* dir : {"/tmp", "/var/tmp"}) {
      mkdir((info.host_root + dir).c_str(), 01777);
      chmod((info.host_root + dir).c_str(), 01777);
    }
    mkdir((info.host_root + "/root").c_str(), 0700);
  }
  // The mount points, as the container runtime makes them in the container's tree.
  for (const VolumeMount& mount : mounts) {
    if (!MakeMountPoint(info.host_root, mount)) {
      RemoveTreeQuietly(info.host_root);
      *refused = VolumeRefusal{500, start_failed,
                               "Failed to start sandbox: the mount point " + mount.sandbox_path +
                                   " is a symbolic link or a file in the sandbox"};
      return false;
    }
  }
  std::string logs = logs_dir_ + "/" + info.id;
  mkdir(logs.c_str(), 0700);

  Faults faults = faults_->Get();
  record->stuck_pending = faults.never_running;
  // A pod taken from a Pool was started before the request: no Pending polls.
  record->pending_gets_left = spec.pool_ref ? 0 : config_.pending_polls;
  // The container's start, in time (fault start_ms); a pooled pod has started already.
  const int64_t start_ms = spec.pool_ref ? 0 : faults.start_ms;
  bool pending = record->stuck_pending || record->pending_gets_left > 0 || start_ms > 0;
  record->gate = std::make_shared<SandboxGate>(pending ? SandboxGate::State::kStarting
                                                       : SandboxGate::State::kRunning);
  ExecdServerOptions options;
  options.clock = clock_;
  options.release = ReleaseOf(config_.execd_version);
  options.access_token = config_.execd_token;
  options.ready_after = config_.execd_ready_after;
  options.sse_grace_ms = config_.sse_grace_ms;
  options.faults = faults_;
  options.stats = stats_;
  options.log_dir = logs;
  options.staging_dir = staging_dir_;
  options.mounts = mounts;
  options.egress_port = info.egress_port;
  // What the entrypoint runs: a shell script of the sandbox's own files that execs a
  // program runs that program.
  const std::vector<std::string> program = ProgramOf(info.host_root, spec.resolved_entrypoint);
  // The code-interpreter image has Jupyter configured (its environment names it), and
  // running only when its script is what the entrypoint runs.
  if (info.origin_image && IsCodeInterpreterImage(*info.origin_image)) {
    const bool script = !program.empty() && program[0] == CodeInterpreterScriptOf(*info.origin_image);
    options.jupyter = script ? JupyterState::kRunning : JupyterState::kNotStarted;
  }
  if (!config_.execd_binary.empty()) {
    RealExecdOptions real;
    real.sandbox_id = info.id;
    real.self_binary = config_.self_binary;
    real.execd_binary = config_.execd_binary;
    real.bootstrap_script = config_.execd_bootstrap;
    real.host_root = info.host_root;
    real.layers_work_dir = layers_dir_ + "/" + info.id;
    real.log_path = logs + "/container.log";
    real.entrypoint = spec.resolved_entrypoint;
    real.env = spec.env;
    real.mounts = mounts;
    real.access_token = config_.execd_token;
    real.egress_host_port = info.egress_port;
    real.grace_ms = config_.sse_grace_ms;
    real.cpu_limit = spec.cpu_limit;
    if (info.origin_image) real.code_interpreter_script = CodeInterpreterScriptOf(*info.origin_image);
    real.connections_accepted = &stats_->execd_connections_accepted;
    // The container's main process ended: Docker then reports the container exited.
    real.on_exit = [this, id = info.id](int exit_code) { ContainerExited(id, exit_code); };
    record->real_execd = RealExecd::Start(real, error);
    if (!record->real_execd) {
      record->real_execd.reset();  // ends what did start
      RemoveTreeQuietly(real.layers_work_dir);
      RemoveTreeQuietly(info.host_root);
      RemoveTreeQuietly(logs);
      return false;
    }
    info.execd_port = record->real_execd->port();
    info.real_execd = true;
  } else {
    record->execd = ExecdServer::Start(options, info.host_root, record->gate, error);
    if (!record->execd) {
      RemoveTreeQuietly(info.host_root);
      RemoveTreeQuietly(logs);
      return false;
    }
    info.execd_port = record->execd->port();
  }
  SetState(*record, pending ? "Pending" : "Running");
  if (start_ms > 0 && !record->stuck_pending) {
    record->transition_to = "Running";
    record->transition_at = clock_.Now() + std::chrono::milliseconds(start_ms);
  }
  if (!pending && config_.runtime == Runtime::kDocker) {
    info.message = "Sandbox container started successfully.";
  }
  // The fake's own execd runs no entrypoint: what the entrypoint would do is read from the
  // image (a real-execd sandbox runs it, and its exit says so: ContainerExited).
  if (!record->real_execd && info.origin_image && !program.empty() &&
      !ImageHasProgram(*info.origin_image, program[0]) && !FileInSandbox(info.host_root, program[0])) {
    // The container starts, and its entrypoint fails at once: "not found" is 127.
    record->exit_code = 127;
    record->transition_to = "Failed";
    record->transition_at = clock_.Now() + std::chrono::milliseconds(kEntrypointFailureMs);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  info.sequence = next_sequence_++;
  *created = info;
  Record& stored = *(records_[info.id] = std::move(record));
  if (auto early = early_exits_.find(info.id); early != early_exits_.end()) {
    stored.exit_code = early->second;
    stored.transition_at.reset();
    SetState(stored, stored.exit_code == 0 ? "Terminated" : "Failed");
    early_exits_.erase(early);
  }
  timer_cv_.notify_all();
  return true;
}

std::optional<SandboxInfo> SandboxRegistry::Get(const std::string& id, bool count_poll) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return std::nullopt;
  Record& record = *it->second;
  if (count_poll && record.info.state == "Pending" && !record.stuck_pending) {
    // This GET still answers Pending; the sandbox is Running from the N-th poll on
    // (or once its start_ms is over, whichever is later).
    const bool starting = record.transition_at && record.transition_to == "Running";
    if (--record.pending_gets_left <= 0 && !starting) {
      SandboxInfo before = record.info;
      SetState(record, "Running");
      return before;
    }
  }
  return record.info;
}

std::vector<SandboxInfo> SandboxRegistry::List() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SandboxInfo> out;
  out.reserve(records_.size());
  for (const auto& [id, record] : records_) out.push_back(record->info);
  return out;
}

std::unique_ptr<SandboxRegistry::Record> SandboxRegistry::TakeLocked(const std::string& id) {
  auto it = records_.find(id);
  if (it == records_.end()) return nullptr;
  std::unique_ptr<Record> record = std::move(it->second);
  records_.erase(it);
  return record;
}

void SandboxRegistry::ContainerExited(const std::string& id, int exit_code) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) {
    early_exits_[id] = exit_code;  // still being created (or already taken for teardown)
    return;
  }
  Record& record = *it->second;
  record.exit_code = exit_code;
  record.transition_at.reset();  // a start still pending does not bring it back
  SetState(record, exit_code == 0 ? "Terminated" : "Failed");
}

void SandboxRegistry::Teardown(std::unique_ptr<Record> record) {
  if (!record) return;
  if (record->real_execd) {
    record->real_execd->Shutdown();
    RemoveTreeQuietly(layers_dir_ + "/" + record->info.id);
  } else {
    record->execd->Shutdown();
  }
  RemoveTreeQuietly(record->info.host_root);
  RemoveTreeQuietly(logs_dir_ + "/" + record->info.id);
  // A named volume another sandbox still mounts stays (Docker refuses to remove it).
  std::vector<std::string> unused;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& claim : record->delete_volumes) {
      bool in_use = false;
      for (const auto& [id, other] : records_) {
        for (const std::string& c : other->claims) in_use = in_use || c == claim;
      }
      if (!in_use) unused.push_back(claim);
    }
  }
  volumes_.Release(unused);
}

bool SandboxRegistry::Delete(const std::string& id) {
  std::unique_ptr<Record> record;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    record = TakeLocked(id);
  }
  if (!record) return false;
  Teardown(std::move(record));
  return true;
}

SandboxRegistry::OpResult SandboxRegistry::Pause(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return OpResult::kNotFound;
  Record& record = *it->second;
  const std::string& state = record.info.state;
  if (config_.runtime == Runtime::kDocker) {
    // Docker reports a paused container as running, so the state check passes and
    // the pause itself fails.
    if (state == "Paused") return OpResult::kFailed;
    if (state != "Running") return OpResult::kWrongState;
    SetState(record, "Paused");
    return OpResult::kOk;
  }
  if (state != "Running") return OpResult::kWrongState;
  SetState(record, "Pausing");
  record.transition_to = "Paused";
  record.transition_at = clock_.Now() + std::chrono::milliseconds(config_.k8s_transition_ms);
  timer_cv_.notify_all();
  return OpResult::kOk;
}

SandboxRegistry::OpResult SandboxRegistry::Resume(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return OpResult::kNotFound;
  Record& record = *it->second;
  if (record.info.state != "Paused") return OpResult::kWrongState;
  if (config_.runtime == Runtime::kDocker) {
    SetState(record, "Running");
    return OpResult::kOk;
  }
  SetState(record, "Resuming");
  record.transition_to = "Running";
  record.transition_at = clock_.Now() + std::chrono::milliseconds(config_.k8s_transition_ms);
  timer_cv_.notify_all();
  return OpResult::kOk;
}

SandboxRegistry::OpResult SandboxRegistry::Renew(const std::string& id, TimePoint expires_at) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return OpResult::kNotFound;
  if (!it->second->info.expires_at) return OpResult::kWrongState;
  it->second->info.expires_at = expires_at;
  timer_cv_.notify_all();
  return OpResult::kOk;
}

std::optional<SandboxInfo> SandboxRegistry::PatchMetadata(
    const std::string& id,
    const std::vector<std::pair<std::string, std::optional<std::string>>>& patch) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return std::nullopt;
  StringPairs& metadata = it->second->info.metadata;
  for (const auto& [key, value] : patch) {
    auto existing = metadata.begin();
    while (existing != metadata.end() && existing->first != key) ++existing;
    if (!value) {
      if (existing != metadata.end()) metadata.erase(existing);
    } else if (existing != metadata.end()) {
      existing->second = *value;
    } else {
      metadata.emplace_back(key, *value);
    }
  }
  return it->second->info;
}

int SandboxRegistry::DialSandbox(const std::string& id, int port, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end() || !it->second->real_execd) {
    *error = "no sandbox " + id + " with a network of its own";
    return -1;
  }
  return it->second->real_execd->Dial(port, error);
}

size_t SandboxRegistry::LiveCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

void SandboxRegistry::RemoveAll() {
  std::vector<std::unique_ptr<Record>> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, record] : records_) all.push_back(std::move(record));
    records_.clear();
  }
  for (auto& record : all) Teardown(std::move(record));
}

void SandboxRegistry::TimerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    TimePoint now = clock_.Now();
    std::optional<TimePoint> next;
    std::vector<std::string> expired;
    for (auto& [id, record] : records_) {
      if (record->transition_at) {
        if (*record->transition_at <= now) {
          record->transition_at.reset();
          SetState(*record, record->transition_to);
        } else if (!next || *record->transition_at < *next) {
          next = record->transition_at;
        }
      }
      if (record->info.expires_at) {
        if (*record->info.expires_at <= now) {
          expired.push_back(id);
        } else if (!next || *record->info.expires_at < *next) {
          next = record->info.expires_at;
        }
      }
    }
    if (!expired.empty()) {
      std::vector<std::unique_ptr<Record>> doomed;
      for (const auto& id : expired) doomed.push_back(TakeLocked(id));
      lock.unlock();
      for (auto& record : doomed) Teardown(std::move(record));
      lock.lock();
      continue;
    }
    if (next) {
      timer_cv_.wait_until(lock, clock_.ToReal(*next));
    } else {
      timer_cv_.wait(lock);
    }
  }
}

}  // namespace fake_opensandbox

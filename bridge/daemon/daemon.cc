#include "bridge/daemon/daemon.h"

#include <csignal>
#include <memory>
#include <thread>
#include <sys/resource.h>
#include <unistd.h>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_posix.h>

#include "bridge/api/grpc/bridge_service.h"
#include "bridge/api/grpc/epp_service.h"
#include "bridge/api/grpc/serving_state.h"
#include "bridge/api/grpc/typed_services.h"
#include "bridge/base/log.h"
#include "bridge/core/sandboxes/warm_pool.h"
#include "bridge/daemon/allocator.h"
#include "bridge/daemon/descriptor_intake.h"
#include "bridge/daemon/memory_trimmer.h"
#include "bridge/daemon/pool_salt.h"
#include "bridge/daemon/request_pool.h"
#include "bridge/daemon/unix_listener.h"
#include "common/bridge_paths.h"
#include "common/build_id.h"
#include "common/limits.h"
#include "common/platform.h"

namespace abx::daemon {
namespace {

// How long a shim connected to the descriptor socket has to hand its descriptor over.
constexpr int kDescriptorReceiveMs = 1000;

// SIGTERM/SIGINT start a drain; handled on a thread of its own through sigwait, so no
// async-signal-safety questions arise.
void WatchSignals(api::ServingState* state) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  std::thread([state, set] {
    int sig = 0;
    while (sigwait(&set, &sig) == 0) {
      log::Info("bridge.signal", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      state->StartDraining();
    }
  }).detach();
}

}  // namespace

int Serve(const ServeOptions& options) {
  // Block the drain signals in every thread; WatchSignals takes them synchronously.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  // The bridge writes the hosts' downloads (files.transfer) and inherits the limits of
  // whichever shim started it. A file-size limit is the host's, and its shim checks it;
  // here a write past the limit would kill the daemon and every session with it, so the
  // limit is raised as far as allowed and a write past it fails (EFBIG, E8008) instead.
  std::signal(SIGXFSZ, SIG_IGN);
  if (rlimit fsize; getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY) {
    fsize.rlim_cur = fsize.rlim_max;
    if (setrlimit(RLIMIT_FSIZE, &fsize) != 0 || fsize.rlim_max != RLIM_INFINITY) {
      log::Warn("bridge.file_size_limit",
                {{"detail", "started under a file-size limit it cannot lift: downloads past " +
                                std::to_string(fsize.rlim_max) + " bytes fail with E8008 (EFBIG)"}});
    }
  }

  std::string error;
  std::unique_ptr<UnixListener> listener = UnixListener::FromSystemd(&error);
  if (!error.empty()) {
    log::Error("bridge.socket_activation", {{"error", error}});
    return 1;
  }
  const bool inherited = listener != nullptr;
  const std::string socket_path =
      inherited && !listener->path().empty() ? listener->path() : options.socket_path;
  if (inherited) {
    log::Info("bridge.socket_inherited",
                    {{"socket", socket_path}, {"fd", "3"},
                     {"detail", "using the listening socket passed by socket activation"}});
  }
  if (socket_path.empty()) {
    log::Error("bridge.no_socket", {{"error", "no --socket and no inherited socket"}});
    return 2;
  }
  if (!EnsurePrivateDir(SocketDirOf(socket_path), &error)) {
    log::Error("bridge.socket_dir", {{"error", error}});
    return 1;
  }
  // The lock comes before the socket: whoever holds it owns the path (see unix_listener.h).
  bool busy = false;
  std::unique_ptr<FileLock> lock = FileLock::TryAcquire(LockPathFor(socket_path), &error, &busy);
  if (!lock) {
    if (busy) {
      log::Info("bridge.lock_held", {{"detail", "another bridge serves " + socket_path}});
      return 0;
    }
    log::Error("bridge.lock", {{"error", error}});
    return 1;
  }
  lock->WriteContents(std::to_string(getpid()) + "\n", &error);
  if (!listener) {
    // Someone listens at the path without holding the lock: a socket activator whose
    // bridge is between runs (exited idle, or draining). Its socket is not ours to
    // replace; stepping aside like a lost lock race lets the activator's bridge serve.
    const UnixSocketProbe probe = ProbeUnixSocket(socket_path, 100);
    if (probe == UnixSocketProbe::kAccepting || probe == UnixSocketProbe::kTimeout) {
      log::Info("bridge.socket_in_use",
                      {{"detail", "another listener (socket activation?) holds " + socket_path}});
      return 0;
    }
    listener = UnixListener::Bind(socket_path, &error);
  }
  if (!listener) {
    log::Error("bridge.bind", {{"error", error}});
    return 1;
  }

  // The shims' local files come in beside gRPC (descriptor_intake.h); bound here, while
  // the bridge has one thread (Bind sets the process's umask for a moment). Without this
  // socket the bridge still serves; files.download and files.upload then answer E8004.
  std::unique_ptr<UnixListener> descriptor_listener =
      UnixListener::Bind(DescriptorSocketPathFor(socket_path), &error);
  if (!descriptor_listener) log::Error("bridge.descriptor_socket", {{"error", error}});

  // The warm pool's keys: this build at this socket (two daemons of one build on two
  // sockets never take each other's; the next daemon at the same one adopts), and the
  // user's secret (pool_salt.h).
  std::string salt_error;
  const std::string pool_salt = LoadOrCreatePoolSalt(SocketDirOf(socket_path), &salt_error);
  if (!salt_error.empty()) log::Warn("pool.salt_unavailable", {{"error", salt_error}});
  auto core = core::BridgeCore::Create(std::string(kBuildId) + "/" + socket_path + "/" + pool_salt);
  if (!core.ok()) {
    log::Error("bridge.core", {{"error", core.error().message}});
    return 1;
  }
  if (options.sandbox_lease_s > 0) (*core)->set_sandbox_lease_seconds(options.sandbox_lease_s);
  RequestPool request_pool;
  // The last session gone: the idle request threads end, and the free memory the
  // allocator keeps for reuse goes back to the system at once.
  api::ServingState state(std::move(core).value(), &request_pool, [&request_pool] {
    request_pool.ReleaseIdle();
    allocator::ReleaseFreeMemory();
  });
  if (descriptor_listener) state.set_descriptor_socket(descriptor_listener->path());
  api::BridgeService bridge_service(&state);
  api::EppSessionService epp_service(&state);
  api::TypedServices typed_services(
      {&state.core(), &request_pool,
       [&state] { return std::shared_ptr<void>(state.BeginSession()); }});
  // Standard health checking and reflection, for tooling (docs/grpc.md); both must be
  // switched on before the builder exists.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxBridgeMessageBytes));
  builder.SetMaxSendMessageSize(static_cast<int>(kMaxBridgeMessageBytes));
  builder.RegisterService(&bridge_service);
  builder.RegisterService(&epp_service);
  typed_services.RegisterWith(&builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    log::Error("bridge.grpc", {{"error", "the gRPC server did not start"}});
    return 1;
  }
  typed_services.MarkServing(server.get());
  WatchSignals(&state);

  const uid_t self = geteuid();
  std::thread acceptor([&] {
    listener->AcceptLoop([&](int fd, unsigned uid, int pid) {
      if (uid != self) {
        log::Error("bridge.peer_refused",
                         {{"uid", std::to_string(uid)}, {"pid", std::to_string(pid)},
                          {"error", "refused a connection from uid " + std::to_string(uid) +
                                        ": the bridge serves only its own user (uid " +
                                        std::to_string(self) + ")"}});
        close(fd);
        return;
      }
      grpc::AddInsecureChannelFromFd(server.get(), fd);
    });
  });
  std::thread descriptor_acceptor([&] {
    if (!descriptor_listener) return;
    descriptor_listener->AcceptLoop([&](int fd, unsigned uid, int pid) {
      std::string token, receive_error;
      int handed = -1;
      if (uid != self) {
        log::Error("bridge.peer_refused", {{"uid", std::to_string(uid)}, {"pid", std::to_string(pid)},
                                           {"error", "refused a descriptor from another user"}});
      } else if (!ReceiveDescriptor(fd, kDescriptorReceiveMs, &token, &handed, &receive_error)) {
        log::Error("bridge.descriptor_refused", {{"pid", std::to_string(pid)}, {"error", receive_error}});
      } else if (!state.descriptors().Deliver(token, handed)) {
        log::Error("bridge.descriptor_refused",
                   {{"pid", std::to_string(pid)}, {"error", "a descriptor under a token nobody awaits"}});
      }
      close(fd);
    });
  });
  log::Info("bridge.ready", {{"socket", socket_path},
                                   {"socket_source", inherited ? "inherited" : "bound"},
                                   {"pid", std::to_string(getpid())},
                                   {"build_id", kBuildId},
                                   {"allocator", allocator::Name()},
                                   {"idle_timeout_s", std::to_string(options.idle_timeout.count())}});

  MemoryTrimmer::Options trim;
  trim.state = &state;
  const MemoryTrimmer trimmer(trim);
  const bool idle = state.WaitForExit(options.idle_timeout);
  log::Info("bridge.exiting", {{"reason", idle ? "idle" : "drain"}});
  state.StartDraining();
  // An orderly stop takes the warm pool with it at once (docs/epp1.md §3, "sandbox.pool");
  // the sessions still draining create as without one.
  WarmPoolOf(state.core()).Shutdown();
  if (auto* health = server->GetHealthCheckService()) health->SetServingStatus(false);
  listener->Close();  // new connections are refused; open sessions go on
  acceptor.join();
  // Its path goes with the lock below, so a next bridge may bind it: a transfer that a
  // draining session starts from now on fails (its descriptor has nowhere to go), while
  // those under way already hold theirs.
  if (descriptor_listener) descriptor_listener->Close();
  descriptor_acceptor.join();
  // A socket we bound is gone now, so the path is free: the lock goes too, and the next
  // shim starts a fresh bridge at once instead of waiting out this drain. An inherited
  // socket still exists (its activator holds it), so the lock stays to keep a spawned
  // bridge from rebinding the path under it.
  if (listener->owns_path()) lock.reset();
  state.WaitForSessions(options.drain_grace);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  log::Info("bridge.exited");
  return 0;
}

}  // namespace abx::daemon

#include "tests/fake-opensandbox/kernel_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/fake-opensandbox/child_process.h"

namespace fake_opensandbox {

extern const char kKernelHostPy[];  // kernel_host.py, embedded by the BUILD file

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(90);

}  // namespace

std::unique_ptr<KernelProcess> KernelProcess::Start(const KernelPlace& place,
                                                    const std::string& log_path, std::string* error) {
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return nullptr;
  }
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  SpawnOptions options;
  // The host reads its source from the environment and drops it before the kernel
  // starts; it starts the kernel in its own working directory, which is the sandbox's
  // `cwd` as commands see it (chrooted when the fake runs as root).
  options.command = "exec /usr/bin/python3 -c \"$FAKE_KERNEL_HOST_PY\"";
  options.host_cwd = place.host_cwd;
  options.chroot_dir = place.sandbox_root;
  options.chroot_cwd = place.sandbox_cwd;
  options.mounts = place.mounts;
  options.env = MergedEnvironment({{"FAKE_KERNEL_HOST_PY", kKernelHostPy},
                                   {"JUPYTER_RUNTIME_DIR", "/tmp/.fake-jupyter-runtime"},
                                   {"PYDEVD_DISABLE_FILE_VALIDATION", "1"}});
  options.stdin_fd = in[0];
  options.stderr_fd = log_fd;
  SpawnedProcess spawned;
  const bool started = SpawnShell(options, &spawned, error);
  close(in[0]);
  if (log_fd >= 0) close(log_fd);
  if (!started) {
    close(in[1]);
    return nullptr;
  }
  if (spawned.stderr_fd >= 0) close(spawned.stderr_fd);
  if (spawned.pidfd >= 0) close(spawned.pidfd);
  auto process = std::unique_ptr<KernelProcess>(new KernelProcess());
  process->host_pid_ = spawned.pid;
  process->to_host_ = in[1];
  process->from_host_ = spawned.stdout_fd;
  if (!process->AwaitReady(kStartTimeout, error)) return nullptr;
  return process;
}

KernelProcess::~KernelProcess() {
  const pid_t kernel = kernel_pid_.load();
  if (kernel > 0) kill(kernel, SIGKILL);
  if (to_host_ >= 0) close(to_host_);
  if (host_pid_ > 0) {
    kill(-host_pid_, SIGKILL);
    waitpid(host_pid_, nullptr, 0);
  }
  if (from_host_ >= 0) close(from_host_);
}

bool KernelProcess::ReadLine(std::string* line, std::chrono::milliseconds timeout, bool* eof) {
  *eof = false;
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      line->assign(buffered_, 0, newline);
      buffered_.erase(0, newline + 1);
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{from_host_, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char chunk[65536];
    const ssize_t n = read(from_host_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *eof = true;
      return false;
    }
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

bool KernelProcess::AwaitReady(std::chrono::milliseconds timeout, std::string* error) {
  std::string line;
  bool eof = false;
  if (!ReadLine(&line, timeout, &eof)) {
    *error = eof ? "the kernel host exited before its kernel answered"
                 : "the kernel did not answer in time";
    return false;
  }
  rapidjson::Document doc;
  doc.Parse(line.c_str(), line.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("kernel_pid") ||
      !doc["kernel_pid"].IsInt()) {
    *error = "the kernel host said: " + line;
    return false;
  }
  kernel_pid_ = doc["kernel_pid"].GetInt();
  restarting_ = false;
  return true;
}

KernelProcess::RunEnd KernelProcess::Run(const std::string& code, const OnMessage& on_message,
                                         std::chrono::milliseconds quiet,
                                         const std::function<void()>& on_quiet) {
  std::string error;
  if (restarting_ && !AwaitReady(kStartTimeout, &error)) return RunEnd::kLost;
  rapidjson::StringBuffer request;
  {
    rapidjson::Writer<rapidjson::StringBuffer> w(request);
    w.StartObject();
    w.Key("code");
    w.String(code.c_str(), static_cast<rapidjson::SizeType>(code.size()));
    w.EndObject();
  }
  std::string line(request.GetString(), request.GetSize());
  line += '\n';
  for (size_t at = 0; at < line.size();) {
    const ssize_t n = write(to_host_, line.data() + at, line.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return RunEnd::kLost;
    at += static_cast<size_t>(n);
  }
  for (;;) {
    bool eof = false;
    if (!ReadLine(&line, quiet, &eof)) {
      if (eof) return RunEnd::kLost;
      on_quiet();
      continue;
    }
    rapidjson::Document doc;
    doc.Parse(line.c_str(), line.size());
    if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("event")) return RunEnd::kLost;
    const std::string event = doc["event"].GetString();
    if (event == "done") return RunEnd::kDone;
    if (event == "died") {
      restarting_ = true;
      kernel_pid_ = -1;
      return RunEnd::kDied;
    }
    if (event == "message") on_message(doc["msg_type"].GetString(), doc["content"]);
  }
}

void KernelProcess::Interrupt() {
  const pid_t kernel = kernel_pid_.load();
  if (kernel > 0) kill(kernel, SIGINT);
}

void KernelProcess::KillKernel() {
  // Forgotten at once: a late interrupt (slow_interrupt_ms) must not reach a reused pid.
  const pid_t kernel = kernel_pid_.exchange(-1);
  if (kernel > 0) kill(kernel, SIGKILL);
}

}  // namespace fake_opensandbox

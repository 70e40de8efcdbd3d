#include "tests/e2e/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace abx::e2e {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

void IgnoreSigpipe() {
  static const bool done = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

bool WaitReadable(int fd, Millis timeout) {
  pollfd p{fd, POLLIN, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, timeout.count())));
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string ExitStatus::ToString() const {
  if (exited) return "exit " + std::to_string(code);
  return "signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

namespace {

ExitStatus FromWaitStatus(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.exited = true;
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
  return s;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::unique_ptr<Process> Process::Start(const Options& options, std::string* error) {
  IgnoreSigpipe();
  if (options.argv.empty()) {
    *error = "no argv";
    return nullptr;
  }
  // Every descriptor made here is close-on-exec; the spawn's dup2 onto 0/1/2 clears the
  // flag on the copies only, so the child inherits nothing else of ours.
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
  };
  if (options.pipe_stdin && ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    *error = Errno("pipe");
    return nullptr;
  }
  if (options.pipe_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    *error = Errno("pipe");
    close_all();
    return nullptr;
  }
  const std::string output = options.output_file.empty() ? "/dev/null" : options.output_file;
  int out_fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out_fd < 0) {
    *error = Errno("open " + output);
    close_all();
    return nullptr;
  }
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, options.pipe_stdin ? in_pipe[0] : null_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, options.pipe_stdout ? out_pipe[1] : out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 2);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all_signals, no_signals;
  sigfillset(&all_signals);
  sigemptyset(&no_signals);
  posix_spawnattr_setsigdefault(&attr, &all_signals);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv = CStrings(options.argv);
  std::vector<char*> envp = CStrings(options.env);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out_fd);
  if (null_fd >= 0) ::close(null_fd);
  if (rc != 0) {
    *error = "spawn " + options.argv[0] + ": " + std::strerror(rc);
    close_all();
    return nullptr;
  }

  std::unique_ptr<Process> process(new Process());
  process->pid_ = pid;
  if (options.pipe_stdin) {
    ::close(in_pipe[0]);
    process->stdin_fd_ = in_pipe[1];
  }
  if (options.pipe_stdout) {
    ::close(out_pipe[1]);
    process->stdout_fd_ = out_pipe[0];
  }
  return process;
}

Process::~Process() {
  if (!exit_status()) {
    ::kill(pid_, SIGKILL);
    WaitExit(Millis(5000));
  }
  CloseStdin();
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

void Process::CloseStdin() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stdin_fd_ >= 0) {
    ::close(stdin_fd_);
    stdin_fd_ = -1;
  }
}

std::optional<ExitStatus> Process::exit_status() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (status_) return status_;
  int status = 0;
  pid_t rc = ::waitpid(pid_, &status, WNOHANG);
  if (rc == pid_) status_ = FromWaitStatus(status);
  return status_;
}

std::optional<ExitStatus> Process::WaitExit(Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (auto status = exit_status()) return status;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(Millis(5));
  }
}

bool Process::Signal(int signal_number) {
  if (exit_status()) return false;
  return ::kill(pid_, signal_number) == 0;
}

ExitStatus Process::Stop(Millis grace) {
  if (auto status = exit_status()) return *status;
  Signal(SIGTERM);
  if (auto status = WaitExit(grace)) return *status;
  Signal(SIGKILL);
  if (auto status = WaitExit(Millis(5000))) return *status;
  return ExitStatus{};
}

std::optional<ExitStatus> RunCommand(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& env, Millis timeout,
                                     std::string* output) {
  char path[] = "/tmp/abxe-cmd-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return std::nullopt;
  ::close(fd);
  Process::Options options;
  options.argv = argv;
  options.env = env;
  options.output_file = path;
  std::string error;
  auto process = Process::Start(options, &error);
  std::optional<ExitStatus> status;
  if (process) status = process->WaitExit(timeout);
  if (output) *output = process ? ReadFile(path) : error;
  ::unlink(path);
  return status;  // the destructor kills a command that overran
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  // Reaps it when it happens to be our child; harmless otherwise.
  int status;
  ::waitpid(pid, &status, WNOHANG);
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

std::string ProcessCommandLine(pid_t pid) {
  std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : cmdline) {
    if (c == '\0') c = ' ';
  }
  while (!cmdline.empty() && cmdline.back() == ' ') cmdline.pop_back();
  return cmdline;
}

std::vector<pid_t> FindProcesses(const std::vector<std::string>& needles) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (pid == ::getpid()) continue;
    std::string cmdline = ProcessCommandLine(pid);
    bool all = !cmdline.empty();
    for (const std::string& needle : needles) all = all && cmdline.find(needle) != std::string::npos;
    if (all && ProcessAlive(pid)) out.push_back(pid);
  }
  return out;
}

std::string ReadFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (max_bytes && text.size() > max_bytes) text = text.substr(text.size() - max_bytes);
  return text;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool IsSocket(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace abx::e2e

#include "bridge/daemon/pty_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/cli_bridge.h"
#include "bridge/daemon/cli_config.h"
#include "bridge/daemon/terminal_redraw.h"
#include "proto/terminal.grpc.pb.h"

namespace abx::daemon {
namespace {

namespace pb = abx::opensandbox::v1;

constexpr char kDetachKey = 0x1d;  // ^], as telnet
// How much of a reattached terminal's output is asked for: what the bridge keeps of a
// terminal it holds for nobody (Terminal::kKeptBytes, core/terminals/terminal.h).
constexpr uint64_t kReplayBytes = 1 << 20;

int wake_pipe[2] = {-1, -1};  // SIGWINCH → the input loop

void OnWinch(int) {
  const char c = 'w';
  ssize_t ignored = write(wake_pipe[1], &c, 1);
  (void)ignored;
}

bool WindowSize(uint32_t* cols, uint32_t* rows) {
  struct winsize size = {};
  if (ioctl(STDIN_FILENO, TIOCGWINSZ, &size) != 0 || size.ws_col == 0) return false;
  *cols = size.ws_col;
  *rows = size.ws_row;
  return true;
}

// The calling terminal in raw mode while it lives.
class RawMode {
 public:
  RawMode() {
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    struct termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawMode() {
    if (active_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }

 private:
  struct termios saved_ = {};
  bool active_ = false;
};

}  // namespace

int AttachTerminal(const std::string& socket, const std::string& sandbox_id, std::string pty_id) {
  const bool opened_here = pty_id.empty();
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = pb::Terminals::NewStub(channel);
  const auto config = ConfigFromEnvironment();
  if (pty_id.empty()) {
    pb::OpenTerminalRequest open;
    *open.mutable_config() = config;
    open.set_sandbox_id(sandbox_id);
    uint32_t cols = 0, rows = 0;
    if (WindowSize(&cols, &rows)) {
      open.set_cols(cols);
      open.set_rows(rows);
    }
    if (const char* term = std::getenv("TERM")) open.set_term(term);
    pb::OpenTerminalReply opened;
    auto open_terminal = [&] {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      return stub->Open(&context, open, &opened);
    };
    grpc::Status status = open_terminal();
    if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED && !open.term().empty() &&
        status.error_message().find("terminal's term") != std::string::npos) {
      // An execd before 1.0.19 cannot set the terminal's TERM: a person at a terminal
      // would rather have the shell without it than nothing.
      std::fprintf(stderr, "abx-opensandbox-bridge pty: the sandbox's execd is older than 1.0.19 and cannot "
                           "set TERM; the shell gets its own\r\n");
      open.clear_term();
      status = open_terminal();
    }
    if (!status.ok()) {
      std::fprintf(stderr, "abx-opensandbox-bridge pty: %s\n", CallError(status, socket).c_str());
      return 1;
    }
    pty_id = opened.pty_id();
  }
  std::fprintf(stderr, "terminal %s of sandbox %s; ^] detaches, the terminal runs on\r\n", pty_id.c_str(),
               sandbox_id.c_str());

  // Reattaching: the screen comes back from the terminal's recent output (terminal_redraw.h).
  // Its end now is where the replay stops and the live output starts.
  uint64_t replay_end = 0;
  if (!opened_here) {
    pb::ListTerminalsRequest list;
    *list.mutable_config() = config;
    list.set_sandbox_id(sandbox_id);
    pb::ListTerminalsReply listed;
    grpc::ClientContext list_context;
    list_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (stub->List(&list_context, list, &listed).ok()) {
      for (const pb::TerminalStatus& t : listed.terminals()) {
        if (t.pty_id() == pty_id) replay_end = t.offset();
      }
    }
  }

  grpc::ClientContext context;
  auto stream = stub->Attach(&context);
  pb::TerminalInput first;
  *first.mutable_attach()->mutable_config() = config;
  first.mutable_attach()->set_sandbox_id(sandbox_id);
  first.mutable_attach()->set_pty_id(pty_id);
  if (opened_here) first.mutable_attach()->set_since(0);  // its first prompt too
  if (replay_end > 0) first.mutable_attach()->set_since(replay_end > kReplayBytes ? replay_end - kReplayBytes : 0);
  if (!stream->Write(first)) {
    std::fprintf(stderr, "abx-opensandbox-bridge pty: no bridge answers at %s\n", socket.c_str());
    return 1;
  }

  int exit_code = 0;
  std::string ended;
  std::atomic<bool> done{false};
  std::mutex write_mu;  // the input thread's keys and this thread's resizes
  bool writes_done = false;  // under write_mu
  auto send = [&](const pb::TerminalInput& input) {
    std::lock_guard<std::mutex> lock(write_mu);
    return !writes_done && stream->Write(input);
  };
  std::string replay;  // output before replay_end, shown at once when it is all there
  bool replaying = replay_end > 0;
  auto write_out = [](const std::string& data) {
    size_t at = 0;
    while (at < data.size()) {
      const ssize_t n = ::write(STDOUT_FILENO, data.data() + at, data.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
  };
  // The replay's redraw, then a resize round trip: the program draws itself again.
  auto finish_replay = [&] {
    replaying = false;
    write_out(replay.substr(RedrawStart(replay)));
    replay.clear();
    uint32_t cols = 0, rows = 0;
    if (!WindowSize(&cols, &rows)) return;
    pb::TerminalInput resize;
    resize.mutable_resize()->set_cols(cols);
    resize.mutable_resize()->set_rows(rows > 1 ? rows - 1 : rows + 1);
    send(resize);
    resize.mutable_resize()->set_rows(rows);
    send(resize);
  };
  {
    RawMode raw;
    if (pipe(wake_pipe) != 0) return 1;
    signal(SIGWINCH, OnWinch);
    // Keys and window sizes to the terminal, on a thread of their own.
    std::thread input([&] {
      uint32_t cols = 0, rows = 0;
      if (WindowSize(&cols, &rows)) {
        pb::TerminalInput resize;
        resize.mutable_resize()->set_cols(cols);
        resize.mutable_resize()->set_rows(rows);
        send(resize);
      }
      char buffer[4096];
      while (!done.load()) {
        pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
        if (poll(fds, 2, 200) <= 0) continue;
        if (fds[1].revents & POLLIN) {
          char drained[16];
          ssize_t ignored = read(wake_pipe[0], drained, sizeof drained);
          (void)ignored;
          if (WindowSize(&cols, &rows)) {
            pb::TerminalInput resize;
            resize.mutable_resize()->set_cols(cols);
            resize.mutable_resize()->set_rows(rows);
            if (!send(resize)) break;
          }
        }
        if (!(fds[0].revents & (POLLIN | POLLHUP))) continue;
        const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
        if (n <= 0) break;
        const std::string keys(buffer, static_cast<size_t>(n));
        const size_t detach = keys.find(kDetachKey);
        pb::TerminalInput data;
        data.set_data(keys.substr(0, detach));
        if (!data.data().empty() && !send(data)) break;
        if (detach != std::string::npos) {
          ended = "detached; the terminal runs on (" + pty_id + ")";
          break;
        }
      }
      std::lock_guard<std::mutex> lock(write_mu);
      writes_done = true;
      stream->WritesDone();
    });
    // Output to the calling terminal, as it comes.
    pb::TerminalEvent event;
    while (stream->Read(&event)) {
      if (event.has_output()) {
        const std::string& data = event.output().data();
        if (!replaying) {
          write_out(data);
          continue;
        }
        // The part before replay_end is the replay; the rest is live, after the redraw.
        const uint64_t offset = event.output().offset();
        const size_t before = offset >= replay_end ? 0 : static_cast<size_t>(std::min<uint64_t>(replay_end - offset, data.size()));
        replay.append(data, 0, before);
        if (offset + data.size() >= replay_end) {
          finish_replay();
          write_out(data.substr(before));
        }
      } else if (event.has_exit()) {
        if (replaying) finish_replay();
        exit_code = event.exit().has_exit_code() ? event.exit().exit_code() : 128;
        ended = "the terminal's shell exited" +
                (event.exit().has_exit_code() ? " with " + std::to_string(event.exit().exit_code()) : std::string());
        break;
      } else if (event.has_detached()) {
        if (replaying) finish_replay();
        ended = "detached: " + event.detached().reason();
        break;
      }
    }
    done = true;
    context.TryCancel();
    input.join();
    signal(SIGWINCH, SIG_DFL);
  }
  grpc::Status status = stream->Finish();
  if (ended.empty() && !status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) {
    std::fprintf(stderr, "\nabx-opensandbox-bridge pty: %s\n", CallError(status, socket).c_str());
    return 1;
  }
  std::fprintf(stderr, "\n[%s]\n", ended.empty() ? "ended" : ended.c_str());
  return exit_code;
}

}  // namespace abx::daemon

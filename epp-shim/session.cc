#include "epp-shim/session.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "common/platform.h"
#include "epp-shim/bridge_messages.h"

namespace abx {
namespace {

constexpr char kExitMethod[] = "exit";
constexpr char kInitializeMethod[] = "initialize";
// One read(2) of stdin takes at most this much: as much as the pipe below holds.
constexpr size_t kInputReadBytes = 256 << 10;
// A stdin pipe is enlarged to this (as stdout is, host_output.cc). With the default
// 64 KiB, a 5.6 MiB files.write line (4 MiB of base64) took 7-9 ms to cross from the
// host on this 2-core machine, 3.7 ms with 256 KiB (a writer and a reader alone, same
// minutes): the writer and the reader wake each other once per pipe-full.
constexpr int kInputPipeBytes = 256 << 10;
// After a call is cancelled at the drain deadline, its E8002 answers get this long
// more to reach the host (EPP/1 wants the shim gone within 2 s of end of stdin).
constexpr int kFinalFlushMs = 250;
// Quiet for this long after some traffic: the free memory goes back to the system.
constexpr int kIdleTrimMs = 1000;

}  // namespace

// One EppSession.Run call, and the connection it runs on.
class ShimSession::Call final : public GrpcCallObserver {
 public:
  explicit Call(ShimSession* session) : session_(session) {}

  GrpcConnection* transport() { return connection.transport.get(); }

  void OnMessage(std::string_view payload) override {
    std::string_view line, response_id, local_file;
    if (!DecodeSessionOutput(payload, &line, &response_id, &local_file)) {
      transport()->Cancel("the bridge sent a malformed SessionOutput");
      return;
    }
    if (!local_file.empty()) {
      LocalFileRequestMessage request;
      if (!DecodeLocalFileRequest(local_file, &request)) {
        transport()->Cancel("the bridge sent a malformed LocalFileRequest");
        return;
      }
      // After the half-close no answer reaches the bridge, which has cancelled the
      // transfer: a commit then is a discard, so the answer the host gets (cancelled)
      // stays true.
      if (request.kind == LocalFileRequestMessage::kCommit && transport()->send_closed()) {
        request.kind = LocalFileRequestMessage::kDiscard;
      }
      if (auto reply = session_->local_files_.Handle(request)) {
        transport()->SendMessage(EncodeLocalFileReply(*reply));
      }
      return;
    }
    session_->OnBridgeOutput(line, response_id);
  }
  void OnCallEnded(const grpc_protocol::Status& status) override {
    ended = true;
    end_status = status;
  }

  BridgeConnection connection;
  bool ended = false;
  bool left_by_shim = false;  // cancelled at the drain deadline
  grpc_protocol::Status end_status;

 private:
  ShimSession* const session_;
};

ShimSession::ShimSession(BridgeClient* client, int output_fd, Options options)
    : client_(client), output_(output_fd), options_(std::move(options)) {}

ShimSession::~ShimSession() = default;

int ShimSession::Run(int input_fd) {
  LineSplitter splitter;
  std::vector<FramedLine> lines;
  // Not filled: only what reads write to becomes resident.
  std::unique_ptr<char[]> buffer(new char[kInputReadBytes]);
  // Failure (a user over the pipe-pages soft limit) leaves the pipe as it was.
  struct stat input_stat;
  if (fstat(input_fd, &input_stat) == 0 && S_ISFIFO(input_stat.st_mode)) {
    fcntl(input_fd, F_SETPIPE_SZ, kInputPipeBytes);
  }
  bool input_open = true;
  int64_t drain_deadline = -1;
  bool trim_when_idle = false;  // traffic passed since the last trim

  for (;;) {
    if (call_ != nullptr && call_->ended && RetireCall()) {
      FinishOutput(MonotonicMillis() + options_.drain_timeout_ms);
      if (options_.on_exit) options_.on_exit();
      return 0;
    }
    if (!input_open) {
      if (call_ == nullptr) break;  // drained
      if (MonotonicMillis() >= drain_deadline) {
        ShimLog("the bridge did not finish the session within " +
                std::to_string(options_.drain_timeout_ms) + " ms after end of input; leaving");
        call_->left_by_shim = true;
        call_->transport()->Cancel("the shim left before the bridge finished the session (" +
                                   std::to_string(options_.drain_timeout_ms) +
                                   " ms after the end of its input)");
        RetireCall();
        drain_deadline = std::max(drain_deadline, MonotonicMillis() + kFinalFlushMs);
        break;
      }
    }

    const size_t output_pending = output_.pending_bytes();
    const bool read_input =
        input_open && output_pending <= kOutputLimitBytes &&
        (call_ == nullptr || call_->transport()->queued_send_bytes() <= kInputQueueBytes);
    pollfd entries[4];
    nfds_t count = 0;
    int bridge_index = -1, output_index = -1, input_index = -1, stop_index = -1;
    if (options_.stop_fd >= 0) {
      stop_index = static_cast<int>(count);
      entries[count++] = {options_.stop_fd, POLLIN, 0};
    }
    if (call_ != nullptr) {
      bridge_index = static_cast<int>(count);
      entries[count++] = {call_->transport()->fd(), call_->transport()->poll_events(), 0};
    }
    if (output_pending > 0) {
      output_index = static_cast<int>(count);
      entries[count++] = {output_.fd(), POLLOUT, 0};
    }
    if (read_input) {
      input_index = static_cast<int>(count);
      entries[count++] = {input_fd, POLLIN, 0};
    }
    const int timeout =
        !input_open ? static_cast<int>(std::max<int64_t>(drain_deadline - MonotonicMillis(), 0))
        : trim_when_idle ? kIdleTrimMs
                         : -1;
    const int ready = poll(entries, count, timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      ShimLog(std::string("poll: ") + strerror(errno));
      local_files_.DiscardAll();
      return 1;
    }
    if (stop_index >= 0 && entries[stop_index].revents != 0) {
      local_files_.DiscardAll();
      if (options_.on_stop) options_.on_stop();
      return 1;
    }
    if (ready == 0 && input_open) {
      malloc_trim(0);
      trim_when_idle = false;
      continue;
    }
    trim_when_idle = true;

    // The bridge first: whatever it sent before a line arrived goes out before that
    // line's fate is decided (and a call that ended is seen ended).
    if (bridge_index >= 0 && entries[bridge_index].revents != 0) {
      call_->transport()->OnPollEvents(entries[bridge_index].revents);
    }
    if (output_index >= 0 && entries[output_index].revents != 0) output_.Flush();
    if (input_index >= 0 && entries[input_index].revents != 0) {
      const ssize_t got = read(input_fd, buffer.get(), kInputReadBytes);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      lines.clear();
      if (got > 0) {
        splitter.Feed(buffer.get(), static_cast<size_t>(got), &lines);
      } else {
        if (got < 0) ShimLog(std::string("stdin: ") + strerror(errno));
        splitter.Finish(&lines);
        input_open = false;
        drain_deadline = MonotonicMillis() + options_.drain_timeout_ms;
      }
      for (FramedLine& line : lines) {
        if (!HandleLine(std::move(line))) {
          local_files_.DiscardAll();
          FinishOutput(MonotonicMillis() + options_.drain_timeout_ms);
          if (exit_acknowledged_ && options_.on_exit) options_.on_exit();
          return 0;
        }
      }
      if (input_open) ForwardLinePart(splitter.pending());
      // End of stdin: half-close so the bridge cancels what this session started, and
      // give it a moment to finish the call.
      if (!input_open && call_ != nullptr && !call_->ended) call_->transport()->CloseSend();
    }
    if (call_ != nullptr && !call_->ended) {
      call_->transport()->HoldReceiveWindow(output_.pending_bytes() > kOutputHoldBytes);
    }
  }
  FinishOutput(drain_deadline);
  local_files_.DiscardAll();
  return 0;
}

void ShimSession::FinishOutput(int64_t deadline_ms) {
  if (output_.FlushUntil(deadline_ms) || output_.broken()) return;
  ShimLog("stdout did not take the last " + std::to_string(output_.pending_bytes()) +
          " bytes in time; leaving without them");
}

void ShimSession::ForwardLinePart(std::string_view pending) {
  if (call_ == nullptr || call_->ended) return;  // the line goes whole when it is complete
  if (pending.size() < parts_sent_bytes_ + kLinePartBytes) return;
  const std::string_view part = pending.substr(parts_sent_bytes_);
  call_->transport()->SendMessage(SessionInputLinePartHeader(part.size()), std::string(part));
  parts_sent_bytes_ = pending.size();
}

bool ShimSession::HandleLine(FramedLine line) {
  const LineMeta meta = line.oversized ? ParseLinePrefixMeta(line.data) : ParseLineMeta(line.data);
  const bool is_request = meta.kind == LineMeta::Kind::kRequest;
  const bool is_notification = meta.kind == LineMeta::Kind::kNotification;

  // Two tries: a call may turn out to have ended before the line could go.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (call_ != nullptr && call_->ended && RetireCall()) return false;
    if (call_ == nullptr) {
      if (is_notification) {
        // `exit` with no bridge attached: nothing to tell anyone, just leave.
        if (meta.method == kExitMethod) return false;
        // Anything else can only concern the session the dead bridge held (a $/cancel
        // of a request already answered with E8002): nobody is left to tell.
        ShimLog("no bridge attached; dropping notification " + meta.method);
        return true;
      }
      if (last_connect_failure_ms_ >= 0 &&
          MonotonicMillis() - last_connect_failure_ms_ < options_.reconnect_holdoff_ms) {
        AnswerUnreachable(meta, last_connect_error_);
        return true;
      }
      std::string error;
      if (!StartCall(&error)) {
        last_connect_failure_ms_ = MonotonicMillis();
        last_connect_error_ = error;
        AnswerUnreachable(meta, error);
        return true;
      }
      last_connect_failure_ms_ = -1;
    }
    if (call_->ended) continue;
    // A request sent on a call is answered by the bridge or, when the call ends first,
    // by RetireCall with E8002: never neither.
    if (is_request) {
      ++in_flight_[meta.id_json];
      if (meta.method == kInitializeMethod && !initialized_ && !line.oversized) {
        initialize_id_ = meta.id_json;
        initialize_line_ = line.data;
      }
      if (!line.oversized) attached_.OnRequest(meta, line.data);
    }
    if (is_notification && meta.method == kExitMethod) exit_sent_ = true;
    // Bytes of this line that went as parts: they are on this call (RetireCall forgets
    // parts with the call that had them).
    const size_t parts_bytes = std::exchange(parts_sent_bytes_, 0);
    if (line.oversized) {
      call_->transport()->SendMessage(
          EncodeOversizedLine(line.data, static_cast<int64_t>(line.length)));
    } else {
      std::string rest = parts_bytes > 0 ? line.data.substr(parts_bytes) : std::move(line.data);
      std::string header = SessionInputLineHeader(rest.size());
      call_->transport()->SendMessage(std::move(header), std::move(rest));
    }
    return true;
  }
  AnswerUnreachable(meta, "the bridge ended every session it was given");
  return true;
}

bool ShimSession::StartCall(std::string* error) {
  if (!config_resolved_) {
    if (options_.resolve_config) config_ = options_.resolve_config();
    config_resolved_ = true;
  }
  auto call = std::make_unique<Call>(this);
  if (!client_->Connect(&call->connection, error)) return false;
  std::string start_error;
  if (!call->transport()->StartCall(kRunMethod, call.get(), &start_error)) {
    *error = "the bridge at " + call->connection.socket_path + " refused the session (" +
             start_error + "); see " + call->connection.log_path;
    ShimLog(*error);
    return false;
  }

  SessionStartMessage start;
  start.config = config_.values;
  start.config_source = config_.sources;
  start.shim_version = options_.shim_version;
  start.build_id = options_.build_id;
  start.shim_pid = static_cast<int32_t>(getpid());
  if (initialized_) start.replay_initialize = initialize_line_;
  in_flight_.clear();
  call->transport()->SendMessage(EncodeSessionStart(start));
  call_ = std::move(call);
  return true;
}

void ShimSession::OnBridgeOutput(std::string_view line, std::string_view response_id) {
  if (!response_id.empty()) {
    auto found = in_flight_.find(response_id);
    if (found != in_flight_.end() && --found->second <= 0) in_flight_.erase(found);
    if (!initialized_ && response_id == initialize_id_ &&
        ParseLineMeta(std::string(line)).has_result) {
      initialized_ = true;
    }
  }
  attached_.OnOutput(response_id, line);
  output_.WriteLine(line);
}

bool ShimSession::RetireCall() {
  const grpc_protocol::Status status = call_->end_status;
  const std::string log_path = call_->connection.log_path;
  const bool left_by_shim = call_->left_by_shim;
  call_.reset();  // closes the connection
  parts_sent_bytes_ = 0;  // the parts of a line being read went with it
  // Downloads of the ended call will never be committed: their new files go.
  local_files_.DiscardAll();

  const std::string why = status.ok() ? "it ended the session" : status.message;
  const std::string message =
      (left_by_shim ? why : "the bridge went away: " + why) + "; see " + log_path;
  std::map<std::string, int, std::less<>> unanswered;
  unanswered.swap(in_flight_);
  std::vector<std::string> lost_exits = attached_.TakeLostExitLines(message);
  // The host said `exit` and the bridge ended the call: the session is over.
  if (exit_sent_) {
    exit_acknowledged_ = true;
    return true;
  }

  if (!unanswered.empty() || !status.ok()) {
    size_t count = 0;
    for (const auto& entry : unanswered) count += static_cast<size_t>(entry.second);
    ShimLog((left_by_shim ? why : "the bridge went away (" + why + ")") + "; answering " +
            std::to_string(count) + " request(s) in flight with E8002; see " + log_path);
  }
  for (const auto& [id, count] : unanswered) {
    for (int i = 0; i < count; ++i) output_.WriteLine(BridgeUnreachableResponse(id, message));
  }
  for (const std::string& exit_line : lost_exits) output_.WriteLine(exit_line);
  return false;
}

void ShimSession::AnswerUnreachable(const LineMeta& meta, const std::string& error) {
  std::string id_json;
  if (meta.kind == LineMeta::Kind::kRequest) {
    id_json = meta.id_json;
  } else if (meta.has_result || meta.has_error) {
    return;  // a response needs no answer
  }
  std::string message = "the bridge is unreachable: " + error;
  const std::string log_path = client_->log_path();
  if (message.find(log_path) == std::string::npos) message += "; see " + log_path;
  output_.WriteLine(BridgeUnreachableResponse(id_json, message));
}

}  // namespace abx

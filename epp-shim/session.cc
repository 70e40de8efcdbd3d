#include "epp-shim/session.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <utility>
#include <vector>

#include "common/platform.h"

namespace abx {
namespace {

namespace pb = ::abx::opensandbox::v1;

constexpr char kExitMethod[] = "exit";
constexpr char kInitializeMethod[] = "initialize";

}  // namespace

void LineWriter::WriteLine(std::string* line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_) return;
  line->push_back('\n');
  if (!WriteAll(fd_, line->data(), line->size())) {
    broken_ = true;
    ShimLog(std::string("cannot write to stdout (") + strerror(errno) +
            "); later output is dropped");
  }
}

struct ShimSession::Call {
  BridgeConnection connection;
  std::unique_ptr<pb::EppSession::Stub> stub;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<pb::SessionInput, pb::SessionOutput>> stream;
  std::thread reader;
  bool ended = false;  // guarded by ShimSession::mu_
};

ShimSession::ShimSession(BridgeClient* client, int output_fd, Options options)
    : client_(client), output_(output_fd), options_(std::move(options)) {}

ShimSession::~ShimSession() {
  if (call_ != nullptr) {
    call_->context.TryCancel();
    RetireCall();
  }
}

int ShimSession::Run(LineReader* input) {
  FramedLine line;
  while (input->Next(&line)) {
    if (!HandleLine(std::move(line))) return 0;
  }
  if (!input->error().empty()) ShimLog("stdin: " + input->error());
  if (call_ == nullptr) return 0;

  // End of stdin: the host is gone. Half-close so the bridge cancels what this session
  // started, and give it a moment to finish the call.
  call_->stream->WritesDone();
  bool ended;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ended = call_ended_cv_.wait_for(lock, std::chrono::milliseconds(options_.drain_timeout_ms),
                                    [this] { return call_->ended; });
  }
  if (!ended) {
    ShimLog("the bridge did not finish the session within " +
            std::to_string(options_.drain_timeout_ms) + " ms after end of input; leaving");
    call_->context.TryCancel();
  }
  RetireCall();
  return 0;
}

bool ShimSession::CallEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  return call_->ended;
}

void ShimSession::RetireCall() {
  if (call_->reader.joinable()) call_->reader.join();
  call_.reset();
}

bool ShimSession::HandleLine(FramedLine line) {
  const LineMeta meta = line.oversized ? ParseLinePrefixMeta(line.data) : ParseLineMeta(line.data);
  const bool is_request = meta.kind == LineMeta::Kind::kRequest;
  const bool is_notification = meta.kind == LineMeta::Kind::kNotification;

  // Two tries: a call may end between the check and the send.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (call_ != nullptr && CallEnded()) RetireCall();
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (call_->ended) continue;
      if (is_request) {
        ++in_flight_[meta.id_json];
        if (meta.method == kInitializeMethod && !initialized_ && !line.oversized) {
          initialize_id_ = meta.id_json;
          initialize_line_ = line.data;
        }
        // Under mu_, like in_flight_: a call that ends now forgets it with the rest.
        if (!line.oversized) attached_.OnRequest(meta, line.data);
      }
      if (is_notification && meta.method == kExitMethod) exit_sent_ = true;
    }
    pb::SessionInput input;
    if (line.oversized) {
      input.mutable_oversized()->set_prefix(std::move(line.data));
      input.mutable_oversized()->set_length(static_cast<int64_t>(line.length));
    } else {
      input.set_line(std::move(line.data));
    }
    // A failed write means the call is breaking; its reader answers what is in flight.
    call_->stream->Write(input);
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
  auto call = std::make_unique<Call>();
  if (!client_->Connect(&call->connection, error)) return false;
  call->stub = pb::EppSession::NewStub(call->connection.channel);
  call->stream = call->stub->Run(&call->context);

  pb::SessionInput input;
  pb::SessionStart* start = input.mutable_start();
  for (const auto& [field, value] : config_.values) (*start->mutable_config())[field] = value;
  for (const auto& [field, source] : config_.sources) {
    (*start->mutable_config_source())[field] = source;
  }
  start->set_shim_version(options_.shim_version);
  start->set_build_id(options_.build_id);
  start->set_shim_pid(static_cast<int32_t>(getpid()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (initialized_) start->set_replay_initialize(initialize_line_);
    in_flight_.clear();
  }
  if (!call->stream->Write(input)) {
    grpc::Status status = call->stream->Finish();
    *error = "the bridge at " + call->connection.socket_path + " refused the session (" +
             status.error_message() + "); see " + call->connection.log_path;
    ShimLog(*error);
    return false;
  }
  call->reader = std::thread(&ShimSession::ReadOutputs, this, call.get());
  call_ = std::move(call);
  return true;
}

void ShimSession::ReadOutputs(Call* call) {
  pb::SessionOutput output;
  while (call->stream->Read(&output)) {
    const std::string& response_id = output.response_id();
    if (!response_id.empty()) {
      bool maybe_initialized = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto found = in_flight_.find(response_id);
        if (found != in_flight_.end() && --found->second <= 0) in_flight_.erase(found);
        maybe_initialized = !initialized_ && response_id == initialize_id_;
      }
      if (maybe_initialized && ParseLineMeta(output.line()).has_result) {
        std::lock_guard<std::mutex> lock(mu_);
        initialized_ = true;
      }
    }
    attached_.OnOutput(response_id, output.line());
    output_.WriteLine(output.mutable_line());
  }
  const grpc::Status status = call->stream->Finish();

  // Ending the call and taking what is in flight happen together, so a request is
  // either in this set (and answered below) or sent after the call was seen ended (and
  // then goes to a new call): never neither.
  // The same goes for attached commands still owed their exec.exit.
  const std::string why = status.ok() ? "it ended the session" : status.error_message();
  const std::string message =
      "the bridge went away: " + why + "; see " + call->connection.log_path;
  std::map<std::string, int> unanswered;
  std::vector<std::string> lost_exits;
  bool exit_sent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unanswered.swap(in_flight_);
    lost_exits = attached_.TakeLostExitLines(message);
    exit_sent = exit_sent_;
    call->ended = true;
  }
  call_ended_cv_.notify_all();
  if (exit_sent) {
    // The host said `exit` and the bridge ended the call: the session is over.
    if (options_.on_exit) options_.on_exit();
    return;
  }
  if (!unanswered.empty() || !status.ok()) {
    size_t count = 0;
    for (const auto& entry : unanswered) count += static_cast<size_t>(entry.second);
    ShimLog("the bridge went away (" + why + "); answering " + std::to_string(count) +
            " request(s) in flight with E8002; see " + call->connection.log_path);
  }
  // The caller's thread joins this thread before it starts another call, so these
  // answers always come before anything a new bridge says.
  for (const auto& [id, count] : unanswered) {
    for (int i = 0; i < count; ++i) {
      std::string response = BridgeUnreachableResponse(id, message);
      output_.WriteLine(&response);
    }
  }
  for (std::string& exit_line : lost_exits) {
    output_.WriteLine(&exit_line);
  }
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
  std::string response = BridgeUnreachableResponse(id_json, message);
  output_.WriteLine(&response);
}

}  // namespace abx

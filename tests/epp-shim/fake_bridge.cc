#include "tests/epp-shim/fake_bridge.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "common/bridge_paths.h"
#include "common/platform.h"
#include "epp-shim/line_meta.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

extern char** environ;

namespace abx::testing {

namespace pb = ::abx::opensandbox::v1;

struct FakeBridge::State {
  std::string build_id;
  bool binary_mode = false;
  std::vector<std::string> argv;
  mutable std::mutex mu;
  mutable std::condition_variable ended_cv;
  std::vector<pb::SessionStart> starts;
  std::vector<std::string> lines;
  std::vector<size_t> line_parts;  // sizes of the SessionInput.line_parts received
  int hellos = 0;
  int sessions = 0;
  int ended_sessions = 0;
  std::atomic<int64_t> flood_bytes{0};  // test.flood lines written so far
};

namespace {

std::string Compact(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

int SecretLookingVariables() {
  int count = 0;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string variable = *entry;
    if ((variable.rfind("ABX_OPENSANDBOX_", 0) == 0 &&
         variable.rfind("ABX_OPENSANDBOX_BRIDGE_", 0) != 0) ||
        variable.rfind("OPEN_SANDBOX_", 0) == 0) {
      ++count;
    }
  }
  return count;
}

class BridgeService final : public pb::Bridge::Service {
 public:
  explicit BridgeService(FakeBridge::State* state) : state_(state) {}
  grpc::Status Hello(grpc::ServerContext*, const pb::HelloRequest*,
                     pb::HelloReply* reply) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    ++state_->hellos;
    reply->set_build_id(state_->build_id);
    reply->set_version("fake");
    reply->set_pid(getpid());
    return grpc::Status::OK;
  }

 private:
  FakeBridge::State* state_;
};

class EppService final : public pb::EppSession::Service {
 public:
  explicit EppService(FakeBridge::State* state) : state_(state) {}

  grpc::Status Run(grpc::ServerContext* context,
                   grpc::ServerReaderWriter<pb::SessionOutput, pb::SessionInput>* stream) override {
    pb::SessionInput input;
    if (!stream->Read(&input) || !input.has_start()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no SessionStart");
    }
    const bool replayed = !input.start().replay_initialize().empty();
    int session;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->starts.push_back(input.start());
      session = ++state_->sessions;
    }
    grpc::Status result = Serve(context, stream, replayed, session);
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      ++state_->ended_sessions;
    }
    state_->ended_cv.notify_all();
    return result;
  }

 private:
  using Stream = grpc::ServerReaderWriter<pb::SessionOutput, pb::SessionInput>;

  grpc::Status Serve(grpc::ServerContext* context, Stream* stream, bool replayed, int session) {
    // test.flood writes from threads of its own while this one keeps reading, as the
    // real bridge answers from request threads.
    std::vector<std::thread> floods;
    bool ignore_eof = false;
    grpc::Status status = ServeLines(stream, replayed, session, &floods, &ignore_eof);
    for (std::thread& flood : floods) flood.join();
    if (ignore_eof) {
      // A bridge that never finishes the session: only the shim going away ends it.
      while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return status;
  }

  grpc::Status ServeLines(Stream* stream, bool replayed, int session,
                          std::vector<std::thread>* floods, bool* ignore_eof) {
    pb::SessionInput input;
    std::string pending;  // line parts, as the bridge holds them until the line's end
    while (stream->Read(&input)) {
      if (input.kind_case() == pb::SessionInput::kLinePart) {
        pending += input.line_part();
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->line_parts.push_back(input.line_part().size());
        continue;
      }
      if (input.has_oversized()) {
        pending.clear();
        // As the bridge does: answered by the id read from the prefix, when it can be.
        LineMeta meta = ParseLinePrefixMeta(input.oversized().prefix());
        const std::string id = meta.kind == LineMeta::Kind::kRequest ? meta.id_json : "null";
        Send(stream,
             "{\"jsonrpc\":\"2.0\",\"id\":" + id +
                 ",\"error\":{\"code\":-32007,\"message\":\"too large\",\"data\":{\"length\":" +
                 std::to_string(input.oversized().length()) + "}}}",
             id);
        continue;
      }
      const std::string line = std::exchange(pending, std::string()) + input.line();
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->lines.push_back(line);
      }
      rapidjson::Document request;
      request.Parse(line.data(), line.size());
      if (request.HasParseError() || !request.IsObject() || !request.HasMember("method") ||
          !request["method"].IsString()) {
        Send(stream, R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}})",
             "null");
        continue;
      }
      const std::string method = request["method"].GetString();
      if (!request.HasMember("id")) {
        if (method == "exit") return grpc::Status::OK;
        continue;
      }
      const std::string id = Compact(request["id"]);
      std::string result;
      if (method == "initialize") {
        result = std::string(R"({"protocol":"EPP/1","replayed":false})");
      } else if (method == "test.hang") {
        continue;
      } else if (method == "test.ignore_eof") {
        *ignore_eof = true;
        result = R"({"ignoring":"eof"})";
      } else if (method == "test.fail_call") {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "simulated bridge failure");
      } else if (method == "test.crash") {
        if (state_->binary_mode) _exit(3);
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "simulated crash");
      } else if (method == "test.flood") {
        const int64_t bytes = request["params"]["bytes"].GetInt64();
        floods->emplace_back([this, stream, bytes, id] {
          const std::string pad(65400, 'f');
          int64_t sent = 0;
          for (int seq = 0; sent < bytes; ++seq) {
            const std::string note = R"({"jsonrpc":"2.0","method":"test.flood","params":{"seq":)" +
                                     std::to_string(seq) + R"(,"pad":")" + pad + "\"}}";
            if (!Send(stream, note, "")) return;
            sent += static_cast<int64_t>(note.size());
            state_->flood_bytes += static_cast<int64_t>(note.size());
          }
          Send(stream, "{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"flooded\":" +
                           std::to_string(sent) + "}}",
               id);
        });
        continue;
      } else if (method == "test.env") {
        std::string argv_json = "[";
        for (size_t i = 0; i < state_->argv.size(); ++i) {
          argv_json += (i ? ",\"" : "\"") + state_->argv[i] + "\"";
        }
        argv_json += "]";
        result = "{\"secret_vars\":" + std::to_string(SecretLookingVariables()) +
                 ",\"argv\":" + argv_json + ",\"pid\":" + std::to_string(getpid()) + "}";
      } else {
        if (method == "test.notify") {
          Send(stream, R"({"jsonrpc":"2.0","method":"test.note","params":{}})", "");
        }
        result = "{\"method\":\"" + method + "\",\"replayed\":" + (replayed ? "true" : "false") +
                 ",\"session\":" + std::to_string(session) +
                 ",\"bytes\":" + std::to_string(line.size()) + "}";
      }
      Send(stream, "{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":" + result + "}", id);
    }
    return grpc::Status::OK;  // half-closed: end of the host's stdin
  }

  // One write at a time (gRPC's rule), from any thread.
  bool Send(Stream* stream, const std::string& line, const std::string& response_id) {
    pb::SessionOutput output;
    output.set_line(line);
    output.set_response_id(response_id);
    std::lock_guard<std::mutex> lock(write_mu_);
    return stream->Write(output);
  }

  FakeBridge::State* state_;
  std::mutex write_mu_;
};

}  // namespace

std::unique_ptr<FakeBridge> FakeBridge::Start(const std::string& socket_path,
                                              const std::string& build_id) {
  std::unique_ptr<FakeBridge> bridge(new FakeBridge());
  bridge->socket_path_ = socket_path;
  bridge->state_ = std::make_unique<State>();
  bridge->state_->build_id = build_id;
  bridge->bridge_service_ = std::make_unique<BridgeService>(bridge->state_.get());
  bridge->epp_service_ = std::make_unique<EppService>(bridge->state_.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.SetMaxReceiveMessageSize(32 << 20);
  builder.SetMaxSendMessageSize(32 << 20);
  builder.RegisterService(bridge->bridge_service_.get());
  builder.RegisterService(bridge->epp_service_.get());
  bridge->server_ = builder.BuildAndStart();
  if (bridge->server_ == nullptr) return nullptr;
  return bridge;
}

FakeBridge::~FakeBridge() { Kill(); }

void FakeBridge::Kill() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_.reset();
  unlink(socket_path_.c_str());
}

std::vector<pb::SessionStart> FakeBridge::starts() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->starts;
}

std::vector<std::string> FakeBridge::lines() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->lines;
}

std::vector<size_t> FakeBridge::line_parts() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->line_parts;
}

int64_t FakeBridge::flood_bytes() const { return state_->flood_bytes.load(); }

int FakeBridge::hellos() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->hellos;
}

bool FakeBridge::WaitForEndedSessions(int count, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->ended_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                   [&] { return state_->ended_sessions >= count; });
}

int FakeBridgeMain(int argc, char** argv) {
  std::string socket_path;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--socket") == 0) socket_path = argv[i + 1];
  }
  if (argc < 2 || std::strcmp(argv[1], "serve") != 0 || socket_path.empty()) {
    std::fprintf(stderr, "usage: fake_bridge serve --socket PATH\n");
    return 2;
  }
  if (const char* code = getenv("FAKE_BRIDGE_EXIT")) {
    std::fprintf(stderr, "fake bridge: exiting %s as told\n", code);
    return std::atoi(code);
  }
  std::string error;
  bool busy = false;
  std::unique_ptr<FileLock> lock = FileLock::TryAcquire(LockPathFor(socket_path), &error, &busy);
  if (lock == nullptr) {
    std::fprintf(stderr, "fake bridge: %s\n", error.c_str());
    return busy ? 0 : 1;
  }
  lock->WriteContents(std::to_string(getpid()) + "\n", &error);
  if (const char* delay = getenv("FAKE_BRIDGE_DELAY_MS")) usleep(std::atoi(delay) * 1000);
  const char* build_id = getenv("FAKE_BRIDGE_BUILD_ID");
  // Blocked before any server thread exists, so every thread leaves them to sigwait.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  unlink(socket_path.c_str());
  std::unique_ptr<FakeBridge> bridge =
      FakeBridge::Start(socket_path, build_id != nullptr ? build_id : "no-build-id-set");
  if (bridge == nullptr) {
    std::fprintf(stderr, "fake bridge: cannot serve on %s\n", socket_path.c_str());
    return 1;
  }
  bridge->state_->binary_mode = true;
  bridge->state_->argv.assign(argv, argv + argc);
  std::fprintf(stderr, "fake bridge: serving on %s (pid %d)\n", socket_path.c_str(), getpid());
  int signal_number = 0;
  sigwait(&set, &signal_number);
  bridge->Kill();
  return 0;
}

}  // namespace abx::testing

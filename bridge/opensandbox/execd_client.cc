#include "bridge/opensandbox/execd_client.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <rapidjson/document.h>

#include "bridge/base/json.h"
#include "bridge/http/url.h"
#include "bridge/opensandbox/error_body.h"
#include "bridge/opensandbox/execd_events.h"
#include "bridge/opensandbox/multipart.h"
#include "bridge/opensandbox/upload_body_source.h"

namespace abx::opensandbox {
namespace {


// A caller that stops at a command's terminal event leaves execd's stream open for its
// grace period (~1 s, docs/opensandbox.md §2.5). The rest is read in the background for up to
// this long, so the connection goes back to the pool for the next session instead of
// being closed mid-response (which cost one new TCP connection per command).
constexpr int64_t kStreamDrainMs = 3000;

Error NotItsApi(const std::string& what) {
  return MakeError(ErrorCode::kUpstream, what + ": execd answered something that is not its API");
}

// Before 1.0.19 execd answers a missing path with a 500 whose message says so
// (cdd490dc: "file not found" from /files/info; 9aad0a75: "source path not found" from
// /files/mv): that is E8005, as a 404 is.
Error MissingAsNotFound(Error e, const char* says) {
  if (e.http_status == 500 && e.message.find(says) != std::string::npos) {
    e.code = ErrorCode::kNotFound;
    e.retryable = false;
  }
  return e;
}

// execd writes modes as octal digits read as decimal (0644 → 644).
int ModeForExecd(int mode) {
  char digits[8];
  std::snprintf(digits, sizeof digits, "%o", mode & 07777);
  return std::atoi(digits);
}

std::string ModeText(const rapidjson::Value& v) {
  if (v.IsString()) return v.GetString();
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  return "";
}

Result<std::vector<FileInfo>> DecodeFileInfoArray(const std::string& body, const std::string& what) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  if (doc.HasParseError() || !(doc.IsArray() || doc.IsNull())) return NotItsApi(what);
  std::vector<FileInfo> out;
  if (doc.IsNull()) return out;  // Go encodes an empty slice as null
  for (auto& item : doc.GetArray()) {
    auto info = DecodeFileInfo(item);
    if (!info.ok()) return NotItsApi(what);
    out.push_back(std::move(info).value());
  }
  return out;
}

}  // namespace

Result<FileInfo> DecodeFileInfo(const rapidjson::Value& v) {
  if (!v.IsObject()) return NotItsApi("file info");
  FileInfo info;
  auto path = json::GetString(v, "path");
  if (!path) return NotItsApi("file info");
  info.path = *path;
  info.type = json::GetString(v, "type").value_or("");
  info.size = json::GetInt(v, "size").value_or(0);
  if (const auto* mode = json::GetMember(v, "mode")) info.mode = ModeText(*mode);
  info.modified_at = json::GetString(v, "modified_at").value_or("");
  info.owner = json::GetString(v, "owner").value_or("");
  info.group = json::GetString(v, "group").value_or("");
  return info;
}

Result<CommandStatus> DecodeCommandStatus(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return NotItsApi("command status");
  CommandStatus status;
  status.id = json::GetString(doc, "id").value_or("");
  auto running = json::GetBool(doc, "running");
  if (!running) return NotItsApi("command status");
  status.running = *running;
  if (auto code = json::GetInt(doc, "exit_code")) status.exit_code = static_cast<int>(*code);
  status.error = json::GetString(doc, "error").value_or("");
  return status;
}

HttpCall ExecdClient::Call(std::string method, std::string path_and_query) const {
  HttpCall call;
  call.method = std::move(method);
  call.url = http::JoinUrl(target_.base_url, path_and_query);
  call.headers = target_.headers;
  call.timeout_ms = timeout_ms_;
  return call;
}

Status ExecdClient::Ping(const CancelToken* cancel, int64_t timeout_ms) {
  HttpCall call = Call("GET", "/ping");
  call.timeout_ms = timeout_ms;
  call.connect_timeout_ms = std::min<int64_t>(timeout_ms, 2000);
  auto answer = http_->Send(call, cancel, "ping execd");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Status ExecdClient::RunCommand(const std::string& body_json, const CancelToken* cancel,
                               int64_t idle_timeout_ms,
                               const std::function<bool(const ExecdEvent&)>& on_event,
                               const std::function<void()>& on_batch) {
  HttpCall call = StreamCall("/command", body_json, idle_timeout_ms);
  call.drain_ms = kStreamDrainMs;
  // A command's stream has no place for execd's bare {"code","message"} object.
  return ReadEventStream(call, cancel, "run command", /*untyped_is_garbage=*/true, on_event, on_batch);
}

HttpCall ExecdClient::StreamCall(const char* path, const std::string& body_json,
                                 int64_t idle_timeout_ms) const {
  HttpCall call = Call("POST", path);
  call.headers.emplace_back("Accept", "text/event-stream");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = body_json;
  call.idle_timeout_ms = idle_timeout_ms;
  return call;
}

Status ExecdClient::ReadEventStream(const HttpCall& call, const CancelToken* cancel, const char* what,
                                    bool untyped_is_garbage,
                                    const std::function<bool(const ExecdEvent&)>& on_event,
                                    const std::function<void()>& on_batch) {
  bool stopped = false;
  bool any_event = false;
  std::optional<Error> refused;
  std::string garbage;
  ExecdEventParser parser(
      [&](const ExecdEvent& event) {
        if (!any_event && event.kind == ExecdEventKind::kUntyped) {
          // A refusal before 1.0.17: execd sent the stream's headers first, so its error
          // object is the only line of an HTTP 200 stream (1.0.17 defers the headers and
          // answers 500 with the same object, 31484053). Read as that 500.
          refused = FromHttpStatus(500, "{\"code\":" + json::Quote(event.code) + ",\"message\":" +
                                            json::Quote(event.message) + "}",
                                   "", what);
          return false;
        }
        any_event = true;
        if (untyped_is_garbage && event.kind == ExecdEventKind::kUntyped) {
          garbage = event.code + ": " + event.message;
          return false;
        }
        if (!on_event(event)) {
          stopped = true;
          return false;
        }
        return true;
      },
      [&](std::string_view line, std::string_view reason) {
        garbage = std::string(reason) + ": " + std::string(line.substr(0, 80));
        return false;
      });
  auto held_garbage = [&] {
    return MakeError(ErrorCode::kUpstream, std::string(what) + ": execd's event stream held " + garbage);
  };
  auto answer = http_->Stream(call, cancel, what, [&](const char* data, size_t size) {
    const bool go_on = parser.Feed(data, size);
    if (on_batch) on_batch();
    return go_on;
  });
  if (refused) return *refused;
  if (!garbage.empty()) return held_garbage();
  if (stopped) return OkStatus();
  if (!answer.ok()) return answer.error();
  parser.Finish();
  if (on_batch) on_batch();
  if (refused) return *refused;  // its object has no newline after it: seen at the end
  if (!garbage.empty()) return held_garbage();
  return OkStatus();
}

Status ExecdClient::Interrupt(const std::string& command_id, const CancelToken* cancel) {
  HttpCall call = Call("DELETE", "/command?id=" + PercentEncode(command_id));
  call.timeout_ms = interrupt_timeout_ms();
  auto answer = http_->Send(call, cancel, "interrupt command");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

int64_t ExecdClient::interrupt_timeout_ms() const {
  return std::max<int64_t>(timeout_ms_, 10000);  // execd waits up to 3 s for the group
}

Result<CommandStatus> ExecdClient::GetStatus(const std::string& command_id,
                                             const CancelToken* cancel) {
  HttpCall call = Call("GET", "/command/status/" + PercentEncode(command_id));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "command status");
  if (!answer.ok()) return answer.error();
  return DecodeCommandStatus(answer->body);
}

Result<SandboxMetrics> ExecdClient::Metrics(const CancelToken* cancel) {
  HttpCall call = Call("GET", "/metrics");
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "metrics");
  if (!answer.ok()) return answer.error();
  return DecodeMetrics(answer->body);
}

Result<std::string> ExecdClient::Logs(const std::string& command_id, int64_t cursor,
                                      int64_t* next_cursor, const CancelToken* cancel) {
  HttpCall call =
      Call("GET", "/command/" + PercentEncode(command_id) + "/logs?cursor=" + std::to_string(cursor));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "command logs");
  if (!answer.ok()) {
    // execd answers 400 "command not found" for an unknown id.
    if (answer.error().http_status == 400 &&
        answer.error().message.find("not found") != std::string::npos) {
      answer.error().code = ErrorCode::kNotFound;
    }
    return answer.error();
  }
  const std::string tail = answer->Header("execd-commands-tail-cursor");
  *next_cursor = tail.empty() ? cursor + static_cast<int64_t>(answer->body.size())
                              : std::strtoll(tail.c_str(), nullptr, 10);
  return std::move(answer->body);
}

Result<FileInfo> ExecdClient::Stat(const std::string& path, const CancelToken* cancel) {
  HttpCall call = Call("GET", "/files/info?path=" + PercentEncode(path));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "stat " + path);
  if (!answer.ok()) return MissingAsNotFound(answer.error(), "file not found");
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer->body.c_str(), answer->body.size());
  if (doc.HasParseError() || !doc.IsObject()) return NotItsApi("stat " + path);
  const auto* info = json::GetMember(doc, path.c_str());
  if (!info) {
    if (doc.MemberCount() != 1) return NotItsApi("stat " + path);
    info = &doc.MemberBegin()->value;
  }
  return DecodeFileInfo(*info);
}

Result<std::map<std::string, FileInfo>> ExecdClient::StatMany(const std::vector<std::string>& paths,
                                                              const CancelToken* cancel) {
  std::string query;
  for (const std::string& path : paths) query += (query.empty() ? "?path=" : "&path=") + PercentEncode(path);
  HttpCall call = Call("GET", "/files/info" + query);
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "stat");
  if (!answer.ok()) return MissingAsNotFound(answer.error(), "file not found");
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer->body.c_str(), answer->body.size());
  if (doc.HasParseError() || !doc.IsObject()) return NotItsApi("stat");
  std::map<std::string, FileInfo> infos;
  for (const std::string& path : paths) {
    const auto* info = json::GetMember(doc, path.c_str());
    if (!info) return NotItsApi("stat " + path);
    ABX_ASSIGN_OR_RETURN(infos[path], DecodeFileInfo(*info));
  }
  return infos;
}

Result<std::string> ExecdClient::Download(const std::string& path, int64_t offset, int64_t length,
                                          const CancelToken* cancel) {
  HttpCall call = Call("GET", "/files/download?path=" + PercentEncode(path));
  call.idempotent = true;
  if (offset > 0 || length > 0) {
    std::string range = "bytes=" + std::to_string(offset) + "-";
    if (length > 0) range += std::to_string(offset + length - 1);
    call.headers.emplace_back("Range", range);
  }
  auto answer = http_->Send(call, cancel, "read " + path);
  if (!answer.ok()) return answer.error();
  if ((offset > 0 || length > 0) && answer->status == 200) {
    // A server that ignored the range sent the whole file: cut it here.
    std::string& body = answer->body;
    if (offset >= static_cast<int64_t>(body.size())) return std::string();
    return body.substr(offset, length > 0 ? length : std::string::npos);
  }
  return std::move(answer->body);
}

Result<int64_t> ExecdClient::DownloadStream(const std::string& path, int64_t offset,
                                            const std::function<bool(const char*, size_t)>& on_data,
                                            const CancelToken* cancel) {
  HttpCall call = Call("GET", "/files/download?path=" + PercentEncode(path));
  call.idempotent = true;
  if (offset > 0) call.headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-");
  int64_t skip = -1;  // known once the status is: 200 to a ranged request means from 0
  int64_t got = 0;
  bool stopped = false;
  auto answer = http_->Stream(call, cancel, "download " + path, [&](const char* data, size_t size) {
    if (skip < 0) skip = 0;
    if (skip > 0) {
      const size_t skipped = static_cast<size_t>(std::min<int64_t>(skip, static_cast<int64_t>(size)));
      data += skipped;
      size -= skipped;
      skip -= static_cast<int64_t>(skipped);
      if (size == 0) return true;
    }
    got += static_cast<int64_t>(size);
    if (!on_data(data, size)) {
      stopped = true;
      return false;
    }
    return true;
  }, [&](int status) { skip = offset > 0 && status == 200 ? offset : 0; });
  if (stopped) return MakeError(ErrorCode::kCancelled, "download " + path + " was stopped");
  if (!answer.ok()) return answer.error();
  return got;
}

Status ExecdClient::Upload(const std::string& path, std::string_view data, int mode,
                           const CancelToken* cancel, const FileOwner& owner) {
  opensandbox::UploadFile file;
  file.path = path;
  file.data = data;
  file.mode = mode ? ModeForExecd(mode) : 0;
  file.owner = owner.owner;
  file.group = owner.group;
  opensandbox::MultipartBody body = opensandbox::BuildUploadBody({file});
  HttpCall call = Call("POST", "/files/upload");
  call.headers.emplace_back("Content-Type", body.content_type);
  call.body = std::move(body.body);
  call.timeout_ms = std::max<int64_t>(timeout_ms_, 120000);
  auto answer = http_->Send(call, cancel, "write " + path);
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Status ExecdClient::UploadMade(const std::string& path,
                               std::shared_ptr<BodySource> data, int mode,
                               bool* complete, const CancelToken* cancel, bool open_ended,
                               const FileOwner& owner) {
  opensandbox::UploadFile file;
  file.path = path;
  file.mode = mode ? ModeForExecd(mode) : 0;
  file.owner = owner.owner;
  file.group = owner.group;
  auto body = std::make_shared<opensandbox::UploadBodySource>(file, std::move(data));
  HttpCall call = Call("POST", "/files/upload");
  call.headers.emplace_back("Content-Type", body->content_type());
  call.body_source = body;
  if (open_ended) {  // a transfer: no bound on the whole, only on a standstill
    call.timeout_ms = 0;
    call.idle_timeout_ms = timeout_ms_;
  } else {
    call.timeout_ms = std::max<int64_t>(timeout_ms_, 120000);
  }
  auto answer = http_->Send(call, cancel, "write " + path);
  *complete = body->complete();
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

namespace {

// A body whose bytes are all known, sent as a body source so the HTTP client never sends
// it twice.
class FixedBodySource final : public BodySource {
 public:
  explicit FixedBodySource(std::string bytes) : bytes_(std::move(bytes)) {}
  size_t Read(char* out, size_t size) override {
    const size_t n = std::min(size, bytes_.size() - sent_);
    std::memcpy(out, bytes_.data() + sent_, n);
    sent_ += n;
    return n;
  }
  void SetResume(std::function<void()>) override {}

 private:
  std::string bytes_;
  size_t sent_ = 0;
};

}  // namespace

Status ExecdClient::WriteToPipe(const std::string& path, std::string_view data, const CancelToken* cancel,
                                int64_t timeout_ms) {
  opensandbox::UploadFile file;
  file.path = path;
  file.data = data;
  opensandbox::MultipartBody body = opensandbox::BuildUploadBody({file});
  HttpCall call = Call("POST", "/files/upload");
  call.headers.emplace_back("Content-Type", body.content_type);
  call.body_source = std::make_shared<FixedBodySource>(std::move(body.body));
  call.timeout_ms = timeout_ms;
  call.idle_timeout_ms = 0;
  auto answer = http_->Send(call, cancel, "write to the command's stdin");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Result<std::vector<FileInfo>> ExecdClient::ListDirectory(const std::string& path, int depth,
                                                         const CancelToken* cancel) {
  HttpCall call = Call("GET", "/directories/list?path=" + PercentEncode(path) +
                       "&depth=" + std::to_string(depth));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "list " + path);
  if (!answer.ok()) return answer.error();
  return DecodeFileInfoArray(answer->body, "list " + path);
}

Status ExecdClient::MakeDirectory(const std::string& path, int mode, const CancelToken* cancel) {
  HttpCall call = Call("POST", "/directories");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = "{" + json::Quote(path) + ":{\"mode\":" + std::to_string(ModeForExecd(mode)) + "}}";
  auto answer = http_->Send(call, cancel, "mkdir " + path);
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Status ExecdClient::RemoveFile(const std::string& path, const CancelToken* cancel) {
  auto answer = http_->Send(Call("DELETE", "/files?path=" + PercentEncode(path)), cancel,
                            "remove " + path);
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Status ExecdClient::RemoveDirectory(const std::string& path, const CancelToken* cancel) {
  auto answer = http_->Send(Call("DELETE", "/directories?path=" + PercentEncode(path)), cancel,
                            "remove " + path);
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Status ExecdClient::Move(const std::string& from, const std::string& to,
                         const CancelToken* cancel) {
  HttpCall call = Call("POST", "/files/mv");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = "[{\"src\":" + json::Quote(from) + ",\"dest\":" + json::Quote(to) + "}]";
  auto answer = http_->Send(call, cancel, "move " + from);
  if (!answer.ok()) return MissingAsNotFound(answer.error(), "source path not found");
  return OkStatus();
}

Result<std::vector<FileInfo>> ExecdClient::Search(const std::string& path,
                                                  const std::string& pattern,
                                                  const CancelToken* cancel) {
  HttpCall call =
      Call("GET", "/files/search?path=" + PercentEncode(path) + "&pattern=" + PercentEncode(pattern));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "search " + path);
  if (!answer.ok()) return answer.error();
  return DecodeFileInfoArray(answer->body, "search " + path);
}

Status ExecdClient::SetPermissions(const std::string& path, int mode, const std::string& owner,
                                   const std::string& group, const CancelToken* cancel) {
  HttpCall call = Call("POST", "/files/permissions");
  call.headers.emplace_back("Content-Type", "application/json");
  std::string spec = "{\"mode\":" + std::to_string(ModeForExecd(mode));
  if (!owner.empty()) spec += ",\"owner\":" + json::Quote(owner);
  if (!group.empty()) spec += ",\"group\":" + json::Quote(group);
  call.body = "{" + json::Quote(path) + ":" + spec + "}}";
  auto answer = http_->Send(call, cancel, "chmod " + path);
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

}  // namespace abx::opensandbox

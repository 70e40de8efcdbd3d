#pragma once
// execd, the API inside each sandbox (docs/opensandbox.md §2): commands over its line-framed event
// stream, command status and logs, files and directories, metrics, the code interpreter.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/opensandbox/execd_events.h"
#include "bridge/opensandbox/execd_metrics.h"
#include "bridge/opensandbox/http_caller.h"

namespace abx::opensandbox {

// Where one sandbox's execd answers: "http://" + endpoint (path prefix kept) and the
// headers to send on every request (endpoint headers, the access token if configured).
// Never the OpenSandbox API key: execd runs inside the sandbox, where untrusted code
// could read it.
struct ExecdTarget {
  std::string base_url;
  Headers headers;
};

struct CommandStatus {
  std::string id;
  bool running = false;
  std::optional<int> exit_code;
  std::string error;
};

// One code context (a Jupyter kernel session) as execd lists it.
struct CodeContextInfo {
  std::string id;
  std::string language;
};

// Jupyter inside the code-interpreter image, as execd's port proxy reaches it
// (docs/opensandbox.md §2.13–§2.14).
struct JupyterKernels {
  enum class Reached { kNo, kForbidden, kYes };
  Reached reached = Reached::kNo;  // kNo: nothing answers on Jupyter's port (yet)
  // Languages with a kernelspec execd would pick (it skips the one named "python3").
  std::vector<std::string> languages;
};

// A terminal as execd reports it.
struct PtyStatus {
  std::string id;
  bool running = false;         // a process runs in it now
  uint64_t output_offset = 0;   // every output byte it ever produced
};

struct FileInfo {
  std::string path;
  // file, directory, symlink, other; "" when execd does not say (before 1.0.19, whose
  // /files/info has no `type` and describes what a symlink leads to).
  std::string type;
  int64_t size = 0;
  std::string mode;  // decimal-written octal as execd gives it, e.g. "644"
  std::string modified_at;
  std::string owner, group;
};

// Who an upload makes the file's owner (execd's upload metadata; "" = not named). From
// execd 1.0.19 a file keeps its owner unless named; before, execd gives it to its own
// user unless named (docs/opensandbox.md, "execd releases").
struct FileOwner {
  std::string owner, group;
};

class ExecdClient {
 public:
  ExecdClient(HttpCaller* http, ExecdTarget target, int64_t timeout_ms)
      : http_(http), target_(std::move(target)), timeout_ms_(timeout_ms) {}

  Status Ping(const CancelToken* cancel, int64_t timeout_ms);

  // POST /command and read its event stream to the end. `on_event` gets each event in
  // order (return false to stop reading); `on_batch` runs after each network read's
  // events, so callers can flush what they gathered. A stream that ends early or holds
  // something that is not an event is an error (E8002 / E8010), never a made-up end.
  Status RunCommand(const std::string& body_json, const CancelToken* cancel,
                    int64_t idle_timeout_ms,
                    const std::function<bool(const ExecdEvent&)>& on_event,
                    const std::function<void()>& on_batch);
  Status Interrupt(const std::string& command_id, const CancelToken* cancel);
  // How long Interrupt may take at most.
  int64_t interrupt_timeout_ms() const;
  Result<CommandStatus> GetStatus(const std::string& command_id, const CancelToken* cancel);
  // Background command output from byte `cursor`; `next_cursor` gets the tail cursor.
  Result<std::string> Logs(const std::string& command_id, int64_t cursor, int64_t* next_cursor,
                           const CancelToken* cancel);

  Result<FileInfo> Stat(const std::string& path, const CancelToken* cancel);
  // Several paths in one request, keyed by the path as given; any missing one fails it.
  Result<std::map<std::string, FileInfo>> StatMany(const std::vector<std::string>& paths,
                                                   const CancelToken* cancel);
  // Bytes [offset, offset+length) of a file (length 0: to the end).
  // The file's bytes from `offset` to its end, to `on_data` as they arrive (false stops
  // the download: the result is then E8009). A server that ignores the range is
  // skipped up to `offset`. Returns how many bytes `on_data` got.
  Result<int64_t> DownloadStream(const std::string& path, int64_t offset,
                                 const std::function<bool(const char*, size_t)>& on_data,
                                 const CancelToken* cancel);
  Result<std::string> Download(const std::string& path, int64_t offset, int64_t length,
                               const CancelToken* cancel);
  Status Upload(const std::string& path, std::string_view data, int mode,
                const CancelToken* cancel, const FileOwner& owner = {});
  // The same with the file's bytes made while they are sent (bridge/base/body_source.h).
  // `*complete` says whether the whole form went out: when it did not, nothing was
  // written, whatever the error. `open_ended` (a transfer of any size): no bound on the
  // whole upload, only on a standstill of request_timeout; else at least 120 s in all.
  Status UploadMade(const std::string& path, std::shared_ptr<BodySource> data,
                    int mode, bool* complete, const CancelToken* cancel, bool open_ended = false,
                    const FileOwner& owner = {});
  // Writes `data` into a pipe the sandbox holds open at `path` (a /proc/<pid>/fd/<n>
  // path, bridge/core/exec/stdin_pipe_script.h) through the upload route, which writes in place.
  // The answer comes once execd has written every byte, however long the reader takes to
  // make room, so there is no deadline; the request is never sent twice (a second send
  // would write the bytes twice).
  Status WriteToPipe(const std::string& path, std::string_view data, const CancelToken* cancel,
                     int64_t timeout_ms = 0);
  Result<std::vector<FileInfo>> ListDirectory(const std::string& path, int depth,
                                              const CancelToken* cancel);
  Status MakeDirectory(const std::string& path, int mode, const CancelToken* cancel);
  Status RemoveFile(const std::string& path, const CancelToken* cancel);
  Status RemoveDirectory(const std::string& path, const CancelToken* cancel);
  Status Move(const std::string& from, const std::string& to, const CancelToken* cancel);
  Result<std::vector<FileInfo>> Search(const std::string& path, const std::string& pattern,
                                       const CancelToken* cancel);
  Status SetPermissions(const std::string& path, int mode, const std::string& owner,
                        const std::string& group, const CancelToken* cancel);

  // One sample; takes execd about a second.
  Result<SandboxMetrics> Metrics(const CancelToken* cancel);

  // The code interpreter (docs/opensandbox.md §2.14; execd_code_client.cc). Creating a
  // context retries inside execd until Jupyter answers, without end: call it only once
  // the interpreter is known to answer, and it is still bounded by the call's timeout.
  Result<CodeContextInfo> CreateCodeContext(const std::string& language, const std::string& cwd,
                                            const CancelToken* cancel);
  // `language` empty: every context.
  Result<std::vector<CodeContextInfo>> ListCodeContexts(const std::string& language,
                                                        const CancelToken* cancel);
  // false when execd does not know the context (404).
  Result<bool> DeleteCodeContext(const std::string& context_id, const CancelToken* cancel);
  // POST /code and read its event stream to the end; `on_event` gets every event in
  // order, including the bare {"code","message"} object execd may end a run's stream
  // with (kind kUntyped). A stream that ends without a terminal event is not an error
  // here: what it means is the caller's to say. Lines that are not events are E8010.
  Status RunCode(const std::string& body_json, const CancelToken* cancel, int64_t idle_timeout_ms,
                 const std::function<bool(const ExecdEvent&)>& on_event);
  // GET /proxy/44771/api/kernelspecs with the image's Jupyter token: whether Jupyter
  // answers, and which languages it has kernels for.
  Result<JupyterKernels> ListJupyterKernels(const CancelToken* cancel, int64_t timeout_ms);
  // DELETE /code?id=: interrupts the context's kernel; execd answers at once.
  Status InterruptCode(const std::string& context_id, const CancelToken* cancel);

  // Bash sessions, the provider's shells (docs/opensandbox.md §2.9, §2.15;
  // execd_session_client.cc). A missing route (or execd 1.0.8's request shape) is E8007
  // saying execd is too old; an unknown session on a run is E8005.
  Result<std::string> CreateSession(const std::string& cwd, const CancelToken* cancel);
  // POST /session/{id}/run (body: SessionRunBody) and read its event stream as
  // RunCommand does, passing on execd's bare {"code","message"} object (kind kUntyped).
  Status RunInSession(const std::string& session_id, const std::string& body_json,
                      const CancelToken* cancel, int64_t idle_timeout_ms,
                      const std::function<bool(const ExecdEvent&)>& on_event,
                      const std::function<void()>& on_batch);
  // false when execd does not know the session (404).
  Result<bool> DeleteSession(const std::string& session_id, const CancelToken* cancel);

  // Terminals (docs/opensandbox.md §2.16; execd_pty_client.cc). A missing route is
  // E8007 saying execd is too old; an unknown terminal is E8005 (false for delete).
  Result<std::string> CreatePty(const std::string& cwd, const std::string& command, const CancelToken* cancel);
  Result<PtyStatus> GetPty(const std::string& pty_id, const CancelToken* cancel);
  Result<bool> DeletePty(const std::string& pty_id, const CancelToken* cancel);
  // The terminal's WebSocket from output byte `since`, taking it over from its holder
  // when `takeover`. A second client without takeover is E8007. The handlers run on the
  // WebSocket thread and may start before this returns (pty_frames.h decodes what they
  // get).
  Result<std::shared_ptr<http::WebSocket>> OpenPty(const std::string& pty_id, uint64_t since, bool takeover,
                                                   http::WebSocket::Handlers handlers, const CancelToken* cancel);

  const ExecdTarget& target() const { return target_; }

 private:
  HttpCall Call(std::string method, std::string path_and_query) const;
  // A POST of `body_json` whose answer is an event stream.
  HttpCall StreamCall(const char* path, const std::string& body_json, int64_t idle_timeout_ms) const;
  // Sends `call` and parses its event stream to the end into `on_event` (false stops it;
  // `on_batch`, when set, after each network read's events). Lines that are not events
  // are E8010, and so is execd's bare {"code","message"} object when
  // `untyped_is_garbage`; a stream cut short is the transfer's error.
  Status ReadEventStream(const HttpCall& call, const CancelToken* cancel, const char* what,
                         bool untyped_is_garbage,
                         const std::function<bool(const ExecdEvent&)>& on_event,
                         const std::function<void()>& on_batch);
  HttpCaller* http_;
  ExecdTarget target_;
  int64_t timeout_ms_;
};

// The POST /session/{id}/run body. No `timeout`: the bridge keeps a shell command's
// timeout itself (execd's would kill bash but not its children); no `cwd`: the command
// changes directory itself (bridge/core/exec/shell_script.h).
std::string SessionRunBody(const std::string& command);

// Decoders exposed for tests and fuzzers.
Result<FileInfo> DecodeFileInfo(const rapidjson::Value& value);
Result<CommandStatus> DecodeCommandStatus(const std::string& body);
Result<CodeContextInfo> DecodeCodeContext(const rapidjson::Value& value);
Result<std::vector<CodeContextInfo>> DecodeCodeContexts(const std::string& body);
Result<JupyterKernels> DecodeKernelSpecs(const std::string& body);

}  // namespace abx::opensandbox

#pragma once
// files.write that starts its upload while the host is still writing the line.
//
// A write of megabytes crosses the host's pipe and the bridge's socket in parts
// (SessionInput.line_part) for several milliseconds; the upload then took as long again.
// When a line's first part reads as a files.write of base64 data (write_prefix.h: sandbox,
// path and "encoding":"base64" before the data), its upload starts at once and sends the
// bytes decoded as the line arrives; execd reads the form as it comes.
//
// Nothing is written before the line is known to be that request: the form's end, which
// commits it (execd parses the whole form before it writes a file), is sent only once the
// session has parsed the whole line and its handler has found the same request (same
// sandbox, path, mode, append, and `data` where it was read). Any difference, a
// character the decoding does not take (an escape, a blank), a line that never ends, or an
// upload that fails before its end, and the upload is dropped mid-form (nothing written)
// and the request is answered the ordinary way.
//
// Threads: the gRPC reader grows the line (Update, LineComplete), the client's I/O thread
// reads it (Read), a request thread uploads (the task), and the handler adopts it. The
// line's buffer is read only under mu_, and only while its owner keeps it: the assembler
// until the line is complete, then the handler after it adopted the upload; between the
// two (the line being parsed) nothing reads it.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "bridge/api/epp/write_prefix.h"
#include "bridge/base/body_source.h"
#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/base/task_runner.h"
#include "bridge/core/config.h"
#include "bridge/core/files/files.h"

namespace abx::core {
class BridgeCore;
class EndpointCache;
}

namespace abx::epp {


class EarlyWrite final : public BodySource,
                         public std::enable_shared_from_this<EarlyWrite> {
 public:
  // Starts the upload on `pool` for a line read so far as `prefix` says; nullptr when the
  // prefix asks for nothing this can do: no "encoding":"base64" before the data, a mode
  // the handler will refuse.
  // Counted in `core` as used or dropped.
  static std::shared_ptr<EarlyWrite> Start(const WritePrefix& prefix, core::BridgeCore* core,
                                           std::shared_ptr<core::EndpointCache> upstream,
                                           const core::ProviderConfig& config,
                                           TaskRunner* pool, std::string_view line);

  const WritePrefix& prefix() const { return prefix_; }

  // The assembler's side. `change` grows the line (it may move) and returns it; done
  // under the lock that readers take.
  void Update(const std::function<std::string_view()>& change);
  // The line is whole and goes to be parsed: reading waits for Adopt.
  void LineComplete();

  // The handler found the request the prefix promised, with its `data` string where it
  // was read. Finishes the upload and the write; nullopt when the early upload cannot be
  // used (nothing was written): the handler then writes the ordinary way.
  std::optional<Result<int64_t>> Adopt(std::string_view data, std::optional<int> mode,
                                             CancelToken* cancel);
  // The line is not that request, or is gone: the upload is dropped mid-form. Waits until
  // the upload's thread has let go.
  void Abandon();

  // BodySource: the file's bytes, decoded from the line as far as it arrived.
  size_t Read(char* out, size_t size) override;
  void SetResume(std::function<void()> resume) override;

 private:
  enum class LineState { kArriving, kParsing, kAdopted };

  EarlyWrite(const WritePrefix& prefix, core::BridgeCore* core,
             std::shared_ptr<core::EndpointCache> upstream, const core::ProviderConfig& config,
             std::optional<int> mode);
  void CountOnce(bool used);
  void Upload();  // the task
  void ResumeLocked();
  size_t ReadLocked(char* out, size_t size);
  void WaitUploadDone();

  const WritePrefix prefix_;
  const std::optional<int> mode_;
  core::BridgeCore* const core_;
  std::shared_ptr<core::EndpointCache> upstream_;
  const core::ProviderConfig config_;
  CancelToken cancel_;

  std::mutex mu_;
  std::condition_variable done_cv_;
  // Under mu_.
  LineState state_ = LineState::kArriving;
  const char* line_ = nullptr;  // the line's bytes (see the threads above)
  size_t line_size_ = 0;
  size_t data_end_ = 0;         // kAdopted: where `data` ends
  size_t next_ = 0;             // the next character of `data` to decode
  int64_t decoded_ = 0;         // bytes handed to the upload
  bool dropped_ = false;        // Read answers kAbort
  bool reader_waits_ = false;   // Read answered kWait: resume when there is more
  std::function<void()> resume_;
  bool upload_done_ = false;
  Status upload_status_ = OkStatus();
  bool upload_complete_ = false;  // the whole form went out
  std::optional<core::WriteTarget> target_;
  bool counted_ = false;
};

}  // namespace abx::epp

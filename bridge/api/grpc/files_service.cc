#include "bridge/api/grpc/files_service.h"

#include <deque>

#include <condition_variable>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bridge/base/byte_pipe.h"
#include "bridge/core/files/files.h"
#include "bridge/core/files/transfers.h"
#include "bridge/core/files/watches.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

// The same bound as EPP/1's files.list.
constexpr int kMaxListDepth = 64;

// An octal mode string ("0644", "644", "0o644"); empty means none given.
Result<std::optional<int>> Mode(const std::string& text, const char* field) {
  if (text.empty()) return std::optional<int>();
  std::optional<int> mode = core::ParseOctalMode(text);
  if (!mode) {
    return InvalidParams(field,
                               std::string(field) + " must be an octal string like \"0644\"");
  }
  return mode;
}

void ToProto(const core::FileEntry& entry, pb::FileEntry* out) {
  out->set_path(entry.path);
  out->set_name(entry.name);
  out->set_type(entry.type);
  out->set_size(entry.size);
  out->set_mode(entry.mode);
  out->set_modified_at(entry.modified_at);
}

// A download's bytes as FileChunk messages of up to kChunkBytes, each sent once gRPC
// took the one before (a client that stops reading stops the download).
class ChunkSink : public core::DownloadSink {
 public:
  static constexpr size_t kChunkBytes = 256 << 10;

  explicit ChunkSink(StreamCallReactor<pb::FileChunk>* stream) : stream_(stream) {}

  Status Start(const core::FileEntry& file) override {
    pb::FileChunk first;
    ToProto(file, first.mutable_file());
    return Send(first);
  }
  Status Write(int64_t offset, const char* data, size_t size) override {
    while (size > 0) {
      if (chunk_.data().empty()) chunk_.set_offset(offset);
      const size_t take = std::min(size, kChunkBytes - chunk_.data().size());
      chunk_.mutable_data()->append(data, take);
      data += take;
      size -= take;
      offset += static_cast<int64_t>(take);
      if (chunk_.data().size() == kChunkBytes) {
        if (Status st = Flush(); !st.ok()) return st;
      }
    }
    return OkStatus();
  }
  Status Flush() {
    if (chunk_.data().empty()) return OkStatus();
    Status st = Send(chunk_);
    chunk_.clear_data();
    return st;
  }

 private:
  Status Send(const pb::FileChunk& message) {
    if (stream_->Write(message)) return OkStatus();
    return MakeError(ErrorCode::kCancelled, "the client went away");
  }

  StreamCallReactor<pb::FileChunk>* stream_;
  pb::FileChunk chunk_;
};

// One Files.Upload: the first message starts the upload on the TaskRunner, whose body
// the later messages feed through a BytePipe; reads pause while the pipe is full and go
// on once execd has taken half of it. The call finishes when the upload has.
class UploadReactor final : public grpc::ServerReadReactor<pb::UploadChunk> {
 public:
  UploadReactor(const TypedDeps& deps, grpc::CallbackServerContext* context, pb::UploadFileReply* reply)
      : runner_(deps.runner), context_(context), call_(deps, context, "Files.Upload"), reply_(reply) {
    pipe_->SetOnRoom([this] { ReadNext(); });
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    if (!started_) {
      started_ = true;
      if (!ok) {
        Finish(call_.Finish(InvalidParams("start", "the first message must be start")));
        return;
      }
      start_ = chunk_.start();
      runner_->Run([this] {
        const Status status = RunTypedBody(call_, start_.config(), [this](TypedCall& call) { return Body(call); });
        {
          std::lock_guard<std::mutex> lock(mu_);
          finished_ = true;  // no read starts after this
        }
        Finish(call_.Finish(status));
      });
      if (!chunk_.data().empty() && !pipe_->Push(std::move(*chunk_.mutable_data()))) return;
      ReadNext();
      return;
    }
    if (!ok) {
      // The client closed its side (the file is complete), or the call broke: then the
      // form must not end, or execd would write what came so far.
      if (context_->IsCancelled()) {
        pipe_->Abort();
      } else {
        pipe_->End();
      }
      return;
    }
    if (pipe_->Push(std::move(*chunk_.mutable_data()))) ReadNext();
  }
  void OnCancel() override {
    call_.cancel()->Cancel();
    pipe_->Abort();
  }
  void OnDone() override { delete this; }

 private:
  Status Body(TypedCall& call) {
    // A body that ends early (an error) stops the reads it would no longer take.
    struct StopReads {
      BytePipe* pipe;
      ~StopReads() {
        pipe->SetOnRoom(nullptr);
        pipe->Abort();
      }
    } stop{pipe_.get()};
    ABX_ASSIGN_OR_RETURN(std::string id, Required(start_.sandbox_id(), "sandbox_id"));
    ABX_ASSIGN_OR_RETURN(std::string path, Required(start_.path(), "path"));
    ABX_ASSIGN_OR_RETURN(std::optional<int> mode, Mode(start_.mode(), "mode"));
    core::Transfers transfers(call.upstream(), &call.config());
    BytePipe* pipe = pipe_.get();
    ABX_ASSIGN_OR_RETURN(int64_t size, transfers.Upload(id, path, mode, pipe_, [pipe] {
      return static_cast<int64_t>(pipe->pushed());
    }, call.cancel()));
    reply_->set_path(path);
    reply_->set_size(size);
    return OkStatus();
  }

  void ReadNext() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!finished_) StartRead(&chunk_);
  }

  TaskRunner* const runner_;
  grpc::CallbackServerContext* const context_;
  TypedCall call_;
  pb::UploadFileReply* const reply_;
  pb::UploadChunk chunk_;
  pb::UploadStart start_;
  bool started_ = false;
  std::mutex mu_;
  bool finished_ = false;  // under mu_
  std::shared_ptr<BytePipe> pipe_ = std::make_shared<BytePipe>();
};

}  // namespace

grpc::ServerReadReactor<pb::UploadChunk>* FilesService::Upload(grpc::CallbackServerContext* context,
                                                               pb::UploadFileReply* reply) {
  return new UploadReactor(deps_, context, reply);
}

grpc::ServerWriteReactor<pb::FileChunk>* FilesService::Download(grpc::CallbackServerContext* context,
                                                                const pb::DownloadFileRequest* request) {
  return ServeStream<pb::FileChunk>(
      deps_, context, "Files.Download", request->config(),
      [=](TypedCall& call, StreamCallReactor<pb::FileChunk>* stream) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        core::Transfers transfers(call.upstream(), &call.config());
        ChunkSink sink(stream);
        auto downloaded = transfers.Download(id, path, &sink, nullptr, call.cancel());
        if (!downloaded.ok()) return downloaded.error();
        return sink.Flush();
      });
}

grpc::ServerUnaryReactor* FilesService::Read(grpc::CallbackServerContext* context, const pb::ReadFileRequest* request,
                                pb::ReadFileReply* reply) {
  return Serve(
      deps_, context, "Files.Read", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        if (request->offset() < 0) {
          return InvalidParams("offset", "offset must not be negative");
        }
        if (request->length() < 0) {
          return InvalidParams("length", "length must not be negative");
        }
        core::Files files(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::FileRead read, files.Read(id, path, request->offset(),
                                                             request->length(), call.cancel()));
        reply->set_data(std::move(read.data));
        reply->set_offset(read.offset);
        reply->set_size(read.size);
        reply->set_eof(read.eof);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* FilesService::Write(grpc::CallbackServerContext* context, const pb::WriteFileRequest* request,
                                 pb::WriteFileReply* reply) {
  return Serve(
      deps_, context, "Files.Write", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        ABX_ASSIGN_OR_RETURN(std::optional<int> mode, Mode(request->mode(), "mode"));
        core::Files files(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(int64_t size, files.Write(id, path, request->data(), mode,
                                                       request->append(), call.cancel()));
        reply->set_path(path);
        reply->set_size(size);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* FilesService::List(grpc::CallbackServerContext* context, const pb::ListFilesRequest* request,
                                pb::ListFilesReply* reply) {
  return Serve(
      deps_, context, "Files.List", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        const int depth = request->depth() == 0 ? 1 : request->depth();
        if (depth < 1 || depth > kMaxListDepth) {
          return InvalidParams("depth", "depth must be between 1 and 64");
        }
        core::Files files(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(std::vector<core::FileEntry> entries,
                             files.List(id, path, depth, call.cancel()));
        for (const core::FileEntry& entry : entries) ToProto(entry, reply->add_entries());
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* FilesService::Stat(grpc::CallbackServerContext* context, const pb::StatFileRequest* request,
                                pb::FileEntry* reply) {
  return Serve(
      deps_, context, "Files.Stat", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        core::Files files(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::FileEntry entry, files.Stat(id, path, call.cancel()));
        ToProto(entry, reply);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* FilesService::Mkdir(grpc::CallbackServerContext* context, const pb::MkdirRequest* request,
                                 pb::MkdirReply*) {
  return Serve(
      deps_, context, "Files.Mkdir", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        ABX_ASSIGN_OR_RETURN(std::optional<int> mode, Mode(request->mode(), "mode"));
        const bool parents = request->has_parents() ? request->parents() : true;
        core::Files files(call.upstream(), &call.config());
        return files.Mkdir(id, path, mode, parents, call.cancel());
      });
}

grpc::ServerUnaryReactor* FilesService::Remove(grpc::CallbackServerContext* context,
                                  const pb::RemoveFileRequest* request, pb::RemoveFileReply*) {
  return Serve(
      deps_, context, "Files.Remove", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        core::Files files(call.upstream(), &call.config());
        return files.Remove(id, path, request->recursive(), call.cancel());
      });
}

grpc::ServerUnaryReactor* FilesService::Move(grpc::CallbackServerContext* context, const pb::MoveFileRequest* request,
                                pb::MoveFileReply*) {
  return Serve(
      deps_, context, "Files.Move", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string source, Required(request->source(), "source"));
        ABX_ASSIGN_OR_RETURN(std::string destination,
                             Required(request->destination(), "destination"));
        core::Files files(call.upstream(), &call.config());
        return files.Move(id, source, destination, call.cancel());
      });
}

grpc::ServerUnaryReactor* FilesService::Search(grpc::CallbackServerContext* context,
                                  const pb::SearchFilesRequest* request,
                                  pb::SearchFilesReply* reply) {
  return Serve(
      deps_, context, "Files.Search", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        ABX_ASSIGN_OR_RETURN(std::string pattern, Required(request->pattern(), "pattern"));
        core::Files files(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(std::vector<std::string> matches,
                             files.Search(id, path, pattern, call.cancel()));
        for (std::string& match : matches) reply->add_matches(std::move(match));
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* FilesService::Chmod(grpc::CallbackServerContext* context, const pb::ChmodRequest* request,
                                 pb::ChmodReply*) {
  return Serve(
      deps_, context, "Files.Chmod", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        ABX_ASSIGN_OR_RETURN(std::optional<int> mode, Mode(request->mode(), "mode"));
        if (!mode && request->owner().empty() && request->group().empty()) {
          return InvalidParams("mode", "Files.Chmod needs a mode (or an owner or group)");
        }
        core::Files files(call.upstream(), &call.config());
        return files.Chmod(id, path, mode, request->owner(), request->group(), call.cancel());
      });
}

namespace {

// A Watch call as its watch's listener: changes queue here and the call's own thread
// writes them, so a client that reads slowly holds up only itself, never the sandbox's
// other watches.
class QueuedWatchListener final : public core::WatchListener {
 public:
  void OnEvents(const std::string&, const std::vector<core::WatchEvent>& events) override {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(events);
    changed_.notify_all();
  }
  void OnEnded(const std::string&, const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = reason.empty() ? "the watch ended" : reason;
    changed_.notify_all();
  }
  void Wake() {
    std::lock_guard<std::mutex> lock(mu_);
    changed_.notify_all();
  }
  // The next batch, or nullopt once the watch ended (*ended says why) or `cancel` is set.
  std::optional<std::vector<core::WatchEvent>> Next(CancelToken* cancel, std::optional<std::string>* ended) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return !queue_.empty() || ended_ || cancel->cancelled(); });
    if (!queue_.empty()) {
      std::vector<core::WatchEvent> batch = std::move(queue_.front());
      queue_.pop_front();
      return batch;
    }
    *ended = ended_;
    return std::nullopt;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::vector<core::WatchEvent>> queue_;
  std::optional<std::string> ended_;
};

}  // namespace

grpc::ServerWriteReactor<pb::WatchEvent>* FilesService::Watch(grpc::CallbackServerContext* context,
                                                             const pb::WatchRequest* request) {
  return ServeStream<pb::WatchEvent>(
      deps_, context, "Files.Watch", request->config(),
      [=](TypedCall& call, StreamCallReactor<pb::WatchEvent>* stream) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string path, Required(request->path(), "path"));
        auto listener = std::make_shared<QueuedWatchListener>();
        core::Watches watches(call.core(), call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::WatchStarted started,
                             watches.Watch(sandbox_id, path, request->recursive(), listener, call.cancel()));
        call.cancel()->OnCancel([listener] { listener->Wake(); });
        pb::WatchEvent first;
        first.mutable_started()->set_watch_id(started.watch_id);
        first.mutable_started()->set_mode(started.mode);
        bool open = stream->Write(first);
        std::optional<std::string> ended;
        while (open) {
          auto batch = listener->Next(call.cancel(), &ended);
          if (!batch) break;
          pb::WatchEvent event;
          for (const core::WatchEvent& e : *batch) {
            pb::FileChange* change = event.mutable_changes()->add_changes();
            change->set_type(e.type);
            change->set_path(e.path);
            change->set_is_dir(e.is_dir);
          }
          open = stream->Write(event);
        }
        watches.Unwatch(started.watch_id);
        if (ended && open) {
          pb::WatchEvent last;
          last.mutable_ended()->set_reason(*ended);
          stream->Write(last);
        }
        return OkStatus();
      });
}

}  // namespace abx::api

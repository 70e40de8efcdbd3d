// files.watch extension: files.watch, files.unwatch and the session's files.event
// notifications (docs/epp1.md §3, "files.watch extension").
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "bridge/api/epp/jsonrpc.h"
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/core/files/watches.h"

namespace abx::epp {
namespace {

using json::Quote;

// The session as the listener of its watches: notifications written straight to the
// host, until the session closes it (a batch may still be on its way after a watch was
// removed). A watch's first changes can come before files.watch is answered: they wait
// until the answer is out (Announce), so the host knows the watch_id they carry.
class SessionWatchListener final : public WatchListenerOfSession {
 public:
  explicit SessionWatchListener(LineSink* sink) : sink_(sink) {}

  void OnEvents(const std::string& watch_id, const std::vector<core::WatchEvent>& events) override {
    std::string params = "{\"watch_id\":" + Quote(watch_id) + ",\"events\":[";
    for (size_t i = 0; i < events.size(); ++i) {
      params += std::string(i ? "," : "") + "{\"type\":" + Quote(events[i].type) + ",\"path\":" +
                Quote(events[i].path) + ",\"is_dir\":" + (events[i].is_dir ? "true" : "false") + "}";
    }
    Write(watch_id, NotificationLine("files.event", params + "]}"));
  }
  void OnEnded(const std::string& watch_id, const std::string& reason) override {
    Write(watch_id, NotificationLine("files.event", "{\"watch_id\":" + Quote(watch_id) +
                                                        ",\"events\":[],\"ended\":" + Quote(reason) + "}"));
  }
  void Announce(const std::string& watch_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    announced_.insert(watch_id);
    auto held = held_.find(watch_id);
    if (held == held_.end()) return;
    for (std::string& line : held->second) {
      if (!closed_) sink_->Write(std::move(line), "");
    }
    held_.erase(held);
  }
  void Close() override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    held_.clear();
  }

 private:
  void Write(const std::string& watch_id, std::string line) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    if (!announced_.count(watch_id)) {
      held_[watch_id].push_back(std::move(line));
      return;
    }
    sink_->Write(std::move(line), "");
  }

  LineSink* sink_;
  std::mutex mu_;
  bool closed_ = false;
  std::set<std::string> announced_;                          // watch ids answered
  std::map<std::string, std::vector<std::string>> held_;     // lines waiting for their answer
};

}  // namespace

std::shared_ptr<WatchListenerOfSession> MakeWatchListener(LineSink* sink) {
  return std::make_shared<SessionWatchListener>(sink);
}

Result<std::string> FilesWatch(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string sandbox_id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, p.RequiredString("path"));
  if (path.empty()) return InvalidParams("path", "path must not be empty");
  ABX_ASSIGN_OR_RETURN(auto recursive, p.Bool("recursive"));
  core::Watches watches(&req.session().core(), req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::WatchStarted started,
                       watches.Watch(sandbox_id, path, recursive.value_or(false), req.session().watch_listener(),
                                     &req.cancel()));
  req.session().OwnWatch(started.watch_id);
  req.Respond("{\"watch_id\":" + Quote(started.watch_id) + ",\"mode\":" + Quote(started.mode) + "}");
  req.session().AnnounceWatch(started.watch_id);
  return std::string("null");  // already answered
}

Result<std::string> FilesUnwatch(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string watch_id, p.RequiredString("watch_id"));
  core::Watches watches(&req.session().core(), req.session().upstream().get(), &req.session().config());
  const bool stopped = watches.Unwatch(watch_id);
  if (stopped) req.session().DisownWatch(watch_id);
  return std::string(stopped ? "{\"stopped\":true}" : "{\"stopped\":false}");
}

}  // namespace abx::epp

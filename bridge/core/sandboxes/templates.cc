#include "bridge/core/sandboxes/templates.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>

#include "bridge/base/json.h"
#include "bridge/base/log.h"
#include "bridge/base/utf8.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/exec/exec.h"
#include "bridge/core/sandboxes/sandboxes.h"
#include "bridge/core/sandboxes/snapshots.h"
#include "bridge/core/shell_quote.h"

namespace abx::core {
namespace {

constexpr size_t kOutputTailBytes = 4096;
// Templates changed by another daemon or host are seen within this long.
constexpr auto kTemplateIndexMaxAge = std::chrono::seconds(30);
// The build sandbox outlives a daemon that died mid-build by at most this much beyond
// the build's own timeout.
constexpr int64_t kBuildSandboxSpareSeconds = 600;

bool IsTemplateChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Passes a command's output on as it comes and keeps its last bytes for an error.
class StepSink final : public ExecSink {
 public:
  StepSink(int step, const TemplateBuildEvents& events) : step_(step), events_(events) {}
  void OnStarted(const std::string&) override {}
  void OnOutput(OutputChunk& chunk) override {
    if (events_.output) events_.output(step_, ToValidUtf8(chunk.data));
    tail_ += chunk.data;
    if (tail_.size() > 2 * kOutputTailBytes) tail_.erase(0, tail_.size() - kOutputTailBytes);
  }
  void OnExit(const ExecExit& exit) override { exit_ = exit; }

  // The last 4 KiB, from a character's first byte on, as valid UTF-8.
  std::string Tail() const {
    size_t start = tail_.size() > kOutputTailBytes ? tail_.size() - kOutputTailBytes : 0;
    while (start < tail_.size() && (static_cast<unsigned char>(tail_[start]) & 0xC0) == 0x80) ++start;
    return ToValidUtf8(std::string_view(tail_).substr(start));
  }
  const ExecExit& exit() const { return exit_; }

 private:
  const int step_;
  const TemplateBuildEvents& events_;
  std::string tail_;
  ExecExit exit_;
};

// The newest Ready snapshot of each template name.
Result<std::map<std::string, opensandbox::SnapshotRecord>> ListTemplateSnapshots(
    const std::shared_ptr<EndpointCache>& upstream, const ProviderConfig& config, CancelToken* cancel) {
  Snapshots snapshots(upstream, &config, BackgroundRunner{});
  ABX_ASSIGN_OR_RETURN(SnapshotList list, snapshots.List("", {"Ready"}, 0, "", cancel));
  std::map<std::string, opensandbox::SnapshotRecord> newest;
  const std::string prefix = kTemplateSnapshotPrefix;
  for (auto& s : list.snapshots) {
    if (s.state != "Ready" || s.name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string name = s.name.substr(prefix.size());
    auto it = newest.find(name);
    // The server lists newest first; the created_at comparison keeps that whatever it does.
    if (it == newest.end() || it->second.created_at < s.created_at) newest[name] = std::move(s);
  }
  return newest;
}

}  // namespace

Status CheckTemplateName(const std::string& field, const std::string& name) {
  bool ok = !name.empty() && name.size() <= 63 && IsTemplateChar(name[0]);
  for (char c : name) ok = ok && (IsTemplateChar(c) || c == '.' || c == '_' || c == '-');
  if (!ok) return InvalidParams(field, field + " must match [a-z0-9][a-z0-9._-]{0,62}");
  return OkStatus();
}

Result<std::optional<std::string>> TemplateSnapshot(EndpointCache* upstream, const ProviderConfig& config,
                                                    const std::string& name, CancelToken* cancel) {
  if (!CheckTemplateName("template", name).ok()) return std::optional<std::string>();
  if (auto cached = upstream->CachedTemplates(kTemplateIndexMaxAge)) {
    auto it = cached->find(name);
    return it == cached->end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
  }
  // A non-owning pointer: ListTemplateSnapshots only uses it for this call.
  std::shared_ptr<EndpointCache> borrowed(upstream, [](EndpointCache*) {});
  // A build or delete that forgets the index while this list is read wins over it.
  const uint64_t generation = upstream->TemplatesGeneration();
  ABX_ASSIGN_OR_RETURN(auto newest, ListTemplateSnapshots(borrowed, config, cancel));
  std::map<std::string, std::string> index;
  for (const auto& [template_name, snapshot] : newest) index[template_name] = snapshot.id;
  upstream->StoreTemplates(index, generation);
  auto it = index.find(name);
  return it == index.end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
}

Result<TemplateInfo> Templates::Build(const TemplateBuildSpec& spec, const std::vector<TemplateUpload>& uploads,
                                      const TemplateBuildEvents& events, CancelToken* cancel) {
  // One token for the whole build: the request's cancel or the build's timeout sets it.
  auto build = std::make_shared<CancelToken>();
  auto timed_out = std::make_shared<std::atomic<bool>>(false);
  cancel->OnCancel([build] { build->Cancel(); });
  core_->RunInBackgroundAt(
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_s * 1000)),
      [build, timed_out] {
        if (build->cancelled()) return;
        *timed_out = true;
        build->Cancel();
      });
  const std::string what = "templates.build " + spec.name;
  auto stopped = [&](Error e) {
    if (*timed_out) {
      e = MakeError(ErrorCode::kTimeout, "the build did not finish within its timeout (" +
                                             std::to_string(static_cast<int64_t>(spec.timeout_s)) + " s)");
    } else if (build->cancelled()) {
      e = MakeError(ErrorCode::kCancelled, "the build was cancelled");
    }
    return e.Within(what);
  };
  auto phase = [&](const char* name, int step) {
    if (events.phase) events.phase(name, step);
  };

  phase("create", -1);
  CreateSpec create;
  create.template_name = spec.from.empty() ? "base" : spec.from;
  create.timeout_s = static_cast<int64_t>(std::ceil(spec.timeout_s)) + kBuildSandboxSpareSeconds;
  Sandboxes sandboxes(upstream_.get(), config_);
  auto sandbox = sandboxes.Create(create, build.get(), {});
  if (!sandbox.ok()) return stopped(sandbox.error());
  const std::string id = sandbox->record.id;
  // The build sandbox goes whatever happens (uncancellable clean-up).
  struct KillAtEnd {
    Sandboxes* sandboxes;
    std::string id;
    ~KillAtEnd() {
      CancelToken never;
      auto killed = sandboxes->Kill(id, &never);
      if (!killed.ok()) log::Warn("template.build_sandbox_left", {{"sandbox_id", id}, {"error", killed.error().message}});
    }
  } kill_at_end{&sandboxes, id};

  if (!uploads.empty()) phase("upload", -1);
  for (const TemplateUpload& upload : uploads) {
    Status uploaded = upload(id, build.get());
    if (!uploaded.ok()) return stopped(uploaded.error());
  }

  Exec exec(core_, upstream_.get(), config_);
  for (size_t i = 0; i < spec.run.size(); ++i) {
    const int step = static_cast<int>(i);
    phase("run", step);
    ExecSpec run;
    run.sandbox_id = id;
    run.command = "sh -c " + ShellQuote(spec.run[i]);
    run.cwd = "/";
    StepSink sink(step, events);
    Status ran = exec.Run(run, build.get(), &sink);
    if (!ran.ok()) return stopped(ran.error());
    const ExecExit& exit = sink.exit();
    if (exit.cancelled || build->cancelled()) return stopped(MakeError(ErrorCode::kCancelled, "cancelled"));
    if (exit.exit_code && *exit.exit_code == 0) continue;
    Error failed = exit.error ? *exit.error
                              : MakeError(ErrorCode::kUpstream, "step " + std::to_string(step) + " (" + spec.run[i] +
                                                                    ") exited with " +
                                                                    (exit.exit_code ? std::to_string(*exit.exit_code)
                                                                                    : "signal " + exit.signal));
    failed.code = ErrorCode::kUpstream;
    failed.extra_data_json = "\"step\":" + std::to_string(step) + ",\"exit_code\":" +
                             (exit.exit_code ? std::to_string(*exit.exit_code) : std::string("null")) +
                             ",\"output_tail\":" + json::Quote(sink.Tail());
    return failed.Within(what);
  }

  phase("snapshot", -1);
  Snapshots snapshots(upstream_, config_, core_->Runner());
  auto snapshot = snapshots.Take(id, kTemplateSnapshotPrefix + spec.name, build.get(), {});
  if (!snapshot.ok()) return stopped(snapshot.error());

  // The new version is Ready: it replaces the old ones, which go now.
  upstream_->ForgetTemplates();
  CancelToken never;
  auto all = snapshots.List("", {}, 0, "", &never);
  if (all.ok()) {
    for (const auto& s : all->snapshots) {
      // Only versions older than this one: a build of the same name that finished later
      // is the newest and stays. One still Creating or Deleting is another's business.
      if (s.id == snapshot->id || s.name != kTemplateSnapshotPrefix + spec.name || s.state == "Creating" ||
          s.state == "Deleting" || s.created_at > snapshot->created_at) {
        continue;
      }
      auto deleted = snapshots.Delete(s.id, &never);
      if (!deleted.ok()) log::Warn("template.old_version_left", {{"snapshot_id", s.id}, {"error", deleted.error().message}});
    }
  }
  upstream_->ForgetTemplates();
  TemplateInfo info;
  info.name = spec.name;
  info.snapshot_id = snapshot->id;
  info.from = create.template_name;
  info.created_at = snapshot->created_at;
  return info;
}

Result<std::vector<TemplateInfo>> Templates::List(CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(auto newest, ListTemplateSnapshots(upstream_, *config_, cancel));
  std::vector<TemplateInfo> out;
  for (const auto& [name, snapshot] : newest) {
    TemplateInfo info;
    info.name = name;
    info.snapshot_id = snapshot.id;
    info.created_at = snapshot.created_at;
    out.push_back(std::move(info));
  }
  return out;
}

Result<bool> Templates::Delete(const std::string& name, CancelToken* cancel) {
  Snapshots snapshots(upstream_, config_, core_->Runner());
  ABX_ASSIGN_OR_RETURN(SnapshotList all, snapshots.List("", {}, 0, "", cancel));
  upstream_->ForgetTemplates();
  bool deleted_any = false;
  for (const auto& s : all.snapshots) {
    // One still Creating belongs to a build in progress, which replaces what it finds;
    // one Deleting is going already. Only a Ready one made the name a template.
    if (s.name != kTemplateSnapshotPrefix + name || s.state == "Creating" || s.state == "Deleting") continue;
    ABX_ASSIGN_OR_RETURN(bool deleted, snapshots.Delete(s.id, cancel));
    deleted_any = deleted_any || (deleted && s.state == "Ready");
  }
  upstream_->ForgetTemplates();
  return deleted_any;
}

}  // namespace abx::core

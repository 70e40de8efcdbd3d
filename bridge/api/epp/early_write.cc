#include "bridge/api/epp/early_write.h"

#include <cstring>

#include "bridge/base/base64.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/endpoint_cache.h"

namespace abx::epp {

std::shared_ptr<EarlyWrite> EarlyWrite::Start(const WritePrefix& prefix, core::BridgeCore* core,
                                              std::shared_ptr<core::EndpointCache> upstream,
                                              const core::ProviderConfig& config,
                                              TaskRunner* pool, std::string_view line) {
  // Only base64 is decoded as it arrives; files.write's default, utf8, is JSON text.
  if (prefix.encoding != "base64" || prefix.data_begin > line.size()) {
    return nullptr;
  }
  std::optional<int> mode;
  if (prefix.mode) {
    mode = core::ParseOctalMode(*prefix.mode);
    if (!mode) return nullptr;  // the handler answers that
  }
  std::shared_ptr<EarlyWrite> write(
      new EarlyWrite(prefix, core, std::move(upstream), config, mode));
  write->line_ = line.data();
  write->line_size_ = line.size();
  write->next_ = prefix.data_begin;
  pool->Run([write] { write->Upload(); });
  return write;
}

EarlyWrite::EarlyWrite(const WritePrefix& prefix, core::BridgeCore* core,
                       std::shared_ptr<core::EndpointCache> upstream,
                       const core::ProviderConfig& config, std::optional<int> mode)
    : prefix_(prefix), mode_(mode), core_(core), upstream_(std::move(upstream)), config_(config) {}

void EarlyWrite::CountOnce(bool used) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (counted_) return;
    counted_ = true;
  }
  core_->CountEarlyWrite(used);
}

void EarlyWrite::Upload() {
  core::Files files(upstream_.get(), &config_);
  auto target = files.PrepareWrite(prefix_.sandbox_id, prefix_.path, mode_,
                                   prefix_.append.value_or(false), &cancel_);
  Status status = OkStatus();
  bool complete = false;
  if (!target.ok()) {
    status = target.error();
  } else {
    status = target->execd.UploadMade(target->upload_path, shared_from_this(),
                                      target->upload_mode, &complete, &cancel_, /*open_ended=*/false,
                                      target->upload_owner);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    upload_done_ = true;
    upload_status_ = std::move(status);
    upload_complete_ = complete;
    if (target.ok()) target_ = std::move(target).value();
  }
  done_cv_.notify_all();
}

void EarlyWrite::Update(const std::function<std::string_view()>& change) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string_view line = change();
  line_ = line.data();
  line_size_ = line.size();
  ResumeLocked();
}

void EarlyWrite::LineComplete() {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = LineState::kParsing;
}

std::optional<Result<int64_t>> EarlyWrite::Adopt(std::string_view data,
                                                       std::optional<int> mode,
                                                       CancelToken* cancel) {
  bool same = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // An in-situ parse leaves the string where it was read, unescaped in place: the
    // characters before its first escape do not move, and decoding never passed one (it
    // drops the upload there), so what was sent is what the request holds.
    same = state_ == LineState::kParsing && !dropped_ && mode == mode_ &&
           data.data() == line_ + prefix_.data_begin;
    if (same) {
      state_ = LineState::kAdopted;
      data_end_ = prefix_.data_begin + data.size();
      ResumeLocked();
    }
  }
  if (!same) {
    Abandon();
    return std::nullopt;
  }
  std::weak_ptr<EarlyWrite> weak = shared_from_this();
  cancel->OnCancel([weak] {
    if (auto write = weak.lock()) write->cancel_.Cancel();
  });
  WaitUploadDone();
  std::unique_lock<std::mutex> lock(mu_);
  const bool complete = upload_complete_;
  const Status status = upload_status_;
  const int64_t decoded = decoded_;
  std::optional<core::WriteTarget> target = std::move(target_);
  lock.unlock();
  if (!complete) {
    // Nothing was written (the form never ended). A cancel is the answer; anything else
    // (a dropped upload, a character decoding stopped at, a failure) goes the ordinary way.
    CountOnce(false);
    if (cancel->cancelled() && !status.ok()) return Result<int64_t>(status.error());
    return std::nullopt;
  }
  CountOnce(true);
  if (!status.ok()) return Result<int64_t>(status.error());
  core::Files files(upstream_.get(), &config_);
  return files.CompleteWrite(*target, decoded, mode, cancel);
}

void EarlyWrite::Abandon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped_ = true;
    ResumeLocked();  // a waiting read then answers kAbort
  }
  cancel_.Cancel();
  WaitUploadDone();
  CountOnce(false);  // not counted when adopted already
}

void EarlyWrite::WaitUploadDone() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return upload_done_; });
}

void EarlyWrite::SetResume(std::function<void()> resume) {
  std::lock_guard<std::mutex> lock(mu_);
  resume_ = std::move(resume);
  if (resume_ && reader_waits_) ResumeLocked();
}

void EarlyWrite::ResumeLocked() {
  if (!reader_waits_ || !resume_) return;
  reader_waits_ = false;
  resume_();  // sets a flag and wakes the I/O thread; takes none of our locks
}

size_t EarlyWrite::Read(char* out, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t made = ReadLocked(out, size);
  if (made == kWait) reader_waits_ = true;
  if (made != kWait && made != kAbort && made != 0) decoded_ += static_cast<int64_t>(made);
  return made;
}

size_t EarlyWrite::ReadLocked(char* out, size_t size) {
  if (dropped_) return kAbort;
  if (state_ == LineState::kParsing) return kWait;
  const size_t end = state_ == LineState::kAdopted ? data_end_ : line_size_;
  if (next_ >= end) return state_ == LineState::kAdopted ? 0 : kWait;
  size_t characters = std::min(end - next_, size / 3 * 4);
  characters -= characters % 4;
  const size_t used =
      Base64DecodeGroups(std::string_view(line_ + next_, characters), out);
  if (used > 0) {
    next_ += used;
    return used / 4 * 3;
  }
  if (state_ == LineState::kAdopted) {
    // The last group, with its padding; or something the handler's own decoding reports.
    auto last = Base64Decode(std::string_view(line_ + next_, end - next_));
    if (!last || last->size() > size) {
      dropped_ = true;
      return kAbort;
    }
    std::memcpy(out, last->data(), last->size());
    next_ = end;
    return last->size();
  }
  // Fewer than four characters so far, or a group with one outside the alphabet: the
  // string's end and its padding are read once the line is whole; anything else (an
  // escape, a blank) is for the ordinary way.
  for (size_t i = next_; i < std::min(end, next_ + 4); ++i) {
    const char c = line_[i];
    if (c == '"') break;  // what follows is the line's, not the string's
    if (!IsBase64Character(c) && c != '=') {
      dropped_ = true;
      return kAbort;
    }
  }
  return kWait;
}

}  // namespace abx::epp

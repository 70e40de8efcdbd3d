#include "bridge/api/epp/line_assembler.h"

#include <algorithm>
#include <utility>

#include "bridge/api/epp/early_write.h"
#include "bridge/api/epp/features.h"
#include "bridge/api/epp/session.h"

namespace abx::epp {

bool LineAssembler::AddPart(std::string_view part) {
  if (pending_.size() + part.size() > static_cast<size_t>(kMaxLineBytes)) return false;
  if (!pending_.empty()) {
    Grow(part);
    return true;
  }
  // Long lines tend to come in runs of the same size (files.write chunks): room for the
  // whole line at once, sized after the last one, spares growing step by step.
  pending_.reserve(std::min<size_t>(std::max(last_size_ + last_size_ / 8, part.size() * 2),
                                    static_cast<size_t>(kMaxLineBytes)));
  pending_.append(part);
  early_write_ = session_->StartEarlyWrite(pending_);
  return true;
}

std::string LineAssembler::Complete(std::string end, std::shared_ptr<EarlyWrite>* early_write) {
  if (pending_.empty()) return end;
  Grow(end);
  last_size_ = pending_.size();
  if (early_write_) early_write_->LineComplete();
  *early_write = std::move(early_write_);
  return std::exchange(pending_, std::string());
}

void LineAssembler::Drop() {
  if (early_write_) early_write_->Abandon();
  early_write_.reset();
  pending_ = std::string();
}

void LineAssembler::Grow(std::string_view bytes) {
  if (!early_write_) {
    pending_.append(bytes);
    return;
  }
  early_write_->Update([&] {
    pending_.append(bytes);
    return std::string_view(pending_);
  });
}

}  // namespace abx::epp

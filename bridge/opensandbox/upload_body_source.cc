#include "bridge/opensandbox/upload_body_source.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace abx::opensandbox {

UploadBodySource::UploadBodySource(const UploadFile& file, std::shared_ptr<BodySource> data,
                                   const BoundaryGenerator& make_boundary)
    : data_(std::move(data)) {
  // The form of an empty file is the head, then the end: the file's bytes go between.
  UploadFile empty = file;
  empty.data = std::string_view();
  MultipartBody form = BuildUploadBody({empty}, make_boundary);
  tail_ = "\r\n--" + form.boundary + "--\r\n";
  head_ = form.body.substr(0, form.body.size() - tail_.size());
  delimiter_ = "--" + form.boundary;
  content_type_ = std::move(form.content_type);
}

size_t UploadBodySource::Copy(const std::string& text, size_t* sent, char* out, size_t size) {
  const size_t n = std::min(size, text.size() - *sent);
  std::memcpy(out, text.data() + *sent, n);
  *sent += n;
  return n;
}

bool UploadBodySource::HoldsDelimiter(const char* data, size_t size) {
  const size_t keep = delimiter_.size() - 1;
  // Across the previous bytes and these: only the first `keep` of these can complete one.
  std::string seam = recent_;
  seam.append(data, std::min(size, keep));
  if (Contains(seam, delimiter_) || Contains(std::string_view(data, size), delimiter_)) return true;
  if (size >= keep) {
    recent_.assign(data + size - keep, keep);
  } else {
    recent_ = seam.substr(seam.size() - std::min(seam.size(), keep));
  }
  return false;
}

size_t UploadBodySource::Read(char* out, size_t size) {
  if (size == 0) return 0;
  if (head_sent_ < head_.size()) return Copy(head_, &head_sent_, out, size);
  if (!data_done_) {
    const size_t made = data_->Read(out, size);
    if (made == kWait || made == kAbort) return made;
    if (made > 0) return HoldsDelimiter(out, made) ? kAbort : made;
    data_done_ = true;
  }
  if (tail_sent_ == tail_.size()) return 0;
  const size_t n = Copy(tail_, &tail_sent_, out, size);
  if (tail_sent_ == tail_.size()) complete_.store(true);
  return n;
}

}  // namespace abx::opensandbox

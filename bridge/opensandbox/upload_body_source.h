#pragma once
// The body of one POST /files/upload made while it is sent: the form's head (the
// metadata part and the file part's header), the file's bytes as another source makes
// them, then the form's end. For files.write while the host still writes its line.
//
// The form's end is what commits it: execd reads the whole form before it writes any
// file, so a request that stops before the end (the source aborting, the connection
// dropped) writes nothing. The boundary is random as for BuildUploadBody, but the file's
// bytes are not known beforehand: should they hold it after all, the request is aborted,
// and the caller uploads again the ordinary way.

#include <atomic>
#include <memory>
#include <string>

#include "bridge/base/body_source.h"
#include "bridge/opensandbox/multipart.h"

namespace abx::opensandbox {

class UploadBodySource final : public BodySource {
 public:
  // `file.data` is not used: `data` makes the file's bytes.
  UploadBodySource(const UploadFile& file, std::shared_ptr<BodySource> data,
                   const BoundaryGenerator& make_boundary = RandomBoundary);

  const std::string& content_type() const { return content_type_; }
  // The form's end was handed to the connection: from here on the upload may take effect.
  bool complete() const { return complete_.load(); }

  size_t Read(char* out, size_t size) override;
  void SetResume(std::function<void()> resume) override { data_->SetResume(std::move(resume)); }

 private:
  // Hands over the rest of `text` from `*sent`.
  static size_t Copy(const std::string& text, size_t* sent, char* out, size_t size);
  // Whether the delimiter lies in the bytes just made (or across the previous ones).
  bool HoldsDelimiter(const char* data, size_t size);

  std::shared_ptr<BodySource> data_;
  std::string content_type_;
  std::string head_;       // up to the file's first byte
  std::string tail_;       // CRLF "--" boundary "--" CRLF
  std::string delimiter_;  // "--" boundary
  std::string recent_;     // the last delimiter_.size() - 1 bytes of the file so far
  size_t head_sent_ = 0;
  size_t tail_sent_ = 0;
  bool data_done_ = false;
  std::atomic<bool> complete_{false};
};

}  // namespace abx::opensandbox

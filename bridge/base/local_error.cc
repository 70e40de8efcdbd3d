#include "bridge/base/local_error.h"

#include <string.h>

namespace abx {

Error LocalFileError(const std::string& errno_name, std::string message) {
  ErrorCode code = ErrorCode::kInvalidState;  // refused: EACCES, EPERM, EROFS, EEXIST, …
  if (errno_name == "ENOENT" || errno_name == "ENOTDIR") code = ErrorCode::kNotFound;
  if (errno_name == "ENOSPC" || errno_name == "EDQUOT" || errno_name == "EFBIG") code = ErrorCode::kTooLarge;
  Error e = MakeError(code, std::move(message));
  e.field = "local_path";
  e.errno_name = errno_name;
  return e;
}

Error LocalFileError(int error_number, const std::string& what) {
  const char* name = strerrorname_np(error_number);
  return LocalFileError(name != nullptr ? name : "EIO", what + ": " + strerror(error_number));
}

}  // namespace abx

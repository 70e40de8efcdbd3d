#pragma once
// The error of a local file (files.transfer, docs/epp1.md "Local errors"): the EPP code its
// errno means, `local_path` as the field, the errno's name in `errno_name`.

#include <string>

#include "bridge/base/error.h"

namespace abx {

// By name ("ENOENT" → E8005; "ENOSPC", "EDQUOT", "EFBIG" → E8008; any other refusal E8007).
Error LocalFileError(const std::string& errno_name, std::string message);
// By number: `what` failed, with strerror's words.
Error LocalFileError(int error_number, const std::string& what);

}  // namespace abx

#pragma once
// The server's rules for metadata keys and values (they become Kubernetes labels;
// docs/opensandbox.md §1.3): checked before a metadata patch is sent, so that a bad key is
// -32602 naming it rather than the server's 400.

#include <string>

namespace abx::core {

// The prefix the server keeps for itself.
inline constexpr const char* kReservedLabelPrefix = "opensandbox.io/";

// "" when `key` is a valid label key (an optional DNS-subdomain prefix and '/', then a
// name of 1–63 alphanumerics, '-', '_', '.', starting and ending alphanumeric) and not
// reserved; else why not.
std::string LabelKeyProblem(const std::string& key);
// "" when `value` is empty or follows the name rule above; else why not.
std::string LabelValueProblem(const std::string& value);

}  // namespace abx::core

#pragma once

// Sandbox metadata becomes Kubernetes labels (Docker labels in the Docker runtime, but
// upstream checks the Kubernetes rules for both), docs/opensandbox.md §1.3:
//   key   = [prefix/]name; name <= 63 chars of [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?,
//           prefix a DNS subdomain (<= 253); "opensandbox.io/" is reserved;
//   value = empty, or <= 63 chars matching the name pattern.

#include <string>

namespace fake_opensandbox {

inline constexpr char kReservedLabelPrefix[] = "opensandbox.io/";

bool IsReservedLabelKey(const std::string& key);
// Returns "" when valid, else the reason.
std::string CheckLabelKey(const std::string& key);
std::string CheckLabelValue(const std::string& value);

}  // namespace fake_opensandbox

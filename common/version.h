#pragma once

namespace abx {

// Provider name and version, as `initialize` and the manifest declare them.
inline constexpr char kProviderName[] = "opensandbox";
inline constexpr char kProviderVersion[] = "0.2.0";

}  // namespace abx

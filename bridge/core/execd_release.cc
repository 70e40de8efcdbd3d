#include "bridge/core/execd_release.h"

#include <optional>

#include "bridge/opensandbox/error_body.h"

namespace abx::core {

Result<bool> ExecdBefore1019(EndpointCache& cache, const std::string& sandbox_id,
                             opensandbox::ExecdClient& execd, const CancelToken* cancel) {
  if (std::optional<bool> known = cache.KnownBefore1019(sandbox_id)) return *known;
  auto listed = execd.ListDirectory("/", 0, cancel);
  if (!listed.ok() && !opensandbox::IsRouteMissing(listed.error())) return listed.error();
  cache.NoteBefore1019(sandbox_id, !listed.ok());
  return !listed.ok();
}

}  // namespace abx::core

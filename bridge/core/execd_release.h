#pragma once
// What the provider learns of a sandbox's execd release by its behaviour (execd reports
// no version; docs/opensandbox.md §2.17), kept with the sandbox's endpoint.

#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/opensandbox/execd_client.h"

namespace abx::core {

// Whether the sandbox's execd predates 1.0.19. Every change the provider depends on that
// came after 1.0.18 (file modes and owners left alone, 404 for a missing path, a
// terminal's `command` and takeover) came in 1.0.19 together with GET
// /directories/list, so a listing of nothing tells: 200 from 1.0.19, gin's plain 404
// before. Asked once per sandbox; the answer is cached until the endpoint is forgotten.
Result<bool> ExecdBefore1019(EndpointCache& cache, const std::string& sandbox_id,
                             opensandbox::ExecdClient& execd, const CancelToken* cancel);

}  // namespace abx::core

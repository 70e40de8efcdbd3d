#pragma once
// provider_options.volumes of sandbox.create read from EPP params (docs/epp1.md §3): the
// server's volume objects in snake_case. Every type error, unknown key and broken server
// rule is -32602 naming the field ("provider_options.volumes[0].host.path"), before
// anything is sent.

#include <vector>

#include <rapidjson/document.h>

#include "bridge/base/error.h"
#include "bridge/core/sandboxes/volumes.h"

namespace abx::epp {

Result<std::vector<core::Volume>> ReadVolumes(const rapidjson::Value& value);

}  // namespace abx::epp

#pragma once
// The warm pool's state (core/sandboxes/warm_pool.h) as proto's PoolState, for Bridge.Stats and
// Sandboxes.PoolStatus: the credential as its label, never the key.

#include "bridge/core/bridge_core.h"
#include "bridge/core/sandboxes/warm_pool.h"
#include "proto/sandboxes.pb.h"

namespace abx::api {

inline void ToProto(const core::BridgeCore& core, const core::WarmPool::ScopedState& s,
                    abx::opensandbox::v1::PoolState* out) {
  out->set_template_(s.template_name);
  out->set_server(s.server);
  out->set_credential(core.CredentialLabel(s.scope));
  out->set_target(s.state.target);
  out->set_ready(s.state.ready);
  out->set_creating(s.state.creating);
  out->set_taken(s.state.taken);
  out->set_last_error(s.state.last_error);
}

}  // namespace abx::api

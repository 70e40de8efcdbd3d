#pragma once

// The answer of a /code run or a bash session run (docs/opensandbox.md §2.5): `init`
// naming the context or session, `ping` at once and every 3 s, then what the run's
// thread puts into its EventPipe, the stream closed right after the last event (no grace
// period, unlike /command). The reset_stream_after_events fault applies.

#include <httplib.h>

#include <functional>
#include <memory>
#include <string>

#include "tests/fake-opensandbox/event_pipe.h"
#include "tests/fake-opensandbox/execd_context.h"

namespace fake_opensandbox {

// Writes `bytes` (whole events) to the sink, honouring the reset_stream_after_events
// fault: `*events_left` < 0 means no fault, else the events still to send. False when
// the stream must end now (the client is gone, or the fault fired: the connection is
// then cut without the final chunk). Used by every execd event stream.
bool WriteEvents(int64_t* events_left, httplib::DataSink& sink, const std::string& bytes);

// `events` null: the stream holds init, ping and `refusal` (a bare error object, sent
// as gin appends it: unframed), then ends. `on_client_gone` (may be null) runs when the
// client leaves before the stream ended.
void StreamEvents(const std::string& id, std::shared_ptr<EventPipe> events, std::string refusal,
                  std::function<void()> on_client_gone, ExecdContext* context, httplib::Response& res);

}  // namespace fake_opensandbox

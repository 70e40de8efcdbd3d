#pragma once

// Running a bound listener's accept loop on a thread of its own.
//
// cpp-httplib's stop() does nothing until the accept loop has begun (it acts only once
// is_running() holds), and the loop, once begun, runs until stop(). A listener stopped
// right after its thread was made, before that thread ran (a short test on a loaded
// machine), kept listening for ever, and whoever joined its thread waited with it.

#include <httplib.h>

#include <thread>

namespace fake_opensandbox {

// Starts `server`'s accept loop (it is bound already) on a new thread and returns that
// thread once the loop runs, so that stop() ends it; or once the loop has ended already.
std::thread ListenInBackground(httplib::Server& server);

}  // namespace fake_opensandbox

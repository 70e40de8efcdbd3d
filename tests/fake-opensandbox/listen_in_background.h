#pragma once

// Running a bound listener's accept loop on a thread of its own.
//
// cpp-httplib's stop() acts only once the accept loop has begun (is_running()), and the
// loop, once begun, runs until stop(): a stop() that comes before the loop's thread has
// run is lost, and the join after it waits for ever. So the loop is running before its
// owner may stop it.

#include <httplib.h>

#include <thread>

namespace fake_opensandbox {

// Starts `server`'s accept loop (it is bound already) on a new thread and returns that
// thread once the loop runs, so that stop() ends it; or once the loop has ended already.
std::thread ListenInBackground(httplib::Server& server);

}  // namespace fake_opensandbox

#pragma once

// Route registration of the execd listener, one function per group of routes.

#include <httplib.h>

#include "tests/fake-opensandbox/execd_context.h"

namespace fake_opensandbox {

void RegisterCommandRoutes(httplib::Server& server, ExecdContext* context);    // /command...
void RegisterFileRoutes(httplib::Server& server, ExecdContext* context);       // /files/...
void RegisterUploadRoute(httplib::Server& server, ExecdContext* context);      // /files/upload
void RegisterDownloadRoute(httplib::Server& server, ExecdContext* context);    // /files/download
void RegisterDirectoryRoutes(httplib::Server& server, ExecdContext* context);  // /directories
void RegisterMetricsRoutes(httplib::Server& server, ExecdContext* context);    // /metrics
void RegisterCodeRoutes(httplib::Server& server, ExecdContext* context);       // /code...
void RegisterSessionRoutes(httplib::Server& server, ExecdContext* context);    // /session...
void RegisterPtyRoutes(httplib::Server& server, ExecdContext* context);        // /pty...

// DELETE /command?id= and DELETE /code?id=: one interrupt, which looks the id up as a
// code context, then as a command, then as a bash session, which it deletes (execd's
// order).
void HandleExecdInterrupt(const httplib::Request& req, httplib::Response& res,
                          ExecdContext* context);
// Deletes a bash session (the interrupt's third lookup); false when there is none.
bool DeleteBashSession(ExecdContext* context, const std::string& id);
// SIGINT to a code context's kernel; false when there is no such context.
bool InterruptCodeContext(ExecdContext* context, const std::string& id);
// POST /code without a language: the code runs as a foreground command (`bash -c`),
// its stream ending right after the terminal event.
void RunCodeAsCommand(const std::string& code, ExecdContext* context, httplib::Response& res);
// /proxy/<P>/... to 127.0.0.1:<P>; must be registered last.
void RegisterPortProxyRoute(httplib::Server& server, ExecdContext* context);

// Answers `status` with execd's {"code","message"} body.
void SendExecdError(httplib::Response& res, int status, const char* code,
                    const std::string& message);
// A refusal of a streamed run (/code, /session/{id}/run) found after execd set up the
// event stream: before 1.0.17 the headers were already out, so the error object is the
// only line of an HTTP 200 event stream; from 1.0.17 (31484053) a 500 JSON answer.
void SendRunRefusal(httplib::Response& res, const ExecdRelease& release, const char* code,
                    const std::string& message);

}  // namespace fake_opensandbox

namespace fake_opensandbox {

// Maps a client path into the sandbox; on failure answers 400 and returns false.
bool MapPathOrReject(ExecdContext* context, const std::string& path,
                     SandboxPaths::Mapped* mapped, httplib::Response& res);
// The same for a route that writes: a path on a read-only volume is refused as the
// kernel refuses the write (EROFS), with `what` naming the operation in the message.
bool MapWritablePathOrReject(ExecdContext* context, const std::string& path, const char* what,
                             SandboxPaths::Mapped* mapped, httplib::Response& res);
// A volume's mount path cannot be removed or renamed (EBUSY, as the kernel answers for a
// mount point): true, with the answer sent, when `mapped` is one.
bool RefuseMountPoint(const SandboxPaths::Mapped& mapped, const std::string& path, const char* what,
                      httplib::Response& res);

// mkdir -p; returns false (errno set) on failure.
bool MakeDirectories(const std::string& host_path, mode_t mode);

// execd's ChmodFile: a decimal-written octal mode (0 = leave as is) first, then the
// ownership as `release` sets it (ExecdRelease::chown_only_named): from 1.0.19 a chown
// only to the names given, an unknown one an error; before, unknown names only logged
// and, with neither name known, a chown to execd's own uid:gid. Returns false with a
// message on failure.
bool ApplyOwnershipAndMode(const std::string& host_path, const std::string& owner,
                           const std::string& group, long long mode_decimal,
                           const ExecdRelease& release, std::string* error);

}  // namespace fake_opensandbox

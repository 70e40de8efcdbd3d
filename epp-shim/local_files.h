#pragma once
// The shim's part of files.transfer (docs/ARCHITECTURE.md "Local files"): the bridge
// never opens a path the host named, so it asks the shim, which runs with the host's
// credentials, mount namespace and umask, to open, create and rename local files. An
// opened file's descriptor goes to the bridge over its descriptor socket (SCM_RIGHTS,
// under the request's token); the bridge moves the bytes, and no byte crosses the shim.
//
// A download lands in a new file beside its target (".<name>.abx-<random>.part",
// O_EXCL, O_NOFOLLOW, 0600), renamed onto the target only at COMMIT. Every new file
// not yet renamed is removed at DISCARD, when the bridge goes away (DiscardAll) and when
// the shim ends (the destructor), so a failure leaves nothing behind.
//
// Errors are answered with the errno's name and a sentence; the bridge makes them the
// host's error (E8005, E8007, E8008, each naming local_path).

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

#include "epp-shim/bridge_messages.h"

namespace abx {

class LocalFiles {
 public:
  LocalFiles();
  ~LocalFiles();  // DiscardAll
  LocalFiles(const LocalFiles&) = delete;
  LocalFiles& operator=(const LocalFiles&) = delete;

  // Does what `request` asks; the reply to send, none for a DISCARD.
  std::optional<LocalFileReplyMessage> Handle(const LocalFileRequestMessage& request);
  // Removes every new file not yet renamed into place.
  void DiscardAll();
  size_t pending() const { return downloads_.size(); }

  // New files not yet renamed, in every LocalFiles of the process: what a stop signal's
  // handler reads (main.cc) to know whether it must leave their removal to the loop.
  static volatile sig_atomic_t open_downloads;

 private:
  struct Download {
    int fd = -1;
    std::string temp_path;
    std::string target;
    bool overwrite = false;
  };

  LocalFileReplyMessage OpenForDownload(const LocalFileRequestMessage& request);
  LocalFileReplyMessage OpenForUpload(const LocalFileRequestMessage& request);
  LocalFileReplyMessage Commit(const LocalFileRequestMessage& request);
  void Discard(const std::string& token);
  void CountOpenDownloads();

  const mode_t umask_;
  std::map<std::string, Download> downloads_;  // by token, opened and not yet renamed
};

}  // namespace abx

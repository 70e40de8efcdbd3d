#include "tests/fake-opensandbox/accepted_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace fake_opensandbox {
namespace {

bool Matches(const sockaddr_storage& address, const std::string& ip, int port) {
  char text[INET6_ADDRSTRLEN] = {};
  int got_port = -1;
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    got_port = ntohs(in->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    got_port = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  return got_port == port && ip == text;
}

}  // namespace

int AcceptedSocketOf(const httplib::Request& req) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const int fd = std::atoi(entry->d_name);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local = {}, peer = {};
    socklen_t local_size = sizeof local, peer_size = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) continue;
    if (Matches(local, req.local_addr, req.local_port) && Matches(peer, req.remote_addr, req.remote_port)) {
      found = fd;
      break;
    }
  }
  closedir(dir);
  return found;
}

}  // namespace fake_opensandbox

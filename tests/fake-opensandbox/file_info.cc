#include "tests/fake-opensandbox/file_info.h"

#include <grp.h>
#include <pwd.h>

#include <vector>

#include "tests/fake-opensandbox/server_clock.h"

namespace fake_opensandbox {
namespace {

TimePoint FromTimespec(const struct timespec& ts) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(
      std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

const char* TypeOf(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

}  // namespace

int ModeToDecimalOctal(mode_t mode) {
  int perm = static_cast<int>(mode & 0777);
  return (perm >> 6) * 100 + ((perm >> 3) & 7) * 10 + (perm & 7);
}

bool DecimalOctalToMode(long long decimal, mode_t* mode) {
  if (decimal < 0) return false;
  mode_t result = 0;
  mode_t scale = 1;
  while (decimal > 0) {
    int digit = static_cast<int>(decimal % 10);
    if (digit > 7) return false;
    result += static_cast<mode_t>(digit) * scale;
    scale *= 8;
    decimal /= 10;
  }
  *mode = result;
  return true;
}

std::string UserName(uid_t uid) {
  struct passwd pw, *result = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &result) == 0 && result) return pw.pw_name;
  return std::to_string(uid);
}

std::string GroupName(gid_t gid) {
  struct group gr, *result = nullptr;
  std::vector<char> buf(16384);
  if (getgrgid_r(gid, &gr, buf.data(), buf.size(), &result) == 0 && result) return gr.gr_name;
  return std::to_string(gid);
}

bool LookupUser(const std::string& name, uid_t* uid) {
  struct passwd pw, *result = nullptr;
  std::vector<char> buf(16384);
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &result) == 0 && result) {
    *uid = pw.pw_uid;
    return true;
  }
  return false;
}

bool LookupGroup(const std::string& name, gid_t* gid) {
  struct group gr, *result = nullptr;
  std::vector<char> buf(16384);
  if (getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &result) == 0 && result) {
    *gid = gr.gr_gid;
    return true;
  }
  return false;
}

void WriteFileInfoFromStat(GoJsonWriter& w, const struct stat& st,
                           const std::string& sandbox_path, bool typed) {
  w.StartObject();
  w.Key("path").String(sandbox_path);
  if (typed) w.Key("type").String(TypeOf(st.st_mode));
  w.Key("size").Int(static_cast<int64_t>(st.st_size));
  w.Key("modified_at").String(FormatGoTime(FromTimespec(st.st_mtim)));
  w.Key("created_at").String(FormatGoTime(FromTimespec(st.st_ctim)));
  w.Key("owner").String(UserName(st.st_uid));
  w.Key("group").String(GroupName(st.st_gid));
  w.Key("mode").Int(ModeToDecimalOctal(st.st_mode));
  w.EndObject();
}

bool WriteFileInfo(GoJsonWriter& w, const std::string& host_path,
                   const std::string& sandbox_path, bool typed) {
  struct stat st;
  if ((typed ? lstat(host_path.c_str(), &st) : stat(host_path.c_str(), &st)) != 0) return false;
  WriteFileInfoFromStat(w, st, sandbox_path, typed);
  return true;
}

}  // namespace fake_opensandbox

#include "bridge/base/log.h"

#include <cstdio>
#include <ctime>
#include <mutex>
#include <set>
#include <sys/time.h>

#include "bridge/base/json.h"

namespace abx::log {
namespace {

std::mutex& Mu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}

std::set<std::string>& Secrets() {
  static auto* secrets = new std::set<std::string>;
  return *secrets;
}

std::string ScrubLocked(std::string text) {
  for (const std::string& secret : Secrets()) {
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3)) {
      text.replace(at, secret.size(), "***");
    }
  }
  return text;
}

void Write(std::string_view level, std::string_view event, std::initializer_list<Field> fields) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm utc;
  gmtime_r(&tv.tv_sec, &utc);
  char when[40];
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long>(tv.tv_usec / 1000));
  std::string line = "{\"ts\":\"" + std::string(when) + "\",\"level\":\"" + std::string(level) +
                     "\",\"event\":" + json::Quote(event);
  for (const Field& f : fields) line += "," + json::Quote(f.first) + ":" + json::Quote(f.second);
  line += "}\n";
  std::lock_guard<std::mutex> lock(Mu());
  line = ScrubLocked(std::move(line));
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void Info(std::string_view event, std::initializer_list<Field> fields) {
  Write("info", event, fields);
}
void Warn(std::string_view event, std::initializer_list<Field> fields) {
  Write("warn", event, fields);
}
void Error(std::string_view event, std::initializer_list<Field> fields) {
  Write("error", event, fields);
}

void RegisterSecret(const std::string& secret) {
  // A value configured with blanks around it is used trimmed (config.cc): both forms.
  const size_t first = secret.find_first_not_of(" \t\r\n");
  const size_t last = secret.find_last_not_of(" \t\r\n");
  if (first != std::string::npos && (first > 0 || last + 1 < secret.size())) {
    RegisterSecret(secret.substr(first, last - first + 1));
  }
  if (secret.size() < 4) return;
  std::lock_guard<std::mutex> lock(Mu());
  Secrets().insert(secret);
  // JSON-escaped forms are what a log line would hold.
  std::string quoted = json::Quote(secret);
  Secrets().insert(quoted.substr(1, quoted.size() - 2));
}

std::string Scrub(std::string text) {
  std::lock_guard<std::mutex> lock(Mu());
  return ScrubLocked(std::move(text));
}

}  // namespace abx::log

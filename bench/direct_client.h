#pragma once
// The baseline HTTP client: one libcurl easy handle, so one kept-alive connection per
// host, talking straight to the fake's lifecycle API and execd. No pool, no threads, no
// parsing beyond what the figure needs: the floor of what any client of this server can do.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace abx::bench {

struct HttpResult {
  bool ok = false;      // the exchange completed (any status)
  long status = 0;
  std::string body;     // unless streamed
  std::string error;    // curl's error text when !ok
  long new_connections = 0;  // TCP connections this exchange opened (0 = reused)
};

class DirectClient {
 public:
  DirectClient();
  ~DirectClient();
  DirectClient(const DirectClient&) = delete;
  DirectClient& operator=(const DirectClient&) = delete;

  // Headers sent with every request, "Name: value".
  void set_default_headers(std::vector<std::string> headers) { default_headers_ = std::move(headers); }

  HttpResult Get(const std::string& url, const std::vector<std::string>& headers = {});
  // The same, the body appended to `*body` instead (a buffer the caller sized and touched
  // beforehand, as the files scenario receives ours: no growth or page faults measured).
  HttpResult GetInto(const std::string& url, const std::vector<std::string>& headers, std::string* body);
  HttpResult Post(const std::string& url, const std::string& body,
                  const std::vector<std::string>& headers = {});
  HttpResult Patch(const std::string& url, const std::string& body,
                   const std::vector<std::string>& headers = {});
  // The body goes to `on_data` as it arrives instead of into HttpResult::body.
  HttpResult PostStreaming(const std::string& url, const std::string& body,
                           const std::vector<std::string>& headers,
                           const std::function<void(const char*, size_t)>& on_data);
  // execd's POST /files/upload: one metadata part (a file part, as execd requires) and one
  // file part with `data`.
  HttpResult Upload(const std::string& execd_base, const std::string& path, std::string_view data);
  // The same with the file part read from `local_path` as it is sent (curl -F).
  HttpResult UploadFile(const std::string& execd_base, const std::string& path, const std::string& local_path);
  // A GET whose body is written to `fd` as it arrives (curl -o).
  HttpResult GetToFile(const std::string& url, const std::vector<std::string>& headers, int fd);

 private:
  // execd's form: the metadata part naming `path`, then the file part `fill` gives its
  // content (a curl_mimepart*).
  HttpResult PostUploadForm(const std::string& execd_base, const std::string& path,
                            const std::function<void(void* file_part)>& fill);
  HttpResult Perform(const std::string& method, const std::string& url, const std::string* body,
                     const std::vector<std::string>& headers,
                     const std::function<void(const char*, size_t)>* on_data, void* mime,
                     std::string* into = nullptr);

  void* curl_;  // CURL*
  std::vector<std::string> default_headers_;
};

// RFC 3986 percent-encoding of a query value.
std::string QueryEscape(std::string_view value);

}  // namespace abx::bench

#include "bench/direct_client.h"

#include <curl/curl.h>

#include <unistd.h>

#include <cstdio>

namespace abx::bench {
namespace {

struct Sink {
  std::string* body;
  const std::function<void(const char*, size_t)>* on_data;
};

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  if (sink->on_data) {
    (*sink->on_data)(data, n);
  } else {
    sink->body->append(data, n);
  }
  return n;
}

}  // namespace

DirectClient::DirectClient() : curl_(curl_easy_init()) {}

DirectClient::~DirectClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResult DirectClient::Perform(const std::string& method, const std::string& url,
                                 const std::string* body, const std::vector<std::string>& headers,
                                 const std::function<void(const char*, size_t)>* on_data, void* mime,
                                 std::string* into) {
  CURL* curl = static_cast<CURL*>(curl_);
  HttpResult result;
  Sink sink{into != nullptr ? into : &result.body, on_data};
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 256L << 10);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_PROXY, "");  // loopback only, never through a proxy
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 120000L);
  curl_slist* list = nullptr;
  for (const std::string& h : default_headers_) list = curl_slist_append(list, h.c_str());
  for (const std::string& h : headers) list = curl_slist_append(list, h.c_str());
  // No "Expect: 100-continue" round trip on large uploads.
  list = curl_slist_append(list, "Expect:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  if (mime) {
    curl_easy_setopt(curl, CURLOPT_MIMEPOST, static_cast<curl_mime*>(mime));
  } else if (body) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  if (method != "GET" && method != "POST") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(list);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &result.new_connections);
  if (rc != CURLE_OK) {
    result.error = curl_easy_strerror(rc);
    return result;
  }
  result.ok = true;
  return result;
}

HttpResult DirectClient::Get(const std::string& url, const std::vector<std::string>& headers) {
  return Perform("GET", url, nullptr, headers, nullptr, nullptr);
}

HttpResult DirectClient::GetInto(const std::string& url, const std::vector<std::string>& headers,
                                 std::string* body) {
  body->clear();  // keeps its capacity
  return Perform("GET", url, nullptr, headers, nullptr, nullptr, body);
}

HttpResult DirectClient::Post(const std::string& url, const std::string& body,
                              const std::vector<std::string>& headers) {
  return Perform("POST", url, &body, headers, nullptr, nullptr);
}

HttpResult DirectClient::Patch(const std::string& url, const std::string& body,
                               const std::vector<std::string>& headers) {
  return Perform("PATCH", url, &body, headers, nullptr, nullptr);
}

HttpResult DirectClient::PostStreaming(const std::string& url, const std::string& body,
                                       const std::vector<std::string>& headers,
                                       const std::function<void(const char*, size_t)>& on_data) {
  return Perform("POST", url, &body, headers, &on_data, nullptr);
}

HttpResult DirectClient::PostUploadForm(const std::string& execd_base, const std::string& path,
                                        const std::function<void(void* file_part)>& fill) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_mime* mime = curl_mime_init(curl);
  curl_mimepart* meta = curl_mime_addpart(mime);
  const std::string metadata = "{\"path\":\"" + path + "\"}";  // bench paths need no escaping
  curl_mime_name(meta, "metadata");
  curl_mime_filename(meta, "metadata");
  curl_mime_type(meta, "application/json");
  curl_mime_data(meta, metadata.data(), metadata.size());
  curl_mimepart* file = curl_mime_addpart(mime);
  curl_mime_name(file, "file");
  fill(file);
  curl_mime_filename(file, "data");  // after fill: curl_mime_filedata names the part too
  curl_mime_type(file, "application/octet-stream");
  HttpResult result = Perform("POST", execd_base + "/files/upload", nullptr, {}, nullptr, mime);
  curl_mime_free(mime);
  return result;
}

HttpResult DirectClient::Upload(const std::string& execd_base, const std::string& path,
                                std::string_view data) {
  return PostUploadForm(execd_base, path, [&](void* part) {
    curl_mime_data(static_cast<curl_mimepart*>(part), data.data(), data.size());
  });
}

HttpResult DirectClient::UploadFile(const std::string& execd_base, const std::string& path,
                                    const std::string& local_path) {
  return PostUploadForm(execd_base, path, [&](void* part) {
    curl_mime_filedata(static_cast<curl_mimepart*>(part), local_path.c_str());
  });
}

HttpResult DirectClient::GetToFile(const std::string& url, const std::vector<std::string>& headers, int fd) {
  bool failed = false;
  const std::function<void(const char*, size_t)> to_file = [&](const char* data, size_t size) {
    while (size > 0 && !failed) {
      const ssize_t wrote = write(fd, data, size);
      if (wrote <= 0) failed = true;
      else data += wrote, size -= static_cast<size_t>(wrote);
    }
  };
  HttpResult result = Perform("GET", url, nullptr, headers, &to_file, nullptr);
  if (failed) {
    result.ok = false;
    result.error = "writing the file failed";
  }
  return result;
}

std::string QueryEscape(std::string_view value) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace abx::bench

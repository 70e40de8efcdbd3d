#include "bridge/core/sandboxes/volumes.h"

#include <cctype>
#include <set>

#include "bridge/base/json.h"

namespace abx::core {
namespace {

using json::Quote;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// A Kubernetes DNS label: what the server wants of a volume's name and a claim's name
// ([a-z0-9]([-a-z0-9]*[a-z0-9])?). Checked by hand: the text is the caller's, of any
// length, and a backtracking regex would recurse once per character.
bool IsDnsLabel(const std::string& text, size_t max_length) {
  if (text.empty() || text.size() > max_length) return false;
  if (!IsLowerAlnum(text.front()) || !IsLowerAlnum(text.back())) return false;
  for (char c : text) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// A Kubernetes quantity as the server's pattern has it: digits, an optional fraction,
// an optional binary suffix (^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei)?$).
bool IsStorageSize(const std::string& text) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > start;
  };
  if (!digits()) return false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i == text.size()) return true;
  static const char* const kSuffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  for (const char* suffix : kSuffixes) {
    if (text.compare(i, std::string::npos, suffix) == 0) return true;
  }
  return false;
}

Status CheckSubPath(const std::string& sub_path, const std::string& field) {
  if (sub_path.empty()) return OkStatus();
  if (sub_path[0] == '/') return InvalidParams(field, field + " must be a relative path");
  size_t start = 0;
  while (start <= sub_path.size()) {
    size_t slash = sub_path.find('/', start);
    if (slash == std::string::npos) slash = sub_path.size();
    if (sub_path.compare(start, slash - start, "..") == 0 && slash - start == 2) {
      return InvalidParams(field, field + " must not contain '..'");
    }
    start = slash + 1;
  }
  return OkStatus();
}

Status CheckHostPath(const std::string& path, const std::string& field) {
  const bool drive = path.size() >= 3 && std::isalpha(static_cast<unsigned char>(path[0])) && path[1] == ':' &&
                     (path[2] == '\\' || path[2] == '/');
  if (path.empty() || (path[0] != '/' && !drive)) {
    return InvalidParams(field, field + " must be an absolute path");
  }
  // The server's own tests: any "/.." (even "/..b"), a doubled or a trailing slash.
  if (path.find("/..") != std::string::npos) return InvalidParams(field, field + " must not contain '..'");
  if (path.find("//") != std::string::npos || (path.size() > 1 && path.back() == '/')) {
    return InvalidParams(field, field + " must be a normalized path (no doubled or trailing '/')");
  }
  return OkStatus();
}

Status CheckPvc(const Volume::Pvc& pvc, const std::string& at) {
  if (!IsDnsLabel(pvc.claim_name, 253)) {
    return InvalidParams(at + ".claim_name", at + ".claim_name must be a DNS label (lowercase letters, digits, '-')");
  }
  if (pvc.storage && !IsStorageSize(*pvc.storage)) {
    return InvalidParams(at + ".storage", at + ".storage must be a size such as \"1Gi\"");
  }
  return OkStatus();
}

Status CheckOssfs(const Volume::Ossfs& oss, const std::string& at) {
  // The runtime's bucket rule ([a-z0-9]([a-z0-9-]{1,61}[a-z0-9])), stricter than the
  // schema's 3 to 63 characters.
  const std::string& bucket = oss.bucket;
  if (bucket.size() < 3 || bucket.size() > 63 || !IsDnsLabel(bucket, 63)) {
    return InvalidParams(at + ".bucket", at + ".bucket must be 3 to 63 lowercase letters, digits or '-', "
                                              "starting and ending with a letter or digit");
  }
  if (oss.endpoint.empty()) return InvalidParams(at + ".endpoint", at + ".endpoint is required");
  if (oss.access_key_id.empty()) return InvalidParams(at + ".access_key_id", at + ".access_key_id is required");
  // The message names the field, never its value.
  if (oss.access_key_secret.empty()) {
    return InvalidParams(at + ".access_key_secret", at + ".access_key_secret is required");
  }
  if (oss.version && *oss.version != "1.0" && *oss.version != "2.0") {
    return InvalidParams(at + ".version", at + ".version must be \"1.0\" or \"2.0\"");
  }
  if (oss.options) {
    for (size_t i = 0; i < oss.options->size(); ++i) {
      const std::string& option = (*oss.options)[i];
      const std::string field = at + ".options[" + std::to_string(i) + "]";
      const size_t first = option.find_first_not_of(" \t\r\n");
      if (first == std::string::npos) return InvalidParams(field, field + " must not be empty");
      if (option[first] == '-') return InvalidParams(field, field + " is an option's payload, without a leading '-'");
    }
  }
  return OkStatus();
}

}  // namespace

Status CheckVolumes(const std::vector<Volume>& volumes) {
  std::set<std::string> names;
  for (size_t i = 0; i < volumes.size(); ++i) {
    const Volume& v = volumes[i];
    const std::string at = "volumes[" + std::to_string(i) + "]";
    if (!IsDnsLabel(v.name, 63)) {
      return InvalidParams(at + ".name",
                           at + ".name must be a DNS label of at most 63 characters (lowercase letters, digits, '-')");
    }
    if (!names.insert(v.name).second) {
      return InvalidParams(at + ".name", at + ".name repeats the volume name \"" + v.name + "\"");
    }
    if (v.mount_path.empty() || v.mount_path[0] != '/') {
      return InvalidParams(at + ".mount_path", at + ".mount_path must be an absolute path");
    }
    if (Status s = CheckSubPath(v.sub_path, at + ".sub_path"); !s.ok()) return s;
    const int backends = (v.host ? 1 : 0) + (v.pvc ? 1 : 0) + (v.ossfs ? 1 : 0);
    if (backends != 1) {
      return InvalidParams(at, at + " must have exactly one of host, pvc and ossfs");
    }
    if (v.host) {
      if (Status s = CheckHostPath(v.host->path, at + ".host.path"); !s.ok()) return s;
    }
    if (v.pvc) {
      if (Status s = CheckPvc(*v.pvc, at + ".pvc"); !s.ok()) return s;
    }
    if (v.ossfs) {
      if (Status s = CheckOssfs(*v.ossfs, at + ".ossfs"); !s.ok()) return s;
    }
  }
  return OkStatus();
}

std::string VolumesJson(const std::vector<Volume>& volumes) {
  std::string out = "[";
  for (size_t i = 0; i < volumes.size(); ++i) {
    const Volume& v = volumes[i];
    if (i) out += ",";
    out += "{\"name\":" + Quote(v.name) + ",\"mountPath\":" + Quote(v.mount_path);
    if (v.read_only) out += std::string(",\"readOnly\":") + (*v.read_only ? "true" : "false");
    if (!v.sub_path.empty()) out += ",\"subPath\":" + Quote(v.sub_path);
    if (v.host) out += ",\"host\":{\"path\":" + Quote(v.host->path) + "}";
    if (v.pvc) {
      const Volume::Pvc& p = *v.pvc;
      out += ",\"pvc\":{\"claimName\":" + Quote(p.claim_name);
      if (p.create_if_not_exists) out += std::string(",\"createIfNotExists\":") + (*p.create_if_not_exists ? "true" : "false");
      if (p.delete_on_sandbox_termination) {
        out += std::string(",\"deleteOnSandboxTermination\":") + (*p.delete_on_sandbox_termination ? "true" : "false");
      }
      if (p.storage_class) out += ",\"storageClass\":" + Quote(*p.storage_class);
      if (p.storage) out += ",\"storage\":" + Quote(*p.storage);
      if (p.access_modes) out += ",\"accessModes\":" + json::ArrayOfStrings(*p.access_modes);
      out += "}";
    }
    if (v.ossfs) {
      const Volume::Ossfs& o = *v.ossfs;
      out += ",\"ossfs\":{\"bucket\":" + Quote(o.bucket) + ",\"endpoint\":" + Quote(o.endpoint) +
             ",\"accessKeyId\":" + Quote(o.access_key_id) + ",\"accessKeySecret\":" + Quote(o.access_key_secret);
      if (o.version) out += ",\"version\":" + Quote(*o.version);
      if (o.options) out += ",\"options\":" + json::ArrayOfStrings(*o.options);
      out += "}";
    }
    out += "}";
  }
  return out + "]";
}

}  // namespace abx::core

#include "bridge/api/epp/volume_params.h"

#include <initializer_list>
#include <string>

namespace abx::epp {
namespace {

constexpr const char* kRoot = "provider_options.volumes";

// One JSON object of the request, read field by field; `at` is its path for messages.
class ObjectReader {
 public:
  ObjectReader(const rapidjson::Value& object, std::string at) : object_(object), at_(std::move(at)) {}

  // -32602 for a key outside `known` (a misspelt key would otherwise be dropped silently).
  Status OnlyKnown(std::initializer_list<const char*> known) const {
    for (auto& m : object_.GetObject()) {
      const std::string key(m.name.GetString(), m.name.GetStringLength());
      bool found = false;
      for (const char* k : known) found = found || key == k;
      if (!found) return InvalidParams(Field(key.c_str()), Field(key.c_str()) + " is not a volume field");
    }
    return OkStatus();
  }
  const rapidjson::Value* Get(const char* key) const {
    auto it = object_.FindMember(key);
    return it == object_.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
  }
  Status String(const char* key, bool required, std::string* out) const {
    const rapidjson::Value* v = Get(key);
    if (!v) return required ? InvalidParams(Field(key), Field(key) + " is required") : OkStatus();
    if (!v->IsString()) return InvalidParams(Field(key), Field(key) + " must be a string");
    out->assign(v->GetString(), v->GetStringLength());
    return OkStatus();
  }
  Status OptionalString(const char* key, std::optional<std::string>* out) const {
    if (!Get(key)) return OkStatus();
    std::string text;
    if (Status s = String(key, false, &text); !s.ok()) return s;
    *out = std::move(text);
    return OkStatus();
  }
  Status OptionalBool(const char* key, std::optional<bool>* out) const {
    const rapidjson::Value* v = Get(key);
    if (!v) return OkStatus();
    if (!v->IsBool()) return InvalidParams(Field(key), Field(key) + " must be true or false");
    *out = v->GetBool();
    return OkStatus();
  }
  Status OptionalStrings(const char* key, std::optional<std::vector<std::string>>* out) const {
    const rapidjson::Value* v = Get(key);
    if (!v) return OkStatus();
    if (!v->IsArray()) return InvalidParams(Field(key), Field(key) + " must be an array of strings");
    std::vector<std::string> items;
    for (auto& item : v->GetArray()) {
      if (!item.IsString()) return InvalidParams(Field(key), Field(key) + " must be an array of strings");
      items.emplace_back(item.GetString(), item.GetStringLength());
    }
    *out = std::move(items);
    return OkStatus();
  }
  // The nested object `key`, or null when absent; -32602 when it is not an object.
  Result<const rapidjson::Value*> Object(const char* key) const {
    const rapidjson::Value* v = Get(key);
    if (v && !v->IsObject()) return InvalidParams(Field(key), Field(key) + " must be an object");
    return v;
  }
  std::string Field(const char* key) const { return at_ + "." + key; }

 private:
  const rapidjson::Value& object_;
  std::string at_;
};

#define ABX_CHECK(expr)                   \
  if (Status s = (expr); !s.ok()) return s.error()

Result<core::Volume::Host> ReadHost(const ObjectReader& r) {
  ABX_CHECK(r.OnlyKnown({"path"}));
  core::Volume::Host host;
  ABX_CHECK(r.String("path", true, &host.path));
  return host;
}

Result<core::Volume::Pvc> ReadPvc(const ObjectReader& r) {
  ABX_CHECK(r.OnlyKnown({"claim_name", "create_if_not_exists", "delete_on_sandbox_termination", "storage_class",
                         "storage", "access_modes"}));
  core::Volume::Pvc pvc;
  ABX_CHECK(r.String("claim_name", true, &pvc.claim_name));
  ABX_CHECK(r.OptionalBool("create_if_not_exists", &pvc.create_if_not_exists));
  ABX_CHECK(r.OptionalBool("delete_on_sandbox_termination", &pvc.delete_on_sandbox_termination));
  ABX_CHECK(r.OptionalString("storage_class", &pvc.storage_class));
  ABX_CHECK(r.OptionalString("storage", &pvc.storage));
  ABX_CHECK(r.OptionalStrings("access_modes", &pvc.access_modes));
  return pvc;
}

Result<core::Volume::Ossfs> ReadOssfs(const ObjectReader& r) {
  ABX_CHECK(r.OnlyKnown({"bucket", "endpoint", "access_key_id", "access_key_secret", "version", "options"}));
  core::Volume::Ossfs oss;
  ABX_CHECK(r.String("bucket", true, &oss.bucket));
  ABX_CHECK(r.String("endpoint", true, &oss.endpoint));
  ABX_CHECK(r.String("access_key_id", true, &oss.access_key_id));
  ABX_CHECK(r.String("access_key_secret", true, &oss.access_key_secret));
  ABX_CHECK(r.OptionalString("version", &oss.version));
  ABX_CHECK(r.OptionalStrings("options", &oss.options));
  return oss;
}

Result<core::Volume> ReadVolume(const rapidjson::Value& value, const std::string& at) {
  if (!value.IsObject()) return InvalidParams(at, at + " must be an object");
  ObjectReader r(value, at);
  ABX_CHECK(r.OnlyKnown({"name", "mount_path", "read_only", "sub_path", "host", "pvc", "ossfs"}));
  core::Volume volume;
  ABX_CHECK(r.String("name", true, &volume.name));
  ABX_CHECK(r.String("mount_path", true, &volume.mount_path));
  ABX_CHECK(r.OptionalBool("read_only", &volume.read_only));
  ABX_CHECK(r.String("sub_path", false, &volume.sub_path));
  ABX_ASSIGN_OR_RETURN(const rapidjson::Value* host, r.Object("host"));
  if (host) {
    ABX_ASSIGN_OR_RETURN(volume.host, ReadHost(ObjectReader(*host, r.Field("host"))));
  }
  ABX_ASSIGN_OR_RETURN(const rapidjson::Value* pvc, r.Object("pvc"));
  if (pvc) {
    ABX_ASSIGN_OR_RETURN(volume.pvc, ReadPvc(ObjectReader(*pvc, r.Field("pvc"))));
  }
  ABX_ASSIGN_OR_RETURN(const rapidjson::Value* ossfs, r.Object("ossfs"));
  if (ossfs) {
    ABX_ASSIGN_OR_RETURN(volume.ossfs, ReadOssfs(ObjectReader(*ossfs, r.Field("ossfs"))));
  }
  return volume;
}

#undef ABX_CHECK

}  // namespace

Result<std::vector<core::Volume>> ReadVolumes(const rapidjson::Value& value) {
  if (!value.IsArray()) return InvalidParams(kRoot, std::string(kRoot) + " must be an array of volumes");
  std::vector<core::Volume> volumes;
  for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
    ABX_ASSIGN_OR_RETURN(core::Volume volume,
                         ReadVolume(value[i], std::string(kRoot) + "[" + std::to_string(i) + "]"));
    volumes.push_back(std::move(volume));
  }
  Status checked = core::CheckVolumes(volumes);
  if (!checked.ok()) {
    Error e = checked.error();
    e.field = "provider_options." + e.field;
    e.message = "provider_options." + e.message;
    return e;
  }
  return volumes;
}

}  // namespace abx::epp

#include "common/config_fields.h"

namespace abx::config {

const Field* FindField(std::string_view name) {
  for (const Field& field : kFields) {
    if (name == field.name) return &field;
  }
  return nullptr;
}

std::string OwnVariable(const Field& field) {
  std::string variable = "ABX_OPENSANDBOX_";
  for (const char* c = field.name; *c != '\0'; ++c) {
    variable += (*c >= 'a' && *c <= 'z') ? static_cast<char>(*c - 'a' + 'A') : *c;
  }
  return variable;
}

}  // namespace abx::config

#include "tests/fake-opensandbox/query_params.h"

#include <cctype>
#include <regex>

namespace fake_opensandbox {

// pydantic's lax int from a query/path string; nullopt if it is not an integer.
std::optional<long long> ParseQueryInt(std::string text) {
  while (!text.empty() && isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  size_t start = 0;
  while (start < text.size() && isspace(static_cast<unsigned char>(text[start]))) ++start;
  text = text.substr(start);
  static const std::regex kInt("[-+]?[0-9]{1,18}");
  if (!std::regex_match(text, kInt)) return std::nullopt;
  return std::stoll(text);
}

std::optional<bool> ParseQueryBool(std::string text) {
  for (auto& c : text) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  for (const char* t : {"1", "on", "t", "true", "y", "yes"}) {
    if (text == t) return true;
  }
  for (const char* f : {"0", "off", "f", "false", "n", "no"}) {
    if (text == f) return false;
  }
  return std::nullopt;
}

void AddIntParsingError(ValidationErrors& errors, const ValidationErrors::Loc& loc, const std::string& input) {
  errors.AddWithStringInput("int_parsing", loc,
                            "Input should be a valid integer, unable to parse string as an integer",
                            input);
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

void ParsePaging(const httplib::Request& req, Paging* paging, ValidationErrors* errors) {
  using Loc = ValidationErrors::Loc;
  if (req.has_param("page")) {
    std::string text = req.get_param_value("page");
    auto value = ParseQueryInt(text);
    if (!value) {
      AddIntParsingError(*errors, {std::string("query"), std::string("page")}, text);
    } else if (*value < 1) {
      errors->AddWithStringInput("greater_than_equal", {std::string("query"), std::string("page")},
                                 "Input should be greater than or equal to 1", text, "{\"ge\":1}");
    } else {
      paging->page = *value;
    }
  }
  if (req.has_param("pageSize")) {
    std::string text = req.get_param_value("pageSize");
    auto value = ParseQueryInt(text);
    Loc loc = {std::string("query"), std::string("pageSize")};
    if (!value) {
      AddIntParsingError(*errors, loc, text);
    } else if (*value < 1) {
      errors->AddWithStringInput("greater_than_equal", loc, "Input should be greater than or equal to 1", text,
                                 "{\"ge\":1}");
    } else if (*value > 200) {
      errors->AddWithStringInput("less_than_equal", loc, "Input should be less than or equal to 200", text,
                                 "{\"le\":200}");
    } else {
      paging->page_size = *value;
    }
  }
}

void WritePage(JsonWriter& w, const Paging& paging, size_t total_items,
               const std::function<void(size_t)>& write_item) {
  const long long total = static_cast<long long>(total_items);
  const long long total_pages = (total + paging.page_size - 1) / paging.page_size;
  w.StartObject();
  w.Key("items");
  w.StartArray();
  const long long first = (paging.page - 1) * paging.page_size;
  for (long long i = first; i < total && i < first + paging.page_size; ++i) write_item(static_cast<size_t>(i));
  w.EndArray();
  w.Key("pagination");
  w.StartObject();
  w.Key("page");
  w.Int64(paging.page);
  w.Key("pageSize");
  w.Int64(paging.page_size);
  w.Key("totalItems");
  w.Int64(total);
  w.Key("totalPages");
  w.Int64(total_pages);
  w.Key("hasNextPage");
  w.Bool(paging.page < total_pages);
  w.EndObject();
  w.EndObject();
}

}  // namespace fake_opensandbox

#pragma once

// Query and path parameters as FastAPI reads them (pydantic's lax int and bool, 422
// details), and the page/pageSize pagination every lifecycle list shares
// (docs/opensandbox.md §1.7).

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "tests/fake-opensandbox/lifecycle_errors.h"
#include "tests/fake-opensandbox/lifecycle_json.h"

namespace fake_opensandbox {

// pydantic's lax int from a query/path string; nullopt if it is not an integer.
std::optional<long long> ParseQueryInt(std::string text);
std::optional<bool> ParseQueryBool(std::string text);
void AddIntParsingError(ValidationErrors& errors, const ValidationErrors::Loc& loc, const std::string& input);

std::string Lower(std::string s);

struct Paging {
  long long page = 1;
  long long page_size = 20;
};
// `page` >= 1, `pageSize` 1..200; problems are added to *errors (a 422).
void ParsePaging(const httplib::Request& req, Paging* paging, ValidationErrors* errors);
// {"items":[...],"pagination":{...}}: write_item(i) writes item i of `total`.
void WritePage(JsonWriter& w, const Paging& paging, size_t total, const std::function<void(size_t)>& write_item);

}  // namespace fake_opensandbox

#pragma once
// Reads a server list page by page, newest first, for the provider's own cursor: an
// offset into the server's listing, opaque to the host (sandbox.list, snapshot.list).

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bridge/base/error.h"

namespace abx::core {

// The largest page the server serves (pageSize ≤ 200).
inline constexpr int kServerMaxPageSize = 200;

template <typename Item>
struct OffsetPage {
  std::vector<Item> items;
  std::optional<std::string> next_cursor;  // set when `limit` stopped the read
};

// `fetch(page, page_size)` answers one server page: Result<std::pair<std::vector<Item>,
// bool has_next>>. `limit` 0 reads to the end. A cursor this provider did not give is
// -32602 (cursor).
template <typename Item, typename Fetch>
Result<OffsetPage<Item>> ReadFromCursor(const std::string& cursor, int limit, Fetch fetch) {
  int64_t offset = 0;
  if (!cursor.empty()) {
    char* end = nullptr;
    offset = std::strtoll(cursor.c_str(), &end, 10);
    if (*end != '\0' || offset < 0) return InvalidParams("cursor", "cursor is not one this provider gave");
  }
  OffsetPage<Item> out;
  auto full = [&] { return limit > 0 && static_cast<int>(out.items.size()) == limit; };
  auto stop_here = [&] {
    out.next_cursor = std::to_string(offset + static_cast<int64_t>(out.items.size()));
    return out;
  };
  int page = static_cast<int>(offset / kServerMaxPageSize) + 1;
  size_t skip = static_cast<size_t>(offset % kServerMaxPageSize);
  for (;; ++page, skip = 0) {
    auto result = fetch(page, kServerMaxPageSize);
    if (!result.ok()) return result.error();
    auto& [items, has_next] = result.value();
    for (size_t i = skip; i < items.size(); ++i) {
      if (full()) return stop_here();
      out.items.push_back(std::move(items[i]));
    }
    if (!has_next) return out;
    if (full()) return stop_here();
  }
}

}  // namespace abx::core

#pragma once
// Structured log: one JSON object per line on stderr (which the bridge points at its log
// file beside the socket). Secrets are registered once and scrubbed from every line, so
// a value that slips into a message by mistake still never reaches the log.

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace abx::log {

using Field = std::pair<std::string_view, std::string>;

void Info(std::string_view event, std::initializer_list<Field> fields = {});
void Warn(std::string_view event, std::initializer_list<Field> fields = {});
void Error(std::string_view event, std::initializer_list<Field> fields = {});

// Every later log line has `secret` replaced by "***". Empty and very short values are
// ignored (they would match everywhere).
void RegisterSecret(const std::string& secret);

// The scrubbing itself, for text that leaves the bridge by another way.
std::string Scrub(std::string text);

}  // namespace abx::log

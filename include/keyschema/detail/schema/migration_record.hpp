// keyschema/detail/schema/migration_record.hpp: the progress record of an unfinished ks::migrate
// (migrate.hpp), stored under migration_key (fingerprint.hpp) in the same atomic write as each
// chunk of rewritten data. The store reads it to refuse the database while it exists.
//
// Format (text, one item a line):
//   keyschema-migration/1
//   <16 hex digits: fingerprint of the old schema's layout>
//   <16 hex digits: fingerprint of the new schema's layout>
//   <index of the old keyspace being rewritten, decimal; or, past the old keyspaces (N of them),
//    N + 2J while the count or index J of the new schema is erased, N + 2J + 1 while it is
//    derived from its records (ks::migrate step 2b)>
//   <its name>
//   <hex of the last old key rewritten in it (the last record derived from), or "-" when none yet>
//   <old entries rewritten so far, decimal>
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <keyschema/detail/config.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

struct migration_progress {
  std::string from_fingerprint;  // 16 hex digits
  std::string to_fingerprint;    // 16 hex digits
  std::size_t keyspace_index = 0;
  std::string keyspace;
  std::optional<std::string> last_key;  // raw bytes
  std::uint64_t entries = 0;
};

inline constexpr std::string_view migration_header = "keyschema-migration/1";

template <class = void>
inline std::string format_migration_progress(const migration_progress& m) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(migration_header);
  out += '\n' + m.from_fingerprint + '\n' + m.to_fingerprint + '\n' + std::to_string(m.keyspace_index) + '\n' +
         m.keyspace + '\n';
  if (m.last_key) {
    for (const char ch : *m.last_key) {
      const auto c = static_cast<unsigned char>(ch);
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xf]);
    }
  } else {
    out += '-';
  }
  out += '\n' + std::to_string(m.entries);
  return out;
}

// nullopt when `text` is not a progress record of the format above. Never throws but bad_alloc.
template <class = void>
inline std::optional<migration_progress> parse_migration_progress(std::string_view text) {
  std::string_view lines[7];
  for (std::size_t i = 0; i < 7; ++i) {
    const std::size_t nl = text.find('\n');
    if ((nl == std::string_view::npos) != (i == 6)) return std::nullopt;
    lines[i] = text.substr(0, nl);
    if (nl != std::string_view::npos) text.remove_prefix(nl + 1);
  }
  if (lines[0] != migration_header || lines[1].size() != 16 || lines[2].size() != 16) return std::nullopt;
  migration_progress m;
  m.from_fingerprint = lines[1];
  m.to_fingerprint = lines[2];
  auto number = [](std::string_view s, auto& out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  if (!number(lines[3], m.keyspace_index) || !number(lines[6], m.entries)) return std::nullopt;
  m.keyspace = lines[4];
  if (lines[5] != "-") {
    if (lines[5].size() % 2 != 0) return std::nullopt;
    std::string key;
    for (std::size_t i = 0; i < lines[5].size(); i += 2) {
      auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
      };
      const int hi = digit(lines[5][i]), lo = digit(lines[5][i + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      key.push_back(static_cast<char>(hi * 16 + lo));
    }
    m.last_key = std::move(key);
  }
  return m;
}

// "from layout <fp> to <fp>, at keyspace 'x' (N entries rewritten)", for messages.
template <class = void>
inline std::string describe_migration(std::string_view record) {
  const std::optional<migration_progress> m = parse_migration_progress(record);
  if (!m) return "(unreadable progress record)";
  return "from layout " + m->from_fingerprint + " to " + m->to_fingerprint + ", at old keyspace '" + m->keyspace +
         "', " + std::to_string(m->entries) + " entries rewritten";
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE

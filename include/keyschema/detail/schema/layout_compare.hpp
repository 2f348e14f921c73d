// keyschema/detail/schema/layout_compare.hpp: a stored layout text compared keyspace by keyspace
// with a program's (store and migrate internals).
//
// A layout text is "keyschema-layout/1;" followed by one part per keyspace,
// "name=value_codec{segment,segment,...};" (see fingerprint.hpp), where a segment is "lit:TEXT" or
// "field:NAME:CODEC". The text is not escaped, so a stored part is found by trying the program's
// own parts first (exact text) and otherwise by reading up to the next "};". A name, literal or
// codec name containing "};" in a keyspace this program does not declare can thus be cut in the
// wrong place: the comparison then reports a changed or undeclared keyspace and refuses, never
// accepts. Only the messages (which segment differs) are read more loosely.
//
// Thread-safety: pure functions.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

inline constexpr std::string_view layout_header = "keyschema-layout/1;";

// One keyspace's part of a layout text.
struct layout_part {
  std::string_view text;  // "name=codec{...};"
  std::string_view name;  // up to the first '='
};

template <class = void>
inline std::string_view layout_part_name(std::string_view part) { return part.substr(0, part.find('=')); }

// The parts of `layout`, or nullopt when it does not start with layout_header or a part does not
// end with "};". `known`: the program's parts, tried first at each position. Views into layout.
template <class = void>
inline std::optional<std::vector<layout_part>> split_layout(std::string_view layout,
                                                            const std::vector<std::string>& known) {
  if (!layout.starts_with(layout_header)) return std::nullopt;
  std::vector<layout_part> out;
  std::size_t p = layout_header.size();
  while (p < layout.size()) {
    const std::string_view rest = layout.substr(p);
    std::size_t n = 0;
    for (const std::string& k : known) {
      if (rest.starts_with(k)) {
        n = k.size();
        break;
      }
    }
    if (n == 0) {
      const std::size_t end = rest.find("};");
      if (end == std::string_view::npos) return std::nullopt;
      n = end + 2;
    }
    out.push_back(layout_part{rest.substr(0, n), layout_part_name(rest.substr(0, n))});
    p += n;
  }
  return out;
}

// The value codec and segments of a part "name=codec{segments};".
struct part_fields {
  std::string_view codec;
  std::vector<std::string_view> segments;
};

template <class = void>
inline part_fields read_part(std::string_view part) {
  part_fields f;
  const std::size_t eq = part.find('=');
  const std::size_t open = part.find('{', eq == std::string_view::npos ? 0 : eq);
  if (eq == std::string_view::npos || open == std::string_view::npos || part.size() < open + 3) {
    f.codec = part;
    return f;
  }
  f.codec = part.substr(eq + 1, open - eq - 1);
  std::string_view segs = part.substr(open + 1, part.size() - open - 3);  // without "{" and "};"
  // A segment starts with "lit:" or "field:"; a codec name may hold commas, so split only there.
  while (!segs.empty()) {
    std::size_t cut = std::string_view::npos;
    for (std::size_t i = segs.find(','); i != std::string_view::npos; i = segs.find(',', i + 1)) {
      const std::string_view after = segs.substr(i + 1);
      if (after.starts_with("lit:") || after.starts_with("field:")) {
        cut = i;
        break;
      }
    }
    f.segments.push_back(segs.substr(0, cut));
    if (cut == std::string_view::npos) break;
    segs.remove_prefix(cut + 1);
  }
  return f;
}

// "literal \"TEXT\"" or "field NAME:CODEC" for a segment's layout text.
template <class = void>
inline std::string describe_segment(std::string_view seg) {
  if (seg.starts_with("lit:")) return "literal \"" + std::string(seg.substr(4)) + "\"";
  if (seg.starts_with("field:")) return "field " + std::string(seg.substr(6));
  return std::string(seg);
}

// What differs between two parts of one keyspace, e.g. "value codec packed<i64> stored,
// packed<u64> in this program" or "segment 4: field message_id:string stored, field
// message_id:u64 in this program".
template <class = void>
inline std::string describe_part_difference(std::string_view stored, std::string_view program) {
  const part_fields s = read_part(stored);
  const part_fields p = read_part(program);
  // A placed keyspace's codec text ends with "@placement" (fingerprint.hpp).
  const auto split = [](std::string_view codec) {
    const std::size_t at = codec.rfind('@');
    return at == std::string_view::npos ? std::pair<std::string_view, std::string_view>{codec, {}}
                                        : std::pair{codec.substr(0, at), codec.substr(at + 1)};
  };
  const auto [s_codec_long, s_place] = split(s.codec);
  const auto [p_codec_long, p_place] = split(p.codec);
  // A keyspace with long keys: "+long_keys" after the codec (fingerprint.hpp).
  constexpr std::string_view long_mark = "+long_keys";
  const auto unmark = [&](std::string_view codec) {
    return codec.ends_with(long_mark) ? std::pair{codec.substr(0, codec.size() - long_mark.size()), true}
                                      : std::pair{codec, false};
  };
  const auto [s_codec, s_long] = unmark(s_codec_long);
  const auto [p_codec, p_long] = unmark(p_codec_long);
  if (s_codec == p_codec && s_long != p_long) {
    const auto name = [](bool l) {
      return std::string(l ? "long keys (keyschema::long_keys)" : "the engine's key limit (no keyschema::long_keys)");
    };
    return name(s_long) + " stored, " + name(p_long) + " in this program";
  }
  if (s_codec == p_codec && s_place != p_place) {
    const auto name = [](std::string_view pl) {
      return pl.empty() ? std::string("the default placement") : "placement '" + std::string(pl) + "'";
    };
    return name(s_place) + " stored, " + name(p_place) + " in this program";
  }
  if (s.codec != p.codec) {
    return "value codec " + std::string(s.codec) + " stored, " + std::string(p.codec) + " in this program";
  }
  const std::size_t n = s.segments.size() < p.segments.size() ? s.segments.size() : p.segments.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (s.segments[i] != p.segments[i]) {
      return "segment " + std::to_string(i + 1) + ": " + describe_segment(s.segments[i]) + " stored, " +
             describe_segment(p.segments[i]) + " in this program";
    }
  }
  if (s.segments.size() != p.segments.size()) {
    return std::to_string(s.segments.size()) + " segments stored, " + std::to_string(p.segments.size()) +
           " in this program";
  }
  return "layout " + std::string(stored) + " stored, " + std::string(program) + " in this program";
}

// Text read from a stored record, for a one-line message: control bytes as \xNN.
template <class = void>
inline std::string escape_control(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xf]);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

// A stored layout compared with a program's keyspace parts (texts read from the stored record
// are escaped with escape_control).
struct layout_comparison {
  bool readable = true;                   // false: the stored layout text could not be split
  std::vector<std::string> changed;       // "'name': <difference>", in the program's order
  std::vector<std::size_t> added;         // indices of the program's keyspaces not stored
  std::vector<std::string> extra;         // names of stored keyspaces the program does not declare
  std::vector<std::string> extra_parts;   // their parts, parallel to extra
};

template <class = void>
inline layout_comparison compare_layout(std::string_view stored_layout, const std::vector<std::string>& program) {
  layout_comparison c;
  const std::optional<std::vector<layout_part>> stored = split_layout(stored_layout, program);
  if (!stored) {
    c.readable = false;
    return c;
  }
  std::vector<bool> used(stored->size(), false);
  for (std::size_t i = 0; i < program.size(); ++i) {
    const std::string_view name = layout_part_name(program[i]);
    bool found = false;
    for (std::size_t j = 0; j < stored->size(); ++j) {
      if (used[j] || (*stored)[j].name != name) continue;
      used[j] = true;
      found = true;
      if ((*stored)[j].text != program[i]) {
        c.changed.push_back("'" + std::string(name) + "': " +
                            escape_control(describe_part_difference((*stored)[j].text, program[i])));
      }
      break;
    }
    if (!found) c.added.push_back(i);
  }
  for (std::size_t j = 0; j < stored->size(); ++j) {
    if (used[j]) continue;
    c.extra.push_back(escape_control((*stored)[j].name));
    c.extra_parts.emplace_back((*stored)[j].text);
  }
  return c;
}

// "'a', 'b'".
template <class = void>
inline std::string quoted_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// The part of a keyspace after its name ("=codec{segments};"): equal for a renamed keyspace.
template <class = void>
inline std::string_view part_body(std::string_view part) {
  const std::size_t eq = part.find('=');
  return eq == std::string_view::npos ? part : part.substr(eq);
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE

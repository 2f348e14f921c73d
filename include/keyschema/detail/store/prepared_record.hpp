// keyschema/detail/store/prepared_record.hpp: the stored form of a prepared transaction (see
// keyschema/prepared.hpp), shared by the store and keyschema-dump.
//
// Key: prepared_key_prefix ("\xff" "keyschema/prepared/") followed by the xid as one
// tuple-encoded bytes element (01 <bytes, 00 escaped as 00 ff> 00): distinct xids give distinct
// keys, keys sort by xid, and the xid decodes back. Like keyschema::schema_key it starts with
// 0xFF, which no tuple-encoded key starts with, so it lies outside every keyspace.
// Value ("the record"), little-endian:
//   "KSP1" or "KSP2"            magic and version (KSP2: the record holds an add)
//   u32 count                   number of operations
//   count x { u8 kind           0 put, 1 erase, 2 add (KSP2 only)
//             u32 key length, key bytes
//             put only: u64 value length, value bytes
//             add only: i64 delta (two's complement) }
//   u64 checksum                FNV-1a 64 of every byte before it
// Each key occurs once. An add is applied at commit_prepared to the value then current (see
// prepared.hpp). A record without adds is written as KSP1, so it reads with versions that know
// only KSP1; KSP1 records (also those written before adds were recorded as deltas, whose adds are
// puts of the value they produced) are read as they are. Another magic is a decode_error.
// Decoding never reads outside the record: a damaged record (wrong magic, a length past the end,
// an unknown kind, a key starting with 0xFF, trailing bytes, a checksum mismatch) is a
// decode_error naming the xid and the byte offset.
//
// Thread-safety: pure functions.
#pragma once

#include <keyschema/detail/codec/tuple_text.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/tuple.hpp>
#include <keyschema/types.hpp>
#include <keyschema/write_batch.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

// The byte prefix of every prepared-transaction record key (see keyschema/prepared.hpp).
inline constexpr std::string_view prepared_key_prefix = "\xff" "keyschema/prepared/";

namespace detail {

inline constexpr std::string_view prepared_magic = "KSP1";
inline constexpr std::string_view prepared_magic_adds = "KSP2";  // a record holding adds

// An add recorded in a prepared transaction: its key and delta.
struct prepared_add {
  std::string key;
  std::int64_t delta;
};

// The record key of xid.
inline std::string prepared_key(std::string_view xid) {
  std::string k(prepared_key_prefix);
  tuple::pack_into(k, bytes(xid));
  return k;
}

// The xid of a record key, or nullopt when key is not a well-formed prepared key.
inline std::optional<std::string> prepared_xid(std::string_view key) noexcept {
  if (key.substr(0, prepared_key_prefix.size()) != prepared_key_prefix) return std::nullopt;
  try {
    return std::get<0>(tuple::unpack<bytes>(key.substr(prepared_key_prefix.size()))).str();
  } catch (...) {
    return std::nullopt;
  }
}

// xid as b"..." with control and non-ASCII bytes as \xNN, for messages; a long xid is cut after
// 64 bytes: b"..."... (N bytes).
inline std::string show_xid(std::string_view xid) {
  constexpr std::size_t shown = 64;
  std::string out;
  append_quoted(out, xid.substr(0, shown), true);
  if (xid.size() > shown) out += "... (" + std::to_string(xid.size()) + " bytes)";
  return out;
}

inline std::uint64_t prepared_checksum(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

inline void put_le(std::string& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The record of the operations ops and the adds (see the top of this file).
// REQUIRES: ops.size() + adds.size() and every key length fit in 32 bits (checked by the caller);
// no key occurs twice.
inline std::string encode_prepared(const write_batch& ops, const std::vector<prepared_add>& adds = {}) {
  std::string out(adds.empty() ? prepared_magic : prepared_magic_adds);
  // One allocation (large values would otherwise be copied at every doubling): the count, each
  // operation's tag, 4-byte key length and 8-byte value length and bytes, each add, the checksum.
  std::size_t bytes = out.size() + 4 + ops.byte_size() + 13 * ops.size() + 8;
  for (const prepared_add& a : adds) bytes += 1 + 4 + a.key.size() + 8;
  out.reserve(bytes);
  put_le(out, ops.size() + adds.size(), 4);
  for (const prepared_add& a : adds) {
    out.push_back('\2');
    put_le(out, a.key.size(), 4);
    out.append(a.key);
    put_le(out, static_cast<std::uint64_t>(a.delta), 8);
  }
  for (const write_batch::op o : ops) {
    out.push_back(o.kind == write_batch::op_kind::put ? '\0' : '\1');
    put_le(out, o.key.size(), 4);
    out.append(o.key);
    if (o.kind == write_batch::op_kind::put) {
      put_le(out, o.value.size(), 8);
      out.append(o.value);
    }
  }
  put_le(out, prepared_checksum(out), 8);
  return out;
}

// Reads a record into out (appending its puts and erases) and adds (appending its adds; null: a
// record holding an add is a decode_error). Errors: decode_error "keyschema: the prepared record
// of xid b"..." is damaged: <what> at byte N; ...". Never reads outside record.
inline void decode_prepared(std::string_view xid, std::string_view record, write_batch& out,
                            std::vector<prepared_add>* adds = nullptr) {
  out.reserve(out.size(), out.byte_size() + record.size());  // the record's keys and values fit in it
  std::size_t pos = 0;
  const auto fail = [&](const char* what) {
    throw decode_error("keyschema: the prepared record of xid " + show_xid(xid) + " is damaged: " + what +
                       " at byte " + std::to_string(pos) + " of " + std::to_string(record.size()) +
                       "; nothing was applied. Roll it back (rollback_prepared) or restore the database");
  };
  const auto get = [&](int n) -> std::uint64_t {
    if (record.size() - pos < static_cast<std::size_t>(n)) fail("truncated record");
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t{static_cast<unsigned char>(record[pos + static_cast<std::size_t>(i)])} << (8 * i);
    pos += static_cast<std::size_t>(n);
    return v;
  };
  const std::string_view magic = record.substr(0, prepared_magic.size());
  if (record.size() < prepared_magic.size() + 4 + 8 || (magic != prepared_magic && magic != prepared_magic_adds)) {
    fail("not a prepared-transaction record (no \"KSP1\" or \"KSP2\" header)");
  }
  const bool with_adds = magic == prepared_magic_adds;
  const std::size_t body = record.size() - 8;
  pos = body;
  const std::uint64_t sum = get(8);
  pos = 0;
  if (sum != prepared_checksum(record.substr(0, body))) {
    pos = body;
    fail("checksum mismatch");
  }
  record = record.substr(0, body);  // the checksum is checked: parse what it covers
  pos = prepared_magic.size();
  const std::uint64_t count = get(4);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t kind = get(1);
    if (kind > (with_adds ? 2u : 1u)) {
      --pos;
      fail("unknown operation kind");
    }
    const std::uint64_t klen = get(4);
    if (record.size() - pos < klen) fail("key longer than the record");
    const std::string_view key = record.substr(pos, static_cast<std::size_t>(klen));
    if (!key.empty() && key.front() == '\xff') fail("reserved key (0xFF) in an operation");
    pos += static_cast<std::size_t>(klen);
    if (kind == 2) {
      const std::int64_t delta = static_cast<std::int64_t>(get(8));
      if (adds == nullptr) fail("an add, which this reader does not take");
      adds->push_back(prepared_add{std::string(key), delta});
    } else if (kind == 0) {
      const std::uint64_t vlen = get(8);
      if (record.size() - pos < vlen) fail("value longer than the record");
      out.put(key, record.substr(pos, static_cast<std::size_t>(vlen)));
      pos += static_cast<std::size_t>(vlen);
    } else {
      out.erase(key);
    }
  }
  if (pos != record.size()) fail("trailing bytes");
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE

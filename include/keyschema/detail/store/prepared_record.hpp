// keyschema/detail/store/prepared_record.hpp: the stored form of a prepared transaction (see
// keyschema/prepared.hpp), shared by the store and keyschema-dump.
//
// Key: prepared_key_prefix ("\xff" "keyschema/prepared/") followed by the xid as one
// tuple-encoded bytes element (01 <bytes, 00 escaped as 00 ff> 00): distinct xids give distinct
// keys, keys sort by xid, and the xid decodes back. Like keyschema::schema_key it starts with
// 0xFF, which no tuple-encoded key starts with, so it lies outside every keyspace.
// Value ("the record"), little-endian. The current format, written by prepare():
//   "KSP3"                      magic and version
//   u32 count                   number of operations
//   count x { u8 kind           0 put, 1 erase, 2 add, 3 range erase
//             u32 key length, key bytes          (range erase: its lower bound)
//             put only: u64 value length, value bytes
//             add only: i64 delta (two's complement)
//             range erase only: u32 upper length, upper bytes (empty: no upper bound),
//                               u64 keyspace fingerprint (keyspace_fingerprint<KS>) }
//   u32 n, n x u64              the keyspace fingerprints of the keyspaces whose keys the puts,
//                               erases and adds write (fingerprint.hpp), each once
//   u32 checks                  the validation set: what the transaction saw before its writes
//   checks x { u8 kind          0 key absent, 1 key present, 2 range
//              u32 key length, key bytes         (range: its lower bound)
//              present only: u64 XXH64 (seed 0) of the value
//              range only: u32 upper length, upper bytes (empty: no upper bound),
//                          u64 number of entries, u64 digest of the entries (prepared_digest) }
//   u64 checksum                FNV-1a 64 of every byte before it
// Each key occurs once among the puts, erases and adds; range erases are applied before them.
// Older formats, still read: "KSP1" and "KSP2" (KSP2: a record holding an add), with operation
// kinds 0, 1 (and 2 in KSP2) and nothing after the operations but the checksum: no keyspace
// fingerprints and no validation set (commit_prepared applies them blind, as those versions did;
// a KSP1 record written before adds were recorded as deltas holds an add as the put of the value
// it produced). encode_prepared() still writes them (tests, tools); another magic is a
// decode_error.
// Hashes: values and scanned entries are fingerprinted with XXH64 (xxhash.com's 64-bit hash,
// implemented here; its reference vectors are checked in tests), good against accidental equality
// (2^-64 per comparison), not against an adversary who chooses the values to collide.
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
inline constexpr std::string_view prepared_magic_checked = "KSP3";  // the current format

// An add recorded in a prepared transaction: its key and delta.
struct prepared_add {
  std::string key;
  std::int64_t delta;
};

// A range erase recorded in a prepared transaction: commit_prepared erases every key of the
// keyspace whose keyspace_fingerprint is `keyspace` in [lower, upper) (upper empty: no bound).
struct prepared_range_erase {
  std::string lower, upper;
  std::uint64_t keyspace = 0;
};

// One entry of a record's validation set (see the top of this file).
struct prepared_check {
  enum class kind : std::uint8_t { absent = 0, present = 1, range = 2 };
  kind what = kind::absent;
  std::string key;            // the key; a range's lower bound
  std::string upper;          // a range's upper bound (empty: none)
  std::uint64_t hash = 0;     // present: XXH64 of the value; range: digest of its entries
  std::uint64_t entries = 0;  // range: number of entries
};

// A decoded record.
struct prepared_record {
  int version = 3;  // 1, 2 (KSP1, KSP2: no keyspaces, no validation set) or 3
  write_batch ops;  // puts and erases
  std::vector<prepared_add> adds;
  std::vector<prepared_range_erase> range_erases;
  std::vector<std::uint64_t> keyspaces;  // version 3: the keyspaces of ops and adds
  std::vector<prepared_check> checks;    // version 3: the validation set
  // Whether commit_prepared validates it (version 3); older records are applied blind.
  bool validated() const noexcept { return version >= 3; }
  // The number of writes: operations, adds and range erases.
  std::size_t writes() const noexcept { return ops.size() + adds.size() + range_erases.size(); }
};

// XXH64 (the 64-bit xxHash of xxhash.com, reference algorithm) of s with seed.
template <class = void>
inline std::uint64_t xxh64(std::string_view s, std::uint64_t seed = 0) noexcept {
  constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ull, p2 = 0xC2B2AE3D27D4EB4Full, p3 = 0x165667B19E3779F9ull,
                          p4 = 0x85EBCA77C2B2AE63ull, p5 = 0x27D4EB2F165667C5ull;
  const auto rotl = [](std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  const auto read = [&](std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t{static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)])} << (8 * i);
    return v;
  };
  const auto round = [&](std::uint64_t acc, std::uint64_t in) { return rotl(acc + in * p2, 31) * p1; };
  const std::size_t n = s.size();
  std::size_t i = 0;
  std::uint64_t h;
  if (n >= 32) {
    std::uint64_t v1 = seed + p1 + p2, v2 = seed + p2, v3 = seed, v4 = seed - p1;
    for (; n - i >= 32; i += 32) {
      v1 = round(v1, read(i, 8));
      v2 = round(v2, read(i + 8, 8));
      v3 = round(v3, read(i + 16, 8));
      v4 = round(v4, read(i + 24, 8));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    for (const std::uint64_t v : {v1, v2, v3, v4}) h = (h ^ round(0, v)) * p1 + p4;
  } else {
    h = seed + p5;
  }
  h += n;
  for (; n - i >= 8; i += 8) h = rotl(h ^ round(0, read(i, 8)), 27) * p1 + p4;
  if (n - i >= 4) {
    h = rotl(h ^ (read(i, 4) * p1), 23) * p2 + p3;
    i += 4;
  }
  for (; i < n; ++i) h = rotl(h ^ (std::uint64_t{static_cast<unsigned char>(s[i])} * p5), 11) * p1;
  h ^= h >> 33;
  h *= p2;
  h ^= h >> 29;
  h *= p3;
  h ^= h >> 32;
  return h;
}

// The digest of a range's entries, fed in key order: each key and value chains XXH64 through the
// seed (their lengths are part of each hash), so any added, removed or changed entry, or another
// order, changes it.
struct prepared_digest {
  std::uint64_t entries = 0;
  std::uint64_t hash = 0;
  template <class = void>
  void add(std::string_view key, std::string_view value) noexcept {
    ++entries;
    hash = xxh64(value, xxh64(key, hash));
  }
};

// The record key of xid.
template <class = void>
inline std::string prepared_key(std::string_view xid) {
  std::string k(prepared_key_prefix);
  tuple::pack_into(k, bytes(xid));
  return k;
}

// The xid of a record key, or nullopt when key is not a well-formed prepared key.
template <class = void>
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
template <class = void>
inline std::string show_xid(std::string_view xid) {
  constexpr std::size_t shown = 64;
  std::string out;
  append_quoted(out, xid.substr(0, shown), true);
  if (xid.size() > shown) out += "... (" + std::to_string(xid.size()) + " bytes)";
  return out;
}

template <class = void>
inline std::uint64_t prepared_checksum(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

template <class = void>
inline void put_le(std::string& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A record of an older format (KSP1, or KSP2 when adds is not empty: see the top of this file)
// holding the operations ops and the adds, without a validation set; prepare() no longer writes
// these (tests and tools write them, to check that they are still read).
// REQUIRES: ops.size() + adds.size() and every key length fit in 32 bits; no key occurs twice.
template <class = void>
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

template <class = void>
inline void put_bytes(std::string& out, std::string_view b) {
  put_le(out, b.size(), 4);
  out.append(b);
}

// The current record (KSP3) of r (see the top of this file). r.version is ignored.
// REQUIRES: every count and key length fits in 32 bits (checked by the caller); no key occurs
// twice among ops and adds.
template <class = void>
inline std::string encode_prepared(const prepared_record& r) {
  std::string out(prepared_magic_checked);
  std::size_t bytes = out.size() + 4 + r.ops.byte_size() + 13 * r.ops.size() + 4 + 8 * r.keyspaces.size() + 4 + 8;
  for (const prepared_add& a : r.adds) bytes += 1 + 4 + a.key.size() + 8;
  for (const prepared_range_erase& e : r.range_erases) bytes += 1 + 8 + e.lower.size() + e.upper.size() + 8;
  for (const prepared_check& c : r.checks) bytes += 1 + 8 + c.key.size() + c.upper.size() + 16;
  out.reserve(bytes);
  put_le(out, r.ops.size() + r.adds.size() + r.range_erases.size(), 4);
  for (const prepared_range_erase& e : r.range_erases) {
    out.push_back('\3');
    put_bytes(out, e.lower);
    put_bytes(out, e.upper);
    put_le(out, e.keyspace, 8);
  }
  for (const prepared_add& a : r.adds) {
    out.push_back('\2');
    put_bytes(out, a.key);
    put_le(out, static_cast<std::uint64_t>(a.delta), 8);
  }
  for (const write_batch::op o : r.ops) {
    out.push_back(o.kind == write_batch::op_kind::put ? '\0' : '\1');
    put_bytes(out, o.key);
    if (o.kind == write_batch::op_kind::put) {
      put_le(out, o.value.size(), 8);
      out.append(o.value);
    }
  }
  put_le(out, r.keyspaces.size(), 4);
  for (const std::uint64_t k : r.keyspaces) put_le(out, k, 8);
  put_le(out, r.checks.size(), 4);
  for (const prepared_check& c : r.checks) {
    out.push_back(static_cast<char>(c.what));
    put_bytes(out, c.key);
    if (c.what == prepared_check::kind::present) put_le(out, c.hash, 8);
    if (c.what == prepared_check::kind::range) {
      put_bytes(out, c.upper);
      put_le(out, c.entries, 8);
      put_le(out, c.hash, 8);
    }
  }
  put_le(out, prepared_checksum(out), 8);
  return out;
}

// Reads a record, of any format version (see the top of this file).
// Errors: decode_error "keyschema: the prepared record of xid b"..." is damaged: <what> at byte
// N of M; ...". Never reads outside record.
template <class = void>
inline prepared_record decode_prepared(std::string_view xid, std::string_view record) {
  prepared_record out;
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
  // A length-prefixed byte string; a key (not an upper bound) must not start with 0xFF.
  const auto get_bytes = [&](bool key) -> std::string_view {
    const std::uint64_t len = get(4);
    if (record.size() - pos < len) fail("key longer than the record");
    const std::string_view b = record.substr(pos, static_cast<std::size_t>(len));
    if (key && !b.empty() && b.front() == '\xff') fail("reserved key (0xFF) in an operation");
    pos += static_cast<std::size_t>(len);
    return b;
  };
  const std::string_view magic = record.substr(0, prepared_magic.size());
  if (record.size() < prepared_magic.size() + 4 + 8 ||
      (magic != prepared_magic && magic != prepared_magic_adds && magic != prepared_magic_checked)) {
    fail("not a prepared-transaction record (no \"KSP1\", \"KSP2\" or \"KSP3\" header)");
  }
  out.version = magic == prepared_magic ? 1 : magic == prepared_magic_adds ? 2 : 3;
  const std::size_t body = record.size() - 8;
  pos = body;
  const std::uint64_t sum = get(8);
  pos = 0;
  if (sum != prepared_checksum(record.substr(0, body))) {
    pos = body;
    fail("checksum mismatch");
  }
  record = record.substr(0, body);  // the checksum is checked: parse what it covers
  out.ops.reserve(0, record.size());  // the record's keys and values fit in it
  pos = prepared_magic.size();
  const std::uint64_t max_kind = out.version == 1 ? 1 : out.version == 2 ? 2 : 3;
  const std::uint64_t count = get(4);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t kind = get(1);
    if (kind > max_kind) {
      --pos;
      fail("unknown operation kind");
    }
    const std::string_view key = get_bytes(true);
    if (kind == 3) {
      const std::string_view upper = get_bytes(false);
      const std::uint64_t keyspace = get(8);
      out.range_erases.push_back(prepared_range_erase{std::string(key), std::string(upper), keyspace});
    } else if (kind == 2) {
      const std::int64_t delta = static_cast<std::int64_t>(get(8));
      out.adds.push_back(prepared_add{std::string(key), delta});
    } else if (kind == 0) {
      const std::uint64_t vlen = get(8);
      if (record.size() - pos < vlen) fail("value longer than the record");
      out.ops.put(key, record.substr(pos, static_cast<std::size_t>(vlen)));
      pos += static_cast<std::size_t>(vlen);
    } else {
      out.ops.erase(key);
    }
  }
  if (out.version >= 3) {
    const std::uint64_t keyspaces = get(4);
    for (std::uint64_t i = 0; i < keyspaces; ++i) out.keyspaces.push_back(get(8));
    const std::uint64_t checks = get(4);
    for (std::uint64_t i = 0; i < checks; ++i) {
      const std::uint64_t kind = get(1);
      if (kind > 2) {
        --pos;
        fail("unknown validation kind");
      }
      prepared_check c;
      c.what = static_cast<prepared_check::kind>(kind);
      c.key = get_bytes(true);
      if (c.what == prepared_check::kind::present) c.hash = get(8);
      if (c.what == prepared_check::kind::range) {
        c.upper = get_bytes(false);
        c.entries = get(8);
        c.hash = get(8);
      }
      out.checks.push_back(std::move(c));
    }
  }
  if (pos != record.size()) fail("trailing bytes");
  return out;
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE

// keyschema/chunked.hpp: chunked values: one large value stored as fixed-size chunks under one
// key prefix, written in one atomic write, read back by one prefix scan (whole or streamed),
// copied and erased as a unit.
//
// A chunked keyspace is an ordinary keyspace whose value type is keyschema::bytes and whose last
// field is an unsigned integer, the chunk index; the fields before it (the prefix) name the value:
//
//   using content = ks::keyspace<"content", ks::bytes, ks::lit<"MESSAGE">, ks::field<"id", std::uint64_t>,
//                                ks::field<"chunk", std::uint32_t>>;
//   ks::put_chunked<content>(db, {42}, payload, 64 * 1024);     // chunks 0..n, one atomic write
//   std::optional<ks::bytes> v = ks::read_chunked<content>(db, {42});
//   ks::read_chunked<content>(snap, {42}, [&](std::string_view piece) { out.write(piece); });
//   ks::copy_chunked<content, dtx_content>(tx, {42}, {xid, 42});  ks::erase_chunked<content>(tx, {42});
//
// Layout under one prefix: chunk 0 is a header, "KSC1" + u64 total size + u32 data-chunk count +
// u32 chunk size (little-endian); chunks 1..count hold the data, every one chunk_size bytes but
// the last (1..chunk_size bytes). A reader checks the header and that the chunks are exactly
// 1..count with the sizes the header implies: a missing, extra or resized chunk (or a missing or
// damaged header) is a decode_error naming the keyspace, the value's prefix and the chunk, never
// a silently truncated value. Typed scans of the keyspace see the header as chunk 0.
//
// Overwrites and erases: every write of a chunked value first erases everything under its prefix
// (the chunks of a previous, longer value, and any stray chunk), in the same atomic write: no
// orphan chunks. Erasing a range needs reading it, so chunked writes are offered on transactions
// (store_transaction: atomic with the transaction's other writes) and on the store (each call is
// one transaction of its own); a batch cannot read, and put_chunked on a batch does not compile.
//
// Thread-safety: as the transaction, store or snapshot passed in (a store's calls may come from
// several threads at once; a transaction is used by one thread).
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/schema/key_codec.hpp>
#include <keyschema/detail/store/limit_check.hpp>
#include <keyschema/detail/store/store_access.hpp>
#include <keyschema/error.hpp>
#include <keyschema/key_arg.hpp>
#include <keyschema/store.hpp>
#include <keyschema/types.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {

template <class KS, class Indices>
struct chunk_prefix_of;
template <class KS, std::size_t... I>
struct chunk_prefix_of<KS, std::index_sequence<I...>> {
  using type = std::tuple<typename KS::template field_at<I>::type...>;
};

template <class KS>
constexpr bool check_chunked_keyspace() {
  static_assert(std::is_same_v<typename KS::value_type, bytes>,
                "keyschema::chunked: the keyspace's value type is not keyschema::bytes; declare a chunked keyspace "
                "with keyschema::bytes values");
  static_assert(KS::field_count >= 1,
                "keyschema::chunked: the keyspace has no fields; declare its last field as the chunk index, e.g. "
                "keyschema::field<\"chunk\", std::uint32_t>");
  if constexpr (KS::field_count >= 1) {
    using index = typename KS::template field_at<KS::field_count - 1>::type;
    static_assert(std::is_integral_v<index> && std::is_unsigned_v<index> && !std::is_same_v<index, bool>,
                  "keyschema::chunked: the keyspace's last field is not an unsigned integer; declare it as the chunk "
                  "index, e.g. keyschema::field<\"chunk\", std::uint32_t>");
  }
  return true;
}

inline constexpr std::string_view chunk_magic = "KSC1";
inline constexpr std::size_t chunk_header_bytes = 4 + 8 + 4 + 4;

struct chunk_header {
  std::uint64_t total = 0;
  std::uint32_t count = 0;
  std::uint32_t chunk_size = 0;
};

template <class = void>
inline void chunk_put_le(std::string& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
template <class = void>
inline std::uint64_t chunk_get_le(std::string_view s, std::size_t pos, int n) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint64_t{static_cast<unsigned char>(s[pos + static_cast<std::size_t>(i)])} << (8 * i);
  return v;
}

template <class = void>
inline std::string encode_chunk_header(const chunk_header& h) {
  std::string out(chunk_magic);
  chunk_put_le(out, h.total, 8);
  chunk_put_le(out, h.count, 4);
  chunk_put_le(out, h.chunk_size, 4);
  return out;
}

// The header, or nullopt when v is not a consistent one.
template <class = void>
inline std::optional<chunk_header> decode_chunk_header(std::string_view v) noexcept {
  if (v.size() != chunk_header_bytes || v.substr(0, 4) != chunk_magic) return std::nullopt;
  chunk_header h;
  h.total = chunk_get_le(v, 4, 8);
  h.count = static_cast<std::uint32_t>(chunk_get_le(v, 12, 4));
  h.chunk_size = static_cast<std::uint32_t>(chunk_get_le(v, 16, 4));
  if (h.chunk_size == 0) return std::nullopt;
  const std::uint64_t need = h.total / h.chunk_size + (h.total % h.chunk_size != 0 ? 1 : 0);
  if (need != h.count) return std::nullopt;
  return h;
}

template <class KS>
using chunk_index_t = typename KS::template field_at<KS::field_count - 1>::type;

// "keyschema: keyspace 'content', chunked value (\"MESSAGE\", 42): "
template <class KS, class Prefix>
std::string chunked_where(const Prefix& prefix) {
  std::string p;
  std::apply([&](const auto&... f) { key_codec<KS>::encode_prefix(p, f...); }, prefix);
  return "keyschema: keyspace '" + std::string(KS::name) + "', chunked value " + describe_key(p) + ": ";
}

template <class KS, class Prefix>
typename KS::key_type chunk_key(const Prefix& prefix, std::uint64_t i) {
  return std::tuple_cat(prefix, std::tuple<chunk_index_t<KS>>(static_cast<chunk_index_t<KS>>(i)));
}

template <class KS, class Source, class Prefix>
auto chunk_scan(const Source& src, const Prefix& prefix) {
  return std::apply([&](const auto&... f) { return src.template scan<KS>(f...); }, prefix);
}

}  // namespace detail

// The value's name in a chunked keyspace KS: its fields but the last (the chunk index), as a
// std::tuple; a braced list works: {"queue-1", 42}.
template <class KS>
using chunk_prefix_t = typename detail::chunk_prefix_of<KS, std::make_index_sequence<KS::field_count - 1>>::type;

// Writes data as the chunked value `prefix` of KS, in chunks of chunk_size bytes, atomically with
// the rest of tx; everything stored under prefix before (a previous value's chunks) is erased
// first, in the same write. Returns the number of data chunks (0 for empty data).
// REQUIRES: tx is open. Copies data.
// Errors (nothing added to tx):
//   usage_error when chunk_size is 0 or above 2^32 - 1, or tx is not open;
//   limit_error when data needs more chunks than the chunk field can number, or a chunk's key or
//     value is longer than the backend accepts (names the keyspace); tx.commit() checks the
//     write as a whole (operations and bytes per write);
//   backend_error while reading the previous chunks.
template <class KS, class Schema, class Backend>
std::size_t put_chunked(store_transaction<Schema, Backend>& tx, const chunk_prefix_t<KS>& prefix,
                        std::string_view data, std::size_t chunk_size) {
  static_assert(detail::check_chunked_keyspace<KS>());
  using index = detail::chunk_index_t<KS>;
  if (chunk_size == 0 || chunk_size > std::numeric_limits<std::uint32_t>::max()) {
    throw usage_error(detail::chunked_where<KS>(prefix) + "chunk_size " + std::to_string(chunk_size) +
                      " is not in 1..4294967295; pass the size of one chunk in bytes");
  }
  const std::uint64_t count = data.size() / chunk_size + (data.size() % chunk_size != 0 ? 1 : 0);
  if (count > std::numeric_limits<std::uint32_t>::max() || count > std::numeric_limits<index>::max()) {
    throw limit_error(detail::chunked_where<KS>(prefix) + std::to_string(data.size()) + " bytes need " +
                      std::to_string(count) + " chunks of " + std::to_string(chunk_size) +
                      " bytes, more than the chunk field can number; use larger chunks");
  }
  if (!tx.is_open()) throw usage_error("keyschema::store_transaction: the transaction is already committed or rolled back");
  // Check the longest key (the last chunk's) and value before touching tx.
  const backend_limits l = detail::store_access::limits(tx);
  std::string last_key;
  key_arg<KS>(detail::chunk_key<KS>(prefix, count)).encode(last_key);
  detail::check_key_limit(KS::name, l, last_key.size(), detail::has_long_keys<KS>());
  detail::check_value_limit(KS::name, l, last_key.size(),
                            std::max<std::size_t>(detail::chunk_header_bytes, std::min(chunk_size, data.size())));
  std::apply([&](const auto&... f) { tx.template erase_prefix<KS>(f...); }, prefix);
  const detail::chunk_header h{data.size(), static_cast<std::uint32_t>(count), static_cast<std::uint32_t>(chunk_size)};
  tx.template put<KS>(detail::chunk_key<KS>(prefix, 0), bytes(detail::encode_chunk_header(h)));
  for (std::uint64_t i = 0; i < count; ++i) {
    tx.template put<KS>(detail::chunk_key<KS>(prefix, i + 1), bytes(data.substr(i * chunk_size, chunk_size)));
  }
  return static_cast<std::size_t>(count);
}

// A batch cannot read, so it cannot erase the chunks of a previous, longer value: not offered.
template <class KS, class Schema, class Backend>
std::size_t put_chunked(store_batch<Schema, Backend>&, const chunk_prefix_t<KS>&, std::string_view, std::size_t) {
  static_assert(sizeof(Schema) == 0,
                "keyschema::put_chunked: a batch cannot read, so it cannot erase the chunks of a previous, longer "
                "value; write chunked values in a transaction (db.transaction()) or on the store");
  return 0;
}

// put_chunked in a transaction of its own, committed with opts. Errors: as above, and those of
// store_transaction::commit (limit_error when the whole write exceeds the backend's limits per
// write: nothing written).
template <class KS, class Schema, class Backend>
std::size_t put_chunked(store<Schema, Backend>& db, const chunk_prefix_t<KS>& prefix, std::string_view data,
                        std::size_t chunk_size, const write_options& opts = {}) {
  auto tx = db.transaction();
  const std::size_t n = put_chunked<KS>(tx, prefix, data, chunk_size);
  tx.commit(opts);
  return n;
}

// Streams the chunked value `prefix` of KS from src (a store, snapshot or transaction: one
// consistent state) to on_piece(std::string_view), one call per data chunk, in order. Returns
// false, calling nothing, when no chunk exists under prefix. The views are valid during the call.
// Errors: decode_error naming the keyspace, the value and the chunk when the header is missing or
// damaged, or a chunk is missing, extra or of the wrong size (on_piece may have received the
// pieces before the fault: they are correct, but not the whole value); backend_error; whatever
// on_piece throws.
template <class KS, class Source, class OnPiece>
bool read_chunked(const Source& src, const chunk_prefix_t<KS>& prefix, OnPiece&& on_piece) {
  static_assert(detail::check_chunked_keyspace<KS>());
  constexpr std::size_t last = KS::field_count - 1;
  auto view = detail::chunk_scan<KS>(src, prefix).value_views();  // values as views: one copy less
  auto it = view.begin();
  if (it == view.end()) return false;
  const auto fail = [&](const std::string& what) {
    throw decode_error(detail::chunked_where<KS>(prefix) + what + "; the value is damaged (written around keyschema, "
                                                                  "or a chunk was lost)");
  };
  std::optional<detail::chunk_header> h;
  if (std::get<last>((*it).key) != 0) {
    fail("the header (chunk 0) is missing, the first chunk is " + std::to_string(std::get<last>((*it).key)));
  }
  h = detail::decode_chunk_header((*it).value);
  if (!h) fail("chunk 0 is not a consistent chunked-value header");
  std::uint64_t expected = 1, remaining = h->total;
  for (++it; it != view.end(); ++it) {
    const std::uint64_t i = std::get<last>((*it).key);
    if (i > h->count) fail("chunk " + std::to_string(i) + " is extra: the header says " + std::to_string(h->count) + " chunks");
    if (i != expected) fail("chunk " + std::to_string(expected) + " of " + std::to_string(h->count) + " is missing");
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(h->chunk_size, remaining));
    const std::string_view piece = (*it).value;
    if (piece.size() != want) {
      fail("chunk " + std::to_string(i) + " holds " + std::to_string(piece.size()) + " bytes, the header implies " +
           std::to_string(want));
    }
    on_piece(piece);
    remaining -= want;
    ++expected;
  }
  if (expected != std::uint64_t{h->count} + 1) {
    fail("chunk " + std::to_string(expected) + " of " + std::to_string(h->count) + " is missing");
  }
  return true;
}

// The chunked value `prefix` of KS as one bytes value, or std::nullopt when there is none.
// Errors: as the streaming read_chunked (nothing is returned on a fault).
template <class KS, class Source>
std::optional<bytes> read_chunked(const Source& src, const chunk_prefix_t<KS>& prefix) {
  std::string out;
  if (!read_chunked<KS>(src, prefix, [&](std::string_view piece) { out.append(piece); })) return std::nullopt;
  return bytes(std::move(out));
}

// Erases the chunked value `prefix` of KS (every key under prefix: header, chunks, strays)
// atomically with the rest of tx. Returns whether anything was there.
// REQUIRES: tx is open. Errors: usage_error when tx is not open; backend_error.
template <class KS, class Schema, class Backend>
bool erase_chunked(store_transaction<Schema, Backend>& tx, const chunk_prefix_t<KS>& prefix) {
  static_assert(detail::check_chunked_keyspace<KS>());
  return std::apply([&](const auto&... f) { return tx.template erase_prefix<KS>(f...); }, prefix) > 0;
}

// erase_chunked in a transaction of its own, committed with opts (nothing is written when there
// was nothing). Errors: as above and store_transaction::commit.
template <class KS, class Schema, class Backend>
bool erase_chunked(store<Schema, Backend>& db, const chunk_prefix_t<KS>& prefix, const write_options& opts = {}) {
  auto tx = db.transaction();
  const bool found = erase_chunked<KS>(tx, prefix);
  if (found) tx.commit(opts);
  return found;
}

// Copies the chunked value `from` of From to the value `to` of To (chunk for chunk, same chunk
// size), atomically with the rest of tx, replacing whatever was under `to`. Reads `from` as tx
// sees it (its own writes included) and checks it whole before writing. Returns false, writing
// nothing, when `from` does not exist. From and To may be one keyspace.
// REQUIRES: tx is open. Errors: decode_error as read_chunked (nothing added to tx); the errors
// of put_chunked.
template <class From, class To, class Schema, class Backend>
bool copy_chunked(store_transaction<Schema, Backend>& tx, const chunk_prefix_t<From>& from,
                  const chunk_prefix_t<To>& to) {
  static_assert(detail::check_chunked_keyspace<From>());
  static_assert(detail::check_chunked_keyspace<To>());
  std::string data;
  if (!read_chunked<From>(tx, from, [&](std::string_view piece) { data.append(piece); })) return false;
  // The header was checked by the read, and tx's view cannot change meanwhile.
  const std::optional<bytes> header = tx.template get<From>(detail::chunk_key<From>(from, 0));
  const std::size_t chunk_size = detail::decode_chunk_header(header.value().view()).value().chunk_size;
  put_chunked<To>(tx, to, data, chunk_size);
  return true;
}

// copy_chunked in a transaction of its own, committed with opts. Errors: as above and
// store_transaction::commit.
template <class From, class To, class Schema, class Backend>
bool copy_chunked(store<Schema, Backend>& db, const chunk_prefix_t<From>& from, const chunk_prefix_t<To>& to,
                  const write_options& opts = {}) {
  auto tx = db.transaction();
  if (!copy_chunked<From, To>(tx, from, to)) return false;
  tx.commit(opts);
  return true;
}

KEYSCHEMA_END_NAMESPACE

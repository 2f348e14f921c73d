// tests/fuzz/fuzz_chunk_set.cpp: the entries under one chunked value's prefix
// (keyschema/chunked.hpp), written around keyschema, as read_chunked, copy_chunked and
// erase_chunked find them.
//
// Input: a sequence of operations on the raw entries of value 42 of keyspace `content` in a
// memory store, written in one raw write (unsafe_backend().write), each starting with a byte op:
//   op % 6 == 0  put chunk i (1 byte) holding n (1 byte, mod 64) bytes of the input;
//   op % 6 == 1  put a header at chunk 0 with arbitrary fields: total (2 bytes), count (1 byte),
//                chunk size (1 byte);
//   op % 6 == 2  put a consistent header: total (2 bytes), chunk size (1 byte, 0 read as 1),
//                the count it implies;
//   op % 6 == 3  put a key of the value's prefix followed by n (1 byte, mod 8) raw bytes (a key
//                that may not decode), holding 1 byte;
//   op % 6 == 4  erase chunk i (1 byte);
//   op % 6 == 5  put chunk i (1 byte) of the neighbouring values 41 and 43 (must not matter).
// Properties:
//   - read_chunked, whole and streamed, agree: both return nothing, or both the same value
//     (the pieces concatenated), whose size is the header's total and whose chunks are the
//     stored chunks 1..count; or both throw keyschema::decode_error naming the keyspace and
//     the value; no other exception;
//   - copy_chunked to value 7 in a transaction copies exactly the value read (read back after
//     commit), or throws a keyschema::error with nothing written; erase_chunked then reports
//     whether the read found a value or a fault, and leaves nothing read_chunked finds (bytes
//     under the prefix outside the keyspace's key range are no chunk and stay); the neighbours
//     are untouched.
#include "fuzz_support.hpp"

#include <keyschema/chunked.hpp>
#include <keyschema/keyschema.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ks = keyschema;
namespace fz = keyschema::fuzz;

namespace {

using content = ks::keyspace<"content", ks::bytes, ks::lit<"C">, ks::field<"id", std::uint64_t>,
                             ks::field<"chunk", std::uint32_t>>;
using schema = ks::schema<content>;
using entries = std::vector<std::pair<std::string, std::string>>;

entries content_of(const ks::memory_backend& b) {
  entries out;
  for (auto c = b.cursor(ks::key_range{}, nullptr); c.valid(); c.next()) out.emplace_back(c.key(), c.value());
  return out;
}

std::string chunk_key(std::uint64_t id, std::uint32_t i) {
  std::string k;
  ks::key_arg<content>(content::key_type{id, i}).encode(k);
  return k;
}

std::string prefix_key(std::uint64_t id) {
  std::string k;
  ks::detail::key_codec<content>::encode_prefix(k, id);
  return k;
}

// Whether key is in the key range of the value's chunks (what a scan of the prefix reads).
bool in_value_range(std::string_view key) {
  std::string lower, upper;
  ks::detail::prefix_bounds<content, 1>(prefix_key(42), lower, upper);
  return key >= lower && key < upper;
}

struct reader {
  std::string_view in;
  std::size_t at = 0;
  bool more() const { return at < in.size(); }
  std::uint32_t byte() { return at < in.size() ? static_cast<unsigned char>(in[at++]) : 0u; }
  std::string bytes(std::size_t n) {
    const std::string out(in.substr(std::min(at, in.size()), n));
    at += out.size();
    return out;
  }
};

bool names_value(const ks::decode_error& e) {
  const std::string_view w = e.what();
  return w.find("keyspace 'content'") != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  reader r{fz::input_view(data, size)};
  ks::store<schema, ks::memory_backend> db;
  ks::write_batch w;
  for (int ops = 0; r.more() && ops < 64; ++ops) {
    switch (r.byte() % 6) {
      case 0: {
        const unsigned i = r.byte();
        w.put(chunk_key(42, i), r.bytes(r.byte() % 64));
        break;
      }
      case 1: {
        ks::detail::chunk_header h;
        h.total = r.byte();
        h.total |= std::uint64_t{r.byte()} << 8;
        h.count = r.byte();
        h.chunk_size = r.byte();
        w.put(chunk_key(42, 0), ks::detail::encode_chunk_header(h));
        break;
      }
      case 2: {
        ks::detail::chunk_header h;
        h.total = r.byte();
        h.total |= std::uint64_t{r.byte()} << 8;
        h.chunk_size = std::max<std::uint32_t>(1, r.byte());
        h.count = static_cast<std::uint32_t>(h.total / h.chunk_size + (h.total % h.chunk_size != 0 ? 1 : 0));
        w.put(chunk_key(42, 0), ks::detail::encode_chunk_header(h));
        break;
      }
      case 3: {
        const std::string k = prefix_key(42) + r.bytes(r.byte() % 8);
        w.put(k, "x");
        break;
      }
      case 4: w.erase(chunk_key(42, r.byte())); break;
      default: {
        const unsigned i = r.byte();
        w.put(chunk_key(41, i), "n");
        w.put(chunk_key(43, i), "n");
        break;
      }
    }
  }
  db.unsafe_backend().write(w, {});
  const entries before = content_of(db.backend());
  const auto neighbours = [&] {
    entries out;
    for (const auto& [k, v] : content_of(db.backend()))
      if (!k.starts_with(prefix_key(42)) && !k.starts_with(prefix_key(7))) out.emplace_back(k, v);
    return out;
  };
  const entries around = neighbours();

  std::optional<ks::bytes> whole;
  std::string what_whole, what_streamed;
  const bool whole_ok = [&] {
    try {
      whole = ks::read_chunked<content>(db, {42});
      return true;
    } catch (const ks::decode_error& e) {
      KEYSCHEMA_FUZZ_CHECK(names_value(e), std::string("the decode_error does not name the keyspace: ") + e.what());
      what_whole = e.what();
      return false;
    }
  }();
  std::string streamed;
  std::size_t pieces = 0;
  bool found = false;
  const bool streamed_ok = [&] {
    try {
      found = ks::read_chunked<content>(db, {42}, [&](std::string_view p) {
        streamed.append(p);
        ++pieces;
      });
      return true;
    } catch (const ks::decode_error& e) {
      KEYSCHEMA_FUZZ_CHECK(names_value(e), std::string("the decode_error does not name the keyspace: ") + e.what());
      what_streamed = e.what();
      return false;
    }
  }();
  KEYSCHEMA_FUZZ_CHECK(whole_ok == streamed_ok, "the whole and the streamed read disagree on success");
  KEYSCHEMA_FUZZ_CHECK(what_whole == what_streamed, "the whole and the streamed read report different faults");
  if (whole_ok) {
    KEYSCHEMA_FUZZ_CHECK(whole.has_value() == found, "the whole and the streamed read disagree on presence");
    if (whole) {
      KEYSCHEMA_FUZZ_CHECK(whole->view() == streamed, "the streamed pieces do not concatenate to the value");
      const std::optional<ks::bytes> head = db.get<content>({42, 0});
      KEYSCHEMA_FUZZ_CHECK(head.has_value(), "a value was read without a header");
      const auto h = ks::detail::decode_chunk_header(head->view());
      KEYSCHEMA_FUZZ_CHECK(h.has_value(), "a value was read under an inconsistent header");
      KEYSCHEMA_FUZZ_CHECK(h->total == whole->size(), "the value's size is not the header's total");
      KEYSCHEMA_FUZZ_CHECK(pieces == h->count, "the streamed read's pieces are not the header's chunk count");
      std::string stored;
      for (std::uint32_t i = 1; i <= h->count; ++i) {
        const std::optional<ks::bytes> c = db.get<content>({42, i});
        KEYSCHEMA_FUZZ_CHECK(c.has_value(), "a value was read with chunk " + std::to_string(i) + " missing");
        stored += c->view();
      }
      KEYSCHEMA_FUZZ_CHECK(stored == whole->view(), "the value is not its stored chunks 1..count");
    } else {
      for (const auto& [k, v] : before)
        KEYSCHEMA_FUZZ_CHECK(!in_value_range(k), "entries in the value's range, yet no value and no error");
    }
  }

  // copy_chunked 42 -> 7, then erase_chunked 42, in transactions.
  try {
    auto tx = db.transaction();
    const bool copied = ks::copy_chunked<content, content>(tx, {42}, {7});
    KEYSCHEMA_FUZZ_CHECK(whole_ok, "copy_chunked copied a value read_chunked refuses");
    KEYSCHEMA_FUZZ_CHECK(copied == whole.has_value(), "copy_chunked and read_chunked disagree on presence");
    tx.commit();
    const std::optional<ks::bytes> copy = ks::read_chunked<content>(db, {7});
    KEYSCHEMA_FUZZ_CHECK(copy.has_value() == copied, "the copy's presence");
    if (copy) KEYSCHEMA_FUZZ_CHECK(copy->view() == whole->view(), "the copy is not the value");
  } catch (const ks::error& e) {
    KEYSCHEMA_FUZZ_CHECK(!whole_ok || !whole.has_value() || dynamic_cast<const ks::decode_error*>(&e) == nullptr,
                         std::string("copy_chunked refused a readable value: ") + e.what());
    KEYSCHEMA_FUZZ_CHECK(content_of(db.backend()) == before, "a refused copy_chunked changed the database");
  }
  try {
    auto tx = db.transaction();
    const bool erased = ks::erase_chunked<content>(tx, {42});
    tx.commit();
    // Something of the value was there when the read found a value or a fault.
    KEYSCHEMA_FUZZ_CHECK(erased == (!whole_ok || whole.has_value()),
                         "erase_chunked's result is not whether the value's entries were there");
    // Nothing of the value is left: the read finds nothing and no fault. Bytes under the prefix
    // outside the keyspace's key range (another type code than the chunk index's) belong to no
    // chunk and stay.
    std::optional<ks::bytes> left;
    KEYSCHEMA_FUZZ_CHECK(fz::only_decode_errors([&] { left = ks::read_chunked<content>(db, {42}); }),
                         "read_chunked after erase_chunked throws");
    KEYSCHEMA_FUZZ_CHECK(!left.has_value(), "read_chunked after erase_chunked finds a value");
    for (const auto& e : content_of(db.backend()))
      if (e.first.starts_with(prefix_key(42)))
        KEYSCHEMA_FUZZ_CHECK(std::find(before.begin(), before.end(), e) != before.end(),
                             "an entry under the prefix appeared: " + fz::hex(e.first));
  } catch (const ks::error& e) {
    (void)e;
  }
  KEYSCHEMA_FUZZ_CHECK(neighbours() == around, "the neighbouring values changed");
  return 0;
}

// Unit tests of the typed read paths on an instrumented in-memory backend: how far scans move the
// engine (limits), what they read (keys-only scans never fetch a value), value views and
// keys-only scans against owning scans, decoding into reused entries (prefix fields, strings of
// changing length, escaped NULs), get and get_into.
#include <keyschema/keyschema.hpp>

#include "../conformance/broker_schema.hpp"
#include "../support/thrown.hpp"

#include <catch2/catch.hpp>

#include <range/v3/range/conversion.hpp>
#include <range/v3/view/transform.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// A namespace of its own: this file shares a unity object with other tests (tests/CMakeLists.txt).
namespace scan_reads_test {

namespace {
namespace ks = keyschema;
using namespace keyschema::conformance;

// What the cursors of a counting_backend did.
struct cursor_counts {
  std::size_t opened = 0;
  std::size_t steps = 0;   // next() calls
  std::size_t values = 0;  // value() calls
};

// A backend over a memory_backend that counts what its cursors do.
class counting_backend {
 public:
  using snapshot_type = ks::memory_backend::snapshot_type;

  class cursor_type {
   public:
    cursor_type(ks::memory_backend::cursor_type c, cursor_counts* n) : c_(std::move(c)), n_(n) {}
    bool valid() const noexcept { return c_.valid(); }
    std::string_view key() const noexcept { return c_.key(); }
    std::string_view value() const noexcept {
      ++n_->values;
      return c_.value();
    }
    void next() {
      ++n_->steps;
      c_.next();
    }

   private:
    ks::memory_backend::cursor_type c_;
    cursor_counts* n_;
  };

  explicit counting_backend(std::shared_ptr<cursor_counts> n) : n_(std::move(n)) {}

  bool get(std::string_view k, std::string& v, const snapshot_type* s) const { return inner_.get(k, v, s); }
  void write(const ks::write_batch& b, const ks::write_options& o) { inner_.write(b, o); }
  snapshot_type snapshot() const { return inner_.snapshot(); }
  cursor_type cursor(const ks::key_range& r, const snapshot_type* s) const {
    ++n_->opened;
    return cursor_type(inner_.cursor(r, s), n_.get());
  }
  ks::backend_limits limits() const noexcept { return {}; }

 private:
  ks::memory_backend inner_;
  std::shared_ptr<cursor_counts> n_;
};

using counting_store = ks::store<broker, counting_backend>;

struct counted {
  std::shared_ptr<cursor_counts> n = std::make_shared<cursor_counts>();
  counting_store db{n};
  void reset() { *n = cursor_counts{}; }
};

}  // namespace

TEST_CASE("limit(n) never moves the engine past the n-th entry", "[scan][limit]") {
  counted c;
  {
    auto b = c.db.batch();
    for (std::uint64_t id = 1; id <= 10; ++id) b.put<message_metadata>({"q", id}, ks::bytes("v"));
    b.commit();
  }
  for (std::size_t n : {1u, 2u, 5u, 10u}) {
    INFO("limit " << n);
    c.reset();
    std::size_t seen = 0;
    for (const auto& e : c.db.scan<message_metadata>("q").limit(n)) {
      (void)e;
      ++seen;
    }
    CHECK(seen == n);
    CHECK(c.n->opened == 1);
    CHECK(c.n->steps == n - 1);  // the old code stepped once more, onto the (n+1)-th key
    c.reset();
    CHECK(ranges::distance(c.db.scan<message_metadata>("q").reverse().limit(n).keys_only()) == static_cast<long>(n));
    CHECK(c.n->steps == n - 1);
  }
  // A limit above the count ends where the range ends.
  c.reset();
  CHECK(ranges::distance(c.db.scan<message_metadata>("q").limit(11)) == 10);
  CHECK(c.n->steps == 10);
  // limit(0) does not even open a cursor.
  c.reset();
  CHECK(ranges::distance(c.db.scan<message_metadata>("q").limit(0)) == 0);
  CHECK(c.n->opened == 0);
}

TEST_CASE("a kept scan view opens a new cursor on every pass and reads the state at that pass", "[scan][limit]") {
  counted c;
  const auto head = c.db.scan<message_metadata>("q").limit(1);  // kept, as a broker keeps one per queue
  const auto all = c.db.scan<message_metadata>("q").keys_only();
  const auto first_id = [&] {
    std::uint64_t id = 0;
    for (const auto& e : head) id = e.get<"message_id">();
    return id;
  };
  CHECK(first_id() == 0);  // an empty queue
  for (std::uint64_t id = 1; id <= 3; ++id) {
    auto b = c.db.batch();
    b.put<message_metadata>({"q", id}, ks::bytes("v"));
    b.commit();
  }
  c.reset();
  CHECK(first_id() == 1);
  CHECK(first_id() == 1);
  CHECK(c.n->opened == 2);  // one cursor per pass
  CHECK(c.n->steps == 0);   // limit(1): never moved past the first entry
  CHECK(ranges::distance(all) == 3);
  {
    auto b = c.db.batch();
    b.erase<message_metadata>({"q", 1});
    b.commit();
  }
  CHECK(first_id() == 2);  // the next pass reads the state after the erase
  CHECK(ranges::distance(all) == 2);
  // A view of a snapshot reads the snapshot's state on every pass.
  const auto snap = c.db.snapshot();
  const auto snap_all = snap.scan<message_metadata>("q").keys_only();
  {
    auto b = c.db.batch();
    b.erase<message_metadata>({"q", 2});
    b.commit();
  }
  CHECK(ranges::distance(snap_all) == 2);
  CHECK(ranges::distance(snap_all) == 2);
  CHECK(first_id() == 3);
}

TEST_CASE("keys-only scans never read a value; value views and owning scans read each once", "[scan][views]") {
  counted c;
  {
    auto b = c.db.batch();
    for (std::uint64_t id = 1; id <= 20; ++id) b.put<message_metadata>({"q", id}, ks::bytes(std::to_string(id)));
    b.commit();
  }
  c.reset();
  std::vector<std::uint64_t> ids;
  for (const auto& k : c.db.scan<message_metadata>("q").keys_only()) ids.push_back(k.get<"message_id">());
  CHECK(ids.size() == 20);
  CHECK(c.n->values == 0);
  c.reset();
  for (const auto& e : c.db.scan<message_metadata>("q").value_views()) CHECK(e.value == std::to_string(e.get<"message_id">()));
  CHECK(c.n->values == 20);
  c.reset();
  for (const auto& e : c.db.scan<message_metadata>("q")) CHECK(e.value == ks::bytes(std::to_string(e.get<"message_id">())));
  CHECK(c.n->values == 20);
}

TEST_CASE("value views and keys-only scans yield what owning scans yield", "[scan][views]") {
  ks::store<broker, ks::memory_backend> db;
  {
    auto b = db.batch();
    const std::vector<std::string> dests = {"", "a", std::string("a\0b", 3), "a much longer destination name", "b"};
    for (const std::string& d : dests)
      for (std::uint64_t id : {0ull, 7ull, 1ull << 40})
        b.put<message_metadata>({d, id}, ks::bytes(std::string(static_cast<std::size_t>(id % 97), 'x') + d));
    b.commit();
  }
  auto owning = db.scan<message_metadata>() | ranges::to<std::vector>();
  REQUIRE(owning.size() == 15);
  std::vector<ks::entry<message_metadata>> from_views;
  for (const auto& v : db.scan<message_metadata>().value_views())
    from_views.push_back({v.key, ks::bytes(v.value)});
  CHECK(from_views == owning);
  std::vector<message_metadata::key_type> keys;
  for (const auto& k : db.scan<message_metadata>().keys_only()) keys.push_back(k.key);
  REQUIRE(keys.size() == owning.size());
  for (std::size_t i = 0; i < keys.size(); ++i) CHECK(keys[i] == owning[i].key);
  // Reverse, bounded and limited forms keep their meaning.
  auto rev = db.scan<message_metadata>("a").after(0).reverse().value_views();
  std::vector<std::uint64_t> rev_ids;
  for (const auto& v : rev) rev_ids.push_back(v.get<"message_id">());
  CHECK(rev_ids == std::vector<std::uint64_t>{1ull << 40, 7});
  CHECK(ranges::distance(db.scan<message_metadata>().keys_only().limit(4)) == 4);
  CHECK(ranges::distance(db.scan<message_metadata>().limit(4).keys_only()) == 4);
}

TEST_CASE("a reused entry decodes every field right: prefix fields, changing lengths, escaped NULs",
          "[scan][decode]") {
  ks::store<broker, ks::memory_backend> db;
  const std::vector<std::string> dests = {"a much longer destination name than the next", "b", std::string("c\0\0d", 4),
                                          "d", ""};
  {
    auto b = db.batch();
    for (const std::string& d : dests) {
      b.put<message_count>({d}, static_cast<std::int64_t>(d.size()));
      b.put<dtx_entry>({ks::bytes(d + std::string("\0x", 2)), 1}, ks::bytes(d.size() % 2 ? std::string(300, 'L') : std::string("s")));
      b.put<dtx_entry>({ks::bytes(d), 2}, ks::bytes(""));
    }
    b.commit();
  }
  // Every entry decodes exactly as a point read of its key does, whatever the entry before held.
  std::size_t n = 0;
  for (const auto& e : db.scan<message_count>()) {
    CHECK(static_cast<std::size_t>(e.value) == e.get<"destination">().size());
    ++n;
  }
  CHECK(n == dests.size());
  n = 0;
  for (const auto& e : db.scan<dtx_entry>()) {
    CHECK(db.get<dtx_entry>(e.key) == e.value);
    ++n;
  }
  CHECK(n == 2 * dests.size());
  n = 0;
  for (const auto& e : db.scan<dtx_entry>().reverse().value_views()) {
    CHECK(db.get<dtx_entry>(e.key) == ks::bytes(e.value));
    ++n;
  }
  CHECK(n == 2 * dests.size());
  // Prefix fields are filled for prefix scans, also on the first entry and with a prefix of every field.
  for (const std::string& d : dests) {
    for (const auto& e : db.scan<dtx_entry>(ks::bytes(d))) CHECK(e.get<"xid">() == ks::bytes(d));
    std::size_t m = 0;
    for (const auto& e : db.scan<dtx_entry>(ks::bytes(d), 2u)) {
      CHECK(e.get<"xid">() == ks::bytes(d));
      CHECK(e.get<"node_id">() == 2u);
      ++m;
    }
    CHECK(m == 1);
  }
}

TEST_CASE("a malformed key under a scan's prefix is still an error naming the key", "[scan][decode]") {
  ks::store<broker, ks::memory_backend> db;
  db.put<message_metadata>({"q", 1}, ks::bytes("ok"));
  ks::write_batch raw;
  // "DESTINATION", "q", "MESSAGE_METADATA", then a truncated integer element.
  std::string k = ks::tuple::pack("DESTINATION", "q", "MESSAGE_METADATA");
  k.push_back('\x15');
  raw.put(k, "x");
  db.unsafe_backend().write(raw, {});
  for (auto run : {+[](ks::store<broker, ks::memory_backend>& s) { (void)ranges::distance(s.scan<message_metadata>("q")); },
                   +[](ks::store<broker, ks::memory_backend>& s) {
                     (void)ranges::distance(s.scan<message_metadata>("q").keys_only());
                   }}) {
    const auto e = ks::testing::thrown<ks::decode_error>([&] { run(db); });
    REQUIRE(e);
    CHECK(ks::testing::contains(e->what(), "message_metadata"));
    CHECK(ks::testing::contains(e->what(), "the key does not decode"));
    CHECK(ks::testing::contains(e->what(), "MESSAGE_METADATA"));
  }
}

TEST_CASE("get and get_into read what was stored; get_into leaves the target alone on a miss", "[store][get]") {
  ks::store<broker, ks::memory_backend> db;
  db.put<message_metadata>({"q", 1}, ks::bytes(std::string("a\0b", 3)));
  db.put<message_destination>({1}, "queue-one");
  db.put<message_count>({"q"}, -5);
  CHECK(db.get<message_metadata>({"q", 1}) == ks::bytes(std::string("a\0b", 3)));
  CHECK(db.get<message_destination>({1}) == std::string("queue-one"));
  CHECK(db.get<message_count>({"q"}) == -5);

  ks::bytes b("previous, longer content");
  CHECK(db.get_into<message_metadata>({"q", 1}, b));
  CHECK(b == ks::bytes(std::string("a\0b", 3)));
  CHECK_FALSE(db.get_into<message_metadata>({"q", 2}, b));
  CHECK(b == ks::bytes(std::string("a\0b", 3)));
  std::string s = "x";
  CHECK(db.get_into<message_destination>({1}, s));
  CHECK(s == "queue-one");
  CHECK_FALSE(db.get_into<message_destination>({2}, s));
  CHECK(s == "queue-one");
  std::int64_t n = 0;
  CHECK(db.get_into<message_count>({"q"}, n));
  CHECK(n == -5);
  // Repeated reads into one object alternate storage without losing content.
  db.put<message_destination>({2}, std::string(1000, 'z'));
  for (int i = 0; i < 4; ++i) {
    CHECK(db.get_into<message_destination>({static_cast<std::uint64_t>(1 + i % 2)}, s));
    CHECK(s == (i % 2 ? std::string(1000, 'z') : std::string("queue-one")));
  }
  // Inside a transaction, get_into sees the transaction's own writes.
  auto tx = db.transaction();
  tx.put<message_destination>({1}, "renamed");
  CHECK(tx.get_into<message_destination>({1}, s));
  CHECK(s == "renamed");
  tx.erase<message_destination>({1});
  CHECK_FALSE(tx.get_into<message_destination>({1}, s));
}

TEST_CASE("scans with prefixes and bounds longer than a view holds inline select the same entries",
          "[scan][bounds]") {
  // A scan keeps its encoded prefix and bounds in the view when they are short and on the heap
  // otherwise; bounds replace the prefix's lower or upper end in either case.
  using named = ks::keyspace<"named", std::string, ks::lit<"N">, ks::field<"group", std::string>,
                             ks::field<"name", std::string>>;
  ks::store<ks::schema<named>, ks::memory_backend> db;
  // The prefix of scan<named>(group) takes len + 5 bytes and the bounds twice that and 2: at len
  // 54 they fill the view's 120 inline bytes exactly, at 55 they go to the heap.
  for (const std::size_t len : {std::size_t{3}, std::size_t{54}, std::size_t{55}, std::size_t{60}, std::size_t{200}}) {
    const std::string group(len, 'g');
    const std::string other(len, 'h');
    for (const char c : std::string("abcdef")) {
      db.put<named>({group, std::string(len, c)}, std::string(1, c));
      db.put<named>({other, std::string(len, c)}, "other");
    }
    const auto values = [](const auto& view) {
      std::string out;
      for (const auto& e : view) out += e.value;
      return out;
    };
    INFO("length " << len);
    CHECK(values(db.scan<named>(group)) == "abcdef");
    CHECK(values(db.scan<named>(group).from(std::string(len, 'b')).to(std::string(len, 'e'))) == "bcd");
    CHECK(values(db.scan<named>(group).after(std::string(len, 'b')).through(std::string(len, 'e'))) == "cde");
    CHECK(values(db.scan<named>(group).to(std::string(len, 'c')).reverse()) == "ba");
    CHECK(values(db.scan<named>(group).from(std::string(len, 'e')).value_views()) == "ef");
    CHECK(values(db.scan<named>(group, std::string(len, 'd'))) == "d");
    auto view = db.scan<named>(group).from(std::string(len, 'c'));
    auto moved = std::move(view);  // the bounds move with the view
    CHECK(values(moved) == "cdef");
    // Copies: a builder on an lvalue bounds a copy and leaves the original alone.
    const auto whole = db.scan<named>(group);
    const auto narrowed = whole.from(std::string(len, 'c')).to(std::string(len, 'f'));
    CHECK(values(whole) == "abcdef");
    CHECK(values(narrowed) == "cde");
    auto assigned = db.scan<named>(other);
    assigned = narrowed;  // copy assignment
    CHECK(values(assigned) == "cde");
    CHECK(values(narrowed) == "cde");
    assigned = db.scan<named>(other).to(std::string(len, 'c'));  // move assignment
    CHECK(values(assigned) == "otherother");
  }
}

TEST_CASE("a scan's bounds are its prefix's tuple encoding and the next field's type codes, on every encoding path",
          "[scan][bounds]") {
  // scan() encodes the prefix straight into the view's bounds, twice, when it is made of
  // literals, integers and plain ASCII text; any other prefix (text with a NUL or beyond ASCII)
  // is encoded into a string and copied. Both must give prefix + first type code of the next
  // field, prefix + the byte after its last (an integer field: 0x0b..0x1d, which include the
  // codes of integers too long for it, so that they are read and refused), and with every field
  // given, the key alone: [key, key + 0x00).
  using mixed = ks::keyspace<"mixed", std::string, ks::lit<"M">, ks::field<"name", std::string>,
                             ks::field<"n", std::int64_t>, ks::field<"u", std::uint32_t>>;
  ks::store<ks::schema<mixed>, ks::memory_backend> db;
  const auto check_range = [](const auto& view, const std::string& prefix, std::string_view lower_tail,
                              std::string_view upper_tail) {
    const ks::key_range r = view.range();
    CHECK(r.lower == prefix + std::string(lower_tail));
    CHECK(r.upper == prefix + std::string(upper_tail));
    CHECK_FALSE(r.reverse);
  };
  // Text lengths: empty, short, the inline room's edge for two copies (the bounds of (name, n)
  // take 2 * (name + 14) + 2 bytes at most: 120 at 45), past it, and long (on the heap).
  std::vector<std::string> names = {std::string(), "q", std::string(44, 'y'), std::string(45, 'y'),
                                    std::string(46, 'y'), std::string(300, 'x'), std::string("a\0b", 3),
                                    "caf\xc3\xa9"};
  for (const std::string& name : names) {
    INFO("name size " << name.size());
    check_range(db.scan<mixed>(name), ks::tuple::pack("M", name), "\x0b", "\x1e");
    check_range(db.scan<mixed>(std::string_view(name)), ks::tuple::pack("M", name), "\x0b", "\x1e");
    for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, std::int64_t{255}, std::int64_t{-256},
                                 std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::min(),
                                 std::numeric_limits<std::int64_t>::max()}) {
      INFO("n " << n);
      // The integer's direct write stores 8 bytes after its type code; the tail and the second
      // copy written after it must overwrite the ones it does not use.
      check_range(db.scan<mixed>(name, n), ks::tuple::pack("M", name, n), "\x0b", "\x1e");
      check_range(db.scan<mixed>(name, static_cast<int>(n & 0xffff)),
                  ks::tuple::pack("M", name, static_cast<std::int64_t>(n & 0xffff)), "\x0b", "\x1e");
      check_range(db.scan<mixed>(name, n, std::uint32_t{7}), ks::tuple::pack("M", name, n, std::uint32_t{7}), "",
                  std::string_view("\0", 1));
      check_range(db.scan<mixed>(name, n).reverse().reverse(), ks::tuple::pack("M", name, n), "\x0b", "\x1e");
    }
    // And the scan selects the entries of that prefix only.
    db.put<mixed>({name, 5, 1}, "in");
    db.put<mixed>({name + "z", 5, 1}, "next name");
    std::string seen;
    for (const auto& e : db.scan<mixed>(name)) seen += e.value;
    CHECK(seen == "in");
    db.erase<mixed>({name, 5, 1});
    db.erase<mixed>({name + "z", 5, 1});
  }
  const char literal[] = "lit";  // a char array: the text up to its terminator
  check_range(db.scan<mixed>(literal), ks::tuple::pack("M", "lit"), "\x0b", "\x1e");
  // Text that is not UTF-8 is refused, as on the general path of every key.
  CHECK_THROWS_WITH(db.scan<mixed>(std::string("bad \xff")), Catch::Contains("invalid UTF-8"));
}

}  // namespace scan_reads_test

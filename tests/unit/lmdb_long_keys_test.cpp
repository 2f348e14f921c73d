// tests/unit/lmdb_long_keys_test.cpp: keys longer than LMDB's 511-byte limit in keyspaces with
// keyschema::long_keys (lmdb/detail/long_keys.hpp). A 2 KiB key round-trips through put, get,
// scan (both directions, bounds inside a group of keys sharing their first 502 bytes) and erase;
// thousands of random keys sharing their first 502 bytes, prefixes of each other among them, come
// out of every cursor (both directions, random bounds, snapshots, a write transaction) exactly as
// std::sort orders them; counts and indexes over such a keyspace, and batches and transactions
// mixing long and short keys, stay exact; a keyspace without the marker still gets a limit_error
// naming it, the key's size and the limit; the marker on and off is a ks::migrate; and the stored
// form is read back with LMDB's own tool (mdb_dump), independent of this code.
#include <keyschema/keyschema.hpp>
#include <keyschema/lmdb.hpp>

#include <support/lmdb_point_reads.hpp>
#include <support/temp_dir.hpp>
#include <support/thrown.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace lmdb_long_keys_test {

namespace {
namespace ks = keyschema;
using ks::testing::temp_dir;

using doc = ks::long_keys<ks::keyspace<"doc", std::string, ks::lit<"DOC">, ks::field<"name", std::string>>>;
using meta = ks::keyspace<"meta", std::string, ks::lit<"META">, ks::field<"name", std::string>>;
using doc_schema = ks::schema<doc, meta>;
using doc_store = ks::store<doc_schema, ks::lmdb_backend>;

template <class View>
std::vector<std::string> names_of(View&& v) {
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(e.template get<"name">());
  return out;
}

std::vector<std::string> between(const std::vector<std::string>& sorted, const std::string& lo, const std::string& hi) {
  std::vector<std::string> out;
  for (const std::string& s : sorted)
    if (s >= lo && s < hi) out.push_back(s);
  return out;
}

// One entry of `mdb_dump -p` (LMDB's own tool): key and value bytes of the main database.
std::vector<std::pair<std::string, std::string>> dump_entries(const std::filesystem::path& dir) {
  const std::string cmd = "mdb_dump -p '" + dir.string() + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::vector<std::pair<std::string, std::string>> out;
  if (p == nullptr) return out;
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  ::pclose(p);
  const auto unescape = [](std::string_view line) {
    std::string s;
    for (std::size_t i = 1; i < line.size(); ++i) {  // after the leading space
      if (line[i] != '\\') {
        s += line[i];
      } else if (line[i + 1] == '\\') {
        s += '\\';
        ++i;
      } else {
        s += static_cast<char>(std::stoi(std::string(line.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      }
    }
    return s;
  };
  std::size_t at = text.find("HEADER=END\n");
  if (at == std::string::npos) return out;
  at += 11;
  std::vector<std::string> lines;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  for (std::size_t i = 0; i + 1 < lines.size() && lines[i].starts_with(" "); i += 2)
    out.emplace_back(unescape(lines[i]), unescape(lines[i + 1]));
  return out;
}

bool have_mdb_dump() { return std::system("command -v mdb_dump > /dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("a 2 KiB key round-trips on LMDB through put, get, scan and erase", "[long_keys]") {
  temp_dir dir;
  const std::string stem(600, 's');  // the names below share their first 600 bytes: one group
  const std::string big(2048, 'k');
  std::vector<std::string> names = {big,         stem + "a", stem + "m", stem + "m" + std::string(1500, 'x'),
                                    stem,        stem + "z", "b",        stem.substr(0, 400),
                                    stem + "q" + std::string(10, '\0')};
  {
    doc_store db(dir.path());
    for (const std::string& n : names) db.put<doc>({n}, "v" + std::to_string(n.size()));
    for (const std::string& n : names) CHECK(db.get<doc>({n}) == std::optional<std::string>("v" + std::to_string(n.size())));
    CHECK(db.get<doc>({stem + "n"}) == std::nullopt);  // in the group, absent
    CHECK(db.get<doc>({big + "k"}) == std::nullopt);
  }
  doc_store db(dir.path());  // reopened: what was stored reads back
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  CHECK(names_of(db.scan<doc>()) == sorted);
  std::vector<std::string> back(sorted.rbegin(), sorted.rend());
  CHECK(names_of(db.scan<doc>().reverse()) == back);
  // Bounds inside the group of stem: both bounds longer than 502 bytes once encoded.
  const std::vector<std::string> inside = between(sorted, stem + "c", stem + "q");
  REQUIRE(inside.size() == 2);
  CHECK(names_of(db.scan<doc>().from(stem + "c").to(stem + "q")) == inside);
  CHECK(names_of(db.scan<doc>().from(stem + "c").to(stem + "q").reverse()) ==
        std::vector<std::string>(inside.rbegin(), inside.rend()));
  CHECK(names_of(db.scan<doc>().after(stem + "m").through(stem + "q" + std::string(10, '\0'))) ==
        std::vector<std::string>{stem + "m" + std::string(1500, 'x'), stem + "q" + std::string(10, '\0')});
  CHECK(names_of(db.scan<doc>().from(stem + "m").limit(1).reverse()) == std::vector<std::string>{stem + "z"});
  CHECK(names_of(db.scan<doc>().to(stem + "a")) == between(sorted, "", stem + "a"));
  // Replacing a long key keeps one entry; erasing one leaves its group's other keys.
  db.put<doc>({stem + "m"}, "replaced");
  CHECK(db.get<doc>({stem + "m"}) == std::optional<std::string>("replaced"));
  CHECK(names_of(db.scan<doc>()) == sorted);
  db.erase<doc>({big});
  db.erase<doc>({stem + "m"});
  CHECK(db.get<doc>({big}) == std::nullopt);
  CHECK(db.get<doc>({stem + "m"}) == std::nullopt);
  CHECK(db.get<doc>({stem + "m" + std::string(1500, 'x')}) == std::optional<std::string>("v2101"));
  sorted.erase(std::remove_if(sorted.begin(), sorted.end(), [&](const std::string& s) { return s == big || s == stem + "m"; }),
               sorted.end());
  CHECK(names_of(db.scan<doc>()) == sorted);
  CHECK(db.erase_prefix<doc>() == sorted.size());
  CHECK(names_of(db.scan<doc>()).empty());
}

TEST_CASE("a keyspace without long_keys still refuses a key over LMDB's limit, naming keyspace, size and limit",
          "[long_keys][limits]") {
  temp_dir dir;
  doc_store db(dir.path());
  const std::string name(600, 'n');
  const auto e = ks::testing::thrown<ks::limit_error>([&] { db.put<meta>({name}, "x"); });
  REQUIRE(e);
  const std::string what = e->what();
  CHECK(what.find("'meta'") != std::string::npos);
  CHECK(what.find("608 bytes") != std::string::npos);  // "\x02META\0" + "\x02" + 600 + "\0"
  CHECK(what.find("511 bytes") != std::string::npos);
  CHECK(what.find("keyschema::long_keys") != std::string::npos);
  CHECK(db.get<meta>({name}) == std::nullopt);
  CHECK(names_of(db.scan<meta>()).empty());
  // The same key in the keyspace with the marker is stored.
  db.put<doc>({name}, "x");
  CHECK(db.get<doc>({name}) == std::optional<std::string>("x"));
  // At the backend: a long key outside the routes is refused before anything is written.
  temp_dir raw_dir;
  ks::lmdb_backend raw(raw_dir.path());
  const ks::long_key_route routes[] = {{std::string_view("\x02" "DOC\0", 5), true, false}};
  raw.long_keys(routes);
  ks::write_batch b;
  b.put(std::string("\x02" "DOC", 4) + std::string(1, '\0') + std::string(600, 'n'), "x");
  b.put(std::string("\x02" "META", 5) + std::string(1, '\0') + std::string(600, 'n'), "x");
  CHECK_THROWS_AS(raw.write(b, {}), ks::limit_error);
  std::string v;
  CHECK_FALSE(raw.get(std::string("\x02" "DOC", 4) + std::string(1, '\0') + std::string(600, 'n'), v, nullptr));
}

TEST_CASE("thousands of random keys sharing their first 502 bytes come out of every LMDB cursor in exact order",
          "[long_keys][order]") {
  temp_dir dir;
  ks::lmdb_backend b(dir.path());
  const std::string prefix("\x02LK\x00", 4);
  const ks::long_key_route routes[] = {{prefix, true, false}};
  b.long_keys(routes);
  std::mt19937_64 rng(20261205);
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  // Three stems of 498 bytes (prefix + stem = 502 bytes): most keys fall into three groups.
  std::vector<std::string> stems;
  for (int i = 0; i < 3; ++i) {
    std::string s(498, 'a');
    for (char& c : s) c = "ab\x00\xff"[pick(4)];
    stems.push_back(prefix + s);
  }
  const std::string alphabet("ab\x00\xff", 4);
  std::map<std::string, std::string> model;
  std::vector<std::string> keys;
  while (keys.size() < 4000) {
    std::string k = stems[pick(3)];
    const std::size_t cut = pick(5) == 0 ? pick(40) : 0;  // some keys end inside the stem: plain, before the group
    k.resize(k.size() - cut);
    const std::size_t extra = pick(60);
    for (std::size_t i = 0; i < extra; ++i) k += alphabet[pick(alphabet.size())];
    keys.push_back(k);
    if (pick(4) == 0 && k.size() > prefix.size() + 1) keys.push_back(k.substr(0, k.size() - 1 - pick(k.size() - prefix.size() - 1)));
  }
  for (std::size_t i = 0; i < keys.size(); i += 100) {
    ks::write_batch batch;
    for (std::size_t j = i; j < std::min(keys.size(), i + 100); ++j) {
      const std::string v = "v" + std::to_string(j);
      batch.put(keys[j], v);
      model[keys[j]] = v;
    }
    b.write(batch, {});
  }
  std::vector<std::string> sorted;
  for (const auto& [k, v] : model) sorted.push_back(k);
  {
    std::vector<std::string> by_sort = keys;
    std::sort(by_sort.begin(), by_sort.end());
    by_sort.erase(std::unique(by_sort.begin(), by_sort.end()), by_sort.end());
    REQUIRE(by_sort == sorted);
  }
  std::size_t longs = 0;
  for (const std::string& k : sorted) longs += k.size() > 511 ? 1 : 0;
  REQUIRE(longs > 500);
  const auto read = [](auto&& cur) {
    std::vector<std::pair<std::string, std::string>> out;
    for (; cur.valid(); cur.next()) out.emplace_back(cur.key(), cur.value());
    return out;
  };
  const auto expect = [&](const std::string& lo, const std::string& hi, bool reverse) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto it = model.lower_bound(lo); it != model.end() && (hi.empty() || it->first < hi); ++it) out.push_back(*it);
    if (reverse) std::reverse(out.begin(), out.end());
    return out;
  };
  CHECK(read(b.cursor(ks::key_range{}, nullptr)) == expect("", "", false));
  CHECK(read(b.cursor(ks::key_range{{}, {}, true}, nullptr)) == expect("", "", true));
  const auto random_bound = [&] {
    std::string k = sorted[pick(sorted.size())];
    switch (pick(4)) {
      case 0: return k;
      case 1: return k + alphabet[pick(4)];
      case 2: return k.substr(0, std::max<std::size_t>(prefix.size(), k.size() - pick(8)));
      default: {
        k[prefix.size() + pick(k.size() - prefix.size())] = alphabet[pick(4)];
        return k;
      }
    }
  };
  for (int i = 0; i < 300; ++i) {
    std::string lo = random_bound(), hi = random_bound();
    if (hi < lo) std::swap(lo, hi);
    const bool reverse = pick(2) == 0;
    INFO("bounds of " << lo.size() << " and " << hi.size() << " bytes, reverse " << reverse);
    CHECK(read(b.cursor(ks::key_range{lo, hi, reverse}, nullptr)) == expect(lo, hi, reverse));
    CHECK(read(b.cursor(ks::key_range{lo, {}, reverse}, nullptr)) == expect(lo, "", reverse));
  }
  std::string v;
  for (const std::string& k : sorted) {
    REQUIRE(b.get(k, v, nullptr));
    CHECK(v == model[k]);
  }
  CHECK_FALSE(b.get(stems[0] + std::string(600, '\x01'), v, nullptr));
  // A snapshot keeps its state while a third of the keys are erased and others replaced, in a
  // write transaction that reads its own group first.
  const auto snap = b.snapshot();
  const auto before = expect("", "", false);
  {
    auto t = b.begin_write();
    const std::string& some = *std::find_if(sorted.begin(), sorted.end(), [](const std::string& k) { return k.size() > 511; });
    REQUIRE(t.get(some, v));
    CHECK(v == model[some]);
    CHECK(read(t.cursor(ks::key_range{stems[1], {}, false})) == expect(stems[1], "", false));
    ks::write_batch batch;
    for (const std::string& k : sorted) {
      if (pick(3) == 0) {
        batch.erase(k);
        model.erase(k);
      } else if (pick(5) == 0) {
        batch.put(k, "r" + k.substr(k.size() - 3));
        model[k] = "r" + k.substr(k.size() - 3);
      }
    }
    batch.put(stems[2] + std::string(700, 'z'), "new");
    model[stems[2] + std::string(700, 'z')] = "new";
    t.commit(batch, {});
  }
  CHECK(read(b.cursor(ks::key_range{}, &snap)) == before);
  CHECK(read(b.cursor(ks::key_range{}, nullptr)) == expect("", "", false));
  CHECK(read(b.cursor(ks::key_range{{}, {}, true}, nullptr)) == expect("", "", true));
  for (int i = 0; i < 100; ++i) {
    std::string lo = random_bound(), hi = random_bound();
    if (hi < lo) std::swap(lo, hi);
    const bool reverse = pick(2) == 0;
    CHECK(read(b.cursor(ks::key_range{lo, hi, reverse}, nullptr)) == expect(lo, hi, reverse));
  }
  for (const std::string& k : sorted) CHECK(b.get(k, v, nullptr) == model.contains(k));
}

namespace derived {
using record = ks::long_keys<ks::keyspace<"record", std::int64_t, ks::lit<"R">, ks::field<"queue", std::string>,
                                          ks::field<"id", std::string>>>;
struct by_value {
  std::optional<std::tuple<std::int64_t, std::string, std::string>> operator()(const record::key_type& k,
                                                                                 const record::value_type& v) const {
    return std::tuple(v, std::get<0>(k), std::get<1>(k));
  }
};
using record_index = ks::long_keys<ks::keyspace<"record_index", ks::index_of<record, by_value>, ks::lit<"I">,
                                                ks::field<"value", std::int64_t>, ks::field<"queue", std::string>,
                                                ks::field<"id", std::string>>>;
using record_count =
    ks::long_keys<ks::keyspace<"record_count", ks::count_of<record, 1>, ks::lit<"C">, ks::field<"queue", std::string>>>;
using short_kv = ks::keyspace<"short_kv", std::int64_t, ks::lit<"S">, ks::field<"k", std::uint64_t>>;
using derived_schema = ks::schema<record, record_index, record_count, short_kv>;
}  // namespace derived

TEST_CASE("counts, indexes, batches and transactions over long keys mixed with short ones stay exact",
          "[long_keys][count][index][transaction]") {
  using namespace derived;
  temp_dir dir;
  ks::store<derived_schema, ks::lmdb_backend> db(dir.path());
  const std::string q1(700, 'q');       // a queue name past LMDB's limit by itself
  const std::string q2 = q1 + "2";      // shares its first 700 bytes
  const std::string q3 = "short";
  std::map<std::tuple<std::string, std::string>, std::int64_t> model;
  {
    auto batch = db.batch();
    for (int i = 0; i < 40; ++i) {
      const std::string q = i % 3 == 0 ? q1 : i % 3 == 1 ? q2 : q3;
      const std::string id = (i % 2 == 0 ? std::string(300, 'i') : std::string()) + std::to_string(i);
      batch.put<record>({q, id}, i % 7);
      model[{q, id}] = i % 7;
      batch.put<short_kv>({static_cast<std::uint64_t>(i)}, i);
    }
    batch.commit();
  }
  const auto check = [&] {
    std::map<std::string, std::int64_t> counts;
    std::vector<std::tuple<std::int64_t, std::string, std::string>> index;
    for (const auto& [k, v] : model) {
      ++counts[std::get<0>(k)];
      index.emplace_back(v, std::get<0>(k), std::get<1>(k));
    }
    std::sort(index.begin(), index.end());
    for (const std::string& q : {q1, q2, q3}) {
      const auto it = counts.find(q);
      CHECK(db.get<record_count>({q}) == (it == counts.end() ? std::nullopt : std::optional<std::int64_t>(it->second)));
    }
    std::vector<std::tuple<std::int64_t, std::string, std::string>> scanned;
    for (const auto& e : db.scan<record_index>())
      scanned.emplace_back(e.get<"value">(), e.get<"queue">(), e.get<"id">());
    CHECK(scanned == index);
    std::vector<std::pair<std::string, std::string>> records, expected;
    for (const auto& e : db.scan<record>(q1)) records.emplace_back(e.get<"queue">(), e.get<"id">());
    for (const auto& [k, v] : model)
      if (std::get<0>(k) == q1) expected.emplace_back(std::get<0>(k), std::get<1>(k));
    CHECK(records == expected);
  };
  check();
  {
    auto tx = db.transaction();
    tx.put<record>({q1, "new"}, 99);
    tx.erase<record>({q2, std::string(300, 'i') + "4"});
    tx.put<short_kv>({1000}, 5);
    // Read-your-writes, over LMDB's write transaction: the new long key, the erased one.
    CHECK(tx.get<record>({q1, "new"}) == std::optional<std::int64_t>(99));
    CHECK(tx.get<record>({q2, std::string(300, 'i') + "4"}) == std::nullopt);
    CHECK(tx.get<record_count>({q1}) == std::optional<std::int64_t>(15));
    std::size_t in_q1 = 0;
    for (const auto& e : tx.scan<record>(q1)) in_q1 += e.get<"queue">() == q1 ? 1 : 0;
    CHECK(in_q1 == 15);
    tx.commit();
    model[{q1, "new"}] = 99;
    model.erase({q2, std::string(300, 'i') + "4"});
  }
  check();
  CHECK(db.get<short_kv>({1000}) == std::optional<std::int64_t>(5));
  {
    auto tx = db.transaction();
    tx.put<record>({q2, "rolled back"}, 1);
    tx.rollback();
  }
  check();
  CHECK(db.erase_prefix<record>(q1) == 15);
  for (auto it = model.begin(); it != model.end();) it = std::get<0>(it->first) == q1 ? model.erase(it) : std::next(it);
  check();
}

namespace placed_long {
using pdoc = ks::placed<"docs", ks::long_keys<ks::keyspace<"pdoc", std::string, ks::lit<"PDOC">, ks::field<"name", std::string>>>>;
using lpdoc = ks::long_keys<ks::placed<"docs2", ks::keyspace<"lpdoc", std::string, ks::lit<"LPDOC">, ks::field<"name", std::string>>>>;
using placed_schema = ks::schema<pdoc, lpdoc, meta>;
}  // namespace placed_long

TEST_CASE("long keys in placed keyspaces (either order of the markers) live in their named database",
          "[long_keys][placement]") {
  using namespace placed_long;
  temp_dir dir;
  const std::string stem(700, 'p');
  const std::vector<std::string> names = {stem + "b", stem + "a", "short", stem + std::string(2000, 'c')};
  {
    ks::store<placed_schema, ks::lmdb_backend> db(dir.path());
    auto b = db.batch();
    for (const std::string& n : names) {
      b.put<pdoc>({n}, "p" + n.substr(n.size() - 1));
      b.put<lpdoc>({n}, "l" + n.substr(n.size() - 1));
    }
    b.put<meta>({"m"}, "meta");
    b.commit();
  }
  ks::store<placed_schema, ks::lmdb_backend> db(dir.path());
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  CHECK(names_of(db.scan<pdoc>()) == sorted);
  CHECK(names_of(db.scan<lpdoc>()) == sorted);
  CHECK(names_of(db.scan<lpdoc>().reverse()) == std::vector<std::string>(sorted.rbegin(), sorted.rend()));
  for (const std::string& n : names) {
    CHECK(db.get<pdoc>({n}) == std::optional<std::string>("p" + n.substr(n.size() - 1)));
    CHECK(db.get<lpdoc>({n}) == std::optional<std::string>("l" + n.substr(n.size() - 1)));
  }
  db.erase<lpdoc>({stem + "a"});
  CHECK(db.get<lpdoc>({stem + "a"}) == std::nullopt);
  CHECK(db.get<pdoc>({stem + "a"}) == std::optional<std::string>("pa"));
  // The full-range cursor merges the placements in exact key order, long keys in full.
  std::vector<std::string> all;
  for (auto c = db.backend().cursor(ks::key_range{}, nullptr); c.valid(); c.next()) all.emplace_back(c.key());
  CHECK(std::is_sorted(all.begin(), all.end()));
  CHECK(all.size() == 4 + 3 + 1 + 1);  // pdoc, lpdoc, meta, the schema record
  CHECK(std::count_if(all.begin(), all.end(), [](const std::string& k) { return k.size() > 511; }) == 3 + 2);
}

namespace migration {
using plain_doc = ks::keyspace<"doc", std::string, ks::lit<"DOC">, ks::field<"name", std::string>>;
using v1 = ks::schema<plain_doc, meta>;
using v2 = ks::schema<doc, meta>;  // the same keyspace with long keys
}  // namespace migration

TEST_CASE("long_keys on and off is a schema change done by ks::migrate", "[long_keys][migrate]") {
  using namespace migration;
  temp_dir dir;
  const std::string n500(500, 'm');  // a key of 509 bytes: plain under v1, the long form under v2
  {
    ks::store<v1, ks::lmdb_backend> db(dir.path());
    db.put<plain_doc>({n500}, "a");
    db.put<plain_doc>({n500 + "b"}, "b");
    db.put<plain_doc>({"x"}, "x");
  }
  {
    const auto e = ks::testing::thrown<ks::schema_error>([&] { ks::store<v2, ks::lmdb_backend> db(dir.path()); });
    REQUIRE(e);
    CHECK(std::string(e->what()).find("long keys (keyschema::long_keys) in this program") != std::string::npos);
  }
  {
    ks::lmdb_backend b(dir.path());
    ks::migrate<v1, v2>(b);
  }
  {
    ks::store<v2, ks::lmdb_backend> db(dir.path());
    CHECK(names_of(db.scan<doc>()) == std::vector<std::string>{n500, n500 + "b", "x"});
    CHECK(db.get<doc>({n500}) == std::optional<std::string>("a"));
    db.put<doc>({n500 + std::string(2000, 'c')}, "long");
    CHECK(names_of(db.scan<doc>().reverse()) ==
          std::vector<std::string>{"x", n500 + std::string(2000, 'c'), n500 + "b", n500});
  }
  if (have_mdb_dump()) {
    // After the migration no key of the keyspace is stored plainly beyond 502 bytes.
    for (const auto& [k, v] : dump_entries(dir.path()))
      if (k.starts_with("\x02" "DOC")) CHECK((k.size() <= 502 || k.size() == 511));
  }
  {
    // Back without the marker: the 2 KiB key cannot be stored plainly, named by the store.
    ks::lmdb_backend b(dir.path());
    const auto e = ks::testing::thrown<ks::limit_error>([&] { ks::migrate<v2, v1>(b); });
    REQUIRE(e);
    CHECK(std::string(e->what()).find("'doc'") != std::string::npos);
  }
}

TEST_CASE("the stored long form, read with mdb_dump: the first 502 bytes, 0xFF, a tie-breaker; the rest before the value",
          "[long_keys][format]") {
  if (!have_mdb_dump()) {
    WARN("mdb_dump not installed: skipped");
    return;
  }
  temp_dir dir;
  const std::string stem(600, 's');
  {
    doc_store db(dir.path());
    db.put<doc>({stem + "b"}, "second");
    db.put<doc>({stem + "a"}, "first");
    db.put<doc>({stem + "b"}, "replaced");  // the same entry, not a third one
    db.put<doc>({"short"}, "plain");
  }
  const std::string key_a = std::string("\x02" "DOC", 4) + std::string(1, '\0') + "\x02" + stem + "a" + std::string(1, '\0');
  const std::string key_b = std::string("\x02" "DOC", 4) + std::string(1, '\0') + "\x02" + stem + "b" + std::string(1, '\0');
  std::vector<std::pair<std::string, std::string>> longs;
  bool plain = false;
  for (const auto& [k, v] : dump_entries(dir.path())) {
    if (!k.starts_with("\x02" "DOC")) continue;
    if (k.size() == 511) longs.emplace_back(k, v);
    plain = plain || (k.size() < 20 && v.find("plain") != std::string::npos);
  }
  CHECK(plain);
  REQUIRE(longs.size() == 2);
  for (const auto& [k, v] : longs) {
    CHECK(k.substr(0, 502) == key_a.substr(0, 502));
    CHECK(static_cast<unsigned char>(k[502]) == 0xff);
    const std::size_t n = (static_cast<unsigned char>(v[0]) << 24) | (static_cast<unsigned char>(v[1]) << 16) |
                          (static_cast<unsigned char>(v[2]) << 8) | static_cast<unsigned char>(v[3]);
    REQUIRE(n == key_a.size() - 502);
    const std::string rest = v.substr(4, n);
    const std::string value = v.substr(4 + n);
    // The tie-breakers were given in put order: b got 0, a got 1.
    const std::uint64_t tie = [&k = k] {
      std::uint64_t t = 0;
      for (std::size_t i = 503; i < 511; ++i) t = (t << 8) | static_cast<unsigned char>(k[i]);
      return t;
    }();
    if (tie == 0) {
      CHECK(k.substr(0, 502) + rest == key_b);
      CHECK(value.find("replaced") != std::string::npos);
    } else {
      CHECK(tie == 1);
      CHECK(k.substr(0, 502) + rest == key_a);
      CHECK(value.find("first") != std::string::npos);
    }
  }
}

// Point reads route their key by what the backend decided when its long-key routes last changed
// (env_state::plain_max), not per read: routes set after the first reads, changed as ks::migrate
// changes them, and taken off, reroute the reads at once, with and without a snapshot; a miss
// leaves the caller's value alone.
TEST_CASE("point reads follow long-key routes set after the first reads, changed and taken off", "[long_keys]") {
  temp_dir dir;
  ks::lmdb_backend b(dir.path());
  const auto put = [&](const std::string& k, const std::string& v) {
    ks::write_batch w;
    w.put(k, v);
    b.write(w, {});
  };
  const auto stored_plainly = [&](const std::string& k) { return ks::testing::in_main_database(b, k); };
  const auto read = [&](const std::string& k) { return ks::testing::checked_read(b, k); };
  const std::string k505 = "L" + std::string(504, 'x');  // within LMDB's 511 bytes, beyond 502
  const std::string k2000 = "L" + std::string(1999, 'y');
  put("L-short", "s");
  CHECK(read("L-short") == std::optional<std::string>("s"));  // no long keys yet
  const ks::long_key_route routes[] = {{"L", true, false}};
  b.long_keys(routes);
  put(k505, "long");
  put(k2000, "longer");
  CHECK_FALSE(stored_plainly(k505));  // the long form
  CHECK(read(k505) == std::optional<std::string>("long"));
  CHECK(read(k2000) == std::optional<std::string>("longer"));
  CHECK(read("L-short") == std::optional<std::string>("s"));
  CHECK(read(k505 + "z") == std::nullopt);
  // ks::migrate taking the marker off: new keys stored plainly, both forms read.
  const ks::long_key_route leaving[] = {{"L", false, true}};
  b.long_keys(leaving);
  put(k505 + "p", "plain");
  CHECK(stored_plainly(k505 + "p"));
  CHECK(read(k505) == std::optional<std::string>("long"));
  CHECK(read(k505 + "p") == std::optional<std::string>("plain"));
  // No routes: every key up to 511 bytes is read plainly, a longer one is absent.
  b.long_keys({});
  CHECK(read(k505 + "p") == std::optional<std::string>("plain"));
  CHECK(read("L-short") == std::optional<std::string>("s"));
  CHECK(read(k2000) == std::nullopt);
}

}  // namespace lmdb_long_keys_test

// migrate_wso2: moves a WSO2 Message Broker LevelDB store, written with the seed's dotted-string
// keys, into the fixed schema of examples/broker/wso2_schema.hpp, and checks the result.
//
//   migrate_wso2 [--backend memory|leveldb|lmdb] [--path DIR] [--messages N]
//
// It first writes a store the way the 2017 broker did (raw LevelDB, keys such as
// "DESTINATION.orders.MESSAGE_METADATA.10", decimal counts and times), with the inputs that broke
// it: ids and chunk offsets past 9, a queue named "MESSAGE_COUNT" and one whose name contains the
// '.' delimiter. It shows two of the old bugs on that store (metadata listed in the order 1, 10,
// 11, 2, ...; a scan for counts that returns another queue's metadata), then migrates every key:
//   - each key is parsed from both ends; a key that reads two ways (the metadata of the queue
//     "MESSAGE_COUNT" also reads as the count of a queue "MESSAGE_METADATA.<id>") is settled by the
//     store's own cross-references (MESSAGE.$id.DESTINATION_NAME, the set of queue names); a key
//     that still reads two ways, or no way, stops the migration with its text: nothing is guessed
//     and nothing skipped;
//   - the typed entries go into the chosen backend in atomic batches of at most 1000 operations;
//     the counts are not copied (the fixed schema declares them: the store writes them with the
//     metadata, and they are checked against the old ones), the expiry index is written by the
//     store with each expiration time, and each message's old chunks, in numeric offset order,
//     become one chunked value (ks::put_chunked), 50 messages per transaction.
// Then it checks the migrated store against what it wrote: every queue lists its messages in
// numeric id order, every count equals the old count and the number of metadata records, every
// message's chunks reassemble its body in offset order, expiration times and dead-letter flags
// match. On leveldb and lmdb it also reopens the store and checks again. Exit status 0 when
// everything matched.
#include "broker/wso2_schema.hpp"
#include "support/example_backend.hpp"

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace wso2;
using example::expect;

// What the old broker stored, kept to check the migrated store against.
struct message {
  std::string queue;
  std::string body;
  std::string metadata;
  std::optional<std::int64_t> expires_ms;
  bool dead_lettered = false;
};
using truth = std::map<std::uint64_t, message>;

constexpr std::size_t chunk_bytes = 4;  // small, so that bodies have offsets 10, 11, ...

truth make_messages(std::uint64_t n) {
  const std::vector<std::string> queues = {"orders", "MESSAGE_COUNT", "eu.orders"};
  truth t;
  for (std::uint64_t id = 1; id <= n; ++id) {
    message m;
    m.queue = queues[id % queues.size()];
    m.body = "body-of-message-" + std::to_string(id) + std::string(id % 5 == 0 ? 30 : 0, '.');
    m.metadata = "meta:" + std::to_string(id);
    if (id % 3 == 0) m.expires_ms = 1'700'000'000'000 + static_cast<std::int64_t>(id);
    m.dead_lettered = id % 7 == 0;
    t.emplace(id, std::move(m));
  }
  return t;
}

void check(const leveldb::Status& s, const char* call) {
  if (!s.ok()) throw std::runtime_error(std::string(call) + ": " + s.ToString());
}

// The 2017 store: dotted keys, decimal numbers.
void write_seed_store(const std::filesystem::path& dir, const truth& t) {
  leveldb::Options o;
  o.create_if_missing = true;
  leveldb::DB* raw = nullptr;
  check(leveldb::DB::Open(o, dir.string(), &raw), "leveldb::DB::Open");
  std::unique_ptr<leveldb::DB> db(raw);
  leveldb::WriteBatch b;
  std::map<std::string, std::int64_t> counts;
  for (const auto& [id, m] : t) {
    const std::string ids = std::to_string(id);
    for (std::size_t off = 0; off * chunk_bytes < m.body.size(); ++off)
      b.Put("MESSAGE." + ids + "." + std::to_string(off) + ".MESSAGE_CONTENT", m.body.substr(off * chunk_bytes, chunk_bytes));
    b.Put("MESSAGE." + ids + ".DESTINATION_NAME", m.queue);
    b.Put("MESSAGE." + ids + ".DLC_STATUS", m.dead_lettered ? "1" : "0");
    b.Put("DESTINATION." + m.queue + ".MESSAGE_METADATA." + ids, m.metadata);
    if (m.expires_ms) b.Put("DESTINATION." + m.queue + ".MESSAGE_EXPIRATION_TIME." + ids, std::to_string(*m.expires_ms));
    ++counts[m.queue];
  }
  for (const auto& [q, n] : counts) b.Put("DESTINATION.MESSAGE_COUNT." + q, std::to_string(n));
  leveldb::WriteOptions w;
  w.sync = true;
  check(db->Write(w, &b), "leveldb::DB::Write");
}

template <class F>
void for_each_prefixed(leveldb::DB& db, std::string_view prefix, F&& f) {
  std::unique_ptr<leveldb::Iterator> it(db.NewIterator(leveldb::ReadOptions()));
  for (it->Seek(leveldb::Slice(prefix.data(), prefix.size())); it->Valid() && it->key().starts_with(leveldb::Slice(prefix.data(), prefix.size())); it->Next())
    f(it->key().ToString(), it->value().ToString());
  check(it->status(), "leveldb::Iterator");
}

// The old bugs, shown on the old store.
void show_old_bugs(leveldb::DB& db) {
  std::string order;
  int shown = 0;
  for_each_prefixed(db, "DESTINATION.orders.MESSAGE_METADATA.", [&](const std::string& k, const std::string&) {
    if (shown++ < 6) order += (order.empty() ? "" : ", ") + k.substr(k.rfind('.') + 1);
  });
  std::printf("old store: queue 'orders' lists its messages as %s, ...\n", order.c_str());
  std::size_t count_keys = 0;
  for_each_prefixed(db, "DESTINATION.MESSAGE_COUNT.", [&](const std::string&, const std::string&) { ++count_keys; });
  std::printf("old store: a scan for counts (DESTINATION.MESSAGE_COUNT.*) returns %zu keys for 3 queues\n", count_keys);
}

std::optional<std::uint64_t> decimal(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// One reading of an old key.
struct reading {
  enum class kind { content, destination, dlc_status, count, metadata, expiration } what;
  std::string queue;
  std::uint64_t id = 0;
  std::uint32_t offset = 0;
};

// Every way key can be read. DESTINATION.$queue.<suffix>.$id is read from the right (an id is
// digits), so a queue name containing '.' is read whole; only the count's prefix reading can
// compete with it.
std::vector<reading> readings(std::string_view key) {
  std::vector<reading> r;
  using k = reading::kind;
  if (key.starts_with("MESSAGE.")) {
    const std::string_view rest = key.substr(8);
    const std::size_t dot = rest.find('.');
    const auto id = decimal(rest.substr(0, dot));
    if (!id || dot == std::string_view::npos) return r;
    const std::string_view tail = rest.substr(dot + 1);
    if (tail == "DESTINATION_NAME") r.push_back({k::destination, {}, *id});
    if (tail == "DLC_STATUS") r.push_back({k::dlc_status, {}, *id});
    if (tail.ends_with(".MESSAGE_CONTENT")) {
      const auto off = decimal(tail.substr(0, tail.size() - 16));
      if (off && *off <= UINT32_MAX) r.push_back({k::content, {}, *id, static_cast<std::uint32_t>(*off)});
    }
    return r;
  }
  if (!key.starts_with("DESTINATION.")) return r;
  const std::string_view rest = key.substr(12);
  for (const auto& [suffix, what] : {std::pair<std::string_view, k>{".MESSAGE_METADATA.", k::metadata},
                                     std::pair<std::string_view, k>{".MESSAGE_EXPIRATION_TIME.", k::expiration}}) {
    const std::size_t at = rest.rfind(suffix);
    if (at == std::string_view::npos) continue;
    if (const auto id = decimal(rest.substr(at + suffix.size()))) r.push_back({what, std::string(rest.substr(0, at)), *id});
  }
  if (rest.starts_with("MESSAGE_COUNT.")) r.push_back({k::count, std::string(rest.substr(14))});
  return r;
}

template <class Store>
std::size_t migrate(leveldb::DB& old, Store& db) {
  // The store's cross-references: which queue each message is in, and the queues that exist.
  std::map<std::uint64_t, std::string> queue_of;
  std::set<std::string> queues;
  for_each_prefixed(old, "MESSAGE.", [&](const std::string& key, const std::string& value) {
    for (const reading& r : readings(key)) {
      if (r.what == reading::kind::destination) {
        queue_of[r.id] = value;
        queues.insert(value);
      }
    }
  });
  auto plausible = [&](const reading& r) {
    switch (r.what) {
      case reading::kind::metadata:
      case reading::kind::expiration: {
        const auto it = queue_of.find(r.id);
        return it != queue_of.end() && it->second == r.queue;
      }
      case reading::kind::count: return queues.count(r.queue) != 0;
      default: return true;
    }
  };

  std::size_t migrated = 0;
  std::map<std::uint64_t, std::map<std::uint32_t, std::string>> bodies;  // id -> offset -> chunk
  auto b = db.batch();
  for_each_prefixed(old, "", [&](const std::string& key, const std::string& value) {
    std::vector<reading> rs = readings(key);
    if (rs.size() > 1) std::erase_if(rs, [&](const reading& r) { return !plausible(r); });
    if (rs.size() != 1) {
      throw std::runtime_error("migrate_wso2: the key '" + key + "' reads " + (rs.empty() ? "no way" : "two ways") +
                               " in the old schema; nothing after it was migrated");
    }
    const reading& r = rs.front();
    auto number = [&] {
      const auto v = decimal(value);
      if (!v || *v > INT64_MAX) throw std::runtime_error("migrate_wso2: the key '" + key + "' holds '" + value + "', not a number");
      return static_cast<std::int64_t>(*v);
    };
    switch (r.what) {
      case reading::kind::content: bodies[r.id][r.offset] = value; break;  // rewritten whole below
      case reading::kind::destination: b.template put<message_destination>({r.id}, value); break;
      case reading::kind::dlc_status: b.template put<message_dlc_status>({r.id}, value == "1"); break;
      // The count is declared (count_of): the store writes it with the metadata; verify() checks
      // it equals the old count.
      case reading::kind::count: (void)number(); break;
      // The old metadata is the header; the content's length is filled in with the content.
      case reading::kind::metadata: b.template put<message_metadata>({r.queue, r.id}, metadata{ks::bytes(value), 0}); break;
      case reading::kind::expiration: {
        const millis at{std::chrono::milliseconds(number())};
        b.template put<message_expiration>({r.queue, r.id}, at);
        break;
      }
    }
    ++migrated;
    if (b.size() == 1000) b.commit();
  });
  b.commit();
  // The content: the old chunks in numeric offset order make the body, stored as one chunked
  // value (the fixed layout), its length put in the metadata, 50 messages per transaction.
  auto it = bodies.begin();
  while (it != bodies.end()) {
    auto tx = db.transaction();
    for (int n = 0; n < 50 && it != bodies.end(); ++n, ++it) {
      const auto& [id, chunks] = *it;
      std::string body;
      for (const auto& [offset, piece] : chunks) body += piece;
      ks::put_chunked<message_content>(tx, {id}, body, 64 * 1024);
      if (const auto queue = tx.template get<message_destination>({id})) {
        if (auto meta = tx.template get<message_metadata>({*queue, id})) {
          meta->content_length = body.size();
          tx.template put<message_metadata>({*queue, id}, *meta);
        }
      }
    }
    tx.commit();
  }
  return migrated;
}

template <class Store>
void verify(const Store& db, const truth& t, const char* when) {
  std::map<std::string, std::vector<std::uint64_t>> expected_ids;
  for (const auto& [id, m] : t) expected_ids[m.queue].push_back(id);
  for (const auto& [queue, ids] : expected_ids) {
    std::vector<std::uint64_t> listed;
    for (const auto& e : db.template scan<message_metadata>(queue)) listed.push_back(e.template get<"message_id">());
    expect(listed == ids, std::string(when) + ": queue '" + queue + "' lists its messages in id order");
    const auto n = db.template get<message_count>({queue});
    expect(n == std::optional<std::int64_t>(static_cast<std::int64_t>(ids.size())),
           std::string(when) + ": the count of '" + queue + "' equals its metadata records");
  }
  std::size_t counts = 0;
  for (const auto& e : db.template scan<message_count>()) {
    (void)e;
    ++counts;
  }
  expect(counts == expected_ids.size(), std::string(when) + ": one count per queue, no other");
  for (const auto& [id, m] : t) {
    const auto body = ks::read_chunked<message_content>(db, {id});
    expect(body && body->view() == m.body, std::string(when) + ": message " + std::to_string(id) + "'s chunks reassemble its body");
    expect(db.template get<message_destination>({id}) == std::optional<std::string>(m.queue),
           std::string(when) + ": message " + std::to_string(id) + "'s destination");
    const auto meta = db.template get<message_metadata>({m.queue, id});
    expect(meta && meta->header == ks::bytes(m.metadata) && meta->content_length == m.body.size(),
           std::string(when) + ": message " + std::to_string(id) + "'s metadata");
    expect(db.template get<message_dlc_status>({id}) == std::optional<bool>(m.dead_lettered),
           std::string(when) + ": message " + std::to_string(id) + "'s dead-letter flag");
    const auto at = db.template get<message_expiration>({m.queue, id});
    expect(at.has_value() == m.expires_ms.has_value() &&
               (!at || at->time_since_epoch() == std::chrono::milliseconds(*m.expires_ms)),
           std::string(when) + ": message " + std::to_string(id) + "'s expiration time");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const example::options o = example::parse_options(argc, argv);
  const truth t = make_messages(o.number("messages", 120));
  const int status = example::with_backend<message_store>(o, [&](auto open, const std::filesystem::path& dir) {
    const std::filesystem::path seed = dir / "seed-leveldb";
    write_seed_store(seed, t);
    leveldb::DB* raw = nullptr;
    check(leveldb::DB::Open(leveldb::Options(), seed.string(), &raw), "leveldb::DB::Open");
    std::unique_ptr<leveldb::DB> old(raw);
    show_old_bugs(*old);
    {
      auto db = open();
      const std::size_t n = migrate(*old, *db);
      std::printf("migrated %zu keys of %zu messages into %s\n", n, t.size(), o.backend.c_str());
      verify(*db, t, "after migration");
    }
    if (o.backend != "memory") verify(*open(), t, "after reopening");
    return 0;
  });
  if (status != 0) return status;
  std::printf("%s\n", example::failure_count() == 0 ? "all checks passed" : "CHECKS FAILED");
  return example::failure_count() == 0 ? 0 : 1;
}

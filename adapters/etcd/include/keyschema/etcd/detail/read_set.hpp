// keyschema/etcd/detail/read_set.hpp: what an etcd_write_transaction read, and the compares that
// make its commit fail when another writer changed any of it.
//
// A transaction reads at one revision R (the answer to its first read). At commit its Txn
// carries, for what it read:
//   - every key it was positioned on or looked up: mod_revision == the one it saw (0 when the
//     key did not exist). This catches a change and a deletion of the key, and the creation of a
//     key it found missing (etcd compares a missing key as mod_revision 0);
//   - every key range a cursor covered (from its start to the last key it was positioned on, or
//     to its end once it was exhausted): mod_revision < R + 1 over the range. This catches a key
//     created or changed in the range; deletions in it are caught by the per-key compares,
//     because etcd's range compare only looks at keys that exist.
// Together: the Txn applies only if everything the transaction read is as it was at R, which
// makes the transaction serializable with every other writer of the cluster. A range is only
// as wide as what the cursor actually went over, so a consumer that read the head of a queue
// does not conflict with a publisher appending to its tail.
//
// Erase scans: a range the transaction declared it erases (etcd_write_transaction::erase_scan,
// keyschema::store's range erases) is marked. A key a cursor goes over inside a mark gets no
// compare of its own (the range compare still catches a key created or changed there); instead
// the cursor records it in a run of keys it went over one after the other. At commit a run whose
// keys the batch all erases, with no put between them, becomes one DeleteRange (txn_body.hpp):
// every key that existed between them at R is in the run, and the range compare fails the commit
// if one was created since. This lets one Txn erase any number of keys.
//
// Thread-safety: one read_set belongs to one transaction, used by one thread.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/etcd/detail/base64.hpp>
#include <keyschema/etcd/detail/client.hpp>
#include <keyschema/etcd/detail/request_size.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace etcd_detail {

struct read_set {
  // The revision every read of the transaction is made at (0: nothing read yet; the first read
  // is made at the latest revision and fixes it).
  std::int64_t revision = 0;
  // etcd key -> mod_revision seen (0: missing).
  std::map<std::string, std::int64_t, std::less<>> keys;
  // [begin, end) etcd ranges covered by cursors (end "\0": no upper bound). An entry whose
  // begin == end (and end is not "\0") covers nothing yet.
  std::vector<etcd_range> ranges;

  // Ranges the transaction erases (erase scans), etcd keys.
  std::vector<etcd_range> marks;
  // Per cursor (the index of its entry in ranges): the runs of keys inside marks it went over one
  // after the other, in its direction; open: its last key was inside a mark (the next one
  // continues that run).
  struct cursor_runs {
    std::vector<std::vector<std::string>> runs;
    bool open = false;
  };
  std::vector<cursor_runs> erase_runs;

  void note_key(std::string etcd_key, std::int64_t mod_revision) { keys.insert_or_assign(std::move(etcd_key), mod_revision); }

  bool in_marks(std::string_view k) const noexcept {
    static const std::string_view unbounded("\0", 1);
    for (const etcd_range& m : marks) {
      if (!(k < std::string_view(m.begin)) && (m.end == unbounded || k < std::string_view(m.end))) return true;
    }
    return false;
  }

  // The key the cursor whose entry in ranges is cursor went over next (see note_key and the
  // header comment).
  void note_cursor_key(std::size_t cursor, std::string etcd_key, std::int64_t mod_revision) {
    if (marks.empty()) {
      note_key(std::move(etcd_key), mod_revision);
      return;
    }
    if (erase_runs.size() <= cursor) erase_runs.resize(cursor + 1);
    cursor_runs& r = erase_runs[cursor];
    if (!in_marks(etcd_key)) {
      r.open = false;
      note_key(std::move(etcd_key), mod_revision);
      return;
    }
    if (!r.open) r.runs.emplace_back();
    r.open = true;
    r.runs.back().push_back(std::move(etcd_key));
  }

  // The covered ranges sorted and merged (overlapping or touching ones become one), empty ones
  // dropped.
  std::vector<etcd_range> merged_ranges() const {
    static const std::string unbounded(1, '\0');
    std::vector<etcd_range> rs;
    for (const etcd_range& r : ranges) {
      if (r.end != unbounded && !(r.begin < r.end)) continue;
      rs.push_back(r);
    }
    std::sort(rs.begin(), rs.end(), [](const etcd_range& a, const etcd_range& b) { return a.begin < b.begin; });
    std::vector<etcd_range> out;
    for (etcd_range& r : rs) {
      if (!out.empty() && (out.back().end == unbounded || !(out.back().end < r.begin))) {
        // Overlaps or touches the previous one: extend it.
        if (out.back().end != unbounded && (r.end == unbounded || out.back().end < r.end)) out.back().end = r.end;
        continue;
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  // The number of compares compares_json() writes.
  std::size_t compare_count() const { return revision == 0 ? 0 : keys.size() + merged_ranges().size(); }

  // Appends the TxnRequest's "compare" array (without a leading comma) to body; returns the
  // number of protobuf bytes those compares add to the request (for --max-request-bytes).
  std::size_t append_compares(std::string& body) const {
    body += "\"compare\":[";
    std::size_t bytes = 0;
    bool first = true;
    auto open = [&](std::string_view result, std::string_view key) {
      if (!first) body += ',';
      first = false;
      body += "{\"result\":\"";
      body += result;
      body += "\",\"target\":\"MOD\",\"key\":\"";
      base64_append(body, key);
      body += '"';
    };
    // A Compare: result and target varints (2 bytes each), key, range_end and the revision
    // (a tag and up to 10 bytes), in a length-delimited field of the TxnRequest.
    auto compare_bytes = [](std::size_t key, std::size_t range_end) {
      const std::size_t inner = 4 + field_size(key) + (range_end == 0 ? 0 : 2 + varint_size(range_end) + range_end) + 11;
      return field_size(inner);
    };
    if (revision != 0) {
      for (const auto& [k, mod] : keys) {
        open("EQUAL", k);
        body += ",\"mod_revision\":\"" + std::to_string(mod) + "\"}";
        bytes += compare_bytes(k.size(), 0);
      }
      for (const etcd_range& r : merged_ranges()) {
        open("LESS", r.begin);
        body += ",\"range_end\":\"";
        base64_append(body, r.end);
        body += "\",\"mod_revision\":\"" + std::to_string(revision + 1) + "\"}";
        bytes += compare_bytes(r.begin.size(), r.end.size());
      }
    }
    body += ']';
    return bytes;
  }
};

}  // namespace etcd_detail
KEYSCHEMA_END_NAMESPACE

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
// Erase scans: the cursor keyschema::store goes over a range with to erase what it finds
// (etcd_write_transaction::erase_cursor) records the keys it goes over as one run, in its
// direction, and their mod_revisions apart (unchecked). At commit, those the batch erases get no
// compare of their own (the range compare still catches a key created or changed there), the
// others get one as any key read; and the parts of a run whose keys the batch all erases, with
// no put between them, become one DeleteRange each (txn_body.hpp): every key that existed
// between them at R is in the run, and the range compare fails the commit if one was created
// since. So one Txn erases any number of keys. A later ordinary cursor adds no compare for a key
// an erase scan went over: it is compared, or not, by that rule.
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
#include <utility>
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

  // Per erase scan: the etcd keys it went over, in its direction.
  std::vector<std::vector<std::string>> erase_runs;
  // etcd key -> mod_revision seen, for the keys an erase scan went over (and that ordinary
  // cursors went over after it): compared at commit only when the batch does not erase them.
  std::map<std::string, std::int64_t, std::less<>> unchecked;

  void note_key(std::string etcd_key, std::int64_t mod_revision) { keys.insert_or_assign(std::move(etcd_key), mod_revision); }

  // A key an ordinary cursor was positioned on.
  void note_cursor_key(std::string etcd_key, std::int64_t mod_revision) {
    if (!unchecked.empty() && unchecked.find(etcd_key) != unchecked.end()) return;  // an erase scan's
    note_key(std::move(etcd_key), mod_revision);
  }

  // Starts the run of a new erase scan; returns its index in erase_runs.
  std::size_t begin_erase_run() {
    erase_runs.emplace_back();
    return erase_runs.size() - 1;
  }
  // The next key erase scan `run` went over.
  void note_erase_key(std::size_t run, std::string etcd_key, std::int64_t mod_revision) {
    unchecked.emplace(etcd_key, mod_revision);
    erase_runs[run].push_back(std::move(etcd_key));
  }

  // The keys of unchecked that a batch whose erased etcd keys erased() tells does not erase and
  // keys does not hold already: they get a compare of their own.
  template <class Erased>
  std::vector<std::pair<std::string, std::int64_t>> kept_unchecked(Erased&& erased) const {
    std::vector<std::pair<std::string, std::int64_t>> out;
    for (const auto& [k, mod] : unchecked) {
      if (!erased(k) && keys.find(k) == keys.end()) out.emplace_back(k, mod);
    }
    return out;
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

  // The number of compares append_compares() writes with `extra` more keys.
  std::size_t compare_count(std::size_t extra = 0) const {
    return revision == 0 ? 0 : keys.size() + extra + merged_ranges().size();
  }

  // Appends the TxnRequest's "compare" array (without a leading comma) to body: those of keys,
  // of extra (more keys, with the mod_revision seen) and of the covered ranges; returns the
  // number of protobuf bytes those compares add to the request (for --max-request-bytes).
  std::size_t append_compares(std::string& body,
                              const std::vector<std::pair<std::string, std::int64_t>>& extra = {}) const {
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
      const auto key_compare = [&](const std::string& k, std::int64_t mod) {
        open("EQUAL", k);
        body += ",\"mod_revision\":\"" + std::to_string(mod) + "\"}";
        bytes += compare_bytes(k.size(), 0);
      };
      for (const auto& [k, mod] : keys) key_compare(k, mod);
      for (const auto& [k, mod] : extra) key_compare(k, mod);
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

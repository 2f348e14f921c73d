// keyschema/memory_backend.hpp: an in-memory, ordered, multi-version backend.
//
// memory_backend meets the contract in <keyschema/backend.hpp> with no file at all. It is the
// reference implementation the conformance suite checks every other backend against, and the
// embedded default for caches and tests. Every key keeps the versions that a live snapshot can
// still see (multi-version concurrency control), so snapshots and cursors read one consistent
// state while writers go on, exactly like LevelDB and LMDB do. Nothing is durable:
// write_options::sync is accepted and has no effect.
//
// Placement (keyschema::placed) is ignored: this backend does not model backend_with_placements
// (<keyschema/backend.hpp>), and every keyspace stays in its one key space.
//
// Thread-safety: as the backend contract requires. get, snapshot and cursor may run concurrently
// with each other and with one write(); readers only take a shared lock for a single step.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/write_batch.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

namespace detail {

// memory_backend's implementation (see memory_backend below). A template only so that a
// translation unit that includes this header and never uses the backend does not instantiate the
// std::map, std::set and std::shared_ptr code of its members.
template <class = void>
class basic_memory_backend {
  struct version_rec {
    std::uint64_t seq;
    std::optional<std::string> value;  // nullopt: erased at seq
  };
  using map_t = std::map<std::string, std::vector<version_rec>, std::less<>>;

  // A shared mutex under which a stream of readers cannot starve a writer (glibc's
  // std::shared_mutex prefers readers: with a few threads scanning, each commit used to wait for
  // milliseconds). A writer holds the gate while it waits for the readers inside to leave; new
  // readers queue at the gate meanwhile. Nothing here takes a shared lock while holding one.
  class fair_shared_mutex {
   public:
    void lock() {
      std::lock_guard<std::mutex> g(gate_);
      rw_.lock();
    }
    void unlock() { rw_.unlock(); }
    void lock_shared() {
      { std::lock_guard<std::mutex> g(gate_); }
      rw_.lock_shared();
    }
    void unlock_shared() { rw_.unlock_shared(); }

   private:
    std::mutex gate_;
    std::shared_mutex rw_;
  };

  struct state {
    mutable fair_shared_mutex mu;  // guards data, seq, epoch
    map_t data;
    std::uint64_t seq = 0;
    std::uint64_t epoch = 0;  // bumped whenever a map node is erased

    std::mutex snap_mu;  // guards live
    std::multiset<std::uint64_t> live;
  };

 public:
  // A consistent view: every read through it sees the database as of its creation.
  class snapshot_type {
   public:
    std::uint64_t sequence() const noexcept { return h_->seq; }

   private:
    friend class basic_memory_backend;
    struct handle {
      state* owner;
      std::uint64_t seq;
      std::multiset<std::uint64_t>::iterator reg;
      handle(state* o, std::uint64_t s, std::multiset<std::uint64_t>::iterator r) : owner(o), seq(s), reg(r) {}
      handle(const handle&) = delete;
      handle& operator=(const handle&) = delete;
      ~handle() {
        std::lock_guard lk(owner->snap_mu);
        owner->live.erase(reg);
      }
    };
    explicit snapshot_type(std::shared_ptr<handle> h) : h_(std::move(h)) {}
    std::shared_ptr<handle> h_;
  };

  class cursor_type {
   public:
    bool valid() const noexcept { return valid_; }
    // REQUIRES: valid(). Valid until next() or destruction.
    std::string_view key() const noexcept { return key_; }
    std::string_view value() const noexcept { return value_; }
    // REQUIRES: valid().
    void next() {
      std::shared_lock lk(s_->mu);
      if (epoch_ != s_->epoch) {
        reseek_after_current();
      } else if (!step()) {
        valid_ = false;
        return;
      }
      settle();
    }

   private:
    friend class basic_memory_backend;
    cursor_type(state* s, snapshot_type snap, const key_range& r)
        : s_(s), snap_(std::move(snap)), lower_(r.lower), upper_(r.upper), reverse_(r.reverse) {
      std::shared_lock lk(s_->mu);
      epoch_ = s_->epoch;
      if (reverse_) {
        // Last key < upper (or the last key at all).
        auto it = upper_.empty() ? s_->data.end() : s_->data.lower_bound(std::string_view(upper_));
        if (it == s_->data.begin()) return;
        it_ = std::prev(it);
      } else {
        it_ = s_->data.lower_bound(std::string_view(lower_));
      }
      settle();
    }

    // Re-finds the position after the current key in the cursor's direction; used when another
    // thread erased map nodes since the last step.
    void reseek_after_current() {
      epoch_ = s_->epoch;
      if (reverse_) {
        auto it = s_->data.lower_bound(std::string_view(key_));
        if (it == s_->data.begin()) {
          it_ = s_->data.end();
          valid_ = false;
          at_start_ = true;
          return;
        }
        it_ = std::prev(it);
      } else {
        it_ = s_->data.upper_bound(std::string_view(key_));
      }
    }

    // Moves it_ to the first visible entry in direction, checks the bounds, copies it out.
    // Caller holds the shared lock.
    void settle() {
      if (at_start_) return;
      const std::uint64_t seq = snap_.sequence();
      for (;;) {
        if (it_ == s_->data.end()) {
          valid_ = false;
          return;
        }
        const std::string& k = it_->first;
        if (reverse_ ? std::string_view(k) < std::string_view(lower_)
                     : (!upper_.empty() && std::string_view(k) >= std::string_view(upper_))) {
          valid_ = false;
          return;
        }
        if (const std::string* v = visible(it_->second, seq)) {
          key_ = k;
          value_ = *v;
          valid_ = true;
          return;
        }
        if (!step()) {
          valid_ = false;
          return;
        }
      }
    }

    // Moves it_ one node in the cursor's direction; false when there is none (reverse, at the
    // first node). Caller holds the shared lock.
    bool step() {
      if (!reverse_) {
        ++it_;
        return true;
      }
      if (it_ == s_->data.begin()) return false;
      --it_;
      return true;
    }

    state* s_;
    snapshot_type snap_;
    std::string lower_, upper_;
    bool reverse_;
    bool valid_ = false;
    bool at_start_ = false;
    std::uint64_t epoch_ = 0;
    typename map_t::iterator it_{};
    std::string key_, value_;
  };

  basic_memory_backend() : s_(std::make_unique<state>()) {}
  basic_memory_backend(basic_memory_backend&&) noexcept = default;
  basic_memory_backend& operator=(basic_memory_backend&&) noexcept = default;

  bool get(std::string_view key, std::string& value, const snapshot_type* snap) const {
    std::shared_lock lk(s_->mu);
    const std::uint64_t seq = snap ? snap->sequence() : s_->seq;
    auto it = s_->data.find(key);
    if (it == s_->data.end()) return false;
    const std::string* v = visible(it->second, seq);
    if (!v) return false;
    value.assign(*v);
    return true;
  }

  void write(const write_batch& batch, const write_options& /*opts: nothing is durable*/) {
    if (batch.empty()) return;
    // Copy everything first so that an allocation failure leaves the map untouched.
    std::vector<std::pair<std::string, std::optional<std::string>>> staged;
    staged.reserve(batch.size());
    for (write_batch::op o : batch) {
      staged.emplace_back(std::string(o.key), o.kind == write_batch::op_kind::put
                                                  ? std::optional<std::string>(std::string(o.value))
                                                  : std::nullopt);
    }
    std::unique_lock lk(s_->mu);
    const std::uint64_t seq = s_->seq + 1;
    const std::uint64_t horizon = oldest_visible(seq);
    for (auto& [k, v] : staged) {
      auto it = s_->data.find(std::string_view(k));
      if (it == s_->data.end()) {
        if (!v) continue;  // erasing a key nobody can see: nothing to record
        it = s_->data.emplace(std::move(k), std::vector<version_rec>{}).first;
      }
      auto& versions = it->second;
      if (!versions.empty() && versions.back().seq == seq) versions.back().value = std::move(v);
      else versions.push_back(version_rec{seq, std::move(v)});
      prune(it, horizon);
    }
    s_->seq = seq;  // publish: readers with no snapshot see the whole batch at once
  }

  snapshot_type snapshot() const {
    std::shared_lock lk(s_->mu);
    return make_snapshot(s_->seq);
  }

  cursor_type cursor(const key_range& range, const snapshot_type* snap) const {
    if (snap) return cursor_type(s_.get(), *snap, range);
    return cursor_type(s_.get(), snapshot(), range);
  }

  // No limits: every member is backend_limits::unlimited (memory is the bound).
  backend_limits limits() const noexcept { return backend_limits{}; }

  // Number of distinct keys held, live or not yet collected (for tests and diagnostics).
  std::size_t debug_node_count() const {
    std::shared_lock lk(s_->mu);
    return s_->data.size();
  }

 private:

  // The value visible at seq, or nullptr when the key is absent or erased at seq.
  static const std::string* visible(const std::vector<version_rec>& versions, std::uint64_t seq) {
    for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
      if (it->seq <= seq) return it->value ? &*it->value : nullptr;
    }
    return nullptr;
  }

  // Oldest sequence any reader may still ask for.
  std::uint64_t oldest_visible(std::uint64_t next_seq) const {
    std::lock_guard lk(s_->snap_mu);
    return s_->live.empty() ? next_seq : *s_->live.begin();
  }

  // Drops versions no reader can see any more; erases the node when only a tombstone is left.
  // Caller holds the unique lock.
  void prune(typename map_t::iterator it, std::uint64_t horizon) {
    auto& v = it->second;
    // Index of the newest version with seq <= horizon: everything before it is invisible.
    std::size_t keep = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i].seq <= horizon) keep = i;
    }
    if (keep > 0) v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(keep));
    if (v.size() == 1 && v.front().seq <= horizon && !v.front().value) {
      s_->data.erase(it);
      ++s_->epoch;
    }
  }

  snapshot_type make_snapshot(std::uint64_t seq) const {
    std::lock_guard lk(s_->snap_mu);
    auto reg = s_->live.insert(seq);
    // Built in place: the handle unregisters itself (taking snap_mu) when destroyed. If the
    // allocation fails no handle exists, so unregister here.
    try {
      return snapshot_type(std::make_shared<typename snapshot_type::handle>(s_.get(), seq, reg));
    } catch (...) {
      s_->live.erase(reg);
      throw;
    }
  }

  std::unique_ptr<state> s_;
};

}  // namespace detail

// The in-memory backend (see the top of this file). Its members are detail::basic_memory_backend's.
class memory_backend : public detail::basic_memory_backend<> {
 public:
  memory_backend() = default;
};

KEYSCHEMA_END_NAMESPACE

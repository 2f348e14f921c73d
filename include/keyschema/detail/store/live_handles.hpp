// keyschema/detail/store/live_handles.hpp: counts of the objects that must not outlive the object
// they were made from (snapshots, batches, transactions and scan cursors of a store; the scan
// cursors of a snapshot), so that destroying it first is a clear abort instead of a dangling
// engine handle.
//
// A store's snapshots, batches, transactions and cursors refer to its engine (an LMDB read
// transaction, a LevelDB snapshot or iterator). The API documents `REQUIRES: the store outlives
// it`; destroying the store first used to leave them pointing at a closed engine, with no error
// until memory was reused. A destructor cannot report an error by throwing, so the owner checks
// its live_count when it is destroyed and, when something made from it is still alive, prints
// one line naming what is alive and the remedy, then calls std::abort(): the program stops where
// the mistake is instead of reading freed memory later.
//
// Thread-safety: live_count's counters are atomic: handles may be created, copied and destroyed
// from several threads at once. A live_handle object itself is used by one thread at a time.
#pragma once

#include <keyschema/detail/config.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

enum class live_kind : unsigned char { snapshot, batch, transaction, cursor };
inline constexpr std::size_t live_kinds = 4;

// How many objects of each kind made from an owner are alive.
class live_count {
 public:
  live_count() = default;
  live_count(const live_count&) = delete;
  live_count& operator=(const live_count&) = delete;

  void add(live_kind k) const noexcept { n_[index(k)].fetch_add(1, std::memory_order_relaxed); }
  void remove(live_kind k) const noexcept { n_[index(k)].fetch_sub(1, std::memory_order_relaxed); }
  std::size_t count(live_kind k) const noexcept { return n_[index(k)].load(std::memory_order_acquire); }

  // "2 snapshots and 1 scan cursor", or "" when nothing is alive.
  std::string describe() const {
    static constexpr const char* names[live_kinds][2] = {
        {"snapshot", "snapshots"}, {"batch", "batches"}, {"transaction", "transactions"}, {"scan cursor", "scan cursors"}};
    std::string s;
    std::size_t listed = 0, total_kinds = 0;
    for (std::size_t i = 0; i < live_kinds; ++i) total_kinds += n_[i].load(std::memory_order_acquire) != 0;
    for (std::size_t i = 0; i < live_kinds; ++i) {
      const std::size_t n = n_[i].load(std::memory_order_acquire);
      if (n == 0) continue;
      if (listed != 0) s += listed + 1 == total_kinds ? " and " : ", ";
      s += std::to_string(n) + " " + names[i][n == 1 ? 0 : 1];
      ++listed;
    }
    return s;
  }

  // Called by the owner's destructor: when anything made from it is alive, prints
  // "<owner> destroyed while <what> made from it <is|are> alive; <remedy>" to stderr and aborts.
  void check_none_alive(const std::string& owner, const char* remedy) const noexcept {
    std::size_t total = 0;
    for (const auto& n : n_) total += n.load(std::memory_order_acquire);
    if (total == 0) return;
    std::string what;
    try {
      what = describe();
    } catch (...) {
      what = "objects";
    }
    std::fprintf(stderr, "%s destroyed while %s made from it %s alive; %s. Aborting instead of leaving them dangling.\n",
                 owner.c_str(), what.c_str(), total == 1 ? "is" : "are", remedy);
    std::fflush(stderr);
    std::abort();
  }

 private:
  static constexpr std::size_t index(live_kind k) noexcept { return static_cast<std::size_t>(k); }
  mutable std::array<std::atomic<std::size_t>, live_kinds> n_{};
};

// One counted object: registered with its owner's live_count from construction to destruction.
// Copies register again; a moved-from handle is empty.
class live_handle {
 public:
  live_handle() noexcept = default;
  live_handle(const live_count* owner, live_kind k) noexcept : owner_(owner), kind_(k) {
    if (owner_ != nullptr) owner_->add(kind_);
  }
  live_handle(const live_handle& o) noexcept : live_handle(o.owner_, o.kind_) {}
  live_handle(live_handle&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), kind_(o.kind_) {}
  live_handle& operator=(const live_handle& o) noexcept {
    if (this != &o) *this = live_handle(o);
    return *this;
  }
  live_handle& operator=(live_handle&& o) noexcept {
    if (this != &o) {
      reset();
      owner_ = std::exchange(o.owner_, nullptr);
      kind_ = o.kind_;
    }
    return *this;
  }
  ~live_handle() { reset(); }

  void reset() noexcept {
    if (owner_ != nullptr) owner_->remove(kind_);
    owner_ = nullptr;
  }

 private:
  const live_count* owner_ = nullptr;
  live_kind kind_ = live_kind::cursor;
};

// A backend cursor that counts as one live scan cursor of its owner for its whole life. It is the
// backend's cursor in every other respect.
template <class Cursor>
class counted_cursor : public Cursor {
 public:
  // The cursor make() returns, built in place where the compiler elides the move of a base
  // initialized from a prvalue (GCC does; otherwise it is moved once).
  template <class Make>
    requires std::is_invocable_r_v<Cursor, Make&&>
  counted_cursor(Make&& make, const live_count* owner)
      : Cursor(std::forward<Make>(make)()), handle_(owner, live_kind::cursor) {}

 private:
  live_handle handle_;
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE

// keyschema/write_batch.hpp: an ordered list of byte-level puts and erases applied atomically.
//
// A write_batch is what every backend commits: all of its operations become visible together or
// none do, and later operations on the same key win over earlier ones. Keys and values are raw
// bytes; the typed layer (keyschema::store_batch, keyschema::store_transaction) encodes straight
// into the batch's single buffer, so adding an operation allocates nothing once the buffer has
// grown.
//
// Thread-safety: a write_batch is a plain value. Const members may be called concurrently;
// anything else needs external synchronization.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

// Durability of one commit, with the same meaning on every backend. write_options{} is durable:
// a commit is on stable storage when it returns, on every file backend.
struct write_options {
  // true (the default): the commit is on stable storage when write() returns (LevelDB
  // WriteOptions::sync, LMDB's synchronous commit). false: the explicit opt-out, faster: the
  // commit survives a crash of the process but may be lost on an operating-system crash or power
  // loss (LevelDB without WriteOptions::sync; LMDB MDB_NOSYNC, where such a crash on a file
  // system that reorders writes can also damage the database). See docs/backends/<engine>.md.
  bool sync = true;
};

class write_batch {
 public:
  enum class op_kind : std::uint8_t { put, erase };

  // One operation. key and value point into the batch and are valid until the batch is next
  // modified or destroyed. value is empty for erase.
  struct op {
    op_kind kind;
    std::string_view key;
    std::string_view value;
  };

  write_batch() = default;

  // Appends a put of key -> value. Copies both.
  void put(std::string_view key, std::string_view value) {
    emplace(op_kind::put, [&](std::string& b) { b.append(key); }, [&](std::string& b) { b.append(value); });
  }

  // Appends an erase of key (erasing a missing key is not an error). Copies key.
  void erase(std::string_view key) {
    emplace(op_kind::erase, [&](std::string& b) { b.append(key); }, [](std::string&) {});
  }

  // Appends an operation whose key and value bytes are produced in place: write_key(buf) and
  // write_value(buf) must each only append to buf. This is how the typed layer encodes without
  // temporaries. If either throws, the batch is left as it was before the call.
  template <class KeyWriter, class ValueWriter>
  void emplace(op_kind kind, KeyWriter&& write_key, ValueWriter&& write_value) {
    const std::size_t mark = buf_.size();
    try {
      write_key(buf_);
      const std::size_t key_end = buf_.size();
      write_value(buf_);
      ops_.push_back(rec{kind, mark, key_end - mark, buf_.size() - key_end});
    } catch (...) {
      buf_.resize(mark);
      throw;
    }
  }

  std::size_t size() const noexcept { return ops_.size(); }
  bool empty() const noexcept { return ops_.empty(); }
  // Bytes of keys and values held.
  std::size_t byte_size() const noexcept { return buf_.size(); }

  // Makes room for `ops` operations of `bytes` key and value bytes in all, so that appending them
  // does not reallocate (and copy what the batch holds) as it grows.
  void reserve(std::size_t ops, std::size_t bytes) {
    ops_.reserve(ops);
    buf_.reserve(bytes);
  }

  // Appends every operation of other, in its order (copies their bytes). REQUIRES: &other != this.
  void append(const write_batch& other) {
    const std::size_t base = buf_.size();
    buf_.append(other.buf_);
    try {
      ops_.reserve(ops_.size() + other.ops_.size());
    } catch (...) {
      buf_.resize(base);
      throw;
    }
    for (rec r : other.ops_) {
      r.offset += base;
      ops_.push_back(r);  // capacity reserved: does not throw
    }
  }

  // Removes every operation; keeps the allocated capacity for reuse.
  void clear() noexcept {
    buf_.clear();
    ops_.clear();
  }

  // REQUIRES: i < size().
  op operator[](std::size_t i) const noexcept {
    const rec& r = ops_[i];
    const char* const key = buf_.data() + r.offset;  // in buf_ by construction: no bounds check
    return op{r.kind, std::string_view(key, r.key_len), std::string_view(key + r.key_len, r.value_len)};
  }

  // Iteration in insertion order: for (write_batch::op o : batch) ...
  class const_iterator {
   public:
    using value_type = op;
    using difference_type = std::ptrdiff_t;
    const_iterator() = default;
    const_iterator(const write_batch* b, std::size_t i) : b_(b), i_(i) {}
    op operator*() const { return (*b_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      auto t = *this;
      ++i_;
      return t;
    }
    bool operator==(const const_iterator& o) const noexcept { return i_ == o.i_; }

   private:
    const write_batch* b_ = nullptr;
    std::size_t i_ = 0;
  };
  const_iterator begin() const noexcept { return {this, 0}; }
  const_iterator end() const noexcept { return {this, ops_.size()}; }

 private:
  struct rec {
    op_kind kind;
    std::size_t offset;
    std::size_t key_len;
    std::size_t value_len;
  };
  std::string buf_;
  std::vector<rec> ops_;
};

KEYSCHEMA_END_NAMESPACE

// keyschema/detail/store/limit_check.hpp: the store's checks of a backend's limits (store internals).
//
// keyschema::store checks every typed operation as it is encoded (key, value, entry) and every
// batch before it reaches the engine (operations and bytes per atomic write) against the
// backend's backend_limits, so that the limit_error names the keyspace, the limit, the size and
// the maximum, and nothing is added or written. The adapters keep their own checks as a second
// line for byte-level batches. Also: the size of a bounded range-erase chunk.
//
// Thread-safety: stateless functions.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/write_batch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

template <class = void>
[[noreturn]] inline void throw_entry_limit(std::string_view keyspace, const char* what, std::size_t size,
                                           const char* limit_name, std::size_t limit) {
  throw limit_error("keyschema: keyspace '" + std::string(keyspace) + "': encoded " + what + " is " +
                    std::to_string(size) + " bytes, longer than the backend's maximum " + what + " size of " +
                    std::to_string(limit) + " bytes (backend_limits::" + limit_name +
                    "); shorten it. Nothing was added");
}

// Checks the encoded key of one operation of keyspace `keyspace`: key_bytes against
// max_key_bytes (max_long_key_bytes, when set, for a keyspace with long keys: long_keys), and
// against max_entry_bytes (an erase counts its key alone; a put's entry is checked again with its
// value by check_value_limit).
// Errors: limit_error naming the keyspace, the limit, the size and the maximum; for a keyspace
// without long keys whose key only long keys would admit, the message also names
// keyschema::long_keys as the remedy.
template <class = void>
inline void check_key_limit(std::string_view keyspace, const backend_limits& l, std::size_t key_bytes,
                            bool long_keys = false) {
  if (long_keys && l.max_long_key_bytes != 0) {
    if (key_bytes > l.max_long_key_bytes) {
      throw_entry_limit(keyspace, "key", key_bytes, "max_long_key_bytes", l.max_long_key_bytes);
    }
  } else if (key_bytes > l.max_key_bytes) [[unlikely]] {
    if (!long_keys && key_bytes <= l.max_long_key_bytes) {
      throw limit_error("keyschema: keyspace '" + std::string(keyspace) + "': encoded key is " +
                        std::to_string(key_bytes) + " bytes, longer than the backend's maximum key size of " +
                        std::to_string(l.max_key_bytes) +
                        " bytes (backend_limits::max_key_bytes); shorten it, or mark the keyspace "
                        "keyschema::long_keys (a schema change: ks::migrate). Nothing was added");
    }
    throw_entry_limit(keyspace, "key", key_bytes, "max_key_bytes", l.max_key_bytes);
  }
  if (key_bytes > l.max_entry_bytes) {
    throw_entry_limit(keyspace, "entry (key + value)", key_bytes, "max_entry_bytes", l.max_entry_bytes);
  }
}

// Checks the encoded value of one put: value_bytes against max_value_bytes, and key_bytes +
// value_bytes against max_entry_bytes. Errors: limit_error as above.
template <class = void>
inline void check_value_limit(std::string_view keyspace, const backend_limits& l, std::size_t key_bytes,
                              std::size_t value_bytes) {
  if (value_bytes > l.max_value_bytes) {
    throw_entry_limit(keyspace, "value", value_bytes, "max_value_bytes", l.max_value_bytes);
  }
  if (value_bytes > l.max_entry_bytes || key_bytes > l.max_entry_bytes - value_bytes) {
    throw_entry_limit(keyspace, "entry (key + value)", key_bytes + value_bytes, "max_entry_bytes",
                      l.max_entry_bytes);
  }
}

// The error of check_batch_limits (out of line: the check itself builds no string).
// ops: the operations the backend counts for b (b.size() but for a backend that merges some).
[[noreturn, gnu::cold, gnu::noinline]] inline void refuse_batch(const backend_limits& l, const write_batch& b,
                                                               const std::string& keyspaces, std::size_t ops) {
  const char* limit_name = nullptr;
  std::string size, limit;
  if (ops > l.max_ops_per_write) {
    limit_name = "max_ops_per_write";
    size = std::to_string(ops) + " operations";
    limit = std::to_string(l.max_ops_per_write) + " operations";
  } else {
    limit_name = "max_bytes_per_write";
    size = std::to_string(b.byte_size()) + " bytes of keys and values";
    limit = std::to_string(l.max_bytes_per_write) + " bytes";
  }
  throw limit_error("keyschema::store: a batch of keyspace(s) " + keyspaces + " holds " + size +
                    ", more than the backend's maximum of " + limit + " per atomic write (backend_limits::" +
                    limit_name + "); split it into smaller batches or transactions. Nothing was written");
}

// Checks a whole batch before it is written: its operation count against max_ops_per_write and
// its bytes (write_batch::byte_size) against max_bytes_per_write. keyspaces() returns the names
// of the keyspaces the batch touches, for the message (called only on error).
// Errors: limit_error naming the keyspaces, the limit, the size and the maximum.
// ops: the number of operations the backend counts for b, when it is not b.size() (a
// transaction of a backend_with_transaction_range_erase: its operation_count).
template <class KeyspaceNames>
void check_batch_limits(const backend_limits& l, const write_batch& b, KeyspaceNames&& keyspaces,
                        std::size_t ops = SIZE_MAX) {
  if (ops == SIZE_MAX) ops = b.size();
  if (ops > l.max_ops_per_write || b.byte_size() > l.max_bytes_per_write) [[unlikely]]
    refuse_batch(l, b, std::string(keyspaces()), ops);
}

// The number of keys one chunk of a bounded range erase may hold: at most cap (the store's
// erase_chunk) and max_ops_per_write / ops_per_key (each erased key may bring the updates of its
// counts and index entries, derived_writes::ops_per_write); never less than one.
// max_bytes_per_write is checked key by key while a chunk fills (erase_chunk_fits).
template <class = void>
inline std::size_t erase_chunk_ops(const backend_limits& l, std::size_t cap, std::size_t ops_per_key = 1) {
  return std::max<std::size_t>(1, std::min(cap, l.max_ops_per_write / std::max<std::size_t>(1, ops_per_key)));
}
// Whether a chunk of chunk_bytes key bytes may take one more key of key_bytes (the first key
// always fits: a key longer than the limit was refused when it was written).
template <class = void>
inline bool erase_chunk_fits(const backend_limits& l, std::size_t chunk_bytes, std::size_t key_bytes) {
  return chunk_bytes == 0 || (key_bytes <= l.max_bytes_per_write && chunk_bytes <= l.max_bytes_per_write - key_bytes);
}

}  // namespace detail
KEYSCHEMA_END_NAMESPACE

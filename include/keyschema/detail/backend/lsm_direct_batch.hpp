// keyschema/detail/backend/lsm_direct_batch.hpp: the direct batch of the two LSM adapters
// (backend_with_direct_batch, backend.hpp): the engine's own WriteBatch, which keyschema::
// store_batch fills and the adapter's write_direct() writes as it is, so that each key and value
// is copied once, into it, and not first into a write_batch. leveldb_direct_batch and
// rocksdb_direct_batch are this template over each adapter's engine traits (lsm_adapter.hpp).
//
// The WriteBatch is allocated by the first operation (moves stay cheap and never throw, whatever
// the engine's WriteBatch allows). Owner (the adapter's backend class) reaches the engine batch
// through engine(); nothing else can.
//
// Thread-safety: a plain value: one thread at a time.
#pragma once

#include <keyschema/detail/backend/lsm_adapter.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/write_batch.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

KEYSCHEMA_BEGIN_NAMESPACE
namespace detail {

template <class E, class Owner>
class lsm_direct_batch {
  using batch_type = typename E::batch_type;
  using slice_type = typename E::slice_type;
  using status_type = typename E::status_type;

 public:
  // Appends a put of key -> value / an erase of key (copies them).
  // Errors: std::bad_alloc; backend_error, native_call E::names.call_batch, when the engine's
  // batch refuses the operation (RocksDB: a key or value of 4 GiB or more); the batch is then
  // as it was.
  void put(std::string_view key, std::string_view value) {
    checked(E::put(engine(), slice_type(key.data(), key.size()), slice_type(value.data(), value.size())));
    noted(key.size() + value.size());
  }
  void erase(std::string_view key) {
    checked(E::erase(engine(), slice_type(key.data(), key.size())));
    noted(key.size());
  }
  // Removes every operation; keeps the allocated capacity.
  void clear() noexcept {
    if (b_) E::clear(*b_);
    ops_ = 0;
    bytes_ = 0;
    largest_ = 0;
  }
  std::size_t size() const noexcept { return ops_; }
  // Bytes of keys and values held (write_batch::byte_size of the same operations).
  std::size_t byte_size() const noexcept { return bytes_; }
  // The largest key plus value of one operation.
  std::size_t largest_entry() const noexcept { return largest_; }

  // Appends every operation to out, in order. Errors: std::bad_alloc (out is then unspecified).
  void append_to(write_batch& out) const {
    if (!b_) return;
    // Put and Delete are the handler's calls for the default column family in both engines (the
    // only one a direct batch writes to). The engines are built without exceptions in mind:
    // none may unwind through Iterate.
    struct handler final : batch_type::Handler {
      write_batch* out = nullptr;
      std::exception_ptr error;
      void Put(const slice_type& k, const slice_type& v) override {
        if (error) return;
        try {
          out->put(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size()));
        } catch (...) {
          error = std::current_exception();
        }
      }
      void Delete(const slice_type& k) override {
        if (error) return;
        try {
          out->erase(std::string_view(k.data(), k.size()));
        } catch (...) {
          error = std::current_exception();
        }
      }
    } h;
    h.out = &out;
    out.reserve(out.size() + ops_, out.byte_size() + bytes_);
    const status_type st = b_->Iterate(&h);
    if (h.error) std::rethrow_exception(h.error);
    // Built by put and erase only: the engine cannot find it malformed.
    if (!st.ok()) {
      E::throw_error(st, std::string(E::names.adapter) + ": reading back a direct batch", E::names.call_batch_iterate,
                     std::string());
    }
  }

 private:
  friend Owner;
  // The engine's batch, allocated when first needed. Errors: std::bad_alloc.
  batch_type& engine() {
    if (!b_) b_ = std::make_unique<batch_type>();
    return *b_;
  }
  void checked(const status_type& st) const {
    if (!st.ok()) [[unlikely]] {
      E::throw_error(st, std::string(E::names.adapter) + ": the engine's batch refused an operation",
                     E::names.call_batch, std::string());
    }
  }
  void noted(std::size_t entry) noexcept {
    ++ops_;
    bytes_ += entry;
    if (entry > largest_) largest_ = entry;
  }
  std::unique_ptr<batch_type> b_;
  std::size_t ops_ = 0;
  std::size_t bytes_ = 0;
  std::size_t largest_ = 0;
};

}  // namespace detail
KEYSCHEMA_END_NAMESPACE

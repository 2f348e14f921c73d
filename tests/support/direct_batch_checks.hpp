// tests/support/direct_batch_checks.hpp: the checks both LSM adapters' direct batches
// (leveldb_direct_batch, rocksdb_direct_batch: detail/backend/lsm_direct_batch.hpp) must pass.
//
// direct_of<D>(wb): wb's operations, in order, in a direct batch of type D.
// check_direct_batch_gives_back<D>(): a batch's size, byte_size and largest_entry count what was
// put into it, append_to gives its operations back in order after what the target held, and
// clear() empties it. Catch2 checks: include after <catch2/catch.hpp>.
//
// Thread-safety: none needed (values of one thread).
#pragma once

#include <keyschema/write_batch.hpp>

#include <cstddef>
#include <string>

namespace keyschema::testing {

template <class D>
D direct_of(const write_batch& wb) {
  D d;
  for (const write_batch::op o : wb) {
    if (o.kind == write_batch::op_kind::put) {
      d.put(o.key, o.value);
    } else {
      d.erase(o.key);
    }
  }
  return d;
}

template <class D>
void check_direct_batch_gives_back() {
  write_batch wb;
  wb.put("a", "1");
  wb.erase("b");
  wb.put("a", std::string(3000, 'x'));
  wb.put("", "");
  D d = direct_of<D>(wb);
  CHECK(d.size() == wb.size());
  CHECK(d.byte_size() == wb.byte_size());
  CHECK(d.largest_entry() == 3001);
  write_batch back;
  back.put("before", "kept");
  d.append_to(back);
  REQUIRE(back.size() == 5);
  for (std::size_t i = 0; i < wb.size(); ++i) {
    CHECK(back[i + 1].kind == wb[i].kind);
    CHECK(back[i + 1].key == wb[i].key);
    CHECK(back[i + 1].value == wb[i].value);
  }
  d.clear();
  CHECK(d.size() == 0);
  CHECK(d.byte_size() == 0);
  CHECK(d.largest_entry() == 0);
  write_batch none;
  d.append_to(none);
  CHECK(none.empty());
}

}  // namespace keyschema::testing

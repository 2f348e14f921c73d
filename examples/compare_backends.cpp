// compare_backends: compares two stores on your own schema with <keyschema/comparison.hpp>.
// The workload is written once against ks::store<Schema, B>; the runner runs it on each backend
// at sync on and off and prints ops/s, p50/p99 latency, disk bytes and a recommendation
// (--json PATH and --svg PATH write the figures and a chart).
#include <keyschema/comparison.hpp>
#include <keyschema/lmdb.hpp>

#include <cstdint>
#include <string>

namespace ks = keyschema;
namespace cmp = keyschema::comparison;

using order = ks::keyspace<"order", std::string,  // customer, order id -> order text
    ks::lit<"ORDER">, ks::field<"customer", std::string>, ks::field<"id", std::uint64_t>>;
using shop = ks::schema<order>;

int main(int argc, char** argv) {
  cmp::runner<shop> r(argc, argv);
  r.run("orders_in_batches", [](auto& db, cmp::probe& p) {
    for (std::uint64_t first = 0; first < 2000; first += 100) {
      p.op([&] {
        auto b = db.batch();
        for (std::uint64_t id = first; id < first + 100; ++id)
          b.template put<order>({"customer-" + std::to_string(id % 50), id}, std::string(200, 'o'));
        b.commit(p.write());
      }, 100);
    }
  }, cmp::backend<shop, ks::memory_backend>{"memory"}, cmp::backend<shop, ks::lmdb_backend>{"lmdb"});
  r.run_reads("reads_by_customer", [](auto& db, cmp::probe& p) {
    for (std::uint64_t id = 0; id < 2000; ++id)
      db.template put<order>({"customer-" + std::to_string(id % 50), id}, std::string(200, 'o'), {.sync = false});
    for (int c = 0; c < 50; ++c)
      p.op([&] { for (const auto& o : db.template scan<order>("customer-" + std::to_string(c))) (void)o; }, 40);
  }, cmp::backend<shop, ks::memory_backend>{"memory"}, cmp::backend<shop, ks::lmdb_backend>{"lmdb"});
  return r.finish();
}

// tests/conformance/cases/scans.cpp: conformance cases:
// keyspace boundaries of scans, prefix and bounded scans against a model.
//
// Compiled once per backend into that backend's conformance_<backend> program (see
// conformance.hpp and keyschema_add_conformance_test in cmake/KeyschemaTesting.cmake).
#include <conformance/conformance.hpp>

namespace keyschema::conformance {

TEST_CASE("scans never leak into a neighbouring keyspace or destination", "[conformance][scan][boundary]") {
  test_fixture fx;
  auto& db = fx.db();
  const std::vector<std::string> dests = tricky_destinations();
  {
    auto b = db.batch();
    for (const std::string& d : dests) {
      for (std::uint64_t id : {1u, 2u, 10u}) {
        b.put<message_metadata>({d, id}, ks::bytes("meta:" + d));
        b.put<message_expiration>({d, id}, static_cast<std::int64_t>(id) * 1000);
      }
      b.put<message_count>({d}, static_cast<std::int64_t>(d.size()));
      b.put<recent>({d, 5}, ks::bytes("recent:" + d));
    }
    for (std::uint64_t id : {1u, 2u, 3u}) {
      b.put<message_content>({id, 0}, bin("c0"));
      b.put<message_content>({id, 1}, bin("c1"));
      b.put<message_destination>({id}, "q");
    }
    b.commit();
  }

  for (const std::string& d : dests) {
    INFO("destination " << show(d));
    std::vector<std::string> want_meta, want_exp;
    for (std::uint64_t id : {1u, 2u, 10u}) {
      want_meta.push_back(show_entry<message_metadata>({d, id}, ks::bytes("meta:" + d)));
      want_exp.push_back(show_entry<message_expiration>({d, id}, static_cast<std::int64_t>(id) * 1000));
    }
    CHECK(collect(db.scan<message_metadata>(d)) == want_meta);
    CHECK(collect(db.scan<message_expiration>(d)) == want_exp);
    std::reverse(want_meta.begin(), want_meta.end());
    CHECK(collect(db.scan<message_metadata>(d).reverse()) == want_meta);
    // Bounds on the id stay inside the destination.
    CHECK(count(db.scan<message_metadata>(d).from(0).through(u64_max)) == 3);
    CHECK(count(db.scan<message_metadata>(d).after(10)) == 0);
    CHECK(count(db.scan<message_metadata>(d).after(10).reverse()) == 0);
    CHECK(count(db.scan<message_metadata>(d).to(1)) == 0);
    CHECK(count(db.scan<message_metadata>(d).to(1).reverse()) == 0);
    CHECK(collect(db.scan<message_count>(d)) ==
          std::vector<std::string>{show_entry<message_count>({d}, static_cast<std::int64_t>(d.size()))});
    CHECK(count(db.scan<recent>(d)) == 1);
  }
  // Whole-keyspace scans see exactly their own keys.
  CHECK(count(db.scan<message_metadata>()) == 3 * dests.size());
  CHECK(count(db.scan<message_metadata>().reverse()) == 3 * dests.size());
  CHECK(count(db.scan<message_expiration>()) == 3 * dests.size());
  CHECK(count(db.scan<message_count>()) == dests.size());
  CHECK(count(db.scan<recent>()) == dests.size());
  for (const auto& e : db.scan<message_metadata>()) CHECK(e.value == ks::bytes("meta:" + e.get<"destination">()));
  // Destinations that were never written, but sit next to written ones.
  for (const std::string& d : {std::string("q\0", 2) + std::string("\0", 1), std::string("q0"), std::string("qq"),
                              std::string("MESSAGE"), std::string("a."), std::string("p"), std::string("\0", 1)}) {
    INFO("absent destination " << show(d));
    CHECK(count(db.scan<message_metadata>(d)) == 0);
    CHECK(count(db.scan<message_metadata>(d).reverse()) == 0);
    CHECK(count(db.scan<message_count>(d)) == 0);
  }
  // Bounds on the destination field of a whole-keyspace scan.
  std::vector<std::string> sorted = dests;
  std::sort(sorted.begin(), sorted.end());
  std::size_t from_q = 0, through_q = 0;
  for (const std::string& d : sorted) {
    if (d >= "q") from_q += 3;
    if (d <= "q") through_q += 3;
  }
  CHECK(count(db.scan<message_metadata>().from("q")) == from_q);
  CHECK(count(db.scan<message_metadata>().through("q")) == through_q);
  CHECK(count(db.scan<message_metadata>().after("q").reverse()) == from_q - 3);

  // message_content and message_destination share ("MESSAGE", id).
  for (std::uint64_t id : {1u, 2u, 3u}) {
    CHECK(collect(db.scan<message_content>(id)) ==
          std::vector<std::string>{show_entry<message_content>({id, 0}, bin("c0")),
                                   show_entry<message_content>({id, 1}, bin("c1"))});
    CHECK(count(db.scan<message_content>(id).reverse()) == 2);
    CHECK(collect(db.scan<message_destination>(id)) ==
          std::vector<std::string>{show_entry<message_destination>({id}, "q")});
  }
  CHECK(count(db.scan<message_content>()) == 6);
  CHECK(count(db.scan<message_content>().reverse()) == 6);
  CHECK(count(db.scan<message_destination>()) == 3);
  CHECK(count(db.scan<message_destination>().reverse()) == 3);
  // Erasing one keyspace's prefix leaves the neighbour sharing its leading segments alone.
  CHECK(db.erase_prefix<message_content>(std::uint64_t{2}) == 2);
  CHECK(count(db.scan<message_content>()) == 4);
  CHECK(db.get<message_destination>({2}) == std::optional<std::string>("q"));
  CHECK(db.erase_prefix<message_metadata>(std::string("q")) == 3);
  CHECK(count(db.scan<message_expiration>("q")) == 3);
  CHECK(count(db.scan<message_metadata>("q1")) == 3);
  CHECK(count(db.scan<message_metadata>(std::string("q\0x", 3))) == 3);
  CHECK(count(db.scan<message_metadata>()) == 3 * (dests.size() - 1));
  // Erasing a whole keyspace skips the keys of the keyspace interleaved with it in key order.
  CHECK(db.erase_prefix<message_metadata>() == 3 * (dests.size() - 1));
  CHECK(count(db.scan<message_metadata>()) == 0);
  CHECK(count(db.scan<message_expiration>()) == 3 * dests.size());
  CHECK(db.erase_prefix<message_content>() == 4);
  CHECK(count(db.scan<message_destination>()) == 3);
  {
    auto tx = db.transaction();
    CHECK(tx.erase_prefix<message_expiration>() == 3 * dests.size());
    CHECK(count(tx.scan<message_count>()) == dests.size());
    tx.commit();
  }
  CHECK(count(db.scan<message_expiration>()) == 0);
  CHECK(count(db.scan<recent>()) == dests.size());
  CHECK(count(db.scan<message_count>()) == dests.size());
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("prefix and bounded scans in both directions agree with a model", "[conformance][scan][model]") {
  test_fixture fx;
  auto& db = fx.db();
  std::mt19937_64 rng(20240611);
  const std::vector<std::string> dests = tricky_destinations();
  std::vector<std::string> probe_dests = dests;
  for (const char* d : {"p", "qq", "z", "MESSAGE", "a.", "\x7f"}) probe_dests.emplace_back(d);
  probe_dests.push_back(std::string("q\0\0", 3));
  const std::vector<std::uint64_t> ids = id_pool();
  auto pick_dest = [&] { return dests[rng() % dests.size()]; };
  auto pick_id = [&] { return ids[rng() % ids.size()]; };
  auto probe_id = [&]() -> std::uint64_t {
    const std::uint64_t id = pick_id();
    switch (rng() % 4) {
      case 0: return id == u64_max ? id : id + 1;
      case 1: return id == 0 ? id : id - 1;
      default: return id;
    }
  };
  auto probe_dest = [&] { return probe_dests[rng() % probe_dests.size()]; };

  model<message_metadata> meta;
  model<message_expiration> exp;
  for (int round = 0; round < 4; ++round) {
    for (int op = 0; op < 400; ++op) {
      const auto r = rng() % 10;
      if (r < 5) {
        const std::string d = pick_dest();
        const std::uint64_t id = pick_id();
        const ks::bytes v = random_value(rng);
        db.put<message_metadata>({d, id}, v, {.sync = false});  // logic, not durability
        meta.put({d, id}, v);
      } else if (r < 7) {
        const std::string d = pick_dest();
        const std::uint64_t id = pick_id();
        db.erase<message_metadata>({d, id}, {.sync = false});
        meta.erase({d, id});
      } else if (r < 8) {
        const std::string d = pick_dest();
        const std::uint64_t id = pick_id();
        const auto v = static_cast<std::int64_t>(rng());
        db.put<message_expiration>({d, id}, v, {.sync = false});
        exp.put({d, id}, v);
      } else if (r < 9) {
        db.put<message_count>({pick_dest()}, static_cast<std::int64_t>(rng() % 100), {.sync = false});
      } else {
        auto b = db.batch();
        for (int i = 0; i < 4; ++i) {
          const std::string d = pick_dest();
          const std::uint64_t id = pick_id();
          if (rng() % 3 == 0) {
            b.erase<message_metadata>({d, id});
            meta.erase({d, id});
          } else {
            const ks::bytes v = random_value(rng);
            b.put<message_metadata>({d, id}, v);
            meta.put({d, id}, v);
          }
        }
        b.commit({.sync = false});
      }
    }
    INFO("round " << round << ": " << meta.size() << " metadata entries");
    CHECK(collect(db.scan<message_metadata>()) == meta.all());
    CHECK(collect(db.scan<message_expiration>()) == exp.all());
    for (const std::string& d : probe_dests) {
      const auto prefix = std::tuple<std::string>(d);
      check_scan(db, meta, prefix, scan_bounds<std::uint64_t>{});
      check_scan(db, meta, prefix, scan_bounds<std::uint64_t>{.reverse = true});
      for (int i = 0; i < 16; ++i) check_scan(db, meta, prefix, random_bounds<std::uint64_t>(rng, probe_id));
      for (int i = 0; i < 4; ++i) check_scan(db, exp, prefix, random_bounds<std::uint64_t>(rng, probe_id));
      for (int i = 0; i < 2; ++i) {
        check_scan(db, meta, std::tuple<std::string, std::uint64_t>(d, pick_id()),
                   scan_bounds<std::uint64_t>{.reverse = rng() % 2 == 0});
      }
    }
    for (int i = 0; i < 24; ++i) check_scan(db, meta, std::tuple<>{}, random_bounds<std::string>(rng, probe_dest));
    // The same scans through a snapshot.
    const auto snap = db.snapshot();
    for (int i = 0; i < 16; ++i) {
      check_scan(snap, meta, std::tuple<std::string>(pick_dest()), random_bounds<std::uint64_t>(rng, probe_id));
    }
    for (const auto& [k, v] : meta.entries()) {
      if (rng() % 8 == 0) CHECK(lookup<message_metadata>(db, k) == show(v));
    }
  }
}

TEST_CASE("scans of a keyspace with two adjacent fields agree with a model", "[conformance][scan][model]") {
  test_fixture fx;
  auto& db = fx.db();
  std::mt19937_64 rng(77);
  const std::vector<std::uint64_t> ids = {0, 1, 9, 10, 255, 256, 1ull << 40, u64_max};
  const std::vector<std::uint32_t> offsets = {0, 1, 2, 255, 256, 70000, std::numeric_limits<std::uint32_t>::max()};
  auto pick_id = [&] { return ids[rng() % ids.size()]; };
  auto pick_offset = [&] { return offsets[rng() % offsets.size()]; };

  model<message_content> content;
  model<message_destination> destination;
  for (int op = 0; op < 600; ++op) {
    const auto r = rng() % 6;
    const std::uint64_t id = pick_id();
    if (r < 3) {
      const std::uint32_t off = pick_offset();
      const ks::bytes v = random_value(rng);
      db.put<message_content>({id, off}, v, {.sync = false});  // logic, not durability
      content.put({id, off}, v);
    } else if (r < 4) {
      const std::uint32_t off = pick_offset();
      db.erase<message_content>({id, off}, {.sync = false});
      content.erase({id, off});
    } else if (r < 5) {
      const std::string v = "dest-" + std::to_string(rng() % 5);
      db.put<message_destination>({id}, v, {.sync = false});
      destination.put({id}, v);
    } else {
      db.erase<message_destination>({id}, {.sync = false});
      destination.erase({id});
    }
  }
  CHECK(collect(db.scan<message_content>()) == content.all());
  CHECK(collect(db.scan<message_destination>()) == destination.all());
  for (int i = 0; i < 40; ++i) check_scan(db, content, std::tuple<>{}, random_bounds<std::uint64_t>(rng, pick_id));
  for (std::uint64_t id : ids) {
    for (int i = 0; i < 12; ++i) {
      check_scan(db, content, std::tuple<std::uint64_t>(id), random_bounds<std::uint32_t>(rng, pick_offset));
    }
    check_scan(db, content, std::tuple<std::uint64_t, std::uint32_t>(id, pick_offset()), scan_bounds<int>{});
    check_scan(db, destination, std::tuple<std::uint64_t>(id), scan_bounds<int>{.reverse = true});
  }
  for (int i = 0; i < 20; ++i) check_scan(db, destination, std::tuple<>{}, random_bounds<std::uint64_t>(rng, pick_id));
}

}  // namespace keyschema::conformance

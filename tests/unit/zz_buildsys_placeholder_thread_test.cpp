#include <catch2/catch.hpp>
#include <thread>
TEST_CASE("placeholder: thread") { int x = 0; std::thread t([&] { x = 1; }); t.join(); CHECK(x == 1); }

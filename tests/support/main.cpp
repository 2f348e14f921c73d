// tests/support/main.cpp: the Catch2 main shared by every keyschema test executable.
//
// Compiled once (the keyschema_test_main object library) and linked into each test, so test
// translation units only include <catch2/catch.hpp> and never define CATCH_CONFIG_MAIN.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

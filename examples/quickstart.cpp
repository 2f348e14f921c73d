#include <keyschema/error.hpp>
#include <cstdio>
int main() { std::puts("quickstart placeholder"); return 0; }

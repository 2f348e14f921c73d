// keyschema-dump: lists the keys of a keyschema LevelDB or LMDB database, decoded as tuples.
// Everything is in cli.hpp (the program) and dump.hpp (the listing); see docs/keyschema-dump.md.
#include "cli.hpp"

#include <iostream>

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return keyschema::dump::run(argc, argv, std::cout, std::cerr);
}

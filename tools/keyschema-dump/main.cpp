#include <keyschema/error.hpp>
#if KEYSCHEMA_DUMP_WITH_LEVELDB
#include <keyschema/leveldb.hpp>
#endif
#if KEYSCHEMA_DUMP_WITH_LMDB
#include <keyschema/lmdb.hpp>
#endif
int main() { return 0; }

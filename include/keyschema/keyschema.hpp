// keyschema/keyschema.hpp: the umbrella header: the whole core, no database headers.
//
// keyschema is a header-only library of compile-time key schemas and order-preserving typed
// codecs over interchangeable embedded stores. Include this header for everything below, or
// the one header of the component you need. Storage engine adapters live in their own headers
// and CMake targets: <keyschema/leveldb.hpp> (keyschema::leveldb), <keyschema/lmdb.hpp>
// (keyschema::lmdb).
//
// Known limit: scans are range-v3 views, so this header (like <keyschema/scan.hpp> and
// <keyschema/store.hpp>) includes range-v3, which declares a global `namespace meta`. A type
// named `meta` at global scope then fails to compile ("redeclared as different kind of entity");
// declare it in your own namespace (tests/compile_fail/known_limit_global_meta.cpp shows it).
#pragma once

#include <keyschema/backend.hpp>         // the byte-level backend contract
#include <keyschema/chunked.hpp>         // chunked values: large values as fixed-size chunks
#include <keyschema/codec.hpp>           // codec<T>: key codecs, user customization
#include <keyschema/counters.hpp>        // add<KS>, count_of: counters and declared counts
#include <keyschema/entry.hpp>           // entry<KS>: what scans yield
#include <keyschema/engine_probe.hpp>    // which storage engine's files are in a directory
#include <keyschema/error.hpp>           // the exception hierarchy
#include <keyschema/fingerprint.hpp>     // schema layouts and fingerprints
#include <keyschema/fixed_string.hpp>    // string literals as template arguments
#include <keyschema/grouped_scan.hpp>    // grouped_scan: a scan handed out as groups
#include <keyschema/indexes.hpp>         // index_of, record_key, get_record, sweep: secondary indexes
#include <keyschema/key_arg.hpp>         // key_arg<KS>: a key given as its fields' values
#include <keyschema/memory_backend.hpp>  // the in-memory reference backend
#include <keyschema/migrate.hpp>         // migrate: rewriting a database to a new schema
#include <keyschema/owned.hpp>           // owned_by, find_orphans: entries erased with their record
#include <keyschema/prepared.hpp>        // prepared transactions (two-phase commit, XA)
#include <keyschema/reserved_records.hpp>  // reading the schema, migration and prepared records
#include <keyschema/retry.hpp>           // run_transaction: transactions run again on conflict
#include <keyschema/scan.hpp>            // scan_view: typed ordered scans
#include <keyschema/schema.hpp>          // keyspace, lit, field, schema, valid_schema
#include <keyschema/store.hpp>           // store, batch, transaction, snapshot
#include <keyschema/struct_value.hpp>    // value_fields<T>: structs stored as values by member list
#include <keyschema/tuple.hpp>           // tuple::pack / unpack (FoundationDB tuple encoding)
#include <keyschema/tuple_format.hpp>    // tuple::to_string / to_json, text helpers for tools
#include <keyschema/types.hpp>           // bytes, uuid, desc<T>
#include <keyschema/value_codec.hpp>     // value_codec<T>: how values are stored
#include <keyschema/write_batch.hpp>     // write_batch, write_options

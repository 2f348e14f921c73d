// keyschema/lmdb/detail/data_file.hpp: refusing a damaged data.mdb before LMDB maps it.
//
// LMDB trusts its file. It maps data.mdb and follows the page numbers it finds there, so a file
// shorter than the pages its meta page claims kills the process with SIGBUS on the first read
// past the end, and a damaged page header trips an assertion inside mdb.c that calls abort().
// LMDB keeps no checksums, so nothing can detect a damaged byte inside a page that still looks
// valid. What can be checked cheaply, before mdb_env_open, is the envelope:
//
//   check_data_file(dir) reads both meta pages of <dir>/data.mdb with pread (no mapping), checks
//   each (page flags P_META, page number, magic 0xBEEFC0DE, data format version 1, a page size
//   that is a power of two between 512 bytes and 64 KiB, root page numbers inside the database),
//   picks the one LMDB would use (the higher transaction id) and checks that the file holds every
//   page it claims: (mm_last_pg + 1) * page size <= file size. Anything else throws
//   backend_error naming the path and the figures. A missing data.mdb is fine (a new database).
//
//   report_assert is installed with mdb_env_set_assert: when one of LMDB's internal checks fails
//   (a damaged page found while reading), it prints what failed and where, naming the database,
//   to stderr. LMDB calls abort() right after it returns; see report_assert.
//
// The layout mirrored here is LMDB 0.9's (MDB_page, MDB_meta, MDB_db in mdb.c) on this target:
// page numbers, transaction ids and sizes are size_t, the page header is followed by the meta.
//
// Thread-safety: stateless functions, callable from any thread.
#pragma once

#include <keyschema/detail/config.hpp>
#include <keyschema/detail/this_thread.hpp>
#include <keyschema/error.hpp>

#include <lmdb.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

KEYSCHEMA_BEGIN_NAMESPACE
namespace lmdb_detail {

namespace lmdb_layout {

inline constexpr std::uint32_t magic = 0xBEEFC0DEu;  // MDB_MAGIC
inline constexpr std::uint32_t data_version = 1;      // MDB_DATA_VERSION of release builds
inline constexpr std::uint16_t p_meta = 0x08;         // P_META
inline constexpr std::size_t p_invalid = ~std::size_t{0};  // P_INVALID: an empty tree
inline constexpr std::size_t min_page = 512;
inline constexpr std::size_t max_page = 0x10000;

struct page_header {  // MDB_page up to mp_ptrs (PAGEHDRSZ)
  std::size_t pgno;
  std::uint16_t pad;
  std::uint16_t flags;
  std::uint16_t lower;
  std::uint16_t upper;
};

struct db {  // MDB_db
  std::uint32_t pad;  // the page size, in the free-list DB of a meta page
  std::uint16_t flags;
  std::uint16_t depth;
  std::size_t branch_pages;
  std::size_t leaf_pages;
  std::size_t overflow_pages;
  std::size_t entries;
  std::size_t root;
};

struct meta {  // MDB_meta
  std::uint32_t magic;
  std::uint32_t version;
  void* address;
  std::size_t mapsize;
  db dbs[2];  // FREE_DBI, MAIN_DBI
  std::size_t last_pg;
  std::size_t txnid;
};

inline constexpr std::size_t meta_bytes = sizeof(page_header) + sizeof(meta);

}  // namespace lmdb_layout

[[noreturn]] inline void throw_damaged(const std::string& file, const std::string& why, int code) {
  throw backend_error("keyschema::lmdb_backend: " + file + " " + why, "mdb_env_open", code);
}

// Reads meta page `index` (at byte `offset`) of `file` through fd. Throws when it is not one.
inline lmdb_layout::meta read_meta(int fd, const std::string& file, int index, std::size_t offset) {
  unsigned char buf[lmdb_layout::meta_bytes];
  const ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(offset));
  if (n < 0) throw backend_error("keyschema::lmdb_backend: cannot read " + file + ": " + std::strerror(errno), "pread", errno);
  if (static_cast<std::size_t>(n) != sizeof buf) {
    throw_damaged(file, "is truncated: it ends inside meta page " + std::to_string(index) + " (at byte " +
                            std::to_string(offset + static_cast<std::size_t>(n)) + "); restore it from a copy",
                  MDB_INVALID);
  }
  lmdb_layout::page_header h;
  lmdb_layout::meta m;
  std::memcpy(&h, buf, sizeof h);
  std::memcpy(&m, buf + sizeof h, sizeof m);
  const std::string which = "meta page " + std::to_string(index);
  if ((h.flags & lmdb_layout::p_meta) == 0 || m.magic != lmdb_layout::magic) {
    char found[64];
    std::snprintf(found, sizeof found, "page flags 0x%04x, magic 0x%08x", static_cast<unsigned>(h.flags),
                  static_cast<unsigned>(m.magic));
    throw_damaged(file, "is not an LMDB data file: its " + which + " has " + found +
                            " (expected flag 0x0008 and magic 0xbeefc0de); it is another kind of file or damaged",
                  MDB_INVALID);
  }
  if (m.version != lmdb_layout::data_version) {
    throw_damaged(file, "has LMDB data format version " + std::to_string(m.version) + " in its " + which +
                            "; this LMDB reads version " + std::to_string(lmdb_layout::data_version),
                  MDB_VERSION_MISMATCH);
  }
  if (h.pgno != static_cast<std::size_t>(index)) {
    throw_damaged(file, "is damaged: its " + which + " records page number " + std::to_string(h.pgno), MDB_CORRUPTED);
  }
  return m;
}

// See the file comment. dir is the environment directory.
// Errors: backend_error "mdb_env_open" with MDB_INVALID (not an LMDB file, empty or shorter than
// its two meta pages), MDB_VERSION_MISMATCH or MDB_CORRUPTED (impossible figures, fewer bytes than
// the pages the meta page claims); backend_error "open"/"fstat"/"pread" with errno when the file
// cannot be read. Every message names the file and the figures.
inline void check_data_file(const std::string& dir) {
  const std::string file = dir + "/data.mdb";
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;  // a new environment
    throw backend_error("keyschema::lmdb_backend: cannot open " + file + ": " + std::strerror(errno), "open", errno);
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_fd{fd};

  auto file_size = [&] {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      throw backend_error("keyschema::lmdb_backend: cannot stat " + file + ": " + std::strerror(errno), "fstat", errno);
    }
    return static_cast<std::size_t>(st.st_size);
  };
  std::size_t size = file_size();
  // Another process creating the environment writes both meta pages right after creating the
  // file: give it a moment before calling an empty file damaged.
  for (int i = 0; size == 0 && i < 20; ++i) {
    keyschema::detail::sleep_microseconds(10'000);
    size = file_size();
  }
  if (size == 0) {
    throw_damaged(file, "is empty (0 bytes): not an LMDB database (a crash while it was created, or truncation). "
                        "LMDB would silently create a new, empty database in it; restore it from a copy, or remove "
                        "it to start a new database",
                  MDB_INVALID);
  }

  const lmdb_layout::meta m0 = read_meta(fd, file, 0, 0);
  const std::size_t psize = m0.dbs[0].pad;
  if (psize < lmdb_layout::min_page || psize > lmdb_layout::max_page || (psize & (psize - 1)) != 0) {
    throw_damaged(file, "is damaged: meta page 0 records a page size of " + std::to_string(psize) +
                            " bytes (expected a power of two from 512 to 65536)",
                  MDB_CORRUPTED);
  }
  if (size < 2 * psize) {
    throw_damaged(file, "is truncated: " + std::to_string(size) + " bytes, shorter than its two meta pages (2 x " +
                            std::to_string(psize) + " bytes); restore it from a copy",
                  MDB_INVALID);
  }
  const lmdb_layout::meta m1 = read_meta(fd, file, 1, psize);
  const bool latest1 = m0.txnid < m1.txnid;  // LMDB's mdb_env_pick_meta
  const lmdb_layout::meta& m = latest1 ? m1 : m0;
  const std::string which = std::string("meta page ") + (latest1 ? "1" : "0") + " (transaction " +
                            std::to_string(m.txnid) + ")";
  if (m.last_pg < 1 || m.last_pg >= (~std::size_t{0}) / psize) {
    throw_damaged(file, "is damaged: its " + which + " records last page " + std::to_string(m.last_pg), MDB_CORRUPTED);
  }
  const std::size_t needed = (m.last_pg + 1) * psize;
  // The size is read again after the meta pages: a writer of another process may have committed
  // since the first stat, and LMDB writes a transaction's pages before the meta page naming them,
  // so the file as of now holds every page the meta page just read uses (the file never shrinks).
  if (needed > size) size = file_size();
  if (needed > size) {
    throw_damaged(file, "is truncated: it is " + std::to_string(size) + " bytes, but its " + which +
                            " says the database uses pages 0 to " + std::to_string(m.last_pg) + " of " +
                            std::to_string(psize) + " bytes, " + std::to_string(needed) +
                            " bytes; reading it would crash the process (SIGBUS). Restore it from a copy",
                  MDB_CORRUPTED);
  }
  for (int d = 0; d < 2; ++d) {
    const std::size_t root = m.dbs[d].root;
    if (root != lmdb_layout::p_invalid && (root < 2 || root > m.last_pg)) {
      throw_damaged(file, "is damaged: its " + which + " records root page " + std::to_string(root) + " of the " +
                              (d == 0 ? "free-page" : "main") + " tree, outside pages 2 to " +
                              std::to_string(m.last_pg),
                    MDB_CORRUPTED);
    }
  }
}

// The mdb_env_set_assert callback. LMDB calls it when an internal consistency check fails (in
// practice: a damaged page met while reading, e.g. "Assertion 'IS_LEAF(mp)' failed in
// mdb_cursor_next()"), and calls abort() as soon as it returns. It cannot return an error or
// throw: the C frames of mdb.c cannot be unwound and LMDB would be left holding its locks in the
// middle of a change. So it writes one line to stderr naming the database, LMDB's message (the
// check, the function, file and line) and the remedy, then lets LMDB abort the process.
inline void report_assert(MDB_env* env, const char* msg) noexcept {
  const char* path = nullptr;
  if (env == nullptr || ::mdb_env_get_path(env, &path) != MDB_SUCCESS || path == nullptr) path = "(unknown)";
  std::fprintf(stderr,
               "keyschema::lmdb_backend: LMDB found a damaged page in %s/data.mdb and aborts the process: %s. "
               "LMDB has no checksums and cannot recover from this; restore the database from a copy "
               "(mdb_copy) or salvage what is readable with mdb_dump.\n",
               path, msg != nullptr ? msg : "(no message)");
  std::fflush(stderr);
}

}  // namespace lmdb_detail
KEYSCHEMA_END_NAMESPACE

// keyschema/rocksdb/info_log.hpp: keyschema::rocksdb_info_log, the RocksDB info logger that
// rocksdb_backend installs: it writes RocksDB's diagnostic log (the LOG file) itself, and a
// failed write loses a line, never the process.
//
// Why: RocksDB's own info logger writes the LOG file through a rocksdb::WritableFileWriter. Once
// one of its writes has failed (the disk is full: ENOSPC), the next line trips an assertion
// ("sync_without_flush_called_"), which Debian's librocksdb is built with, and the process
// aborts. On a full disk that line comes at once: RocksDB logs the failed write-ahead log append
// that told it the disk was full. It also made a database impossible to reopen while the disk
// was full (the open logs before it fails).
//
// rocksdb_info_log writes each line with one write(2) to a file opened with O_APPEND. A line
// that cannot be written (disk full, I/O error, a file that could not be opened) is dropped and
// counted (dropped_lines(), last_error()); the next line that can be written is preceded by a
// note saying how many were lost and why. When it opens, an existing log file is renamed to
// "<file>.old" (replacing an older one), as LevelDB does: the log of one earlier run is kept,
// instead of RocksDB's one LOG.old.<time> per open (up to keep_log_file_num, 1000). Lines are
// formatted as RocksDB's: "2026/12/05-12:00:00.123456 7f0c2affd640 <message>".
//
// To log elsewhere (or nowhere), give rocksdb_options::info_log a rocksdb::Logger of your own.
//
// Thread-safety: RocksDB's threads call Logv concurrently; each line is one write() call on an
// O_APPEND descriptor and the counters are atomic, so lines are never interleaved within a line.
// Close() (called by whoever owns the logger, not by a database that was given it) must not race
// with logging.
#pragma once

#include <keyschema/detail/config.hpp>

#include <rocksdb/env.h>
#include <rocksdb/status.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <system_error>
#include <utility>

KEYSCHEMA_BEGIN_NAMESPACE

class rocksdb_info_log final : public ::rocksdb::Logger {
 public:
  // Opens `file` for appending, creating it (mode 0644), after renaming an existing `file` to
  // "<file>.old". Lines below `level` are not written (rocksdb::Logger::SetInfoLogLevel changes
  // it later).
  // Errors: none. When the file cannot be renamed or opened (no directory, no permission, disk
  // full), logging goes on without it: every line is dropped and counted, and last_error() holds
  // the errno of the failed open.
  explicit rocksdb_info_log(std::string file,
                            ::rocksdb::InfoLogLevel level = ::rocksdb::InfoLogLevel::INFO_LEVEL)
      : ::rocksdb::Logger(level), file_(std::move(file)) {
    static_cast<void>(::rename(file_.c_str(), (file_ + ".old").c_str()));  // ENOENT: no earlier log
    const int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) last_error_.store(errno, std::memory_order_relaxed);
    fd_.store(fd, std::memory_order_relaxed);
  }
  rocksdb_info_log(const rocksdb_info_log&) = delete;
  rocksdb_info_log& operator=(const rocksdb_info_log&) = delete;
  ~rocksdb_info_log() override { close_file(); }

  using ::rocksdb::Logger::Logv;

  // Formats one line (time, thread, message, newline) and writes it, or drops and counts it.
  void Logv(const char* format, va_list ap) override {
    char stack[512];
    std::string heap;
    const std::size_t head = header(stack, sizeof stack);
    va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(stack + head, sizeof stack - head, format, copy);
    va_end(copy);
    if (n < 0) {  // a bad format: nothing to write
      lost(EINVAL);
      return;
    }
    std::size_t len = head + static_cast<std::size_t>(n);
    char* line = stack;
    if (len + 2 > sizeof stack) {  // room for the message, a newline and vsnprintf's NUL
      heap.resize(len + 2);
      std::memcpy(heap.data(), stack, head);
      std::vsnprintf(heap.data() + head, static_cast<std::size_t>(n) + 1, format, ap);
      line = heap.data();
    }
    if (len == head || line[len - 1] != '\n') line[len++] = '\n';
    emit(line, len);
  }

  // Bytes this logger has written to the file since it opened it.
  std::size_t GetLogFileSize() const override { return written_.load(std::memory_order_relaxed); }

  // Lines dropped since the last note about dropped lines was written.
  std::uint64_t dropped_lines() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  // errno of the last failed open or write (0: none failed).
  int last_error() const noexcept { return last_error_.load(std::memory_order_relaxed); }

  // The log file's path, as given.
  const std::string& file() const noexcept { return file_; }

 protected:
  // rocksdb::Logger::Close(): closes the file; later lines are dropped.
  ::rocksdb::Status CloseImpl() override {
    close_file();
    return ::rocksdb::Status::OK();
  }

 private:
  // "YYYY/MM/DD-HH:MM:SS.uuuuuu <thread> " into buf (RocksDB's own prefix); its length.
  static std::size_t header(char* buf, std::size_t size) {
    timeval now{};
    ::gettimeofday(&now, nullptr);
    std::tm t{};
    ::localtime_r(&now.tv_sec, &t);
    const int n = std::snprintf(buf, size, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld %llx ", t.tm_year + 1900,
                                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, static_cast<long>(now.tv_usec),
                                static_cast<unsigned long long>(::pthread_self()));
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }

  void lost(int err) noexcept {
    last_error_.store(err, std::memory_order_relaxed);
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }

  // Writes all of [p, p + n); false (and last_error_ set) when a write failed. A line cut short
  // by a failure stays in the file: the next note starts on a line of its own.
  bool write_all(int fd, const char* p, std::size_t n) noexcept {
    bool started = false;
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        last_error_.store(errno, std::memory_order_relaxed);
        if (started) torn_.store(true, std::memory_order_relaxed);
        return false;
      }
      written_.fetch_add(static_cast<std::size_t>(w), std::memory_order_relaxed);
      started = true;
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }

  void emit(const char* line, std::size_t len) {
    const int fd = fd_.load(std::memory_order_relaxed);
    if (fd < 0) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (const std::uint64_t dropped = dropped_.exchange(0, std::memory_order_relaxed); dropped > 0) {
      const bool torn = torn_.exchange(false, std::memory_order_relaxed);
      const std::string note = std::string(torn ? "\n" : "") + "keyschema::rocksdb_info_log: " +
                               std::to_string(dropped) + " line(s) of this log could not be written (" +
                               std::error_code(last_error(), std::generic_category()).message() + ")\n";
      if (!write_all(fd, note.data(), note.size())) {
        dropped_.fetch_add(dropped + 1, std::memory_order_relaxed);
        return;
      }
    }
    if (!write_all(fd, line, len)) dropped_.fetch_add(1, std::memory_order_relaxed);
  }

  void close_file() noexcept {
    const int fd = fd_.exchange(-1, std::memory_order_relaxed);
    if (fd >= 0) ::close(fd);
  }

  std::string file_;
  std::atomic<int> fd_{-1};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<int> last_error_{0};
  std::atomic<bool> torn_{false};
  std::atomic<std::size_t> written_{0};
};

KEYSCHEMA_END_NAMESPACE

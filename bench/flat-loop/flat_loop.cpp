// flat_loop: YCSB transactions in a tight C++ loop over a flat array of records, with no-wait
// or wait-die two-phase locking, Silo-style OCC, or TicToc. It is the yardstick for the threads engine's
// `--index array` (issue 14: "no protocol slower than a tight flat-array C++ loop"), written
// for ordo and built by hand, outside ordo's build:
//
//   g++ -O3 -march=native -std=c++17 -pthread bench/flat-loop/flat_loop.cpp -o /tmp/flat_loop
//   /tmp/flat_loop --protocol no_wait|wait_die|silo|tictoc --records 10000000 --ops 16 --read-ratio 0.5
//       --theta 0.99 --threads 1 --duration 2 --warmup 0.5 [--prefetch] [--ahead] [--huge]
//
// It does the work `ordo bench threads --index array --workload ycsb --payload-bytes 100` does
// and nothing more:
//
//   record (128 bytes, two cache lines): [ meta | value | seq | payload: 13 words ]
//   transaction: `ops` distinct keys of Zipf(theta) ranks (rank r is key r), each a read with
//   probability `read-ratio`, else a read-modify-write (value + 1, payload rewritten from the
//   value, seq + 1); an aborted transaction is retried at once with the same keys.
//
// The keys are drawn before the clock starts (a pool of transactions per thread, replayed
// round-robin), as ordo's workers do by default (`--pregenerate`; `off` draws as it goes).
// Where it is easier on itself than ordo: there is no history, no epoch thread, no latency
// histogram and no result bookkeeping beyond two counters. With `--prefetch`
// a transaction first asks for all of its records' cache lines, as ordo's array store does
// with `--prefetch on`. With `--ahead` each access first asks for the next access's record,
// as ordo's engine always does within a step. With `--huge` the table is advised onto
// transparent huge pages (`madvise(MADV_HUGEPAGE)`), as ordo's stores always are.
//
// It prints one line: `commits_per_s` and `abort_rate` over the measured window, `commits` and
// `aborts` in it, `commits_run` from start to stop (what an instruction count divides by), and
// `check=ok|FAILED`: ok when every record's value is its key plus its sequence number and the
// increments add up to the read-modify-writes committed (FAILED exits with 1).
//
//   no_wait: meta = [ writer:1 | readers:63 ]; a read takes a shared lock, a read-modify-write
//            an exclusive one, at the access; a busy lock aborts; writes are buffered and
//            installed before the locks are released.
//   wait_die: meta = [ writer:1 | readers:15 | oldest holder's timestamp:48 ], as ordo's 2PL;
//            a busy lock makes an older requester wait (spin) and a younger one abort; a
//            transaction keeps its timestamp across retries (timestamps come from a shared
//            counter in blocks of 64 per thread, as ordo's do).
//   silo:    meta = [ lock:1 | tid:63 ]; a read copies the record between two loads of an
//            unlocked, unchanged meta word; commit locks the write set in key order, checks
//            every read's meta word is unchanged (and unlocked unless the request also writes
//            it: its own lock, known from the request's write bit, as ordo's `MINE`), then
//            installs each write and publishes tid = max(seen) + 1 (no epochs, no log).
//   tictoc:  meta = [ lock:1 | delta:15 | wts:48 ] (rts = wts + delta), as ordo's; reads as
//            silo's; commit locks the write set in key order, takes commit_ts = max(rts + 1
//            of each write, wts of each read), checks each read whose rts is below commit_ts
//            (wts unchanged, not locked by another) and extends its rts by compare-and-swap,
//            then installs each write with wts = rts = commit_ts.

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

namespace {

constexpr int kPayloadWords = 13;  // 100 bytes rounded up to words
constexpr int kOpsMax = 64;
constexpr uint64_t kWriter = uint64_t{1} << 63;  // 2PL: exclusive holder; silo, tictoc: lock bit
// wait_die's word: readers count and the oldest holder's timestamp.
constexpr int kReaderShift = 48;
constexpr uint64_t kReaderOne = uint64_t{1} << kReaderShift;
constexpr uint64_t kReadersMax = (uint64_t{1} << 15) - 1;
constexpr uint64_t kTsMask = kReaderOne - 1;
constexpr uint64_t kFree = kTsMask;  // wait_die: no holders
// tictoc's word: rts - wts in the delta field.
constexpr int kDeltaShift = 48;
constexpr uint64_t kDeltaMax = (uint64_t{1} << 15) - 1;
constexpr uint64_t kWtsMask = (uint64_t{1} << kDeltaShift) - 1;
inline uint64_t wts(uint64_t word) { return word & kWtsMask; }
inline uint64_t rts(uint64_t word) { return wts(word) + ((word >> kDeltaShift) & kDeltaMax); }
inline uint64_t pack(uint64_t w, uint64_t r) { return ((r - w) << kDeltaShift) | w; }

struct alignas(64) Record {
  std::atomic<uint64_t> meta;
  uint64_t value;
  uint64_t seq;
  uint64_t payload[kPayloadWords];
};
static_assert(sizeof(Record) == 128, "two cache lines per record");

// Data words are read and written with relaxed atomic accesses, ordered by the meta word.
inline uint64_t load(const uint64_t& word) { return __atomic_load_n(&word, __ATOMIC_RELAXED); }
inline void store(uint64_t& word, uint64_t value) { __atomic_store_n(&word, value, __ATOMIC_RELAXED); }
inline uint64_t payload_word(uint64_t value, int index) {
  return value ^ (static_cast<uint64_t>(index) * 0x9e3779b97f4a7c15ULL);
}

struct Options {
  std::string protocol = "no_wait";
  uint64_t records = 10'000'000;
  int ops = 16;
  double read_ratio = 0.5;
  double theta = 0.99;
  int threads = 1;
  double duration_s = 2.0;
  double warmup_s = 0.5;
  uint64_t pool = 1 << 20;  // transactions drawn per thread before the clock starts
  uint64_t seed = 1;
  bool prefetch = false;
  bool ahead = false;
  bool huge = false;
  bool check_zipf = false;
};

// Zipf(theta) over ranks 0..n-1 by rejection-inversion (Hoermann and Derflinger 1996): invert
// the integral of x^-theta to propose a rank, accept it under the histogram of true masses.
class Zipf {
 public:
  Zipf(uint64_t n, double theta) : n_(n), theta_(theta) {
    if (theta_ == 0.0) return;
    one_minus_ = 1.0 - theta_;
    top_ = integral(static_cast<double>(n_) + 0.5);
    bottom_ = integral(1.5) - 1.0;
    squeeze_ = 2.0 - inverse(integral(2.5) - std::pow(2.0, -theta_));
  }

  template <class Rng>
  uint64_t operator()(Rng& rng) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    if (theta_ == 0.0) return static_cast<uint64_t>(unit(rng) * static_cast<double>(n_)) % n_;
    for (;;) {
      double u = top_ + unit(rng) * (bottom_ - top_);
      double x = inverse(u);
      double k = std::floor(x + 0.5);
      if (k < 1.0) k = 1.0;
      if (k > static_cast<double>(n_)) k = static_cast<double>(n_);
      if (k - x <= squeeze_ || u >= integral(k + 0.5) - std::pow(k, -theta_)) {
        return static_cast<uint64_t>(k) - 1;
      }
    }
  }

 private:
  double integral(double x) const { return (std::pow(x, one_minus_) - 1.0) / one_minus_; }
  double inverse(double y) const { return std::pow(1.0 + y * one_minus_, 1.0 / one_minus_); }

  uint64_t n_;
  double theta_;
  double one_minus_ = 1.0, top_ = 0.0, bottom_ = 0.0, squeeze_ = 0.0;
};

struct Txn {
  uint32_t keys[kOpsMax];
  uint64_t writes;  // bit i: request i is a read-modify-write
};

struct alignas(64) Counters {
  std::atomic<uint64_t> commits{0};
  std::atomic<uint64_t> aborts{0};
  uint64_t written = 0;  // read-modify-writes committed, set when the worker stops
  uint64_t run = 0;      // transactions committed from start to stop (not just the window)
};

std::atomic<bool> stop{false};
std::atomic<uint64_t> timestamps{1};  // wait_die: handed out in blocks of 64

enum class Protocol { kNoWait, kWaitDie, kSilo, kTicToc };

class Worker {
 public:
  Worker(Record* table, const Options& options) : table_(table), options_(options) {
    protocol_ = options.protocol == "silo"       ? Protocol::kSilo
                : options.protocol == "tictoc"   ? Protocol::kTicToc
                : options.protocol == "wait_die" ? Protocol::kWaitDie
                                                 : Protocol::kNoWait;
  }

  // A new transaction (not a retry): wait_die takes its timestamp here.
  void fresh() {
    if (protocol_ != Protocol::kWaitDie) return;
    if (ts_next_ == ts_end_) {
      ts_next_ = timestamps.fetch_add(64, std::memory_order_relaxed);
      ts_end_ = ts_next_ + 64;
    }
    ts_ = ts_next_++ & kTsMask;
  }

  bool run(const Txn& txn) {
    if (options_.prefetch) {
      for (int i = 0; i < options_.ops; ++i) {
        const char* line = reinterpret_cast<const char*>(&table_[txn.keys[i]]);
        __builtin_prefetch(line);
        __builtin_prefetch(line + 64);
      }
    }
    switch (protocol_) {
      case Protocol::kNoWait: return no_wait(txn);
      case Protocol::kWaitDie: return wait_die(txn);
      case Protocol::kSilo: return silo(txn);
      case Protocol::kTicToc: return tictoc(txn);
    }
    return false;
  }

 private:
  // `--ahead`: asks for the record of access `i + 1` while access `i` runs.
  void request_next(const Txn& txn, int i) {
    if (!options_.ahead || i + 1 >= options_.ops) return;
    const char* line = reinterpret_cast<const char*>(&table_[txn.keys[i + 1]]);
    __builtin_prefetch(line);
    __builtin_prefetch(line + 64);
  }

  void copy_out(const Record& r, uint64_t* value, uint64_t* seq) {
    *value = load(r.value);
    *seq = load(r.seq);
    for (int w = 0; w < kPayloadWords; ++w) payload_[w] = load(r.payload[w]);
  }

  void install(Record& r, uint64_t value, uint64_t seq) {
    store(r.value, value);
    store(r.seq, seq);
    for (int w = 0; w < kPayloadWords; ++w) store(r.payload[w], payload_word(value, w));
  }

  bool no_wait(const Txn& txn) {
    int held = 0;
    int writes = 0;
    bool ok = true;
    for (int i = 0; i < options_.ops && ok; ++i) {
      request_next(txn, i);
      Record& r = table_[txn.keys[i]];
      bool exclusive = (txn.writes >> i) & 1;
      uint64_t word = r.meta.load(std::memory_order_relaxed);
      if (exclusive) {
        uint64_t free = 0;
        ok = r.meta.compare_exchange_strong(free, kWriter, std::memory_order_acquire);
      } else {
        for (;;) {
          if (word & kWriter) { ok = false; break; }
          if (r.meta.compare_exchange_weak(word, word + 1, std::memory_order_acquire)) break;
        }
      }
      if (!ok) break;
      lock_keys_[held] = txn.keys[i];
      lock_exclusive_[held++] = exclusive;
      uint64_t value, seq;
      copy_out(r, &value, &seq);
      if (exclusive) {
        write_keys_[writes] = txn.keys[i];
        write_values_[writes] = value + 1;
        write_seqs_[writes++] = seq + 1;
      }
    }
    if (ok) {
      for (int w = 0; w < writes; ++w) install(table_[write_keys_[w]], write_values_[w], write_seqs_[w]);
    }
    for (int h = 0; h < held; ++h) {
      Record& r = table_[lock_keys_[h]];
      if (lock_exclusive_[h]) r.meta.store(0, std::memory_order_release);
      else r.meta.fetch_sub(1, std::memory_order_release);
    }
    return ok;
  }

  // Silo's and TicToc's read phase: every request is read between two loads of an unlocked,
  // unchanged meta word (request i is read i), and each read-modify-write buffered. Returns
  // the number of writes.
  int optimistic_reads(const Txn& txn) {
    int writes = 0;
    for (int i = 0; i < options_.ops; ++i) {
      request_next(txn, i);
      Record& r = table_[txn.keys[i]];
      uint64_t before, value, seq;
      for (;;) {
        before = r.meta.load(std::memory_order_acquire);
        if (before & kWriter) { __builtin_ia32_pause(); continue; }
        copy_out(r, &value, &seq);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (r.meta.load(std::memory_order_relaxed) == before) break;
      }
      read_keys_[i] = txn.keys[i];
      read_tids_[i] = before;
      if ((txn.writes >> i) & 1) {
        write_keys_[writes] = txn.keys[i];
        write_values_[writes] = value + 1;
        write_seqs_[writes++] = seq + 1;
      }
    }
    return writes;
  }

  // Locks the write set in key order (no deadlock), spinning on a busy lock; `locked(word)`
  // sees each word as it was before its lock was taken.
  template <class Locked>
  void lock_writes(int writes, Locked locked) {
    int order[kOpsMax];
    for (int w = 0; w < writes; ++w) order[w] = w;
    std::sort(order, order + writes, [&](int a, int b) { return write_keys_[a] < write_keys_[b]; });
    for (int o = 0; o < writes; ++o) {
      Record& r = table_[write_keys_[order[o]]];
      for (;;) {
        uint64_t word = r.meta.load(std::memory_order_relaxed);
        if (!(word & kWriter) &&
            r.meta.compare_exchange_weak(word, word | kWriter, std::memory_order_acquire)) {
          locked(word);
          break;
        }
        __builtin_ia32_pause();
      }
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  // Clears the lock bit of every write (an aborted commit).
  void unlock_writes(int writes) {
    for (int w = 0; w < writes; ++w) {
      Record& r = table_[write_keys_[w]];
      r.meta.store(r.meta.load(std::memory_order_relaxed) & ~kWriter, std::memory_order_release);
    }
  }

  bool silo(const Txn& txn) {
    const int reads = options_.ops;
    int writes = optimistic_reads(txn);
    uint64_t max_tid = last_tid_;
    lock_writes(writes, [&](uint64_t word) { max_tid = std::max(max_tid, word); });
    bool ok = true;
    for (int i = 0; i < reads && ok; ++i) {
      uint64_t now = table_[read_keys_[i]].meta.load(std::memory_order_acquire);
      bool mine = (txn.writes >> i) & 1;  // request i is read i; its write is locked by now
      ok = (now & ~kWriter) == read_tids_[i] && (!(now & kWriter) || mine);
      max_tid = std::max(max_tid, read_tids_[i]);
    }
    if (!ok) {
      unlock_writes(writes);
      return false;
    }
    uint64_t tid = max_tid + 1;
    last_tid_ = tid;
    for (int w = 0; w < writes; ++w) {
      Record& r = table_[write_keys_[w]];
      install(r, write_values_[w], write_seqs_[w]);
      r.meta.store(tid, std::memory_order_release);
    }
    return true;
  }

  // The word after this transaction takes the lock whose word is `word`, or 0 if it cannot now.
  uint64_t granted(uint64_t word, bool exclusive) const {
    bool no_holders = (word & ~kTsMask) == 0;
    if (exclusive) return no_holders ? (kWriter | ts_) : 0;
    if ((word & kWriter) || ((word >> kReaderShift) & kReadersMax) == kReadersMax) return 0;
    uint64_t oldest = no_holders ? ts_ : std::min(word & kTsMask, ts_);
    return ((word + kReaderOne) & ~kTsMask) | oldest;
  }

  bool wait_die(const Txn& txn) {
    int held = 0;
    bool ok = true;
    uint64_t values[kOpsMax];
    for (int i = 0; i < options_.ops && ok; ++i) {
      request_next(txn, i);
      Record& r = table_[txn.keys[i]];
      bool exclusive = (txn.writes >> i) & 1;
      for (;;) {
        uint64_t word = r.meta.load(std::memory_order_relaxed);
        uint64_t next = granted(word, exclusive);
        if (next != 0) {
          if (r.meta.compare_exchange_weak(word, next, std::memory_order_acquire)) break;
          continue;
        }
        if (ts_ < (word & kTsMask)) { __builtin_ia32_pause(); continue; }  // older: wait
        ok = false;  // younger: die
        break;
      }
      if (!ok) break;
      ++held;
      uint64_t seq;
      copy_out(r, &values[i], &seq);
      seqs_[i] = seq;
    }
    if (ok) {
      for (int i = 0; i < held; ++i) {
        if ((txn.writes >> i) & 1) install(table_[txn.keys[i]], values[i] + 1, seqs_[i] + 1);
      }
    }
    for (int i = 0; i < held; ++i) {
      Record& r = table_[txn.keys[i]];
      if ((txn.writes >> i) & 1) r.meta.store(kFree, std::memory_order_release);
      else r.meta.fetch_sub(kReaderOne, std::memory_order_release);
    }
    return ok;
  }

  bool tictoc(const Txn& txn) {
    const int reads = options_.ops;
    int writes = optimistic_reads(txn);
    uint64_t commit_ts = 0;
    lock_writes(writes, [&](uint64_t word) { commit_ts = std::max(commit_ts, rts(word) + 1); });
    for (int i = 0; i < reads; ++i) commit_ts = std::max(commit_ts, wts(read_tids_[i]));
    bool ok = true;
    for (int i = 0; i < reads && ok; ++i) {
      uint64_t observed = read_tids_[i];
      if (rts(observed) >= commit_ts) continue;
      std::atomic<uint64_t>& meta = table_[read_keys_[i]].meta;
      bool mine = (txn.writes >> i) & 1;
      for (;;) {
        uint64_t now = meta.load(std::memory_order_acquire);
        if (wts(now) != wts(observed) || ((now & kWriter) && !mine)) { ok = false; break; }
        if (mine || rts(now) >= commit_ts) break;
        uint64_t new_wts = wts(now);
        if (commit_ts - new_wts > kDeltaMax) new_wts = commit_ts - kDeltaMax;
        if (meta.compare_exchange_weak(now, pack(new_wts, commit_ts), std::memory_order_acq_rel)) break;
      }
    }
    if (!ok) {
      unlock_writes(writes);
      return false;
    }
    for (int w = 0; w < writes; ++w) {
      Record& r = table_[write_keys_[w]];
      install(r, write_values_[w], write_seqs_[w]);
      r.meta.store(pack(commit_ts, commit_ts), std::memory_order_release);
    }
    return true;
  }

  Record* table_;
  const Options& options_;
  Protocol protocol_;
  uint64_t ts_ = 0, ts_next_ = 0, ts_end_ = 0;
  uint64_t seqs_[kOpsMax];
  uint64_t payload_[kPayloadWords];
  uint32_t lock_keys_[kOpsMax];
  bool lock_exclusive_[kOpsMax];
  uint32_t read_keys_[kOpsMax];
  uint64_t read_tids_[kOpsMax];
  uint32_t write_keys_[kOpsMax];
  uint64_t write_values_[kOpsMax];
  uint64_t write_seqs_[kOpsMax];
  uint64_t last_tid_ = 0;
};

std::vector<Txn> draw_pool(const Options& options, int thread) {
  std::mt19937_64 rng(options.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(thread) + 1);
  Zipf zipf(options.records, options.theta);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<Txn> pool(options.pool);
  for (Txn& txn : pool) {
    txn.writes = 0;
    for (int i = 0; i < options.ops; ++i) {
      uint32_t key;
      bool taken;
      do {
        key = static_cast<uint32_t>(zipf(rng));
        taken = std::find(txn.keys, txn.keys + i, key) != txn.keys + i;
      } while (taken);
      txn.keys[i] = key;
      if (unit(rng) >= options.read_ratio) txn.writes |= uint64_t{1} << i;
    }
  }
  return pool;
}

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr, "flat_loop: %s\n", message);
  std::exit(2);
}

// The whole of `v` as a number, or a usage error naming `flag` (no silent 0 for junk).
uint64_t whole_u64(const std::string& flag, const char* v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (*v == '\0' || *v == '-' || *end != '\0' || errno != 0) usage(("not a whole number for " + flag).c_str());
  return x;
}

double real(const std::string& flag, const char* v) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v, &end);
  if (*v == '\0' || *end != '\0' || errno != 0 || !std::isfinite(x)) usage(("not a number for " + flag).c_str());
  return x;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--prefetch") { o.prefetch = true; continue; }
    if (flag == "--ahead") { o.ahead = true; continue; }
    if (flag == "--huge") { o.huge = true; continue; }
    if (flag == "--check-zipf") { o.check_zipf = true; continue; }
    if (i + 1 >= argc) usage(("missing value for " + flag).c_str());
    const char* v = argv[++i];
    if (flag == "--protocol") o.protocol = v;
    else if (flag == "--records") o.records = whole_u64(flag, v);
    else if (flag == "--ops") o.ops = static_cast<int>(std::min<uint64_t>(whole_u64(flag, v), 1000));
    else if (flag == "--read-ratio") o.read_ratio = real(flag, v);
    else if (flag == "--theta") o.theta = real(flag, v);
    else if (flag == "--threads") o.threads = static_cast<int>(std::min<uint64_t>(whole_u64(flag, v), 1000));
    else if (flag == "--duration") o.duration_s = real(flag, v);
    else if (flag == "--warmup") o.warmup_s = real(flag, v);
    else if (flag == "--pool") o.pool = whole_u64(flag, v);
    else if (flag == "--seed") o.seed = whole_u64(flag, v);
    else usage(("unknown flag " + flag).c_str());
  }
  if (o.protocol != "no_wait" && o.protocol != "wait_die" && o.protocol != "silo" && o.protocol != "tictoc")
    usage("--protocol is no_wait, wait_die, silo or tictoc");
  if (o.records < 16 || o.records > (uint64_t{1} << 32)) usage("--records must be in 16..=2^32");
  if (o.ops < 1 || o.ops > kOpsMax || static_cast<uint64_t>(o.ops) > o.records) usage("--ops must be in 1..=64");
  if (!(o.theta >= 0.0 && o.theta < 1.0)) usage("--theta must be in [0, 1)");
  if (!(o.read_ratio >= 0.0 && o.read_ratio <= 1.0)) usage("--read-ratio must be in [0, 1]");
  if (o.threads < 1 || o.threads > 64) usage("--threads must be in 1..=64");
  if (!(o.duration_s > 0 && o.duration_s <= 3600 && o.warmup_s >= 0 && o.warmup_s <= 3600)) usage("bad duration");
  if (o.pool < 1 || o.pool > (uint64_t{1} << 26)) usage("--pool must be in 1..=2^26");
  return o;
}

}  // namespace

// `--check-zipf`: draws a million ranks and prints how often the first few came up against
// their exact probabilities, so the sampler can be checked before it is trusted.
void check_zipf(const Options& options) {
  std::mt19937_64 rng(options.seed);
  Zipf zipf(options.records, options.theta);
  double zeta = 0.0;
  for (uint64_t r = 1; r <= options.records; ++r) zeta += std::pow(static_cast<double>(r), -options.theta);
  const uint64_t draws = 1'000'000;
  std::vector<uint64_t> count(100, 0);
  for (uint64_t i = 0; i < draws; ++i) {
    uint64_t rank = zipf(rng);
    if (rank < count.size()) ++count[rank];
  }
  for (uint64_t rank : {0, 1, 2, 9, 99}) {
    double exact = std::pow(static_cast<double>(rank + 1), -options.theta) / zeta;
    std::printf("rank %llu: drawn %.5f exact %.5f\n", static_cast<unsigned long long>(rank),
                static_cast<double>(count[rank]) / draws, exact);
  }
}

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  if (options.check_zipf) {
    check_zipf(options);
    return 0;
  }
  auto t0 = std::chrono::steady_clock::now();
  Record* table = static_cast<Record*>(std::aligned_alloc(64, options.records * sizeof(Record)));
  if (table == nullptr) usage("could not allocate the table");
  if (options.huge) {
    // Whole pages only: madvise takes a page-aligned start.
    uintptr_t first = (reinterpret_cast<uintptr_t>(table) + 4095) & ~uintptr_t{4095};
    uintptr_t end = (reinterpret_cast<uintptr_t>(table) + options.records * sizeof(Record)) & ~uintptr_t{4095};
    if (end > first && madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE) != 0)
      std::perror("madvise(MADV_HUGEPAGE)");
  }
  {
    std::vector<std::thread> loaders;
    uint64_t chunk = (options.records + options.threads - 1) / options.threads;
    for (int t = 0; t < options.threads; ++t) {
      loaders.emplace_back([&, t] {
        uint64_t end = std::min(options.records, (t + 1) * chunk);
        for (uint64_t k = t * chunk; k < end; ++k) {
          Record& r = table[k];
          r.meta.store(options.protocol == "wait_die" ? kFree : 0, std::memory_order_relaxed);
          r.value = k;
          r.seq = 0;
          for (int w = 0; w < kPayloadWords; ++w) r.payload[w] = payload_word(k, w);
        }
      });
    }
    for (auto& loader : loaders) loader.join();
  }
  std::vector<std::vector<Txn>> pools(options.threads);
  {
    std::vector<std::thread> drawers;
    for (int t = 0; t < options.threads; ++t) drawers.emplace_back([&, t] { pools[t] = draw_pool(options, t); });
    for (auto& drawer : drawers) drawer.join();
  }
  double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<Counters> counters(options.threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < options.threads; ++t) {
    workers.emplace_back([&, t] {
      Worker worker(table, options);
      const std::vector<Txn>& pool = pools[t];
      uint64_t next = 0, commits = 0, aborts = 0, written = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const Txn& txn = pool[next];
        next = next + 1 == pool.size() ? 0 : next + 1;
        worker.fresh();
        bool committed = false;
        while (!(committed = worker.run(txn))) {
          ++aborts;
          if ((aborts & 63) == 0 && stop.load(std::memory_order_relaxed)) break;
        }
        if (!committed) break;
        written += static_cast<uint64_t>(__builtin_popcountll(txn.writes));
        ++commits;
        if ((commits & 255) == 0) {
          counters[t].commits.store(commits, std::memory_order_relaxed);
          counters[t].aborts.store(aborts, std::memory_order_relaxed);
        }
      }
      counters[t].written = written;
      counters[t].run = commits;
    });
  }
  auto totals = [&] {
    uint64_t c = 0, a = 0;
    for (auto& counter : counters) {
      c += counter.commits.load(std::memory_order_relaxed);
      a += counter.aborts.load(std::memory_order_relaxed);
    }
    return std::make_pair(c, a);
  };
  std::this_thread::sleep_for(std::chrono::duration<double>(options.warmup_s));
  auto start = totals();
  auto begin = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(options.duration_s));
  auto end = totals();
  double measured_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  stop.store(true);
  for (auto& worker : workers) worker.join();
  uint64_t commits = end.first - start.first, aborts = end.second - start.second;
  // Every committed read-modify-write added one to a value and to its sequence number, so
  // each record's value is its key plus its sequence number, and the increments sum to the
  // writes committed: a lost or doubled update shows here.
  uint64_t written = 0, increments = 0, run = 0;
  bool consistent = true;
  for (auto& counter : counters) {
    written += counter.written;
    run += counter.run;
  }
  for (uint64_t k = 0; k < options.records; ++k) {
    consistent &= table[k].value - k == table[k].seq;
    increments += table[k].seq;
  }
  consistent &= increments == written;
  std::printf(
      "protocol=%s threads=%d theta=%g prefetch=%d ahead=%d huge=%d commits_per_s=%.0f abort_rate=%.4f commits=%llu aborts=%llu "
      "commits_run=%llu setup_s=%.2f check=%s\n",
      options.protocol.c_str(), options.threads, options.theta, options.prefetch ? 1 : 0, options.ahead ? 1 : 0,
      options.huge ? 1 : 0, commits / measured_s,
      commits + aborts ? static_cast<double>(aborts) / static_cast<double>(commits + aborts) : 0.0,
      static_cast<unsigned long long>(commits), static_cast<unsigned long long>(aborts),
      static_cast<unsigned long long>(run), setup_s, consistent ? "ok" : "FAILED");
  std::free(table);
  return consistent ? 0 : 1;
}

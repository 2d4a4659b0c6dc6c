// The skip-gram trainer of `train-corpus --engine native` as a plain C ABI
// library (no TensorFlow): the kernel of skipgram_core.h on tables in an
// interleaved layout, loaded with ctypes by keras_gauss.fused.native. Built
// by keras_gauss.fused.build.
//
// What it trains on: for each sentence, word2vec's subsampling of frequent
// words (keep[id] per occurrence); (centre, context) pairs within `window`
// of each other in the kept sequence, with word2vec's reduced window (the
// reach of each centre drawn from 1..window) when `dynamic_window`;
// `negatives` contexts per pair from the unigram^0.75 distribution by
// Walker's alias method (`probs`, `alias`). Every `batch_size` triples make
// one max-margin ranking step: energies, hinge, closed-form gradients of the
// batch-mean loss summed per row, AdaGrad and the row constraints
// (gauss_math.h) on the rows with a nonzero gradient.
//
// Random numbers are counter-based (splitmix64's mixer on the seed, the
// sentence index and token positions), so the triples of a sentence do not
// depend on threads or on the order of work:
//
//   key(s)            = mix(seed + G * (s + 1))          s: sentence in the chunk
//   keep draw at p    = mix(key + G * (4p + 1))           p: position in the sentence
//   reach draw at p   = mix(key + G * (4p + 2))
//   negative n of (p, q) = mix(mix(key + G * (4p + 3)) + G * (q * negatives + n + 1))
//
// with p, q positions before subsampling. A token is kept when
// float(u >> 40) * 2^-24 < keep[id]; the reach is 1 + (u >> 33) % window; a
// negative is i = ((u >> 32) * V) >> 32 if float((u >> 8) & (2^24 - 1)) *
// 2^-24 < probs[i], else alias[i]. The triples come in sentence order,
// centres ascending, contexts ascending; with `shuffle`, the triples of each
// block of sentences (the whole chunk on one thread) are permuted first (see
// BlockTriples). kg_skipgram_triples returns those of one thread.
//
// With threads > 1 the sentences are split into contiguous blocks of about
// equal numbers of tokens, 8 per thread, that the threads take in turn; each
// thread runs its own minibatches and updates the shared tables without
// locks (Hogwild, as word2vec and gensim do), so results then vary slightly
// from run to run. With one thread the result is deterministic.
//
// A table of `rows` rows is one float32 buffer of rows * stride floats;
// row r holds [mean (d) | variance (dv) | mean accumulator (d) | variance
// accumulator (dv)] from r * stride, stride >= 2 (d + dv) (a multiple of 16
// floats, one 64-byte cache line, when the buffer is 64-byte aligned).

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gauss_math.h"
#include "skipgram_core.h"

namespace {

using tensorflow::keras_gauss::Energy;
using tensorflow::keras_gauss::Skipgram;
using tensorflow::keras_gauss::Table;

Table Interleaved(float* base, int64_t rows, int64_t stride, int64_t d, int64_t dv,
                  float max_norm, float min_variance, float max_variance) {
  Table tb;
  tb.means = base;
  tb.variances = base + d;
  tb.mean_acc = base + d + dv;
  tb.var_acc = base + 2 * d + dv;
  tb.rows = rows;
  tb.mean_stride = stride;
  tb.var_stride = stride;
  tb.max_norm = max_norm;
  tb.min_variance = min_variance;
  tb.max_variance = max_variance;
  return tb;
}

// Writes "`name` holds id ..." to `error` and returns false at the first id
// outside [0, rows).
bool CheckIds(const char* name, const int32_t* ids, int64_t n, int64_t rows, char* error,
              int64_t error_size) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= rows) {
      std::snprintf(error, error_size,
                    "`%s` holds id %d (at flat position %lld), outside [0, %lld)", name,
                    ids[i], static_cast<long long>(i), static_cast<long long>(rows));
      return false;
    }
  }
  return true;
}

// Checks the chunk (splits, ids) and fills `sg`; false with a message in
// `error` when it is bad.
bool ReadChunk(const int32_t* tokens, const int64_t* splits, int64_t sentences, int64_t rows,
               const float* keep, const float* probs, const int32_t* alias, int64_t outcomes,
               uint64_t seed, int64_t window, int dynamic_window, int64_t negatives,
               int shuffle, Skipgram* sg, char* error, int64_t error_size) {
  if (window < 1 || negatives < 1 || outcomes < 1 || outcomes > rows) {
    std::snprintf(error, error_size, "bad arguments (window %lld, negatives %lld, %lld "
                  "outcomes for %lld rows)", static_cast<long long>(window),
                  static_cast<long long>(negatives), static_cast<long long>(outcomes),
                  static_cast<long long>(rows));
    return false;
  }
  if (splits[0] != 0) {
    std::snprintf(error, error_size, "`row_splits` must start at 0");
    return false;
  }
  for (int64_t i = 1; i <= sentences; ++i) {
    if (splits[i] < splits[i - 1]) {
      std::snprintf(error, error_size, "`row_splits` must be non-decreasing");
      return false;
    }
  }
  if (!CheckIds("tokens", tokens, splits[sentences], rows, error, error_size) ||
      !CheckIds("negative_alias", alias, outcomes, rows, error, error_size))
    return false;
  sg->tokens = tokens;
  sg->splits = splits;
  sg->keep = keep;
  sg->probs = probs;
  sg->alias = alias;
  sg->outcomes = static_cast<uint64_t>(outcomes);
  sg->seed = seed;
  sg->window = window;
  sg->dynamic = dynamic_window != 0;
  sg->negatives = negatives;
  sg->shuffle = shuffle != 0;
  return true;
}

// Splits lowercased UTF-8 text into the tokens of
// keras_gauss.pipelines.tokenize and numbers them in order of first
// appearance. A character is a word character (ASCII letters and digits, and
// the non-ASCII code points the caller marked: Unicode letters and numbers),
// a mark (' - U+2019) or a separator (everything else). Per line: runs of
// separators and runs of two or more marks split tokens; a mark at the start
// or at the end of a token is dropped (one mark: runs are longer than one
// only where they split).
class Tokenizer {
 public:
  Tokenizer() : word_(0x110000, false) {
    for (int c = '0'; c <= '9'; ++c) word_[c] = true;
    for (int c = 'a'; c <= 'z'; ++c) word_[c] = true;
    for (int c = 'A'; c <= 'Z'; ++c) word_[c] = true;
  }

  void SetWord(const int32_t* cps, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      if (cps[i] >= 0 && cps[i] < 0x110000) word_[cps[i]] = true;
    }
  }

  void Tokenize(const char* text, int64_t n) {
    int64_t i = 0;
    while (true) {
      const void* newline = std::memchr(text + i, '\n', n - i);
      const int64_t end = newline ? static_cast<const char*>(newline) - text : n;
      int64_t count = 0, len = 0;
      auto emit = [&](int64_t b, int64_t e) {
        if (b < e && Class(text, b, e, &len) == kMark) b += len;
        if (b < e) {
          const int64_t last = LastCharStart(text, b, e);
          if (Class(text, last, e, &len) == kMark) e = last;
        }
        if (b < e) {
          Add(std::string_view(text + b, e - b));
          ++count;
        }
      };
      int64_t j = i;
      while (j < end) {
        if (Class(text, j, end, &len) == kSeparator) {
          j += len;
          continue;
        }
        // A run of word characters and marks [j, k), split at runs of two
        // or more marks.
        int64_t k = j, piece = j;
        while (k < end) {
          const int cls = Class(text, k, end, &len);
          if (cls == kSeparator) break;
          if (cls == kWord) {
            k += len;
            continue;
          }
          int64_t r = k, run = 0;
          while (r < end && Class(text, r, end, &len) == kMark) {
            r += len;
            ++run;
          }
          if (run >= 2) {
            emit(piece, k);
            piece = r;
          }
          k = r;
        }
        emit(piece, k);
        j = k;
      }
      lengths.push_back(count);
      if (newline == nullptr) break;
      i = end + 1;
    }
  }

  std::vector<int32_t> ids;
  std::vector<int64_t> lengths;
  std::vector<std::string> types;

 private:
  static int32_t Decode(const char* text, int64_t i, int64_t n, int64_t* len) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      *len = 1;
      return c;
    }
    int64_t extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (i + extra > n - 1) extra = n - 1 - i;
    int32_t cp = extra == 3 ? c & 0x07 : extra == 2 ? c & 0x0F : c & 0x1F;
    for (int64_t k = 1; k <= extra; ++k) cp = (cp << 6) | (text[i + k] & 0x3F);
    *len = 1 + extra;
    return cp;
  }

  static constexpr int kSeparator = 0, kWord = 1, kMark = 2;

  int Class(const char* text, int64_t i, int64_t n, int64_t* len) const {
    const int32_t cp = Decode(text, i, n, len);
    if (cp == '\'' || cp == '-' || cp == 0x2019) return kMark;
    return cp >= 0 && cp < 0x110000 && word_[cp] ? kWord : kSeparator;
  }

  static int64_t LastCharStart(const char* text, int64_t b, int64_t e) {
    int64_t k = e - 1;
    while (k > b && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
    return k;
  }

  void Add(std::string_view token) {
    auto found = index_.find(token);
    if (found != index_.end()) {
      ids.push_back(found->second);
      return;
    }
    const int32_t id = static_cast<int32_t>(types.size());
    types.emplace_back(token);
    // Keys view strings owned by `storage_` (stable: a deque of blocks).
    index_.emplace(Store(token), id);
    ids.push_back(id);
  }

  std::string_view Store(std::string_view token) {
    if (storage_.empty() || storage_.back().size() + token.size() > storage_.back().capacity()) {
      storage_.emplace_back();
      storage_.back().reserve(std::max<size_t>(1 << 20, token.size()));
    }
    std::string& block = storage_.back();
    const size_t at = block.size();
    block.append(token);
    return std::string_view(block.data() + at, token.size());
  }

  std::vector<bool> word_;
  std::unordered_map<std::string_view, int32_t> index_;
  std::vector<std::string> storage_;
};

}  // namespace

extern "C" {

void* kg_tokenizer_new() { return new Tokenizer(); }

void kg_tokenizer_free(void* tokenizer) { delete static_cast<Tokenizer*>(tokenizer); }

// The distinct non-ASCII code points of UTF-8 `text` (at most `cap`, written
// to `out`); returns how many there are.
int64_t kg_codepoints(const char* text, int64_t n, int32_t* out, int64_t cap) {
  std::vector<bool> seen;
  int64_t count = 0;
  for (int64_t i = 0; i < n;) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int64_t extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (i + extra > n - 1) extra = n - 1 - i;
    int32_t cp = extra == 3 ? c & 0x07 : extra == 2 ? c & 0x0F : c & 0x1F;
    for (int64_t k = 1; k <= extra; ++k) cp = (cp << 6) | (text[i + k] & 0x3F);
    i += 1 + extra;
    if (cp < 0 || cp >= 0x110000) continue;
    if (seen.empty()) seen.assign(0x110000, false);
    if (seen[cp]) continue;
    seen[cp] = true;
    if (count < cap) out[count] = cp;
    ++count;
  }
  return count;
}

// Marks code points as word characters (letters and numbers).
void kg_tokenizer_set_word(void* tokenizer, const int32_t* cps, int64_t n) {
  static_cast<Tokenizer*>(tokenizer)->SetWord(cps, n);
}

// Tokenizes lines of lowercased UTF-8 text (separated by '\n'; the last one
// ends at `n`), appending their token ids and token counts.
void kg_tokenize(void* tokenizer, const char* text, int64_t n) {
  static_cast<Tokenizer*>(tokenizer)->Tokenize(text, n);
}

// Sizes of what the tokenizer holds: tokens, lines, types, bytes of the
// types joined by '\n'.
void kg_tokenizer_sizes(void* tokenizer, int64_t* sizes) {
  const Tokenizer* t = static_cast<Tokenizer*>(tokenizer);
  sizes[0] = static_cast<int64_t>(t->ids.size());
  sizes[1] = static_cast<int64_t>(t->lengths.size());
  sizes[2] = static_cast<int64_t>(t->types.size());
  int64_t bytes = 0;
  for (const std::string& type : t->types) bytes += static_cast<int64_t>(type.size()) + 1;
  sizes[3] = bytes;
}

// Copies the ids, line lengths and types (joined by '\n') out.
void kg_tokenizer_export(void* tokenizer, int32_t* ids, int64_t* lengths, char* types) {
  const Tokenizer* t = static_cast<Tokenizer*>(tokenizer);
  std::memcpy(ids, t->ids.data(), sizeof(int32_t) * t->ids.size());
  std::memcpy(lengths, t->lengths.data(), sizeof(int64_t) * t->lengths.size());
  for (const std::string& type : t->types) {
    std::memcpy(types, type.data(), type.size());
    types += type.size();
    *types++ = '\n';
  }
}

// The layout version: Python checks it matches the one it was written for.
int kg_native_version() { return 1; }

// Trains on the sentences of one chunk, in place.
//
// tables: word and context buffers (the same pointer: a shared table),
//   `rows` rows each, row stride `stride` floats; spherical: one variance a
//   row (dv = 1), else d.
// tokens / splits: ids of the sentences and their S + 1 boundaries.
// keep: V keep probabilities, or null (no subsampling).
// probs / alias: the negatives' alias table, `outcomes` entries.
// bounds: max_norm, min_variance, max_variance of (word, context) tables.
// energy: its code (energies.h), EL or KL. threads: 0 = the hardware's. `started`: the threads
// that trained (the caller's among them); when the system could start fewer
// than asked, the others' blocks are trained by those that did, and `error`
// holds the reason (a warning: the return is 0).
// Returns 0, or 1 with a message in `error` (then nothing was trained).
int kg_skipgram_train(float* word_table, float* context_table, int64_t rows, int64_t stride,
                      int64_t d, int spherical, const int32_t* tokens, const int64_t* splits,
                      int64_t sentences, const float* keep, const float* probs,
                      const int32_t* alias, int64_t outcomes, uint64_t seed, int64_t window,
                      int dynamic_window, int64_t negatives, int shuffle, int64_t batch_size,
                      int64_t threads, int energy, float learning_rate, float margin,
                      float epsilon, const float* max_norm, const float* min_variance,
                      const float* max_variance, double* loss, int64_t* pairs, char* error,
                      int64_t error_size, float variance_learning_rate, int64_t* started) {
  *loss = 0.0;
  *pairs = 0;
  *started = 1;
  if (error_size > 0) error[0] = '\0';
  const int64_t dv = spherical ? 1 : d;
  if (d < 1 || stride < 2 * (d + dv) || batch_size < 1) {
    std::snprintf(error, error_size, "bad arguments (stride %lld, d %lld, dv %lld)",
                  static_cast<long long>(stride), static_cast<long long>(d),
                  static_cast<long long>(dv));
    return 1;
  }
  Skipgram sg;
  if (!ReadChunk(tokens, splits, sentences, rows, keep, probs, alias, outcomes, seed, window,
                 dynamic_window, negatives, shuffle, &sg, error, error_size))
    return 1;
  const bool shared = word_table == context_table;
  const Table tables[2] = {
      Interleaved(word_table, rows, stride, d, dv, max_norm[0], min_variance[0],
                  max_variance[0]),
      Interleaved(context_table, rows, stride, d, dv, max_norm[1], min_variance[1],
                  max_variance[1])};
  for (const Table& tb : tables) tensorflow::keras_gauss::AdviseHugePages(tb, d, dv);
  if (threads <= 0) threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  // Threads that cannot be started are not waited for: the blocks are taken
  // in turn, so those that run train them all (TrainChunk).
  auto parallel = [&](int64_t n, const auto& fn) {
    std::vector<std::thread> pool;
    try {
      pool.reserve(n - 1);
      for (int64_t t = 1; t < n; ++t) pool.emplace_back([&fn, t]() { fn(t); });
    } catch (const std::exception& failure) {  // std::system_error, std::bad_alloc
      std::snprintf(error, error_size, "%s", failure.what());
    }
    *started = 1 + static_cast<int64_t>(pool.size());
    fn(0);
    for (std::thread& thread : pool) thread.join();
  };
  tensorflow::keras_gauss::TrainChunk(
      tables, shared, d, dv, tensorflow::keras_gauss::EnergyOfCode(energy), spherical != 0,
      batch_size, learning_rate, margin, epsilon, sg, sentences, threads, parallel, loss,
      pairs, variance_learning_rate);
  return 0;
}

// The triples kg_skipgram_train trains on with one thread, in its order
// (same chunk arguments; ids below `rows`). Call it first with `capacity` 0:
// it returns their number in `*count`; then with room for `capacity`
// triples: word and context ids and `negatives` ids each. Returns 0, or 1
// with a message in `error` (then nothing was written).
int kg_skipgram_triples(int64_t rows, const int32_t* tokens, const int64_t* splits,
                        int64_t sentences, const float* keep, const float* probs,
                        const int32_t* alias, int64_t outcomes, uint64_t seed,
                        int64_t window, int dynamic_window, int64_t negatives, int shuffle,
                        int32_t* word, int32_t* context, int32_t* negative_ids,
                        int64_t capacity, int64_t* count, char* error, int64_t error_size) {
  *count = 0;
  Skipgram sg;
  if (!ReadChunk(tokens, splits, sentences, rows, keep, probs, alias, outcomes, seed, window,
                 dynamic_window, negatives, shuffle, &sg, error, error_size))
    return 1;
  tensorflow::keras_gauss::Triples triples;
  std::vector<int64_t> order;
  tensorflow::keras_gauss::BlockTriples(sg, 0, sentences, 0, &triples, &order);
  const int64_t n = triples.size();
  *count = n;
  if (capacity < n) return 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = order[i];
    word[i] = triples.word[o];
    context[i] = triples.context[o];
    std::memcpy(negative_ids + i * negatives, triples.negatives.data() + o * negatives,
                sizeof(int32_t) * negatives);
  }
  return 0;
}

}  // extern "C"

// The skip-gram trainer of the plain C ABI library (native.cc): drawing the
// triples of a chunk of sentences and the minibatch ranking steps over them,
// on tables given as `Table`s (interleaved rows). No TensorFlow headers: the
// caller supplies the threads. The formulas of the random draws are in
// native.cc's header comment.

#ifndef KERAS_GAUSS_FUSED_SKIPGRAM_CORE_H_
#define KERAS_GAUSS_FUSED_SKIPGRAM_CORE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "gauss_math.h"

namespace tensorflow {
namespace keras_gauss {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t kShuffleSalt = 0xD1B54A32D192ED03ULL;
// How many triples ahead the rows are prefetched.
constexpr int64_t kAhead = 4;
// How many rows ahead Flush prefetches the rows it updates.
constexpr int64_t kFlushAhead = 8;
// Blocks of sentences per thread when several threads share a chunk.
constexpr int64_t kBlocksPerThread = 8;

inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Backs the 2 MB-aligned interior of a table's buffer with huge pages where
// Linux allows it (transparent huge pages in "always" or "madvise" mode):
// the trainer reads rows all over tables of tens to hundreds of MB, and with 4 KB
// pages nearly every row read also misses the TLB. MADV_COLLAPSE (Linux 6.1+)
// moves the pages already there into huge ones now; older kernels ignore it
// and khugepaged does it over time. Done once per buffer (the contents do
// not change); failures are ignored (the memory stays as it was).
inline void AdviseHugePages(const float* data, int64_t count) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end =
      (reinterpret_cast<uintptr_t>(data) + sizeof(float) * count) & ~(kHuge - 1);
  if (end <= begin) return;
  static std::mutex mu;
  static std::set<std::pair<uintptr_t, uintptr_t>>* done =
      new std::set<std::pair<uintptr_t, uintptr_t>>();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (done->size() > 4096) done->clear();
    if (!done->insert({begin, end}).second) return;
  }
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  constexpr int kCollapse = 25;  // MADV_COLLAPSE, absent from older headers
  madvise(reinterpret_cast<void*>(begin), end - begin, kCollapse);
#else
  (void)data;
  (void)count;
#endif
}

inline void AdviseHugePages(const Table& tb, int64_t d, int64_t dv) {
  if (tb.variances == tb.means + d && tb.mean_stride == tb.var_stride) {
    // Interleaved rows: one buffer.
    AdviseHugePages(tb.means, tb.rows * tb.mean_stride);
    return;
  }
  AdviseHugePages(tb.means, tb.rows * tb.mean_stride);
  AdviseHugePages(tb.variances, tb.rows * tb.var_stride);
  AdviseHugePages(tb.mean_acc, tb.rows * tb.mean_stride);
  AdviseHugePages(tb.var_acc, tb.rows * tb.var_stride);
}

// What the triples of a chunk are drawn from.
struct Skipgram {
  const int32_t* tokens = nullptr;
  const int64_t* splits = nullptr;
  const float* keep = nullptr;  // nullptr: keep everything
  const float* probs = nullptr;
  const int32_t* alias = nullptr;
  uint64_t outcomes = 0;
  uint64_t seed = 0;
  int64_t window = 5;
  bool dynamic = true;
  int64_t negatives = 1;
  bool shuffle = false;
};

// Triples (word, context, negatives), in order: those of a block of sentences.
struct Triples {
  std::vector<int32_t> word, context, negatives;
  std::vector<int32_t> ids;  // scratch: kept tokens and their positions
  std::vector<int64_t> pos;
  int64_t size() const { return static_cast<int64_t>(word.size()); }
};

inline int32_t DrawNegative(const Skipgram& sg, uint64_t u) {
  const uint64_t i = ((u >> 32) * sg.outcomes) >> 32;
  const float frac = static_cast<float>((u >> 8) & 0xFFFFFFULL) * (1.0f / 16777216.0f);
  return frac < sg.probs[i] ? static_cast<int32_t>(i) : sg.alias[i];
}

// Appends the triples of sentence `s` to `out` (its ids/pos are scratch).
inline void SentenceTriples(const Skipgram& sg, int64_t s, Triples* out) {
  const uint64_t window = static_cast<uint64_t>(sg.window);
  const uint64_t key = Mix(sg.seed + kGolden * static_cast<uint64_t>(s + 1));
  const int64_t start = sg.splits[s];
  const int64_t length = sg.splits[s + 1] - start;
  std::vector<int32_t>& ids = out->ids;
  std::vector<int64_t>& pos = out->pos;
  ids.clear();
  pos.clear();
  for (int64_t p = 0; p < length; ++p) {
    const int32_t id = sg.tokens[start + p];
    if (sg.keep != nullptr) {
      const uint64_t u = Mix(key + kGolden * (4 * static_cast<uint64_t>(p) + 1));
      if (!(static_cast<float>(u >> 40) * (1.0f / 16777216.0f) < sg.keep[id])) continue;
    }
    ids.push_back(id);
    pos.push_back(p);
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  for (int64_t q = 0; q < n; ++q) {
    const uint64_t p = static_cast<uint64_t>(pos[q]);
    int64_t reach = sg.window;
    if (sg.dynamic) {
      reach = 1 + static_cast<int64_t>((Mix(key + kGolden * (4 * p + 2)) >> 33) % window);
    }
    const uint64_t base = Mix(key + kGolden * (4 * p + 3));
    const int64_t lo = std::max<int64_t>(0, q - reach);
    const int64_t hi = std::min<int64_t>(n - 1, q + reach);
    for (int64_t j = lo; j <= hi; ++j) {
      if (j == q) continue;
      out->word.push_back(ids[q]);
      out->context.push_back(ids[j]);
      const uint64_t counter = static_cast<uint64_t>(pos[j]) * sg.negatives;
      for (int64_t m = 0; m < sg.negatives; ++m) {
        out->negatives.push_back(DrawNegative(sg, Mix(base + kGolden * (counter + m + 1))));
      }
    }
  }
}

// The triples of sentences [begin, end), block `block` of the chunk, in
// training order: sentence order, or with `shuffle` a random permutation of
// them (sorted by mix(mix(seed ^ kShuffleSalt + G * block) + G * (i + 1)) >>
// 1, ties by i, where i counts the triples from `begin`). `order` receives
// the permutation.
inline void BlockTriples(const Skipgram& sg, int64_t begin, int64_t end, int64_t block,
                  Triples* out, std::vector<int64_t>* order) {
  out->word.clear();
  out->context.clear();
  out->negatives.clear();
  for (int64_t i = begin; i < end; ++i) SentenceTriples(sg, i, out);
  const int64_t n = out->size();
  order->resize(n);
  for (int64_t i = 0; i < n; ++i) (*order)[i] = i;
  if (sg.shuffle) {
    const uint64_t base = Mix((sg.seed ^ kShuffleSalt) + kGolden * static_cast<uint64_t>(block));
    std::vector<std::pair<uint64_t, int64_t>> keys(n);
    for (int64_t i = 0; i < n; ++i) {
      keys[i] = {Mix(base + kGolden * static_cast<uint64_t>(i + 1)) >> 1, i};
    }
    std::sort(keys.begin(), keys.end());
    for (int64_t i = 0; i < n; ++i) (*order)[i] = keys[i].second;
  }
}

// One thread's minibatches: gradients are summed per row (slot) until
// `batch` triples have been seen, then every touched row is updated once.
class Worker {
 public:
  Worker(const Table* tables, bool shared, int64_t d, int64_t dv, Energy energy,
         bool sph, int64_t batch, int64_t negatives, float lr, float margin,
         float eps, float var_lr = -1.f)
      : shared_(shared), d_(d), dv_(dv), energy_(energy), sph_(sph), batch_(batch),
        k_(negatives), lr_(lr), margin_(margin), eps_(eps), var_lr_(var_lr) {
    tables_[0] = tables[0];
    tables_[1] = tables[shared ? 0 : 1];
    for (int t = 0; t < (shared ? 1 : 2); ++t) slot_[t].assign(tables_[t].rows, -1);
    // A minibatch touches at most batch * (2 + negatives) rows, and at most
    // every row of the tables once.
    const int64_t max_slots = std::min<int64_t>(
        batch * (2 + negatives), tables_[0].rows + (shared ? 0 : tables_[1].rows));
    // A slot's mean and variance gradients side by side (one block of
    // d + dv floats): fewer cache lines than two separate arrays.
    grad_.resize(max_slots * (d + dv));
    rows_.reserve(max_slots);
    row_table_.reserve(max_slots);
    tmp_.resize((1 + negatives) * 2 * d);
    energies_.resize(1 + negatives);
    coef_.resize(1 + negatives);
    cand_slot_.resize(1 + negatives);
    owner_.resize(1 + negatives);
    single_.resize((2 + negatives) * (d + dv));
  }

  void Add(int32_t w, int32_t c, const int32_t* negs) {
    const Table& wt = tables_[0];
    const Table& ct = tables_[1];
    const int64_t d = d_, dv = dv_;
    const float* mw = wt.Mean(w);
    const float* vw = wt.Var(w);
    auto cid = [&](int64_t j) -> int64_t { return j == 0 ? c : negs[j - 1]; };
    for (int64_t j = 0; j <= k_; ++j) {
      energies_[j] = PairEnergy(energy_, sph_, d, mw, vw, ct.Mean(cid(j)),
                                ct.Var(cid(j)), tmp_.data() + j * 2 * d);
    }
    float pos_coef = 0.f;
    bool active = false;
    for (int64_t j = 1; j <= k_; ++j) {
      const float h = margin_ - energies_[0] + energies_[j];
      if (h > 0.f) {
        loss_ += h;
        coef_[j] = 1.f;
        pos_coef -= 1.f;
        active = true;
      } else {
        coef_[j] = 0.f;
      }
    }
    coef_[0] = pos_coef;
    // Only rows with a gradient are updated (and projected): a pair whose
    // hinge is inactive costs nothing more.
    if (active && batch_ == 1) {
      UpdateSingle(w, mw, vw, cid);
    } else if (active) {
      const int32_t sw = Slot(0, w);
      for (int64_t j = 0; j <= k_; ++j) {
        cand_slot_[j] = coef_[j] != 0.f ? Slot(1, static_cast<int32_t>(cid(j))) : -1;
      }
      float* gmw = Grad(sw);
      float* gvw = gmw + d;
      for (int64_t j = 0; j <= k_; ++j) {
        if (coef_[j] == 0.f) continue;
        AddPairGradients(energy_, sph_, d, coef_[j], mw, vw, ct.Mean(cid(j)),
                         ct.Var(cid(j)), tmp_.data() + j * 2 * d, gmw, gvw,
                         Grad(cand_slot_[j]), Grad(cand_slot_[j]) + d);
      }
    }
    ++pairs_;
    if (++count_ == batch_) Flush();
  }

  // batch_size 1: the triple's rows are updated at once, without slots.
  // Repeated rows (a candidate drawn twice; with a shared table, the word
  // as its own candidate) have their gradients summed first.
  template <typename Cid>
  void UpdateSingle(int32_t w, const float* mw, const float* vw, const Cid& cid) {
    const Table& ct = tables_[1];
    const int64_t d = d_, dv = dv_, stride = d + dv;
    float* word_grad = single_.data();
    std::fill(word_grad, word_grad + stride, 0.f);
    for (int64_t j = 0; j <= k_; ++j) {
      owner_[j] = -2;  // no gradient
      if (coef_[j] == 0.f) continue;
      owner_[j] = j;
      if (shared_ && cid(j) == w) owner_[j] = -1;  // the word's own row
      for (int64_t i = 0; i < j && owner_[j] == j; ++i) {
        if (owner_[i] != -2 && cid(i) == cid(j)) owner_[j] = owner_[i];
      }
      if (owner_[j] == j) {
        float* g = single_.data() + (1 + j) * stride;
        std::fill(g, g + stride, 0.f);
      }
    }
    for (int64_t j = 0; j <= k_; ++j) {
      if (owner_[j] == -2) continue;
      float* g = single_.data() + (1 + owner_[j]) * stride;
      AddPairGradients(energy_, sph_, d, coef_[j], mw, vw, ct.Mean(cid(j)),
                       ct.Var(cid(j)), tmp_.data() + j * 2 * d, word_grad,
                       word_grad + d, g, g + d);
    }
    auto update = [&](const Table& tb, int64_t row, const float* g) {
      if (keras_gauss::AnyNonzero(g, stride)) UpdateRow(tb, row, d, dv, g, g + d, 1.0f, lr_, eps_, var_lr_);
    };
    update(tables_[0], w, word_grad);
    for (int64_t j = 0; j <= k_; ++j) {
      if (owner_[j] == j) update(ct, cid(j), single_.data() + (1 + j) * stride);
    }
  }

  // Prefetches the rows of a coming triple (its word's when it differs from
  // the word of the triple before it). With minibatches the accumulators
  // are only read when the batch is applied (Flush prefetches them then).
  void Prefetch(int32_t w, int32_t previous_w, int32_t c, const int32_t* negs) const {
    const bool acc = batch_ == 1;
    if (w != previous_w) keras_gauss::PrefetchRows(tables_[0], w, d_, dv_, acc);
    keras_gauss::PrefetchRows(tables_[1], c, d_, dv_, acc);
    for (int64_t j = 0; j < k_; ++j)
      keras_gauss::PrefetchRows(tables_[1], negs[j], d_, dv_, acc);
  }

  // Applies the pending minibatch (the gradient of the batch-mean loss).
  void Flush() {
    if (count_ == 0) return;
    const float scale = 1.0f / static_cast<float>(count_);
    const int64_t n = static_cast<int64_t>(rows_.size());
    for (int64_t s = 0; s < n; ++s) {
      if (s + kFlushAhead < n) {
        keras_gauss::PrefetchRows(tables_[row_table_[s + kFlushAhead]],
                                  rows_[s + kFlushAhead], d_, dv_);
        keras_gauss::PrefetchRow(Grad(s + kFlushAhead), d_ + dv_);
      }
      const int t = row_table_[s];
      const float* gm = Grad(s);
      const float* gv = gm + d_;
      // A summed gradient can be exactly zero (the positive context drawn
      // as its own negative): such a row is left alone, not projected
      // again (rows start inside the bounds and every update is projected).
      if (keras_gauss::AnyNonzero(gm, d_) || keras_gauss::AnyNonzero(gv, dv_))
        UpdateRow(tables_[t], rows_[s], d_, dv_, gm, gv, scale, lr_, eps_, var_lr_);
      slot_[shared_ ? 0 : t][rows_[s]] = -1;
    }
    rows_.clear();
    row_table_.clear();
    count_ = 0;
  }

  double loss() const { return loss_; }
  int64_t pairs() const { return pairs_; }

 private:
  int32_t Slot(int t, int32_t row) {
    std::vector<int32_t>& slots = slot_[shared_ ? 0 : t];
    int32_t s = slots[row];
    if (s < 0) {
      s = static_cast<int32_t>(rows_.size());
      slots[row] = s;
      rows_.push_back(row);
      row_table_.push_back(static_cast<int8_t>(t));
      std::fill(Grad(s), Grad(s) + d_ + dv_, 0.f);
    }
    return s;
  }

  Table tables_[2];
  bool shared_;
  int64_t d_, dv_;
  Energy energy_;
  bool sph_;
  int64_t batch_, k_;
  float lr_, margin_, eps_, var_lr_;
  std::vector<int32_t> slot_[2];
  std::vector<int32_t> rows_;
  std::vector<int8_t> row_table_;
  float* Grad(int64_t slot) { return grad_.data() + slot * (d_ + dv_); }

  std::vector<float> grad_, tmp_, energies_, coef_;
  std::vector<int32_t> cand_slot_;
  std::vector<int64_t> owner_;
  std::vector<float> single_;
  int64_t count_ = 0, pairs_ = 0;
  double loss_ = 0.0;
};

// Trains on sentences [0, sentences) of `sg`: blocks of consecutive
// sentences with about equal numbers of tokens (one with one thread; with
// more, kBlocksPerThread per thread, taken by the threads in turn as they
// finish the previous one, so a thread that drew slower blocks does not keep
// the others waiting at the end). `parallel(n, fn)` must call fn(0) ..
// fn(n - 1), concurrently, and return when all have returned. Adds the
// summed hinge loss and the pairs trained to `*loss` and `*pairs`. `var_lr`:
// the variances' learning rate (< 0: `lr`).
template <typename Parallel>
void TrainChunk(const Table* tables, bool shared, int64_t d, int64_t dv, Energy energy,
                bool spherical, int64_t batch_size, float lr, float margin, float eps,
                const Skipgram& sg, int64_t sentences, int64_t n_threads,
                const Parallel& parallel, double* loss, int64_t* pairs,
                float var_lr = -1.f) {
  n_threads = std::max<int64_t>(1, std::min<int64_t>(n_threads, sentences));
  const int64_t n_blocks = n_threads == 1 ? 1 : n_threads * kBlocksPerThread;
  std::vector<int64_t> bounds(n_blocks + 1, sentences);
  bounds[0] = 0;
  {
    const int64_t total = sg.splits[sentences];
    int64_t b = 1;
    for (int64_t s = 0; s < sentences && b < n_blocks; ++s) {
      while (b < n_blocks && sg.splits[s] * n_blocks >= total * b) bounds[b++] = s;
    }
  }
  std::vector<double> losses(n_threads, 0.0);
  std::vector<int64_t> counts(n_threads, 0);
  std::atomic<int64_t> next_block{0};
  auto run = [&](int64_t t) {
    Worker worker(tables, shared, d, dv, energy, spherical, batch_size, sg.negatives, lr,
                  margin, eps, var_lr);
    Triples triples;
    std::vector<int64_t> order;
    for (int64_t b = next_block++; b < n_blocks; b = next_block++) {
      BlockTriples(sg, bounds[b], bounds[b + 1], b, &triples, &order);
      const int64_t n = triples.size();
      const int32_t* negs = triples.negatives.data();
      for (int64_t j = 0; j < n; ++j) {
        if (j + kAhead < n) {
          const int64_t a = order[j + kAhead];
          const int64_t before = order[j + kAhead - 1];
          worker.Prefetch(triples.word[a], triples.word[before], triples.context[a],
                          negs + a * sg.negatives);
        }
        const int64_t o = order[j];
        worker.Add(triples.word[o], triples.context[o], negs + o * sg.negatives);
      }
    }
    worker.Flush();
    losses[t] = worker.loss();
    counts[t] = worker.pairs();
  };
  if (n_threads == 1) {
    run(0);
  } else {
    parallel(n_threads, run);
  }
  for (int64_t t = 0; t < n_threads; ++t) {
    *loss += losses[t];
    *pairs += counts[t];
  }
}

}  // namespace keras_gauss
}  // namespace tensorflow

#endif  // KERAS_GAUSS_FUSED_SKIPGRAM_CORE_H_

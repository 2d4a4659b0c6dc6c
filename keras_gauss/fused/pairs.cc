// The native trainer of ranked pairs on one shared table (the hierarchy
// model of keras_gauss.hierarchy.model.build_kl_model, compiled with its loss
// and SparseAdagrad), as a plain C ABI library (no TensorFlow), loaded with
// ctypes by keras_gauss.fused.pairs. Built into the native library by
// keras_gauss.fused.build.
//
// A step takes B positive (specific, general) pairs, each with K negative
// pairs, and does what `model.train_on_batch` does: the energies of the 1 + K
// pairs of every row on the current table, the loss averaged over the B rows
// (MaxMarginRanking or ThresholdedDivergence), the gradients summed per table
// row over repeated ids, one SparseAdagrad update of every row with a gradient
// (acc += g^2; w -= lr g / sqrt(acc + eps)) and the table's constraints (the
// means' max norm, the variances' bounds) on those rows. A row of the batch
// whose gradient is zero (a negative past its margin) is left as it is,
// which is what the update would leave up to rounding.
//
// Energies (a = general, b = specific): KL, -KL(N_b || N_a)
// (layers::KlPair, layer_kernels.h), and containment,
//   E = -sum_i max(0, |mu_b - mu_a| + sigma_b - sigma_a)^2,  sigma = sqrt(v),
//   dE/dmu_b = -2 r sign(mu_b - mu_a) = -dE/dmu_a,
//   dE/dv_b = -r / sigma_b,  dE/dv_a = r / sigma_a,
// with r = max(0, ...) per dimension (keras_gauss.layers.ContainmentEnergy).
// Spherical tables (one variance a row) sum the variance gradient over i.
//
// Negatives (the rule of keras_gauss.hierarchy.negatives.sample_negatives
// with exclude="related", corrupt="either"): a fair coin picks the side to
// replace; the new node is uniform over the nodes that are neither the kept
// node, nor an ancestor, nor a descendant of it (rejection sampling, then an
// exact draw in O(log^2 nodes) after kRounds rejections); when the chosen
// side cannot be replaced (the kept node is related to every node), the
// other side is. With
// `reversed`, the reversed positive is the last negative. The draws come from
// a generator seeded by (seed, epoch, step): an epoch's batches are a function
// of the seed, the epoch and the step only. Sibling negatives (the rule of
// keras_gauss.hierarchy.negatives.sibling_negatives, with the fraction
// `siblings`): a negative is hard with that probability when its positive's
// general node p has a sibling unrelated to the specific node c (a random
// direct parent of p, then a random child of it, not p; up to kSiblingRounds
// tries); (c, sibling) replaces the random negative.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

#include "gauss_math.h"
#include "layer_kernels.h"

namespace {

namespace kg = tensorflow::keras_gauss;
namespace kl = tensorflow::keras_gauss::layers;

// Indices into the settings arrays of every entry.
enum FloatSetting {
  kLearningRate, kEpsilon, kMargin, kThreshold, kMaxNorm, kMinVariance, kMaxVariance,
  kFloatSettings
};
enum IntSetting {
  kRows, kDim, kSpherical, kEnergy, kLoss, kSchedule, kTotalSteps, kIntSettings
};
enum LossKind { kRankingLoss = 0, kThresholdLoss = 1 };
enum ScheduleKind { kConstant = 0, kLinear = 1, kCosine = 2 };

constexpr int kRounds = 32;  // rejections before the exact draw
constexpr int kSiblingRounds = 8;  // tries of a sibling negative (as sibling_negatives)

// splitmix64: the generator of the draws, and the mixer of their seeds.
inline uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return Mix(state_);
  }
  // Uniform in [0, n) (Lemire's multiply; bias below n / 2^64).
  int64_t Below(int64_t n) {
    return static_cast<int64_t>((static_cast<unsigned __int128>(Next()) *
                                 static_cast<uint64_t>(n)) >> 64);
  }
  bool Coin() { return (Next() >> 63) != 0; }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

// The stream of (seed, epoch, step); step -1: the epoch's order.
uint64_t StreamSeed(uint64_t seed, int64_t epoch, int64_t step) {
  uint64_t h = Mix(seed ^ 0x6B657261735F6761ull);  // "keras_ga"
  h = Mix(h ^ static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull);
  return Mix(h ^ static_cast<uint64_t>(step + 1) * 0xD1B54A32D192ED03ull);
}

// Ancestors and descendants of every node (sorted CSR lists).
struct Related {
  int64_t nodes;
  const int64_t* anc_ptr;
  const int32_t* anc;
  const int64_t* desc_ptr;
  const int32_t* desc;
  const int64_t* free;  // nodes - 1 - ancestors - descendants, per node
  // The direct links (transitive reduction) as sorted CSR lists of each
  // node's parents and children, and the fraction of sibling negatives
  // (null lists with 0).
  const int64_t* parent_ptr;
  const int32_t* parents;
  const int64_t* child_ptr;
  const int32_t* children;
  double siblings;

  static bool In(const int32_t* begin, const int32_t* end, int32_t x) {
    const int32_t* p = std::lower_bound(begin, end, x);
    return p != end && *p == x;
  }
  // a == b, a an ancestor of b or a descendant of b (ancestor lists are
  // short: b's ancestors hold a, or a's hold b).
  bool Check(int32_t a, int32_t b) const {
    return a == b || In(anc + anc_ptr[b], anc + anc_ptr[b + 1], a) ||
           In(anc + anc_ptr[a], anc + anc_ptr[a + 1], b);
  }
  // The r-th node (from 0) unrelated to `kept`, r < free[kept]: the
  // smallest x with r + 1 unrelated nodes in [0, x], found by bisection on x
  // (the related nodes at or below x counted in the sorted lists), so a draw
  // costs O(log^2 nodes) however many nodes are related to `kept` (sorting
  // them on every draw took minutes an epoch on WordNet's reduction split,
  // where the root is related to all but one node).
  // A sibling of p unrelated to c, or -1 (none found in kSiblingRounds tries).
  int32_t Sibling(int32_t c, int32_t p, Random& rng) const {
    const int64_t num_parents = parent_ptr[p + 1] - parent_ptr[p];
    if (num_parents == 0) return -1;
    for (int round = 0; round < kSiblingRounds; ++round) {
      const int32_t q = parents[parent_ptr[p] + rng.Below(num_parents)];
      const int64_t num_children = child_ptr[q + 1] - child_ptr[q];
      const int32_t sibling = children[child_ptr[q] + rng.Below(num_children)];
      if (sibling != p && !Check(c, sibling)) return sibling;
    }
    return -1;
  }
  int32_t Unrelated(int32_t kept, int64_t r) const {
    const int32_t *anc_begin = anc + anc_ptr[kept], *anc_end = anc + anc_ptr[kept + 1];
    const int32_t *desc_begin = desc + desc_ptr[kept], *desc_end = desc + desc_ptr[kept + 1];
    auto unrelated_upto = [&](int64_t x) {  // unrelated nodes in [0, x]
      const int32_t key = static_cast<int32_t>(x);
      const int64_t related = (std::upper_bound(anc_begin, anc_end, key) - anc_begin) +
                              (std::upper_bound(desc_begin, desc_end, key) - desc_begin) +
                              (kept <= x ? 1 : 0);
      return x + 1 - related;
    };
    int64_t lo = 0, hi = nodes - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (unrelated_upto(mid) > r) hi = mid;
      else lo = mid + 1;
    }
    return static_cast<int32_t>(lo);
  }
};

// Uniform candidate nodes drawn a few ahead of their use, their ancestor
// lists prefetched (the candidate's lists are the random reads of a draw).
class Candidates {
 public:
  Candidates(const Related& rel, uint64_t seed) : rel_(rel), rng_(seed) {
    for (int64_t i = 0; i < kAhead; ++i) Push(i);
  }
  int32_t Next() {
    const int32_t c = ring_[at_ % kAhead];
    Push(at_);
    const int32_t soon = ring_[(at_ + kAhead / 2) % kAhead];
    __builtin_prefetch(rel_.anc + rel_.anc_ptr[soon], 0, 3);
    ++at_;
    return c;
  }

 private:
  static constexpr int64_t kAhead = 8;
  void Push(int64_t slot) {
    const int32_t c = static_cast<int32_t>(rng_.Below(rel_.nodes));
    ring_[slot % kAhead] = c;
    __builtin_prefetch(rel_.anc_ptr + c, 0, 3);
  }
  const Related& rel_;
  Random rng_;
  int32_t ring_[kAhead];
  int64_t at_ = 0;
};

// Draws the negatives of positives (specific[i], general[i]), i < n: k random
// ones and, with `reversed`, the reversed pair, into (n, k + reversed) arrays.
// The coins come from `rng`, the candidate nodes from a stream seeded by it.
// Returns -1, or the first row whose edge has no valid negative.
int64_t DrawNegatives(const Related& rel, const int32_t* specific, const int32_t* general,
                      int64_t n, int64_t k, bool reversed, Random& rng, int32_t* neg_s,
                      int32_t* neg_g) {
  const int64_t width = k + (reversed ? 1 : 0);
  Candidates candidates(rel, rng.Next());
  for (int64_t i = 0; i < n; ++i) {
    const int32_t s = specific[i], g = general[i];
    const bool specific_ok = rel.free[g] > 0, general_ok = rel.free[s] > 0;
    if (!specific_ok && !general_ok) return i;
    for (int64_t j = 0; j < k; ++j) {
      if (rel.siblings > 0 && rng.Uniform() < rel.siblings) {
        const int32_t sibling = rel.Sibling(s, g, rng);
        if (sibling >= 0) {
          neg_s[i * width + j] = s;
          neg_g[i * width + j] = sibling;
          continue;
        }
      }
      const bool replace_specific = rng.Coin() ? specific_ok : !general_ok;
      const int32_t kept = replace_specific ? g : s;
      int32_t node = -1;
      for (int round = 0; round <= kRounds && node < 0; ++round) {
        const int32_t candidate = candidates.Next();
        if (!rel.Check(candidate, kept)) node = candidate;
      }
      if (node < 0) node = rel.Unrelated(kept, rng.Below(rel.free[kept]));
      neg_s[i * width + j] = replace_specific ? node : s;
      neg_g[i * width + j] = replace_specific ? g : node;
    }
    if (reversed) {
      neg_s[i * width + k] = g;
      neg_g[i * width + k] = s;
    }
  }
  return -1;
}

// The epoch's order of `n` training edges: a Fisher-Yates shuffle.
void Permutation(int64_t n, uint64_t seed, int64_t epoch, int64_t* order) {
  Random rng(StreamSeed(seed, epoch, -1));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
}

// Containment energy of one pair (S: spherical, one variance a row). The
// violation max(0, r) is (r + |r|) / 2 (exact, and without a branch, so that
// the loops vectorise).
template <bool S>
float ContainmentPair(int64_t d, const float* ma, const float* va, const float* mb,
                      const float* vb) {
  const float sa0 = S ? std::sqrt(va[0]) : 0.f, sb0 = S ? std::sqrt(vb[0]) : 0.f;
  alignas(64) float acc[kg::kLanes] = {};
  kg::ForLanes(d, [&](int64_t i, int64_t j) {
    const float sigma_a = S ? sa0 : std::sqrt(va[i]), sigma_b = S ? sb0 : std::sqrt(vb[i]);
    const float r = std::fabs(mb[i] - ma[i]) + sigma_b - sigma_a;
    const float twice = r + std::fabs(r);  // 2 max(0, r)
    acc[j] += twice * twice;
  });
  return -0.25f * kg::LaneSum(acc);
}

// Adds g * dE/d(inputs) of one containment pair to the four gradient rows.
template <bool S>
void ContainmentPairGrad(int64_t d, float g, const float* ma, const float* va, const float* mb,
                         const float* vb, float* gma, float* gva, float* gmb, float* gvb) {
  const float sa0 = S ? std::sqrt(va[0]) : 0.f, sb0 = S ? std::sqrt(vb[0]) : 0.f;
  alignas(64) float sum_a[kg::kLanes] = {}, sum_b[kg::kLanes] = {};
  kg::ForLanes(d, [&](int64_t i, int64_t j) {
    const float sigma_a = S ? sa0 : std::sqrt(va[i]), sigma_b = S ? sb0 : std::sqrt(vb[i]);
    const float diff = mb[i] - ma[i];
    const float r = std::fabs(diff) + sigma_b - sigma_a;
    const float v = -g * (r + std::fabs(r));  // g * dE/dr = -2 g max(0, r)
    const float sign = (diff > 0.f ? 1.f : 0.f) - (diff < 0.f ? 1.f : 0.f);
    gmb[i] += v * sign;
    gma[i] -= v * sign;
    const float ga = -0.5f * v / sigma_a, gb = 0.5f * v / sigma_b;
    if (S) {
      sum_a[j] += ga;
      sum_b[j] += gb;
    } else {
      gva[i] += ga;
      gvb[i] += gb;
    }
  });
  if (S) {
    gva[0] += kg::LaneSum(sum_a);
    gvb[0] += kg::LaneSum(sum_b);
  }
}

struct Settings {
  int64_t rows, d, dv;
  bool spherical;
  kg::Energy energy;
  int loss, schedule;
  int64_t total_steps;
  float lr, eps, margin, threshold;
  kl::RowBounds mean_bounds, var_bounds;

  Settings(const double* f, const int64_t* n) {
    rows = n[kRows];
    d = n[kDim];
    spherical = n[kSpherical] != 0;
    dv = spherical ? 1 : d;
    energy = kg::EnergyOfCode(static_cast<int32_t>(n[kEnergy]));
    loss = static_cast<int>(n[kLoss]);
    schedule = static_cast<int>(n[kSchedule]);
    total_steps = std::max<int64_t>(n[kTotalSteps], 1);
    lr = static_cast<float>(f[kLearningRate]);
    eps = static_cast<float>(f[kEpsilon]);
    margin = static_cast<float>(f[kMargin]);
    threshold = static_cast<float>(f[kThreshold]);
    mean_bounds.max_norm = f[kMaxNorm] > 0 ? static_cast<float>(f[kMaxNorm]) : 0.f;
    var_bounds.lo = static_cast<float>(f[kMinVariance]);
    var_bounds.hi = static_cast<float>(f[kMaxVariance]);
  }

  // The learning rate of optimizer step `t` (keras_gauss.hierarchy.train
  // .learning_rate_schedule: Keras's PolynomialDecay / CosineDecay to 0).
  float Rate(int64_t t) const {
    if (schedule == kConstant) return lr;
    const float p = static_cast<float>(std::min(t, total_steps)) /
                    static_cast<float>(total_steps);
    if (schedule == kLinear) return lr * (1.0f - p);
    return lr * (0.5f * (1.0f + std::cos(static_cast<float>(M_PI) * p)));
  }
};

// The table: four (rows, c) float32 buffers.
struct Tables {
  float* means;
  float* variances;
  float* mean_acc;
  float* var_acc;
};

// Scratch of a step, kept between steps (one slot per table row).
class Step {
 public:
  // One SparseAdagrad step on a batch; returns the batch's summed loss (the
  // mean is this over n).
  template <bool S>
  double Run(const Settings& st, const Tables& tb, const int32_t* specific,
             const int32_t* general, const int32_t* neg_s, const int32_t* neg_g, int64_t n,
             int64_t k, int64_t iteration) {
    const int64_t d = st.d, dv = st.dv, list = 1 + k;
    if (static_cast<int64_t>(slot_.size()) != st.rows) slot_.assign(st.rows, -1);
    rows_.clear();
    energies_.resize(list);
    coef_.resize(list);
    auto slot = [&](int32_t row) {
      int32_t s = slot_[row];
      if (s < 0) {
        s = static_cast<int32_t>(rows_.size());
        slot_[row] = s;
        rows_.push_back(row);
      }
      return s;
    };
    // The slots of every row first, so that gm_ / gv_ are sized once (below).
    for (int64_t b = 0; b < n; ++b) {
      slot(general[b]);
      slot(specific[b]);
      for (int64_t j = 0; j < k; ++j) {
        slot(neg_g[b * k + j]);
        slot(neg_s[b * k + j]);
      }
    }
    // The gradient rows of the slots that get a term (most negatives lie
    // past their margin and get none), cleared on their first term.
    const size_t slots = rows_.size();
    gm_.resize(slots * d);
    gv_.resize(slots * dv);
    touched_.assign(slots, 0);
    touched_slots_.clear();
    auto touch = [&](int64_t s) {
      if (touched_[s]) return;
      touched_[s] = 1;
      touched_slots_.push_back(static_cast<int32_t>(s));
      std::fill_n(gm_.data() + s * d, d, 0.f);
      std::fill_n(gv_.data() + s * dv, dv, 0.f);
    };
    const float scale = 1.0f / static_cast<float>(n);  // "sum_over_batch_size"
    double total = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      if (b + 1 < n) {  // the next row's pairs, fetched while this row trains
        for (int64_t j = 0; j < list; ++j) {
          const int64_t a = j == 0 ? general[b + 1] : neg_g[(b + 1) * k + j - 1];
          const int64_t s = j == 0 ? specific[b + 1] : neg_s[(b + 1) * k + j - 1];
          kg::PrefetchRow(tb.means + a * d, d);
          kg::PrefetchRow(tb.variances + a * dv, dv);
          kg::PrefetchRow(tb.means + s * d, d);
          kg::PrefetchRow(tb.variances + s * dv, dv);
        }
      }
      // Pair j of the row: its (general, specific) rows and their tables' rows.
      int32_t a, s;
      const float *ma, *va, *mb, *vb;
      auto pair = [&](int64_t j) {
        a = j == 0 ? general[b] : neg_g[b * k + j - 1];
        s = j == 0 ? specific[b] : neg_s[b * k + j - 1];
        ma = tb.means + a * d;
        va = tb.variances + a * dv;
        mb = tb.means + s * d;
        vb = tb.variances + s * dv;
      };
      for (int64_t j = 0; j < list; ++j) {
        pair(j);
        energies_[j] = st.energy == kg::Energy::kKL ? kl::KlPair<S, S>(d, ma, va, mb, vb)
                                        : ContainmentPair<S>(d, ma, va, mb, vb);
      }
      // dL/dE of each pair of the row, and the row's loss.
      double row_loss = 0.0;
      std::fill(coef_.begin(), coef_.end(), 0.f);
      if (st.loss == kRankingLoss) {
        for (int64_t j = 1; j < list; ++j) {
          const float hinge = st.margin - (energies_[0] - energies_[j]);
          if (hinge > 0.f) {
            row_loss += hinge;
            coef_[0] -= scale;
            coef_[j] += scale;
          }
        }
      } else {
        const float positive = -energies_[0] - st.threshold;
        if (positive > 0.f) {
          row_loss += positive;
          coef_[0] = -scale;
        }
        for (int64_t j = 1; j < list; ++j) {
          const float negative = st.threshold + st.margin + energies_[j];
          if (negative > 0.f) {
            row_loss += negative;
            coef_[j] = scale;
          }
        }
      }
      total += row_loss;
      for (int64_t j = 0; j < list; ++j) {
        if (coef_[j] == 0.f) continue;
        pair(j);
        const int64_t sa = slot_[a], sb = slot_[s];
        touch(sa);
        touch(sb);
        float* gma = gm_.data() + sa * d;
        float* gva = gv_.data() + sa * dv;
        float* gmb = gm_.data() + sb * d;
        float* gvb = gv_.data() + sb * dv;
        if (st.energy == kg::Energy::kKL) {
          kl::KlPairGrad<S, S>(d, coef_[j], ma, va, mb, vb, gma, gva, gmb, gvb);
        } else {
          ContainmentPairGrad<S>(d, coef_[j], ma, va, mb, vb, gma, gva, gmb, gvb);
        }
      }
    }
    // SparseAdagrad on the rows with a gradient. A row without one (or whose
    // terms add to zero) is left as it is: AdaGrad adds nothing to it and it
    // already meets its constraints.
    const float rate = st.Rate(iteration);
    constexpr size_t kAhead = 4;  // rows prefetched ahead of their update
    for (size_t t = 0; t < touched_slots_.size(); ++t) {
      if (t + kAhead < touched_slots_.size()) {
        const int64_t next = rows_[touched_slots_[t + kAhead]];
        kg::PrefetchRow(tb.means + next * d, d);
        kg::PrefetchRow(tb.mean_acc + next * d, d);
        kg::PrefetchRow(tb.variances + next * dv, dv);
        kg::PrefetchRow(tb.var_acc + next * dv, dv);
      }
      const int64_t s = touched_slots_[t], row = rows_[s];
      const float* gm = gm_.data() + s * d;
      const float* gv = gv_.data() + s * dv;
      if (kg::AnyNonzero(gm, d)) {
        kl::AdagradRow(tb.means + row * d, tb.mean_acc + row * d, gm, d, rate, st.eps,
                       st.mean_bounds);
      }
      if (kg::AnyNonzero(gv, dv)) {
        kl::AdagradRow(tb.variances + row * dv, tb.var_acc + row * dv, gv, dv, rate, st.eps,
                       st.var_bounds);
      }
    }
    for (const int32_t row : rows_) slot_[row] = -1;
    return total;
  }

  double Run(const Settings& st, const Tables& tb, const int32_t* specific,
             const int32_t* general, const int32_t* neg_s, const int32_t* neg_g, int64_t n,
             int64_t k, int64_t iteration) {
    // Spherical variances broadcast over d (d == 1: the same as diagonal).
    if (st.spherical && st.d > 1)
      return Run<true>(st, tb, specific, general, neg_s, neg_g, n, k, iteration);
    return Run<false>(st, tb, specific, general, neg_s, neg_g, n, k, iteration);
  }

 private:
  std::vector<int32_t> slot_;
  std::vector<int32_t> rows_;
  std::vector<float> energies_, coef_, gm_, gv_;
  std::vector<uint8_t> touched_;  // whether a slot's gradient rows hold a term
  std::vector<int32_t> touched_slots_;  // those slots, in order of first term
};

bool BadIds(const char* name, const int32_t* ids, int64_t n, int64_t rows, char* error,
            int64_t error_size) {
  const int64_t bad = kl::FirstBadId(ids, n, rows);
  if (bad < 0) return false;
  std::snprintf(error, error_size, "`%s` holds id %d (at flat position %lld), outside [0, %lld)",
                name, ids[bad], static_cast<long long>(bad), static_cast<long long>(rows));
  return true;
}

Related MakeRelated(int64_t nodes, const int64_t* anc_ptr, const int32_t* anc,
                    const int64_t* desc_ptr, const int32_t* desc, const int64_t* free,
                    const int64_t* parent_ptr, const int32_t* parents,
                    const int64_t* child_ptr, const int32_t* children, double siblings) {
  const bool direct = parent_ptr && parents && child_ptr && children;
  return Related{nodes, anc_ptr, anc, desc_ptr, desc, free, parent_ptr, parents, child_ptr,
                 children, direct ? siblings : 0.0};
}

void NoNegative(const int32_t* specific, const int32_t* general, int64_t row, char* error,
                int64_t error_size) {
  std::snprintf(error, error_size,
                "edge [%d, %d] has no valid negative: both of its nodes are related to "
                "every node",
                specific[row], general[row]);
}

}  // namespace

extern "C" {

// The layout version of these entries: Python checks it.
int kg_pairs_version() { return 3; }

// The epoch's order of `n` training edges (int64 indices into them).
void kg_pairs_order(int64_t n, uint64_t seed, int64_t epoch, int64_t* order) {
  Permutation(n, seed, epoch, order);
}

// The negatives of batch `step` of epoch `epoch`: the positives
// (specific[i], general[i]), i < n, and their (n, k + reversed) negatives.
// Returns 0, or 1 with a message in `error`.
int kg_pairs_negatives(int64_t nodes, const int64_t* anc_ptr, const int32_t* anc,
                       const int64_t* desc_ptr, const int32_t* desc, const int64_t* free,
                       const int64_t* parent_ptr, const int32_t* parents,
                       const int64_t* child_ptr, const int32_t* children, double siblings,
                       const int32_t* specific, const int32_t* general, int64_t n, int64_t k,
                       int reversed, uint64_t seed, int64_t epoch, int64_t step,
                       int32_t* neg_s, int32_t* neg_g, char* error, int64_t error_size) {
  const Related rel = MakeRelated(nodes, anc_ptr, anc, desc_ptr, desc, free, parent_ptr, parents,
                                  child_ptr, children, siblings);
  Random rng(StreamSeed(seed, epoch, step));
  const int64_t bad = DrawNegatives(rel, specific, general, n, k, reversed != 0, rng, neg_s,
                                    neg_g);
  if (bad >= 0) {
    NoNegative(specific, general, bad, error, error_size);
    return 1;
  }
  return 0;
}

// Edge lookups of EdgeIndex (keras_gauss.hierarchy.closure): out[i] = 1 if
// b[i] is in a[i]'s sorted list (anc[anc_ptr[a]:anc_ptr[a + 1]]), with
// `either` also if a[i] == b[i] or a[i] is in b[i]'s list; ids outside
// [0, nodes) have no list.
void kg_pairs_contains(int64_t nodes, const int64_t* anc_ptr, const int32_t* anc,
                       const int64_t* a, const int64_t* b, int64_t m, int either,
                       uint8_t* out) {
  auto in = [&](int64_t child, int64_t parent) {
    if (child < 0 || child >= nodes || parent < 0 || parent >= nodes) return false;
    return Related::In(anc + anc_ptr[child], anc + anc_ptr[child + 1],
                       static_cast<int32_t>(parent));
  };
  for (int64_t i = 0; i < m; ++i) {
    out[i] = either ? (a[i] == b[i] || in(a[i], b[i]) || in(b[i], a[i])) : in(a[i], b[i]);
  }
}

// One step on a given batch: n positives, (n, k) negatives (flat). The
// optimizer's step `iteration` sets the learning rate of a schedule.
// `loss`: the batch's mean loss. Returns 0, or 1 with a message in `error`
// (then nothing was trained).
int kg_pairs_train_batch(float* means, float* variances, float* mean_acc, float* var_acc,
                         const double* float_settings, const int64_t* int_settings,
                         const int32_t* specific, const int32_t* general, const int32_t* neg_s,
                         const int32_t* neg_g, int64_t n, int64_t k, int64_t iteration,
                         double* loss, char* error, int64_t error_size) {
  const Settings st(float_settings, int_settings);
  if (BadIds("specific", specific, n, st.rows, error, error_size) ||
      BadIds("general", general, n, st.rows, error, error_size) ||
      BadIds("neg_specific", neg_s, n * k, st.rows, error, error_size) ||
      BadIds("neg_general", neg_g, n * k, st.rows, error, error_size))
    return 1;
  static thread_local Step step;
  const Tables tb{means, variances, mean_acc, var_acc};
  *loss = n ? step.Run(st, tb, specific, general, neg_s, neg_g, n, k, iteration) / n : 0.0;
  return 0;
}

// Steps [first, last) of epoch `epoch` over `edges` (n_edges (specific,
// general) pairs, int32, checked by the caller) in the order `order`
// (kg_pairs_order): batch `step` is edges order[step * batch .. ], its
// negatives drawn as kg_pairs_negatives draws them, trained with optimizer
// step `iteration + step - first`. `loss`: the summed loss of the rows
// trained. Returns 0, or 1 with a message in `error` (steps before the bad
// batch are trained).
int kg_pairs_train_steps(float* means, float* variances, float* mean_acc, float* var_acc,
                         const double* float_settings, const int64_t* int_settings,
                         int64_t nodes, const int64_t* anc_ptr, const int32_t* anc,
                         const int64_t* desc_ptr, const int32_t* desc, const int64_t* free,
                         const int64_t* parent_ptr, const int32_t* parents,
                         const int64_t* child_ptr, const int32_t* children, double siblings,
                         const int32_t* edges, int64_t n_edges, const int64_t* order,
                         int64_t batch_size, int64_t k, int reversed, uint64_t seed,
                         int64_t epoch, int64_t first, int64_t last, int64_t iteration,
                         double* loss, char* error, int64_t error_size) {
  const Settings st(float_settings, int_settings);
  const Related rel = MakeRelated(nodes, anc_ptr, anc, desc_ptr, desc, free, parent_ptr, parents,
                                  child_ptr, children, siblings);
  const Tables tb{means, variances, mean_acc, var_acc};
  const int64_t width = k + (reversed ? 1 : 0);
  // Two batches: a second thread draws step t + 1's negatives (its own
  // stream) while step t trains, so the results do not depend on it.
  struct Batch {
    std::vector<int32_t> specific, general, neg_s, neg_g;
    int64_t n = 0, bad = -1;
  } batches[2];
  for (Batch& b : batches) {
    b.specific.resize(batch_size);
    b.general.resize(batch_size);
    b.neg_s.resize(batch_size * width);
    b.neg_g.resize(batch_size * width);
  }
  auto draw = [&](int64_t t, Batch& b) {
    const int64_t begin = t * batch_size, end = std::min(begin + batch_size, n_edges);
    b.n = std::max<int64_t>(end - begin, 0);
    for (int64_t i = 0; i < b.n; ++i) {
      const int64_t e = order[begin + i];
      b.specific[i] = edges[2 * e];
      b.general[i] = edges[2 * e + 1];
    }
    Random rng(StreamSeed(seed, epoch, t));
    b.bad = DrawNegatives(rel, b.specific.data(), b.general.data(), b.n, k, reversed != 0, rng,
                          b.neg_s.data(), b.neg_g.data());
  };
  static thread_local Step step;
  *loss = 0.0;
  if (first < last) draw(first, batches[0]);
  for (int64_t t = first; t < last; ++t) {
    Batch& b = batches[(t - first) % 2];
    std::thread next;
    bool drawn = t + 1 >= last;
    if (!drawn) {
      try {
        next = std::thread(draw, t + 1, std::ref(batches[(t + 1 - first) % 2]));
        drawn = true;
      } catch (const std::system_error&) {  // no thread to be had: draw after the step
      }
    }
    int status = 0;
    if (b.bad >= 0) {
      NoNegative(b.specific.data(), b.general.data(), b.bad, error, error_size);
      status = 1;
    } else if (b.n > 0) {
      *loss += step.Run(st, tb, b.specific.data(), b.general.data(), b.neg_s.data(),
                        b.neg_g.data(), b.n, width, iteration + t - first);
    }
    if (next.joinable()) next.join();
    if (status || b.n == 0) return status;
    if (!drawn) draw(t + 1, batches[(t + 1 - first) % 2]);
  }
  return 0;
}

}  // extern "C"

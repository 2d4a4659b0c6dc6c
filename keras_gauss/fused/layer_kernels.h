// Kernels behind the layers' own ops: the EL and KL energies of ELEnergy /
// KLEnergy and their gradients (per pair's rows, or summed by table row:
// EnergySlotGrad pair by pair, EnergySlotMajorGrad slot by slot),
// SparseAdagrad's row update (sum of repeated ids, AdaGrad, row constraints,
// in one pass), and on JAX the row gather and scatter-add of
// GaussianEmbedding. Plain C++ on raw float32 buffers, shared
// by the TensorFlow ops (layer_ops.cc) and the XLA FFI handlers of the JAX
// backend (jax_ops.cc). Each batch-level kernel takes a
// `parallel_for(total, cost_per_unit, fn(begin, end))` from its binding.
//
// The formulas are those of keras_gauss/ops.py, term by term (the reference
// the tests hold these kernels to):
//   el: E = -1/2 sum_i [log(v_a + v_b) + (mu_a - mu_b)^2 / (v_a + v_b)]
//           (- d/2 log 2 pi with include_constant)
//   kl: E = -KL(N_b || N_a)   (a = general, b = specific)
//         = -1/2 sum_i [v_b / v_a + (mu_a - mu_b)^2 / v_a - 1 - log(v_b / v_a)]
// Gradients (t = v_a + v_b, diff = mu_a - mu_b):
//   el: dE/dmu_a = -diff / t = -dE/dmu_b, dE/dv_a = dE/dv_b = (diff^2 / t^2 - 1 / t) / 2
//   kl: dE/dmu_a = -diff / v_a = -dE/dmu_b,
//       dE/dv_a = ((v_b + diff^2) / v_a^2 - 1 / v_a) / 2, dE/dv_b = (1 / v_b - 1 / v_a) / 2

#ifndef KERAS_GAUSS_FUSED_LAYER_KERNELS_H_
#define KERAS_GAUSS_FUSED_LAYER_KERNELS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "gauss_math.h"

namespace tensorflow {
namespace keras_gauss {
namespace layers {

constexpr double kLog2Pi = 1.8378770664093453;

// One side of an (n, k) grid of pairs: n * k_side Gaussians, k_side 1 (one
// Gaussian for all k candidates of a row: broadcast) or k; variances with dv
// columns, 1 (spherical) or d.
struct Side {
  const float* mean;
  const float* var;
  int64_t k;
  int64_t dv;
  // The row of `mean` (and `var`) of each of the n * k occurrences when
  // they hold each unique row once (KerasGaussTableEnergy's slots); none
  // (nullptr) when they hold the occurrences' own rows, row o for occurrence o.
  const int32_t* slot = nullptr;
  int64_t Row(int64_t n, int64_t j) const { return n * k + (k == 1 ? 0 : j); }
  // The row of `mean` (and `var`) occurrence o reads.
  int64_t At(int64_t o) const { return slot == nullptr ? o : slot[o]; }
};

// The (n, k) grid of pairs the energy kernels take, from the shapes of their
// four inputs: mean_a (n, k_a, d), var_a (n, k_a, 1 or d), mean_b (n, k_b, d),
// var_b (n, k_b, 1 or d), k_a and k_b 1 (broadcast) or k = max(k_a, k_b).
struct Pairs {
  int64_t n = 0, k = 0, d = 0;
  Side a{}, b{};
};

// Fills `p` from `dims[i]`, the three dimensions of input i (mean_a, var_a,
// mean_b, var_b; the callers check the rank), and the inputs' data; false
// when the shapes do not pair up.
inline bool PairUp(const int64_t dims[4][3], const float* const data[4], Pairs* p) {
  const int64_t n = dims[0][0], d = dims[0][2], ka = dims[0][1], kb = dims[2][1];
  const int64_t k = std::max(ka, kb);
  const bool ok = dims[2][0] == n && dims[2][2] == d && dims[1][0] == n && dims[3][0] == n &&
                  dims[1][1] == ka && dims[3][1] == kb && (ka == k || ka == 1) &&
                  (kb == k || kb == 1) && (dims[1][2] == d || dims[1][2] == 1) &&
                  (dims[3][2] == d || dims[3][2] == 1);
  if (!ok) return false;
  p->n = n;
  p->k = k;
  p->d = d;
  p->a = Side{data[0], data[1], ka, dims[1][2]};
  p->b = Side{data[2], data[3], kb, dims[3][2]};
  return true;
}

template <bool SA, bool SB>
inline float ElPair(int64_t d, const float* ma, const float* va, const float* mb,
                    const float* vb) {
  alignas(64) float acc[kLanes] = {};
  ForLanes(d, [&](int64_t i, int64_t j) {
    const float t = va[SA ? 0 : i] + vb[SB ? 0 : i];
    const float diff = ma[i] - mb[i];
    acc[j] += VecLog(t) + diff * diff / t;
  });
  return -0.5f * LaneSum(acc);
}

template <bool SA, bool SB>
inline float KlPair(int64_t d, const float* ma, const float* va, const float* mb,
                    const float* vb) {
  alignas(64) float acc[kLanes] = {};
  ForLanes(d, [&](int64_t i, int64_t j) {
    const float vg = va[SA ? 0 : i];
    const float ratio = vb[SB ? 0 : i] / vg;
    const float diff = ma[i] - mb[i];
    acc[j] += ratio + diff * diff / vg - 1.0f - VecLog(ratio);
  });
  return -0.5f * LaneSum(acc);
}

// `dst + v` where the gradient row already holds a sum (Add), else `0 + v`
// (the row's first term: the same float as adding it to a cleared row).
template <bool Add>
inline float Plus(float dst, float v) {
  return (Add ? dst : 0.0f) + v;
}

// Adds g * dE/d(inputs) of one pair to the four gradient rows (AddA / AddB
// false: writes them, the side's first term, so its rows need no clearing).
// WantA / WantB false: that side's rows are neither computed nor written
// (its pointers may be null); the other side's floats are the same.
template <bool SA, bool SB, bool AddA = true, bool AddB = true, bool WantA = true,
          bool WantB = true>
inline void ElPairGrad(int64_t d, float g, const float* ma, const float* va, const float* mb,
                       const float* vb, float* gma, float* gva, float* gmb, float* gvb) {
  alignas(64) float sa[kLanes] = {}, sb[kLanes] = {};
  ForLanes(d, [&](int64_t i, int64_t j) {
    const float inv = 1.0f / (va[SA ? 0 : i] + vb[SB ? 0 : i]);
    const float delta = (ma[i] - mb[i]) * inv;
    if (WantA) gma[i] = Plus<AddA>(gma[i], -(g * delta));
    if (WantB) gmb[i] = Plus<AddB>(gmb[i], g * delta);
    const float gv = 0.5f * g * (delta * delta - inv);
    if (WantA) {
      if (SA) sa[j] += gv; else gva[i] = Plus<AddA>(gva[i], gv);
    }
    if (WantB) {
      if (SB) sb[j] += gv; else gvb[i] = Plus<AddB>(gvb[i], gv);
    }
  });
  if (WantA && SA) gva[0] = Plus<AddA>(gva[0], LaneSum(sa));
  if (WantB && SB) gvb[0] = Plus<AddB>(gvb[0], LaneSum(sb));
}

template <bool SA, bool SB, bool AddA = true, bool AddB = true, bool WantA = true,
          bool WantB = true>
inline void KlPairGrad(int64_t d, float g, const float* ma, const float* va, const float* mb,
                       const float* vb, float* gma, float* gva, float* gmb, float* gvb) {
  alignas(64) float sa[kLanes] = {}, sb[kLanes] = {};
  ForLanes(d, [&](int64_t i, int64_t j) {
    const float vg = va[SA ? 0 : i];
    const float vs = vb[SB ? 0 : i];
    const float inv = 1.0f / vg;
    const float diff = ma[i] - mb[i];
    const float gm = g * diff * inv;
    if (WantA) gma[i] = Plus<AddA>(gma[i], -gm);
    if (WantB) gmb[i] = Plus<AddB>(gmb[i], gm);
    if (WantA) {
      const float ga = 0.5f * g * ((vs + diff * diff) * inv * inv - inv);
      if (SA) sa[j] += ga; else gva[i] = Plus<AddA>(gva[i], ga);
    }
    if (WantB) {
      const float gb = 0.5f * g * (1.0f / vs - inv);
      if (SB) sb[j] += gb; else gvb[i] = Plus<AddB>(gvb[i], gb);
    }
  });
  if (WantA && SA) gva[0] = Plus<AddA>(gva[0], LaneSum(sa));
  if (WantB && SB) gvb[0] = Plus<AddB>(gvb[0], LaneSum(sb));
}

// x / k for x >= 0 and a grid's k >= 1, as the kernels' inner loops divide
// an occurrence or pair index into its row: a shift when k is a power of two
// (a broadcast side's 1, the quick start's 2), else the division (a 64-bit
// division costs tens of cycles, two a pair).
//
// Example: DivK(2)(7) == 3 (a shift), DivK(6)(13) == 2 (a division).
struct DivK {
  int64_t k;
  int shift = -1;  // k == 1 << shift, or -1
  explicit DivK(int64_t divisor) : k(divisor) {
    for (int b = 0; b < 63; ++b) {
      if ((int64_t{1} << b) == k) shift = b;
    }
  }
  int64_t operator()(int64_t x) const { return shift >= 0 ? x >> shift : x / k; }
};

// Pairs ahead whose rows are fetched when they are read through slots
// (Side::slot).
constexpr int64_t kRowsAhead = 8;

inline void PrefetchForRead(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(p + i, 0, 3);
  __builtin_prefetch(p + n - 1, 0, 3);
}

// Fetches the four rows of a pair: rows ra of side a, rb of side b.
inline void PrefetchPairRows(int64_t d, const Side& a, const Side& b, int64_t ra, int64_t rb) {
  PrefetchForRead(a.mean + ra * d, d);
  PrefetchForRead(a.var + ra * a.dv, a.dv);
  PrefetchForRead(b.mean + rb * d, d);
  PrefetchForRead(b.var + rb * b.dv, b.dv);
}

// Calls run(X, Y) with the flags x and y as std::integral_constants, so a
// kernel is instantiated for the four cases: the one dispatch of the grid
// kernels' compile-time flags below.
template <typename Run>
inline void WithFlags(bool x, bool y, const Run& run) {
  if (x && y) {
    run(std::true_type{}, std::true_type{});
  } else if (x) {
    run(std::true_type{}, std::false_type{});
  } else if (y) {
    run(std::false_type{}, std::true_type{});
  } else {
    run(std::false_type{}, std::false_type{});
  }
}

// run(SA, SB): each side's spherical variance (one column while d > 1).
template <typename Run>
void WithSphericalSides(const Side& a, const Side& b, int64_t d, const Run& run) {
  WithFlags(a.dv == 1 && d > 1, b.dv == 1 && d > 1, run);
}

template <bool SA, bool SB, typename ParallelFor>
void EnergyForwardT(Energy energy, float constant, int64_t n, int64_t k, int64_t d,
                    const Side& a, const Side& b, float* out, const ParallelFor& parallel_for) {
  const bool slots = a.slot != nullptr || b.slot != nullptr;
  const DivK by_k(k);
  parallel_for(n * k, 12 * d + 20, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t row = by_k(p), j = p - row * k;
      if (slots && p + kRowsAhead < end) {  // the rows of a pair ahead
        const int64_t next = p + kRowsAhead, next_row = by_k(next), next_j = next - next_row * k;
        PrefetchPairRows(d, a, b, a.At(a.Row(next_row, next_j)), b.At(b.Row(next_row, next_j)));
      }
      const int64_t ra = a.At(a.Row(row, j)), rb = b.At(b.Row(row, j));
      const float* ma = a.mean + ra * d;
      const float* va = a.var + ra * a.dv;
      const float* mb = b.mean + rb * d;
      const float* vb = b.var + rb * b.dv;
      const float e = energy == Energy::kEL ? ElPair<SA, SB>(d, ma, va, mb, vb)
                                            : KlPair<SA, SB>(d, ma, va, mb, vb);
      out[p] = e - constant;
    }
  });
}

// out[n * k + j] = E(a[n, j], b[n, j]) (- the EL constant).
template <typename ParallelFor>
void EnergyForward(Energy energy, bool include_constant, int64_t n, int64_t k, int64_t d,
                   const Side& a, const Side& b, float* out, const ParallelFor& parallel_for) {
  const float constant = energy == Energy::kEL && include_constant
                             ? 0.5f * static_cast<float>(d) * static_cast<float>(kLog2Pi)
                             : 0.0f;
  WithSphericalSides(a, b, d, [&](auto sa, auto sb) {
    EnergyForwardT<decltype(sa)::value, decltype(sb)::value>(energy, constant, n, k, d, a, b,
                                                             out, parallel_for);
  });
}

template <bool SA, bool SB, typename ParallelFor>
void EnergyBackwardT(Energy energy, int64_t n, int64_t k, int64_t d, const Side& a,
                     const Side& b, const float* grad, float* gma, float* gva, float* gmb,
                     float* gvb, const ParallelFor& parallel_for) {
  // Each gradient row is written by its first pair and added to by the
  // others (a broadcast side's row by the k candidates of its row, in
  // order): no clearing pass over the gradients.
  auto pair = [&](int64_t row, int64_t j) {
    const int64_t ra = a.Row(row, j), rb = b.Row(row, j);
    const float g = grad[row * k + j];
    const float* ma = a.mean + ra * d;
    const float* va = a.var + ra * a.dv;
    const float* mb = b.mean + rb * d;
    const float* vb = b.var + rb * b.dv;
    float* outs[4] = {gma + ra * d, gva + ra * a.dv, gmb + rb * d, gvb + rb * b.dv};
    const bool add_a = a.k == 1 && j > 0, add_b = b.k == 1 && j > 0;
    auto run = [&](auto add_a_tag, auto add_b_tag) {
      constexpr bool kAddA = decltype(add_a_tag)::value, kAddB = decltype(add_b_tag)::value;
      if (energy == Energy::kEL) {
        ElPairGrad<SA, SB, kAddA, kAddB>(d, g, ma, va, mb, vb, outs[0], outs[1], outs[2],
                                         outs[3]);
      } else {
        KlPairGrad<SA, SB, kAddA, kAddB>(d, g, ma, va, mb, vb, outs[0], outs[1], outs[2],
                                         outs[3]);
      }
    };
    WithFlags(add_a, add_b, run);
  };
  if (a.k == k && b.k == k) {  // every pair has its own rows
    const DivK by_k(k);
    parallel_for(n * k, 16 * d + 20, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int64_t row = by_k(p);
        pair(row, p - row * k);
      }
    });
  } else {  // a broadcast side sums over the k candidates of its row
    parallel_for(n, (16 * d + 20) * k, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        for (int64_t j = 0; j < k; ++j) pair(row, j);
      }
    });
  }
}

// The gradients of sum(grad * E) with respect to the four inputs (shaped like
// them: a broadcast side and a spherical variance get the sums).
template <typename ParallelFor>
void EnergyBackward(Energy energy, int64_t n, int64_t k, int64_t d, const Side& a,
                    const Side& b, const float* grad, float* gma, float* gva, float* gmb,
                    float* gvb, const ParallelFor& parallel_for) {
  WithSphericalSides(a, b, d, [&](auto sa, auto sb) {
    EnergyBackwardT<decltype(sa)::value, decltype(sb)::value>(energy, n, k, d, a, b, grad, gma,
                                                              gva, gmb, gvb, parallel_for);
  });
}

// ---------------------------------------------------------------------------
// SparseAdagrad: acc += g^2; w -= lr g / sqrt(acc + eps); then the row
// constraints: ||w|| <= max_norm (NormClip: scale the row; max_norm <= 0 for
// none) and lo <= w <= hi (VarianceClip; -inf / inf for none).

struct RowBounds {
  float max_norm = 0.f;
  float lo = -INFINITY;
  float hi = INFINITY;
};

inline void AdagradRow(float* w, float* a, const float* g, int64_t c, float lr, float eps,
                       const RowBounds& bounds) {
#pragma omp simd
  for (int64_t i = 0; i < c; ++i) {
    const float acc = a[i] + g[i] * g[i];
    a[i] = acc;
    w[i] -= lr * g[i] / std::sqrt(acc + eps);
  }
  if (bounds.max_norm > 0.f) {
    alignas(64) float sq[kLanes] = {};
    ForLanes(c, [&](int64_t i, int64_t j) { sq[j] += w[i] * w[i]; });
    const float norm = std::sqrt(LaneSum(sq));
    const float f = std::min(1.0f, bounds.max_norm / std::max(norm, 1e-30f));
    if (f < 1.0f) {
      for (int64_t i = 0; i < c; ++i) w[i] *= f;
    }
  }
  const float lo = bounds.lo, hi = bounds.hi;
  if (lo > -INFINITY || hi < INFINITY) {
#pragma omp simd
    for (int64_t i = 0; i < c; ++i) {
      const float v = w[i] < lo ? lo : w[i];
      w[i] = v > hi ? hi : v;
    }
  }
}

// The index of the first id outside [0, rows), or -1.
template <typename Index>
int64_t FirstBadId(const Index* ids, int64_t n, int64_t rows) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<int64_t>(ids[i]) >= rows) return i;
  }
  return -1;
}

// The slots (unique rows) of a batch of occurrences, as EnergySlotGrad reads
// them: the slot of each occurrence and the first occurrence of each slot.
struct SlotMap {
  const int32_t* slot_of;
  const int64_t* first;
  int64_t size;
};

// The unique rows of a batch of occurrences, in order of first appearance,
// and the slot (unique row) of every occurrence: one pass with a slot array
// of one int per table row (O(occurrences), no sorting). Keep one per table
// between calls: the slot array and the buffers are allocated once.
class RowSlots {
 public:
  template <typename Index>
  void Assign(const Index* ids, int64_t n, int64_t rows) {
    if (static_cast<int64_t>(slot_.size()) != rows) slot_.assign(rows, -1);
    unique_.resize(n);
    slot_of_.resize(n);
    first_.resize(n);
    count_.resize(n);
    size_ = 0;
    for (int64_t o = 0; o < n; ++o) {
      const int64_t row = static_cast<int64_t>(ids[o]);
      int32_t s = slot_[row];
      if (s < 0) {
        s = static_cast<int32_t>(size_++);
        slot_[row] = s;
        unique_[s] = row;
        first_[s] = o;
        count_[s] = 0;
      }
      count_[s]++;
      slot_of_[o] = s;
    }
    for (int64_t s = 0; s < size_; ++s) slot_[unique_[s]] = -1;
  }

  int64_t size() const { return size_; }
  int64_t row(int64_t s) const { return unique_[s]; }
  // The table rows of the slots, in slot order.
  const int64_t* rows() const { return unique_.data(); }
  // The first occurrence of slot s and how many it has.
  int64_t first(int64_t s) const { return first_[s]; }
  int64_t count(int64_t s) const { return count_[s]; }
  const int32_t* slots() const { return slot_of_.data(); }
  int64_t occurrences() const { return static_cast<int64_t>(slot_of_.size()); }
  SlotMap map() const { return SlotMap{slot_of_.data(), first_.data(), size_}; }
  // Scratch for the summed gradients, (size, c).
  float* Sums(int64_t c) {
    sums_.resize(size_ * c);
    return sums_.data();
  }

 private:
  int64_t size_ = 0;
  std::vector<int32_t> slot_, slot_of_, count_;
  std::vector<int64_t> unique_, first_;
  std::vector<float> sums_;
};

// Splits `size` items into one part per thread (`threads()` of the
// parallel_for), or one part for small work; part p is [first(p), first(p+1)).
struct Parts {
  int64_t count, size;
  Parts(int64_t size, int64_t threads, int64_t work)
      : count(work < (1 << 16) ? 1 : std::max<int64_t>(1, std::min(size, threads))),
        size(size) {}
  int64_t first(int64_t p) const { return p * size / count; }
};

// dst += src over c floats (row sums: the same additions wherever rows are summed).
inline void AddRow(float* dst, const float* src, int64_t c) {
#pragma omp simd
  for (int64_t i = 0; i < c; ++i) dst[i] += src[i];
}

// AdaGrad on the unique rows of `slots` with the summed rows of `values`
// (n, c): each part owns a range of unique rows and streams through the
// occurrences; a row that occurs once is updated at its occurrence, the
// others' gradients are summed in order (as unsorted_segment_sum does) and
// their rows updated after the pass. One part per thread (every part reads
// all slots: few parts keep that cheap, and `values` is read front to back).
// No atomics; the same sums whatever the number of threads.
template <typename ParallelFor>
void AdagradSlots(RowSlots& slots, float* table, float* acc, int64_t c, const float* values,
                  float lr, float eps, const RowBounds& bounds,
                  const ParallelFor& parallel_for) {
  const int64_t n = slots.occurrences();
  const Parts parts(slots.size(), parallel_for.threads(), n * c);
  float* sums = slots.Sums(c);
  const int32_t* slot_of = slots.slots();
  parallel_for(parts.count, 1 << 20, [&](int64_t begin_part, int64_t end_part) {
    const int64_t begin = parts.first(begin_part), end = parts.first(end_part);
    constexpr int64_t kAhead = 8;  // rows of single occurrences are fetched ahead
    for (int64_t o = 0; o < n; ++o) {
      if (o + kAhead < n) {
        const int64_t next = slot_of[o + kAhead];
        if (next >= begin && next < end && slots.count(next) == 1) {
          const int64_t offset = slots.row(next) * c;
          for (int64_t i = 0; i < c; i += 16) {
            __builtin_prefetch(table + offset + i, 1, 3);
            __builtin_prefetch(acc + offset + i, 1, 3);
          }
        }
      }
      const int64_t s = slot_of[o];
      if (s < begin || s >= end) continue;
      const float* src = values + o * c;
      if (slots.count(s) == 1) {
        const int64_t row = slots.row(s);
        AdagradRow(table + row * c, acc + row * c, src, c, lr, eps, bounds);
        continue;
      }
      float* dst = sums + s * c;
      if (slots.first(s) == o) {
        std::memcpy(dst, src, sizeof(float) * c);
      } else {
        AddRow(dst, src, c);
      }
    }
    for (int64_t s = begin; s < end; ++s) {
      if (slots.count(s) == 1) continue;
      const int64_t row = slots.row(s);
      AdagradRow(table + row * c, acc + row * c, sums + s * c, c, lr, eps, bounds);
    }
  });
}

// AdaGrad on the rows of a dense gradient (rows, c) that hold a nonzero
// value; other rows are left as they are (AdaGrad with a zero gradient and a
// row constraint on a row that already meets it change nothing).
template <typename ParallelFor>
void AdagradDenseRows(float* table, float* acc, int64_t rows, int64_t c, const float* grad,
                      float lr, float eps, const RowBounds& bounds,
                      const ParallelFor& parallel_for) {
  parallel_for(rows, 2 * c, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* g = grad + r * c;
      if (AnyNonzero(g, c)) AdagradRow(table + r * c, acc + r * c, g, c, lr, eps, bounds);
    }
  });
}

// rows[o] = table[ids[o]] (ids checked by the caller), prefetching the rows
// a few ids ahead.
template <typename Index, typename ParallelFor>
void GatherRows(const float* table, int64_t c, const Index* ids, int64_t n, float* rows,
                const ParallelFor& parallel_for) {
  constexpr int64_t kAhead = 8;
  parallel_for(n, c / 4 + 4, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      if (o + kAhead < end) {
        const float* next = table + static_cast<int64_t>(ids[o + kAhead]) * c;
        for (int64_t i = 0; i < c; i += 16) __builtin_prefetch(next + i, 0, 3);
      }
      const float* src = table + static_cast<int64_t>(ids[o]) * c;
      float* dst = rows + o * c;
#pragma omp simd
      for (int64_t i = 0; i < c; ++i) dst[i] = src[i];
    }
  });
}

// dense = zeros(rows, c) with values[o] added to row ids[o], in order of
// occurrence (ids checked by the caller). One part per thread owns a range of
// rows and adds the occurrences that fall in it: no atomics, the same sums
// whatever the number of threads.
template <typename Index, typename ParallelFor>
void ScatterAddRows(const Index* ids, int64_t n, const float* values, int64_t rows, int64_t c,
                    float* dense, const ParallelFor& parallel_for) {
  const Parts parts(rows, parallel_for.threads(), (rows + n) * c);
  parallel_for(parts.count, 1 << 20, [&](int64_t begin_part, int64_t end_part) {
    const int64_t begin = parts.first(begin_part), end = parts.first(end_part);
    std::memset(dense + begin * c, 0, sizeof(float) * (end - begin) * c);
    for (int64_t o = 0; o < n; ++o) {
      const int64_t row = static_cast<int64_t>(ids[o]);
      if (row < begin || row >= end) continue;
      AddRow(dense + row * c, values + o * c, c);
    }
  });
}

// ---------------------------------------------------------------------------
// The energies' gradient summed by table row: for each side of the (n, k)
// grid, the gradient of sum(grad * E) with respect to the table rows of its
// unique ids (`slots_a` the slots of the n * a.k ids of side a, `slots_b`
// likewise; the rows of `p` either the occurrences' own or, through
// Side::slot, one per slot), each row's occurrences added in order of
// occurrence (a
// broadcast side's occurrence first sums its k pairs in order): the same
// floats as EnergyBackward followed by AdagradSlots' sums, without the
// per-occurrence rows. Outputs (slots, d) means and (slots, dv) variances.
// Each part of the work owns a range of the unique rows of each side and
// streams through the pairs, computing those with a row it owns (with two
// parts, 1.5 times the pairs' arithmetic); no atomics, the same sums
// whatever the number of threads.
template <bool SA, bool SB, typename ParallelFor>
void EnergySlotGradT(Energy energy, const Pairs& p, const float* grad, const SlotMap& slots_a,
                     const SlotMap& slots_b, float* gma, float* gva, float* gmb, float* gvb,
                     const ParallelFor& parallel_for) {
  const int64_t n = p.n, k = p.k, d = p.d;
  const Side &a = p.a, &b = p.b;
  const int64_t parts =
      n * k * d < (1 << 16) ? 1 : std::max<int64_t>(1, parallel_for.threads());
  const int64_t size_a = slots_a.size, size_b = slots_b.size;
  const int32_t* slot_a = slots_a.slot_of;
  const int32_t* slot_b = slots_b.slot_of;
  const bool slots = a.slot != nullptr || b.slot != nullptr;
  const DivK by_k(k);
  parallel_for(parts, 1 << 20, [&](int64_t begin_part, int64_t end_part) {
    const int64_t a0 = begin_part * size_a / parts, a1 = end_part * size_a / parts;
    const int64_t b0 = begin_part * size_b / parts, b1 = end_part * size_b / parts;
    // Rows of later occurrences (added to their sums when complete), and
    // rows for a side this part does not own (written, never read).
    std::vector<float> scratch(4 * (d + std::max(a.dv, b.dv)));
    float* tmp_a = scratch.data();
    float* tmp_b = tmp_a + d + a.dv;
    float* junk_a = tmp_b + d + b.dv;
    float* junk_b = junk_a + d + a.dv;
    constexpr int64_t kAhead = 8;
    for (int64_t row = 0; row < n; ++row) {
      for (int64_t j = 0; j < k; ++j) {
        const int64_t oa = a.Row(row, j), ob = b.Row(row, j);
        const int64_t sa = slot_a[oa], sb = slot_b[ob];
        const bool own_a = sa >= a0 && sa < a1, own_b = sb >= b0 && sb < b1;
        if (!own_a && !own_b) continue;
        if (row * k + j + kAhead < n * k) {  // the sums of a pair ahead
          const int64_t next = row * k + j + kAhead, next_row = by_k(next),
                        next_j = next - next_row * k;
          const int64_t next_a = a.Row(next_row, next_j), next_b = b.Row(next_row, next_j);
          const int64_t na = slot_a[next_a];
          const int64_t nb = slot_b[next_b];
          const bool next_own_a = na >= a0 && na < a1, next_own_b = nb >= b0 && nb < b1;
          if (next_own_a) {
            PrefetchRow(gma + na * d, d);
            PrefetchRow(gva + na * a.dv, a.dv);
          }
          if (next_own_b) {
            PrefetchRow(gmb + nb * d, d);
            PrefetchRow(gvb + nb * b.dv, b.dv);
          }
          if (slots && (next_own_a || next_own_b)) {
            PrefetchPairRows(d, a, b, a.At(next_a), b.At(next_b));
          }
        }
        const bool first_a = own_a && slots_a.first[sa] == oa;
        const bool first_b = own_b && slots_b.first[sb] == ob;
        // A later occurrence is written to `tmp` and added to its row's sum
        // when complete (not added to the sum pair by pair: the compiler
        // may fuse s + g * x into one rounding, which would change the sums).
        float* ma_out = !own_a ? junk_a : first_a ? gma + sa * d : tmp_a;
        float* va_out = !own_a ? junk_a + d : first_a ? gva + sa * a.dv : tmp_a + d;
        float* mb_out = !own_b ? junk_b : first_b ? gmb + sb * d : tmp_b;
        float* vb_out = !own_b ? junk_b + d : first_b ? gvb + sb * b.dv : tmp_b + d;
        const bool add_a = own_a && a.k == 1 && j > 0, add_b = own_b && b.k == 1 && j > 0;
        const float g = grad[row * k + j];
        const int64_t ta = a.At(oa), tb = b.At(ob);
        const float* ma = a.mean + ta * d;
        const float* va = a.var + ta * a.dv;
        const float* mb = b.mean + tb * d;
        const float* vb = b.var + tb * b.dv;
        auto run = [&](auto add_a_tag, auto add_b_tag) {
          constexpr bool kAddA = decltype(add_a_tag)::value, kAddB = decltype(add_b_tag)::value;
          if (energy == Energy::kEL) {
            ElPairGrad<SA, SB, kAddA, kAddB>(d, g, ma, va, mb, vb, ma_out, va_out, mb_out,
                                             vb_out);
          } else {
            KlPairGrad<SA, SB, kAddA, kAddB>(d, g, ma, va, mb, vb, ma_out, va_out, mb_out,
                                             vb_out);
          }
        };
        WithFlags(add_a, add_b, run);
        if (own_a && !first_a && (a.k != 1 || j == k - 1)) {
          AddRow(gma + sa * d, tmp_a, d);
          AddRow(gva + sa * a.dv, tmp_a + d, a.dv);
        }
        if (own_b && !first_b && (b.k != 1 || j == k - 1)) {
          AddRow(gmb + sb * d, tmp_b, d);
          AddRow(gvb + sb * b.dv, tmp_b + d, b.dv);
        }
      }
    }
  });
}

template <typename ParallelFor>
void EnergySlotGrad(Energy energy, const Pairs& p, const float* grad, const SlotMap& slots_a,
                    const SlotMap& slots_b, float* gma, float* gva, float* gmb, float* gvb,
                    const ParallelFor& parallel_for) {
  WithSphericalSides(p.a, p.b, p.d, [&](auto sa, auto sb) {
    EnergySlotGradT<decltype(sa)::value, decltype(sb)::value>(energy, p, grad, slots_a, slots_b,
                                                              gma, gva, gmb, gvb, parallel_for);
  });
}

// The occurrences of each slot, in order of occurrence (a counting sort of
// `slot_of`): slot s's are occurrences()[offset(s) .. offset(s + 1)).
class SlotLists {
 public:
  // False when a slot_of value is outside [0, size) or a slot has none.
  bool Assign(const int32_t* slot_of, int64_t n, int64_t size) {
    offsets_.assign(size + 1, 0);
    for (int64_t o = 0; o < n; ++o) {
      if (slot_of[o] < 0 || slot_of[o] >= size) return false;
      ++offsets_[slot_of[o] + 1];
    }
    for (int64_t s = 0; s < size; ++s) {
      if (offsets_[s + 1] == 0) return false;
      offsets_[s + 1] += offsets_[s];
    }
    occurrences_.resize(n);
    fill_.assign(offsets_.begin(), offsets_.end() - 1);
    for (int64_t o = 0; o < n; ++o) occurrences_[fill_[slot_of[o]]++] = static_cast<int32_t>(o);
    return true;
  }
  int64_t size() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t offset(int64_t s) const { return offsets_[s]; }
  const int32_t* occurrences() const { return occurrences_.data(); }

 private:
  std::vector<int64_t> offsets_, fill_;
  std::vector<int32_t> occurrences_;
};

// EnergySlotGrad slot by slot: for each side, each slot's occurrences in
// order, the slot's gradient rows summed as EnergySlotGrad sums them (the
// same floats) without reading or writing other rows of that side's sums.
// Every pair is computed once per side (twice in all, each time only that
// side's rows: ElPairGrad / KlPairGrad's WantA / WantB), but each pass reads
// one row per pair at random (the other side's), its own slot's row and sums
// staying in cache. The work is cut at slot boundaries into parts of about
// equal pairs.
template <bool SA, bool SB, typename ParallelFor>
void EnergySlotMajorGradT(Energy energy, const Pairs& p, const float* grad,
                          const SlotLists& lists_a, const SlotLists& lists_b, float* gma,
                          float* gva, float* gmb, float* gvb, const ParallelFor& parallel_for) {
  const int64_t k = p.k, d = p.d;
  const Side &a = p.a, &b = p.b;
  const SlotLists* lists[2] = {&lists_a, &lists_b};
  const Side* sides[2] = {&a, &b};
  float* means[2] = {gma, gmb};
  float* vars[2] = {gva, gvb};
  // Chunks: (side, first slot, end slot) of about `target` pairs each.
  struct Chunk {
    int side;
    int64_t begin, end;
  };
  std::vector<Chunk> chunks;
  const int64_t total = 2 * p.n * k;
  const int64_t pieces = total < (1 << 12) ? 1 : 4 * std::max<int64_t>(1, parallel_for.threads());
  const int64_t target = std::max<int64_t>(1, total / pieces);
  for (int side = 0; side < 2; ++side) {
    const int64_t per = sides[side]->k == 1 ? k : 1;  // pairs an occurrence covers
    const SlotLists& l = *lists[side];
    int64_t begin = 0, work = 0;
    for (int64_t s = 0; s < l.size(); ++s) {
      work += (l.offset(s + 1) - l.offset(s)) * per;
      if (work >= target || s + 1 == l.size()) {
        chunks.push_back(Chunk{side, begin, s + 1});
        begin = s + 1;
        work = 0;
      }
    }
  }
  parallel_for(static_cast<int64_t>(chunks.size()), target * (16 * d + 20),
               [&](int64_t begin_chunk, int64_t end_chunk) {
    std::vector<float> scratch(d + std::max(a.dv, b.dv));
    float* tmp = scratch.data();  // a later occurrence's rows
    for (int64_t c = begin_chunk; c < end_chunk; ++c) {
      const int side = chunks[c].side;
      const Side& x = *sides[side];
      const Side& y = *sides[1 - side];
      const int64_t dvx = x.dv;
      const int64_t per = x.k == 1 ? k : 1;
      const DivK by_kx(x.k);
      const int32_t* occ = lists[side]->occurrences();
      constexpr int64_t kAhead = 8;
      const int64_t last = lists[side]->offset(chunks[c].end);
      for (int64_t s = chunks[c].begin; s < chunks[c].end; ++s) {
        float* mean_out = means[side] + s * d;
        float* var_out = vars[side] + s * dvx;
        const int64_t first = lists[side]->offset(s), stop = lists[side]->offset(s + 1);
        for (int64_t i = first; i < stop; ++i) {
          if (i + kAhead < last) {  // the other side's rows of an occurrence ahead
            const int64_t o = occ[i + kAhead];
            const int64_t row = by_kx(o), j0 = x.k == 1 ? 0 : o - row * x.k;
            for (int64_t j = j0; j < j0 + per; ++j) {
              const int64_t r = y.At(y.Row(row, j));
              PrefetchForRead(y.mean + r * d, d);
              PrefetchForRead(y.var + r * y.dv, y.dv);
            }
          }
          const int64_t o = occ[i];
          const int64_t row = by_kx(o), j0 = x.k == 1 ? 0 : o - row * x.k;
          const int64_t rx = x.At(o);
          const float* mx = x.mean + rx * d;
          const float* vx = x.var + rx * dvx;
          float* mo = i == first ? mean_out : tmp;
          float* vo = i == first ? var_out : tmp + d;
          for (int64_t j = j0; j < j0 + per; ++j) {
            const int64_t ry = y.At(y.Row(row, j));
            const float* my = y.mean + ry * d;
            const float* vy = y.var + ry * y.dv;
            const float g = grad[row * k + j];
            const bool add = x.k == 1 && j > 0;
            auto run = [&](auto add_tag) {  // this side's rows only
              constexpr bool kAdd = decltype(add_tag)::value;
              if (side == 0) {
                if (energy == Energy::kEL) {
                  ElPairGrad<SA, SB, kAdd, false, true, false>(d, g, mx, vx, my, vy, mo, vo,
                                                               nullptr, nullptr);
                } else {
                  KlPairGrad<SA, SB, kAdd, false, true, false>(d, g, mx, vx, my, vy, mo, vo,
                                                               nullptr, nullptr);
                }
              } else {
                if (energy == Energy::kEL) {
                  ElPairGrad<SA, SB, false, kAdd, false, true>(d, g, my, vy, mx, vx, nullptr,
                                                               nullptr, mo, vo);
                } else {
                  KlPairGrad<SA, SB, false, kAdd, false, true>(d, g, my, vy, mx, vx, nullptr,
                                                               nullptr, mo, vo);
                }
              }
            };
            if (add) {
              run(std::true_type{});
            } else {
              run(std::false_type{});
            }
          }
          if (i != first) {
            AddRow(mean_out, tmp, d);
            AddRow(var_out, tmp + d, dvx);
          }
        }
      }
    }
  });
}

template <typename ParallelFor>
void EnergySlotMajorGrad(Energy energy, const Pairs& p, const float* grad,
                         const SlotLists& lists_a, const SlotLists& lists_b, float* gma,
                         float* gva, float* gmb, float* gvb, const ParallelFor& parallel_for) {
  WithSphericalSides(p.a, p.b, p.d, [&](auto sa, auto sb) {
    EnergySlotMajorGradT<decltype(sa)::value, decltype(sb)::value>(
        energy, p, grad, lists_a, lists_b, gma, gva, gmb, gvb, parallel_for);
  });
}

}  // namespace layers
}  // namespace keras_gauss
}  // namespace tensorflow

#endif  // KERAS_GAUSS_FUSED_LAYER_KERNELS_H_

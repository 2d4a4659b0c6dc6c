// Shared math of the C++ kernels (layer_ops.cc, jax_ops.cc, native.cc,
// pairs.cc): the energies of one (word, candidate) pair, their gradients and
// the AdaGrad row update with the row constraints. Plain C++: no TensorFlow.
//
// Energies (the -d/2 log 2pi constant of EL is dropped: it cancels in the
// hinge):
//   el: E = -1/2 sum_i [log(v_w + v_c) + (mu_w - mu_c)^2 / (v_w + v_c)]
//   kl: E = -KL(N_context || N_word)   (word = general, context = specific)
//         = -1/2 sum_i [v_c / v_w + (mu_w - mu_c)^2 / v_w - 1 - log(v_c / v_w)]
// Spherical tables have one variance per row (shape (V, 1)); its gradient is
// the sum of the diagonal gradient over the d dimensions.

#ifndef KERAS_GAUSS_FUSED_GAUSS_MATH_H_
#define KERAS_GAUSS_FUSED_GAUSS_MATH_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "energies.h"

namespace tensorflow {
namespace keras_gauss {

inline void PrefetchRow(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(p + i, 1, 3);
  __builtin_prefetch(p + n - 1, 1, 3);
}

// One table's buffers and row constraints. Row r of the means starts at
// means + r * mean_stride (the accumulator's likewise), of the variances at
// variances + r * var_stride. The TensorFlow ops see four separate (V, d)
// buffers (strides d and dv); the native library one interleaved buffer,
// a row [mean | variance | mean accumulator | variance accumulator] padded
// to whole cache lines, so a word's state is one contiguous block.
struct Table {
  float* means = nullptr;
  float* variances = nullptr;
  float* mean_acc = nullptr;
  float* var_acc = nullptr;
  int64_t rows = 0;
  int64_t mean_stride = 0;
  int64_t var_stride = 0;
  float max_norm = 0.f;
  float min_variance = 0.f;
  float max_variance = 0.f;

  float* Mean(int64_t row) const { return means + row * mean_stride; }
  float* Var(int64_t row) const { return variances + row * var_stride; }
  float* MeanAcc(int64_t row) const { return mean_acc + row * mean_stride; }
  float* VarAcc(int64_t row) const { return var_acc + row * var_stride; }
};

// Prefetches the mean and variance rows of `row`, and with `accumulators`
// their AdaGrad accumulators' rows too.
inline void PrefetchRows(const Table& tb, int64_t row, int64_t d, int64_t dv,
                         bool accumulators = true) {
  PrefetchRow(tb.Mean(row), d);
  PrefetchRow(tb.Var(row), dv);
  if (!accumulators) return;
  PrefetchRow(tb.MeanAcc(row), d);
  PrefetchRow(tb.VarAcc(row), dv);
}

// Sums over the d dimensions run in kLanes independent lanes (lane j takes
// i = j mod kLanes) that are added pairwise at the end (LaneSum). An `omp
// simd reduction` would do the same per vector but GCC then adds the lanes
// one after another through memory, a chain of 16 dependent adds per sum
// that cost as much as the sum itself at d = 50.
constexpr int64_t kLanes = 16;

// Calls f(i, j) for i in [0, d), j = i mod kLanes, vectorised over j.
template <typename F>
inline void ForLanes(int64_t d, const F& f) {
  int64_t i = 0;
  for (; i + kLanes <= d; i += kLanes) {
#pragma omp simd
    for (int64_t j = 0; j < kLanes; ++j) f(i + j, j);
  }
  for (int64_t j = 0; i + j < d; ++j) f(i + j, j);
}

// The sum of the kLanes values of `lanes` (which it overwrites).
inline float LaneSum(float* lanes) {
  for (int64_t w = kLanes / 2; w > 0; w /= 2) {
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  return lanes[0];
}

// Whether any of x[0..n) is not zero (a summed gradient that is exactly
// zero leaves its row alone). Usually true at x[0].
inline bool AnyNonzero(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] != 0.f) return true;
  }
  return false;
}

// log(x) for positive normal floats in a form `omp simd` loops vectorise
// (Cephes' logf: the exponent split off, a degree-9 polynomial on
// [sqrt(1/2), sqrt(2)); within 2 ulp of std::log).
#pragma omp declare simd
inline float VecLog(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  // The mantissa m in [sqrt(1/2), sqrt(2)) and the exponent e, in integer
  // arithmetic without a branch or a float compare (so that GCC vectorises
  // the loops calling it; m * 0.5 is exact, so this equals the textbook
  // `if (m > sqrt(2)) { m *= 0.5; e += 1; }`).
  const uint32_t mantissa = bits & 0x007FFFFFu;
  const uint32_t big = (mantissa | 0x3F800000u) > 0x3FB504F3u ? 1u : 0u;  // m > 1.41421356f
  const float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127 +
                                     static_cast<int32_t>(big));
  bits = mantissa | (0x3F800000u - (big << 23));
  float m;
  std::memcpy(&m, &bits, sizeof(m));
  const float f = m - 1.0f;
  const float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  return f + y + 0.693359375f * e;
}

// E(w, c) of one pair. `tmp` holds 2d floats of scratch; for the diagonal
// EL energy it receives delta = (mu_w - mu_c) / t and 1 / t, t = v_w + v_c,
// which AddPairGradients then reuses (pass the same buffer).
inline float PairEnergy(Energy energy, bool sph, int64_t d, const float* mw,
                        const float* vw, const float* mc, const float* vc,
                        float* tmp) {
  double e;
  if (energy == Energy::kEL) {
    if (sph) {
      const float t = vw[0] + vc[0];
      alignas(64) float sq[kLanes] = {};
      ForLanes(d, [&](int64_t i, int64_t j) {
        const float diff = mw[i] - mc[i];
        sq[j] += diff * diff;
      });
      e = -0.5 * (d * std::log(static_cast<double>(t)) + LaneSum(sq) / t);
    } else {
      alignas(64) float quad[kLanes] = {}, logs[kLanes] = {};
      float* delta = tmp;
      float* inverse = tmp + d;
      ForLanes(d, [&](int64_t i, int64_t j) {
        const float t = vw[i] + vc[i];
        const float inv = 1.0f / t;
        const float dl = (mw[i] - mc[i]) * inv;
        delta[i] = dl;
        inverse[i] = inv;
        quad[j] += dl * dl * t;
        logs[j] += VecLog(t);
      });
      e = -0.5 * (static_cast<double>(LaneSum(logs)) + LaneSum(quad));
    }
  } else {  // KL(N_c || N_w), E = -KL
    if (sph) {
      const float inv = 1.0f / vw[0];
      alignas(64) float sq[kLanes] = {};
      ForLanes(d, [&](int64_t i, int64_t j) {
        const float diff = mw[i] - mc[i];
        sq[j] += diff * diff;
      });
      const double ratio = static_cast<double>(vc[0]) / vw[0];
      e = -0.5 * (d * ratio + LaneSum(sq) * inv - d - d * std::log(ratio));
    } else {
      alignas(64) float lin[kLanes] = {}, logs[kLanes] = {};
      ForLanes(d, [&](int64_t i, int64_t j) {
        const float inv = 1.0f / vw[i];
        const float diff = mw[i] - mc[i];
        const float ratio = vc[i] * inv;
        lin[j] += ratio + diff * diff * inv;
        logs[j] += VecLog(ratio);
      });
      e = -0.5 * (static_cast<double>(LaneSum(lin)) - d - LaneSum(logs));
    }
  }
  return static_cast<float>(e);
}

// Adds s * dE(w, c)/d(row) to the word's gradients (gmw, gvw) and to the
// candidate's (gmc, gvc). `tmp` is the buffer PairEnergy filled for this
// pair.
//   el: dE/dmu_w = -delta, dE/dmu_c = delta, dE/dv_w = dE/dv_c
//       = 1/2 (delta^2 - 1/t), with t = v_w + v_c, delta = (mu_w - mu_c)/t.
//   kl: dE/dmu_w = -(mu_w - mu_c)/v_w, dE/dmu_c = (mu_w - mu_c)/v_w,
//       dE/dv_w = 1/2 (v_c + diff^2)/v_w^2 - 1/(2 v_w),
//       dE/dv_c = 1/2 (1/v_c - 1/v_w).
inline void AddPairGradients(Energy energy, bool sph, int64_t d, float s,
                             const float* mw, const float* vw, const float* mc,
                             const float* vc, const float* tmp, float* gmw,
                             float* gvw, float* gmc, float* gvc) {
  if (energy == Energy::kEL) {
    if (sph) {
      const float inv = 1.0f / (vw[0] + vc[0]);
      alignas(64) float acc[kLanes] = {};
      ForLanes(d, [&](int64_t i, int64_t j) {
        const float delta = (mw[i] - mc[i]) * inv;
        gmw[i] -= s * delta;
        gmc[i] += s * delta;
        acc[j] += delta * delta - inv;
      });
      const float g = 0.5f * s * LaneSum(acc);
      gvw[0] += g;
      gvc[0] += g;
    } else {
      const float* deltas = tmp;
      const float* inverse = tmp + d;
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) {
        const float inv = inverse[i];
        const float delta = deltas[i];
        gmw[i] -= s * delta;
        gmc[i] += s * delta;
        const float g = 0.5f * s * (delta * delta - inv);
        gvw[i] += g;
        gvc[i] += g;
      }
    }
  } else {
    if (sph) {
      const float inv_w = 1.0f / vw[0];
      const float inv_c = 1.0f / vc[0];
      alignas(64) float acc_w[kLanes] = {};
      ForLanes(d, [&](int64_t i, int64_t j) {
        const float diff = mw[i] - mc[i];
        const float gmu = diff * inv_w;
        gmw[i] -= s * gmu;
        gmc[i] += s * gmu;
        acc_w[j] += 0.5f * ((vc[0] + diff * diff) * inv_w * inv_w - inv_w);
      });
      gvw[0] += s * LaneSum(acc_w);
      gvc[0] += s * (0.5f * d * (inv_c - inv_w));
    } else {
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) {
        const float inv_w = 1.0f / vw[i];
        const float diff = mw[i] - mc[i];
        const float gmu = diff * inv_w;
        gmw[i] -= s * gmu;
        gmc[i] += s * gmu;
        gvw[i] += s * 0.5f * ((vc[i] + diff * diff) * inv_w * inv_w - inv_w);
        gvc[i] += s * 0.5f * (1.0f / vc[i] - inv_w);
      }
    }
  }
}

// AdaGrad on one row with gradient (scale * gm, scale * gv), then the row
// constraints: ||mu|| <= max_norm (scale the row) and min <= var <= max.
// `var_lr`: the variances' learning rate (< 0: `lr`, the means').
inline void UpdateRow(const Table& tb, int64_t row, int64_t d, int64_t dv,
                      const float* gm, const float* gv, float scale, float lr,
                      float eps, float var_lr = -1.f) {
  float* w = tb.Mean(row);
  float* a = tb.MeanAcc(row);
#pragma omp simd
  for (int64_t i = 0; i < d; ++i) {
    const float g = scale * gm[i];
    const float acc = a[i] + g * g;
    a[i] = acc;
    w[i] -= lr * g / std::sqrt(acc + eps);
  }
  if (tb.max_norm > 0.f) {
    alignas(64) float sq[kLanes] = {};
    ForLanes(d, [&](int64_t i, int64_t j) { sq[j] += w[i] * w[i]; });
    const float norm = std::sqrt(LaneSum(sq));
    const float f = std::min(1.0f, tb.max_norm / std::max(norm, 1e-30f));
    if (f < 1.0f) {
      for (int64_t i = 0; i < d; ++i) w[i] *= f;
    }
  }
  float* v = tb.Var(row);
  float* va = tb.VarAcc(row);
  const float lo = tb.min_variance, hi = tb.max_variance;
  const float vlr = var_lr < 0.f ? lr : var_lr;
#pragma omp simd
  for (int64_t i = 0; i < dv; ++i) {
    const float g = scale * gv[i];
    const float acc = va[i] + g * g;
    va[i] = acc;
    float nv = v[i] - vlr * g / std::sqrt(acc + eps);
    nv = nv < lo ? lo : nv;
    v[i] = nv > hi ? hi : nv;
  }
}


}  // namespace keras_gauss
}  // namespace tensorflow

#endif  // KERAS_GAUSS_FUSED_GAUSS_MATH_H_

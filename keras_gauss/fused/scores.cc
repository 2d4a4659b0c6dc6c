// The reconstruction evaluation's score blocks (keras_gauss.hierarchy.evaluate
// .reconstruction) as a plain C ABI library (no TensorFlow), loaded with
// ctypes by keras_gauss.fused.scores. Built into the native library by
// keras_gauss.fused.build.
//
// kg_scores_block fills the (b, n) float64 energies of b query rows q
// (specific) against every node (general), diagonal Gaussians:
//   containment: E = -sum_i max(0, (|mu_c - mu_q| + sigma_q) - sigma_c)^2
//   kl:          E = -1/2 (((sum_i ((mu_c - mu_q)^2 + var_q) * inv_var_c)
//                           + logdet_c) - logdet_q) - d)
// with every element formed in the NumPy code's order and each candidate's
// sum taken over i = 0..d-1 in order, so identical candidates score
// identically. A tile of candidates is transposed to (d, tile) so that the
// loop over candidates vectorises; query rows are split over threads (each
// output element is computed by one thread: the result does not depend on
// the thread count).
//
// kg_scores_ancestor_counts counts, for every (query row, ancestor) pair with
// score s = scores[row, ancestor], the row's entries > s and >= s (the
// counts of _ancestor_ranking; exact integers).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

#include "energies.h"

namespace {

using tensorflow::keras_gauss::Energy;

constexpr int64_t kTile = 256;  // candidates per transposed tile
constexpr int64_t kRowBlock = 32;  // query rows sharing one tile

// acc[j] += max(0, (|mt[j] - m| + s) - st[j])^2 for the t candidates of a tile.
inline void ContainmentTerm(int64_t t, double m, double s, const double* __restrict mt,
                            const double* __restrict st, double* __restrict acc) {
  for (int64_t j = 0; j < t; ++j) {
    double w = std::fabs(mt[j] - m) + s;
    w = w - st[j];
    w = 0.5 * (w + std::fabs(w));  // max(w, 0) exactly, in a form GCC vectorises
    const double w2 = w * w;
    acc[j] = acc[j] + w2;
  }
}

// Rows [row_begin, row_end) of the block.
void Block(Energy energy, int64_t n, int64_t d, const double* mu, const double* a,
           const double* b, const double* log_det, const int64_t* q, int64_t row_begin,
           int64_t row_end, double* out) {
  // a: sigma (containment) or var (kl); b: unused (containment) or inv_var (kl).
  std::vector<double> mu_t(d * kTile), a_t(d * kTile), acc(kTile);
  for (int64_t c = 0; c < n; c += kTile) {
    const int64_t t = std::min(kTile, n - c);
    for (int64_t j = 0; j < t; ++j) {
      for (int64_t k = 0; k < d; ++k) {
        mu_t[k * kTile + j] = mu[(c + j) * d + k];
        a_t[k * kTile + j] = energy == Energy::kContainment ? a[(c + j) * d + k] : b[(c + j) * d + k];
      }
    }
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kRowBlock) {
      const int64_t r1 = std::min(r0 + kRowBlock, row_end);
      for (int64_t r = r0; r < r1; ++r) {
        const double* mq = mu + q[r] * d;
        const double* aq = a + q[r] * d;
        double* acc_p = acc.data();
        std::fill(acc_p, acc_p + t, 0.0);
        if (energy == Energy::kContainment) {
          for (int64_t k = 0; k < d; ++k) {
            ContainmentTerm(t, mq[k], aq[k], mu_t.data() + k * kTile, a_t.data() + k * kTile,
                            acc_p);
          }
          double* o = out + r * n + c;
          for (int64_t j = 0; j < t; ++j) o[j] = -acc_p[j];
        } else {
          for (int64_t k = 0; k < d; ++k) {
            const double m = mq[k], v = aq[k];
            const double* mt = mu_t.data() + k * kTile;
            const double* it = a_t.data() + k * kTile;
#pragma omp simd
            for (int64_t j = 0; j < t; ++j) {
              const double diff = mt[j] - m;
              double x = diff * diff;
              x = x + v;
              const double y = x * it[j];
              acc_p[j] = acc_p[j] + y;
            }
          }
          const double ld_q = log_det[q[r]];
          const double dim = static_cast<double>(d);
          double* o = out + r * n + c;
          for (int64_t j = 0; j < t; ++j) {
            double e = acc_p[j] + log_det[c + j];
            e = e - ld_q;
            e = e - dim;
            o[j] = -0.5 * e;
          }
        }
      }
    }
  }
}

// Pairs [p_begin, p_end) of the counts.
void Counts(int64_t n, const double* scores, const int64_t* pair_row, const int64_t* ids,
            int64_t p_begin, int64_t p_end, int64_t* gt, int64_t* ge) {
  for (int64_t p = p_begin; p < p_end; ++p) {
    const double* row = scores + pair_row[p] * n;
    const double s = row[ids[p]];
    int64_t g = 0, e = 0;
#pragma omp simd reduction(+ : g, e)
    for (int64_t j = 0; j < n; ++j) {
      g += row[j] > s;
      e += row[j] >= s;
    }
    gt[p] = g;
    ge[p] = e;
  }
}

// Runs work(begin, end) over [0, count) split into `threads` contiguous parts.
template <typename Work>
void Split(int64_t count, int threads, const Work& work) {
  threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, count)));
  std::vector<std::thread> pool;
  int64_t begin = 0;
  for (int i = 0; i < threads; ++i) {
    const int64_t end = count * (i + 1) / threads;
    if (i + 1 < threads) {
      try {
        pool.emplace_back(work, begin, end);
      } catch (const std::system_error&) {  // no thread to be had: do it here
        work(begin, end);
      }
    } else {
      work(begin, end);
    }
    begin = end;
  }
  for (auto& thread : pool) thread.join();
}

}  // namespace

extern "C" {

int kg_scores_version() { return 1; }

// energy: its code (energies.h): KL (a = var, b = inv_var, log_det used) or containment
// (a = sigma). Tables (n, d) float64 row-major; q: b int64 ids; out: (b, n).
void kg_scores_block(int energy, int64_t n, int64_t d, const double* mu, const double* a,
                     const double* b, const double* log_det, const int64_t* q, int64_t rows,
                     int threads, double* out) {
  Split(rows, threads, [&](int64_t begin, int64_t end) {
    Block(tensorflow::keras_gauss::EnergyOfCode(energy), n, d, mu, a, b, log_det, q, begin, end, out);
  });
}

// scores: (rows, n) float64; pair p is (pair_row[p], ids[p]); gt, ge: (pairs,).
void kg_scores_ancestor_counts(int64_t n, const double* scores, int64_t pairs,
                               const int64_t* pair_row, const int64_t* ids, int threads,
                               int64_t* gt, int64_t* ge) {
  Split(pairs, threads, [&](int64_t begin, int64_t end) {
    Counts(n, scores, pair_row, ids, begin, end, gt, ge);
  });
}

}  // extern "C"

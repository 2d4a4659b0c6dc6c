// Fused training step of Gaussian embeddings (Vilnis & McCallum, 2015).
//
// One op does what the Keras path (GaussianEmbedding lookups -> ELEnergy or
// KLEnergy -> MaxMarginRanking averaged over the batch -> SparseAdagrad with
// row constraints) does for one minibatch of (word, context, negatives):
//
//   1. energies E(w, c+) and E(w, c-_k) and the hinge loss
//      sum_k max(0, margin - E(w, c+) + E(w, c-_k)), averaged over the batch;
//   2. closed-form gradients of that mean loss for every gathered row,
//      all computed from the parameters *before* the update;
//   3. the gradients of repeated rows summed (exact minibatch gradient);
//   4. AdaGrad once per touched row (acc += g^2; w -= lr g / sqrt(acc + eps)),
//      then the row constraints: ||mu|| <= C (scale the row) and
//      m <= var <= M (clip).
//
// Energies (the -d/2 log 2pi constant of EL is dropped: it cancels in the
// hinge):
//   el: E = -1/2 sum_i [log(v_w + v_c) + (mu_w - mu_c)^2 / (v_w + v_c)]
//   kl: E = -KL(N_context || N_word)   (word = general, context = specific)
//         = -1/2 sum_i [v_c / v_w + (mu_w - mu_c)^2 / v_w - 1 - log(v_c / v_w)]
// Spherical tables have one variance per row (shape (V, 1)); its gradient is
// the sum of the diagonal gradient over the d dimensions.
//
// Work is split over TensorFlow's intra-op thread pool: examples in phase 1,
// unique rows in phase 3 (each row is owned by one shard, so no atomics).
// Deduplication (phase 2) is a serial pass with a per-table slot array
// (O(batch), no sorting).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/resource_var.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/util/work_sharder.h"

namespace tensorflow {
namespace {

REGISTER_OP("KerasGaussRankingStep")
    .Input("word_means: resource")
    .Input("word_variances: resource")
    .Input("context_means: resource")
    .Input("context_variances: resource")
    .Input("word_means_accumulator: resource")
    .Input("word_variances_accumulator: resource")
    .Input("context_means_accumulator: resource")
    .Input("context_variances_accumulator: resource")
    .Input("word: int32")
    .Input("context: int32")
    .Input("negatives: int32")
    .Input("learning_rate: float")
    .Input("margin: float")
    .Input("epsilon: float")
    .Input("max_norm: float")
    .Input("min_variance: float")
    .Input("max_variance: float")
    .Output("loss: float")
    .Attr("energy: {'el', 'kl'} = 'el'")
    .Attr("spherical: bool = false")
    .SetIsStateful()
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
Fused ranking step of Gaussian embeddings: energies, mean hinge loss,
closed-form gradients, duplicate-row summing, AdaGrad and row constraints.
Pass the same variables twice for a shared word/context table. max_norm,
min_variance and max_variance are (2,) vectors [word table, context table];
max_norm <= 0 means no norm bound. Returns the mean loss.
)doc");

enum class Energy { kEL, kKL };

// Sum of log(x[i]) over n positive values with a single log: the product is
// taken in double, 8 values at a time, and renormalised to [1, 2) after each
// block by moving the binary exponent into an integer (no overflow or
// underflow for any positive normal floats).
inline double SumLog(const float* x, int64_t n) {
  double m = 1.0;
  int64_t exponent = 0;
  auto renormalise = [&]() {
    uint64_t bits;
    std::memcpy(&bits, &m, sizeof(bits));
    exponent += static_cast<int64_t>((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ~(0x7ffULL << 52)) | (1023ULL << 52);
    std::memcpy(&m, &bits, sizeof(bits));
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const double p = static_cast<double>(x[i]) * x[i + 1];
    const double q = static_cast<double>(x[i + 2]) * x[i + 3];
    const double r = static_cast<double>(x[i + 4]) * x[i + 5];
    const double s = static_cast<double>(x[i + 6]) * x[i + 7];
    m *= (p * q) * (r * s);
    renormalise();
  }
  for (; i < n; ++i) m *= x[i];
  renormalise();
  return std::log(m) + static_cast<double>(exponent) * 0.69314718055994530942;
}

inline void PrefetchRow(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(p + i, 1, 1);
  __builtin_prefetch(p + n - 1, 1, 1);
}

struct Table {
  float* means = nullptr;
  float* variances = nullptr;
  float* mean_acc = nullptr;
  float* var_acc = nullptr;
  int64_t rows = 0;
  float max_norm = 0.f;
  float min_variance = 0.f;
  float max_variance = 0.f;
};

class RankingStepOp : public OpKernel {
 public:
  explicit RankingStepOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string energy;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("energy", &energy));
    energy_ = energy == "kl" ? Energy::kKL : Energy::kEL;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("spherical", &spherical_));
  }

  void Compute(OpKernelContext* ctx) override {
    // ---- Variables -------------------------------------------------------
    static const char* kNames[8] = {
        "word_means",           "word_variances",
        "context_means",        "context_variances",
        "word_means_accumulator", "word_variances_accumulator",
        "context_means_accumulator", "context_variances_accumulator"};
    core::RefCountPtr<Var> vars[8];
    for (int i = 0; i < 8; ++i) {
      OP_REQUIRES_OK(ctx, LookupResource(ctx, HandleFromInput(ctx, i), &vars[i]));
      OP_REQUIRES(ctx, vars[i]->tensor()->dtype() == DT_FLOAT,
                  errors::InvalidArgument(kNames[i], " must be float32, got ",
                                          DataTypeString(vars[i]->tensor()->dtype())));
      OP_REQUIRES(ctx, vars[i]->is_initialized,
                  errors::FailedPrecondition(kNames[i], " is not initialized."));
    }
    const bool shared = vars[0].get() == vars[2].get();
    if (shared) {
      OP_REQUIRES(ctx,
                  vars[1].get() == vars[3].get() && vars[4].get() == vars[6].get() &&
                      vars[5].get() == vars[7].get(),
                  errors::InvalidArgument(
                      "word_means and context_means are the same variable (shared "
                      "table), so the variances and accumulators must be shared too."));
    }

    const Tensor& word_t = ctx->input(8);
    const Tensor& context_t = ctx->input(9);
    const Tensor& negatives_t = ctx->input(10);
    OP_REQUIRES(ctx, TensorShapeUtils::IsVector(word_t.shape()),
                errors::InvalidArgument("`word` must be a vector (B,), got shape ",
                                        word_t.shape().DebugString()));
    const int64_t batch = word_t.dim_size(0);
    OP_REQUIRES(ctx, TensorShapeUtils::IsVector(context_t.shape()) &&
                         context_t.dim_size(0) == batch,
                errors::InvalidArgument("`context` must have shape (", batch,
                                        ",), got ", context_t.shape().DebugString()));
    OP_REQUIRES(ctx, TensorShapeUtils::IsMatrix(negatives_t.shape()) &&
                         negatives_t.dim_size(0) == batch,
                errors::InvalidArgument("`negatives` must have shape (", batch,
                                        ", k), got ", negatives_t.shape().DebugString()));
    const int64_t k = negatives_t.dim_size(1);
    for (int i = 11; i < 14; ++i) {
      OP_REQUIRES(ctx, TensorShapeUtils::IsScalar(ctx->input(i).shape()),
                  errors::InvalidArgument("input ", i, " must be a scalar."));
    }
    for (int i = 14; i < 17; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).NumElements() == 2,
                  errors::InvalidArgument(
                      "max_norm, min_variance and max_variance must have 2 values "
                      "(word table, context table)."));
    }
    const float lr = ctx->input(11).scalar<float>()();
    const float margin = ctx->input(12).scalar<float>()();
    const float eps = ctx->input(13).scalar<float>()();

    // Shapes: means (V, d), variances and accumulators (V, d) or (V, 1).
    const Tensor& wm = *vars[0]->tensor();
    OP_REQUIRES(ctx, TensorShapeUtils::IsMatrix(wm.shape()),
                errors::InvalidArgument("word_means must be (V, d), got ",
                                        wm.shape().DebugString()));
    const int64_t d = wm.dim_size(1);
    const int64_t dv = spherical_ ? 1 : d;
    const int64_t n_tables = shared ? 1 : 2;
    for (int t = 0; t < 2; ++t) {
      const int64_t rows = vars[2 * t]->tensor()->dim_size(0);
      const TensorShape mean_shape({rows, d});
      const TensorShape var_shape({rows, dv});
      const int idx[4] = {2 * t, 2 * t + 1, 4 + 2 * t, 5 + 2 * t};
      const TensorShape* want[4] = {&mean_shape, &var_shape, &mean_shape, &var_shape};
      for (int j = 0; j < 4; ++j) {
        OP_REQUIRES(ctx, vars[idx[j]]->tensor()->shape() == *want[j],
                    errors::InvalidArgument(
                        kNames[idx[j]], " has shape ",
                        vars[idx[j]]->tensor()->shape().DebugString(), ", expected ",
                        want[j]->DebugString(),
                        spherical_ ? " (spherical=True: variances are (V, 1))"
                                   : " (spherical=False: variances are (V, d))"));
      }
    }

    // ---- Id range checks --------------------------------------------------
    const int32_t* word = word_t.flat<int32_t>().data();
    const int32_t* context = context_t.flat<int32_t>().data();
    const int32_t* negatives = negatives_t.flat<int32_t>().data();
    const int64_t word_rows = vars[0]->tensor()->dim_size(0);
    const int64_t context_rows = vars[2]->tensor()->dim_size(0);
    OP_REQUIRES_OK(ctx, CheckIds("word", word, batch, word_rows, "word"));
    OP_REQUIRES_OK(ctx, CheckIds("context", context, batch, context_rows,
                                 shared ? "shared" : "context"));
    OP_REQUIRES_OK(ctx, CheckIds("negatives", negatives, batch * k, context_rows,
                                 shared ? "shared" : "context"));

    // ---- Lock (in address order, each variable once) and make the buffers
    // safe to update in place (TF's EnsureSparseVariableAccess logic). ------
    std::vector<Var*> unique_vars;
    for (auto& v : vars) {
      if (std::find(unique_vars.begin(), unique_vars.end(), v.get()) ==
          unique_vars.end())
        unique_vars.push_back(v.get());
    }
    std::sort(unique_vars.begin(), unique_vars.end(),
              [](Var* a, Var* b) { return a->mu() < b->mu(); });
    std::vector<mutex_lock> locks;
    locks.reserve(unique_vars.size());
    for (Var* v : unique_vars) {
      locks.emplace_back(*v->mu());
      if (!v->tensor()->RefCountIsOne()) {
        // Someone holds the buffer (a dense read): copy before writing.
        Tensor copy;
        OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_FLOAT, v->tensor()->shape(), &copy));
        std::memcpy(copy.flat<float>().data(), v->tensor()->flat<float>().data(),
                    sizeof(float) * v->tensor()->NumElements());
        *v->tensor() = copy;
      }
      v->copy_on_read_mode.store(true);
    }

    Table tables[2];
    for (int t = 0; t < 2; ++t) {
      tables[t].means = vars[2 * t]->tensor()->flat<float>().data();
      tables[t].variances = vars[2 * t + 1]->tensor()->flat<float>().data();
      tables[t].mean_acc = vars[4 + 2 * t]->tensor()->flat<float>().data();
      tables[t].var_acc = vars[5 + 2 * t]->tensor()->flat<float>().data();
      tables[t].rows = vars[2 * t]->tensor()->dim_size(0);
      tables[t].max_norm = ctx->input(14).flat<float>()(t);
      tables[t].min_variance = ctx->input(15).flat<float>()(t);
      tables[t].max_variance = ctx->input(16).flat<float>()(t);
    }

    Tensor* loss_out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &loss_out));
    if (batch == 0) {
      loss_out->scalar<float>()() = 0.f;
      return;
    }

    mutex_lock scratch_lock(scratch_mu_);
    const int64_t list = 1 + k;
    const int64_t n_occ = batch + batch * list;  // words, then contexts
    occ_mean_grad_.resize(n_occ * d);
    occ_var_grad_.resize(n_occ * dv);
    example_loss_.resize(batch);

    auto worker_threads = ctx->device()->tensorflow_cpu_worker_threads();
    const float scale = 1.0f / static_cast<float>(batch);

    // ---- Phase 1: energies, loss and per-occurrence gradients ------------
    {
      const Table& wt = tables[0];
      const Table& ct = tables[shared ? 0 : 1];
      float* gm = occ_mean_grad_.data();
      float* gv = occ_var_grad_.data();
      float* losses = example_loss_.data();
      const bool sph = spherical_;
      const Energy energy = energy_;
      auto work = [&](int64_t begin, int64_t end) {
        std::vector<float> tmp(d), energies(list), coef(list);
        for (int64_t b = begin; b < end; ++b) {
          if (b + 2 < end) {
            const int64_t nb = b + 2;
            PrefetchRow(wt.means + static_cast<int64_t>(word[nb]) * d, d);
            PrefetchRow(wt.variances + static_cast<int64_t>(word[nb]) * dv, dv);
            for (int64_t j = 0; j < list; ++j) {
              const int64_t c = j == 0 ? context[nb] : negatives[nb * k + j - 1];
              PrefetchRow(ct.means + c * d, d);
              PrefetchRow(ct.variances + c * dv, dv);
            }
          }
          const float* mw = wt.means + static_cast<int64_t>(word[b]) * d;
          const float* vw = wt.variances + static_cast<int64_t>(word[b]) * dv;
          auto cid = [&](int64_t j) -> int64_t {
            return j == 0 ? context[b] : negatives[b * k + j - 1];
          };
          // Energies.
          for (int64_t j = 0; j < list; ++j) {
            const float* mc = ct.means + cid(j) * d;
            const float* vc = ct.variances + cid(j) * dv;
            double e;
            if (energy == Energy::kEL) {
              if (sph) {
                const float t = vw[0] + vc[0];
                float sq = 0.f;
#pragma omp simd reduction(+ : sq)
                for (int64_t i = 0; i < d; ++i) {
                  const float diff = mw[i] - mc[i];
                  sq += diff * diff;
                }
                e = -0.5 * (d * std::log(static_cast<double>(t)) + sq / t);
              } else {
                float quad = 0.f;
#pragma omp simd reduction(+ : quad)
                for (int64_t i = 0; i < d; ++i) {
                  const float t = vw[i] + vc[i];
                  const float diff = mw[i] - mc[i];
                  tmp[i] = t;
                  quad += diff * diff / t;
                }
                e = -0.5 * (SumLog(tmp.data(), d) + quad);
              }
            } else {  // KL(N_c || N_w), E = -KL
              if (sph) {
                const float inv = 1.0f / vw[0];
                float sq = 0.f;
#pragma omp simd reduction(+ : sq)
                for (int64_t i = 0; i < d; ++i) {
                  const float diff = mw[i] - mc[i];
                  sq += diff * diff;
                }
                const double ratio = static_cast<double>(vc[0]) / vw[0];
                e = -0.5 * (d * ratio + sq * inv - d - d * std::log(ratio));
              } else {
                float lin = 0.f;
#pragma omp simd reduction(+ : lin)
                for (int64_t i = 0; i < d; ++i) {
                  const float inv = 1.0f / vw[i];
                  const float diff = mw[i] - mc[i];
                  const float ratio = vc[i] * inv;
                  tmp[i] = ratio;
                  lin += ratio + diff * diff * inv;
                }
                e = -0.5 * (lin - d - SumLog(tmp.data(), d));
              }
            }
            energies[j] = static_cast<float>(e);
          }
          // Hinge: dLoss/dE.
          double loss = 0.0;
          float pos_coef = 0.f;
          coef[0] = 0.f;
          for (int64_t j = 1; j < list; ++j) {
            const float h = margin - energies[0] + energies[j];
            if (h > 0.f) {
              loss += h;
              coef[j] = scale;
              pos_coef -= scale;
            } else {
              coef[j] = 0.f;
            }
          }
          coef[0] = pos_coef;
          losses[b] = static_cast<float>(loss);
          // Gradients of the mean loss.
          float* gmw = gm + b * d;
          float* gvw = gv + b * dv;
          std::fill(gmw, gmw + d, 0.f);
          std::fill(gvw, gvw + dv, 0.f);
          for (int64_t j = 0; j < list; ++j) {
            const int64_t o = batch + b * list + j;
            float* gmc = gm + o * d;
            float* gvc = gv + o * dv;
            const float s = coef[j];
            if (s == 0.f) {
              std::fill(gmc, gmc + d, 0.f);
              std::fill(gvc, gvc + dv, 0.f);
              continue;
            }
            const float* mc = ct.means + cid(j) * d;
            const float* vc = ct.variances + cid(j) * dv;
            if (energy == Energy::kEL) {
              // dE/dmu_w = -delta, dE/dmu_c = delta,
              // dE/dv_w = dE/dv_c = 1/2 (delta^2 - 1/t), delta = (mu_w-mu_c)/t.
              if (sph) {
                const float inv = 1.0f / (vw[0] + vc[0]);
                float acc = 0.f;
#pragma omp simd reduction(+ : acc)
                for (int64_t i = 0; i < d; ++i) {
                  const float delta = (mw[i] - mc[i]) * inv;
                  gmw[i] -= s * delta;
                  gmc[i] = s * delta;
                  acc += delta * delta - inv;
                }
                const float g = 0.5f * s * acc;
                gvw[0] += g;
                gvc[0] = g;
              } else {
                for (int64_t i = 0; i < d; ++i) {
                  const float inv = 1.0f / (vw[i] + vc[i]);
                  const float delta = (mw[i] - mc[i]) * inv;
                  gmw[i] -= s * delta;
                  gmc[i] = s * delta;
                  const float g = 0.5f * s * (delta * delta - inv);
                  gvw[i] += g;
                  gvc[i] = g;
                }
              }
            } else {
              // E = -1/2 sum [v_c/v_w + (mu_w-mu_c)^2/v_w - 1 - log v_c + log v_w]
              // dE/dmu_w = -(mu_w-mu_c)/v_w, dE/dmu_c = (mu_w-mu_c)/v_w,
              // dE/dv_w = 1/2 (v_c + diff^2)/v_w^2 - 1/(2 v_w),
              // dE/dv_c = 1/2 (1/v_c - 1/v_w).
              if (sph) {
                const float inv_w = 1.0f / vw[0];
                const float inv_c = 1.0f / vc[0];
                float acc_w = 0.f;
#pragma omp simd reduction(+ : acc_w)
                for (int64_t i = 0; i < d; ++i) {
                  const float diff = mw[i] - mc[i];
                  const float gmu = diff * inv_w;
                  gmw[i] -= s * gmu;
                  gmc[i] = s * gmu;
                  acc_w += 0.5f * ((vc[0] + diff * diff) * inv_w * inv_w - inv_w);
                }
                gvw[0] += s * acc_w;
                gvc[0] = s * (0.5f * d * (inv_c - inv_w));
              } else {
                for (int64_t i = 0; i < d; ++i) {
                  const float inv_w = 1.0f / vw[i];
                  const float diff = mw[i] - mc[i];
                  const float gmu = diff * inv_w;
                  gmw[i] -= s * gmu;
                  gmc[i] = s * gmu;
                  gvw[i] += s * 0.5f * ((vc[i] + diff * diff) * inv_w * inv_w - inv_w);
                  gvc[i] = s * 0.5f * (1.0f / vc[i] - inv_w);
                }
              }
            }
          }
        }
      };
      const int64_t cost = list * d * 40 + 100;
      Shard(worker_threads->num_threads, worker_threads->workers, batch, cost, work);
    }

    // ---- Phase 2: dedupe rows per table (CSR of occurrences) -------------
    // Occurrences [0, batch) are words; [batch, n_occ) contexts.
    int64_t n_unique[2] = {0, 0};
    uniq_rows_.resize(n_occ);       // unique rows, table 0 first then table 1
    row_offsets_.resize(n_occ + 2);  // CSR offsets over the unique rows
    occ_order_.resize(n_occ);        // occurrences grouped by unique row
    occ_slot_.resize(n_occ);
    row_table_.resize(n_occ);
    int64_t n_total = 0;
    for (int64_t t = 0; t < n_tables; ++t) {
      std::vector<int32_t>& slot = slots_[t];
      if (static_cast<int64_t>(slot.size()) != tables[t].rows) {
        slot.assign(tables[t].rows, -1);
      }
      const int64_t first = n_total;
      auto visit = [&](int64_t o, int32_t row) {
        int32_t s = slot[row];
        if (s < 0) {
          s = static_cast<int32_t>(n_total++);
          slot[row] = s;
          uniq_rows_[s] = row;
          row_table_[s] = static_cast<int8_t>(t);
          row_offsets_[s + 1] = 0;
        }
        row_offsets_[s + 1]++;
        occ_slot_[o] = s;
      };
      if (t == 0) {
        for (int64_t b = 0; b < batch; ++b) visit(b, word[b]);
      }
      if (t == 1 || shared) {
        for (int64_t b = 0; b < batch; ++b) {
          visit(batch + b * list, context[b]);
          for (int64_t j = 1; j < list; ++j)
            visit(batch + b * list + j, negatives[b * k + j - 1]);
        }
      }
      for (int64_t s = first; s < n_total; ++s) slot[uniq_rows_[s]] = -1;
      n_unique[t] = n_total - first;
    }
    row_offsets_[0] = 0;
    for (int64_t s = 0; s < n_total; ++s) row_offsets_[s + 1] += row_offsets_[s];
    {
      fill_.assign(row_offsets_.begin(), row_offsets_.begin() + n_total);
      for (int64_t o = 0; o < n_occ; ++o) occ_order_[fill_[occ_slot_[o]]++] = o;
    }

    // ---- Phase 3: AdaGrad + constraints, once per unique row -------------
    {
      const float* gm = occ_mean_grad_.data();
      const float* gv = occ_var_grad_.data();
      auto update = [&](int64_t begin, int64_t end) {
        std::vector<float> gmean(d), gvar(dv);
        for (int64_t s = begin; s < end; ++s) {
          if (s + 2 < end) {
            const int64_t ns = s + 2;
            const Table& nt = tables[row_table_[ns]];
            const int64_t nrow = uniq_rows_[ns];
            PrefetchRow(nt.means + nrow * d, d);
            PrefetchRow(nt.mean_acc + nrow * d, d);
            PrefetchRow(nt.variances + nrow * dv, dv);
            PrefetchRow(nt.var_acc + nrow * dv, dv);
            for (int64_t p = row_offsets_[ns]; p < row_offsets_[ns + 1]; ++p) {
              PrefetchRow(gm + occ_order_[p] * d, d);
              PrefetchRow(gv + occ_order_[p] * dv, dv);
            }
          }
          const Table& tb = tables[row_table_[s]];
          const int64_t row = uniq_rows_[s];
          std::fill(gmean.begin(), gmean.end(), 0.f);
          std::fill(gvar.begin(), gvar.end(), 0.f);
          for (int64_t p = row_offsets_[s]; p < row_offsets_[s + 1]; ++p) {
            const int64_t o = occ_order_[p];
            const float* src = gm + o * d;
            for (int64_t i = 0; i < d; ++i) gmean[i] += src[i];
            const float* vsrc = gv + o * dv;
            for (int64_t i = 0; i < dv; ++i) gvar[i] += vsrc[i];
          }
          float* w = tb.means + row * d;
          float* a = tb.mean_acc + row * d;
          for (int64_t i = 0; i < d; ++i) {
            const float g = gmean[i];
            const float acc = a[i] + g * g;
            a[i] = acc;
            w[i] -= lr * g / std::sqrt(acc + eps);
          }
          if (tb.max_norm > 0.f) {
            float sq = 0.f;
#pragma omp simd reduction(+ : sq)
            for (int64_t i = 0; i < d; ++i) sq += w[i] * w[i];
            const float norm = std::sqrt(sq);
            const float f = std::min(1.0f, tb.max_norm / std::max(norm, 1e-30f));
            if (f < 1.0f) {
              for (int64_t i = 0; i < d; ++i) w[i] *= f;
            }
          }
          float* v = tb.variances + row * dv;
          float* va = tb.var_acc + row * dv;
          for (int64_t i = 0; i < dv; ++i) {
            const float g = gvar[i];
            const float acc = va[i] + g * g;
            va[i] = acc;
            const float nv = v[i] - lr * g / std::sqrt(acc + eps);
            v[i] = std::min(tb.max_variance, std::max(tb.min_variance, nv));
          }
        }
      };
      const int64_t cost = (d + dv) * 30 * std::max<int64_t>(1, n_occ / std::max<int64_t>(1, n_total));
      Shard(worker_threads->num_threads, worker_threads->workers, n_total, cost, update);
    }

    double total = 0.0;
    for (int64_t b = 0; b < batch; ++b) total += example_loss_[b];
    loss_out->scalar<float>()() = static_cast<float>(total / batch);
  }

 private:
  static absl::Status CheckIds(const char* input, const int32_t* ids, int64_t n,
                               int64_t rows, const char* table) {
    for (int64_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= rows) {
        return errors::InvalidArgument(
            "KerasGaussRankingStep: `", input, "` holds id ", ids[i],
            " (at flat position ", i, "), outside [0, ", rows, "): the ", table,
            " table has ", rows, " rows.");
      }
    }
    return absl::OkStatus();
  }

  Energy energy_;
  bool spherical_;
  mutex scratch_mu_;
  std::vector<float> occ_mean_grad_, occ_var_grad_, example_loss_;
  std::vector<int32_t> slots_[2];
  std::vector<int32_t> uniq_rows_;
  std::vector<int64_t> row_offsets_, fill_, occ_order_;
  std::vector<int32_t> occ_slot_;
  std::vector<int8_t> row_table_;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussRankingStep").Device(DEVICE_CPU),
                        RankingStepOp);

}  // namespace
}  // namespace tensorflow

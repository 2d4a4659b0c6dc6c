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
// The energies, gradients and row update are in gauss_math.h. Work is split
// over TensorFlow's intra-op thread pool: examples in phase 1, unique rows in
// phase 3 (each row is owned by one shard, so no atomics). Deduplication
// (phase 2) is a serial pass with a per-table slot array (O(batch), no
// sorting).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gauss_math.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/util/work_sharder.h"

namespace tensorflow {
namespace {

using keras_gauss::AddPairGradients;
using keras_gauss::CheckIds;
using keras_gauss::Energy;
using keras_gauss::PairEnergy;
using keras_gauss::PrefetchRow;
using keras_gauss::StepVariables;
using keras_gauss::Table;
using keras_gauss::UpdateRow;

// Phases 2 and 3 of both ranking ops: group the gathered occurrences by the
// row they touch (a CSR over unique rows, built with a per-table slot array:
// O(occurrences), no sorting), then sum each row's gradients and apply
// AdaGrad and the row constraints once per unique row. Each row is owned by
// one shard, so no atomics. Scratch buffers live between calls.
class RowUpdater {
 public:
  // `each_occurrence(t, visit)` calls visit(occurrence, row) for every
  // occurrence of table t; occurrences index the gradient buffers.
  template <typename EachOccurrence>
  void Group(int64_t n_tables, const Table* tables, int64_t n_occ,
             EachOccurrence each_occurrence) {
    uniq_rows_.resize(n_occ);       // unique rows, table 0 first then table 1
    row_offsets_.resize(n_occ + 2);  // CSR offsets over the unique rows
    occ_order_.resize(n_occ);        // occurrences grouped by unique row
    occ_slot_.resize(n_occ);
    row_table_.resize(n_occ);
    n_occ_ = n_occ;
    n_total_ = 0;
    for (int64_t t = 0; t < n_tables; ++t) {
      std::vector<int32_t>& slot = slots_[t];
      if (static_cast<int64_t>(slot.size()) != tables[t].rows) {
        slot.assign(tables[t].rows, -1);
      }
      const int64_t first = n_total_;
      auto visit = [&](int64_t o, int32_t row) {
        int32_t s = slot[row];
        if (s < 0) {
          s = static_cast<int32_t>(n_total_++);
          slot[row] = s;
          uniq_rows_[s] = row;
          row_table_[s] = static_cast<int8_t>(t);
          row_offsets_[s + 1] = 0;
        }
        row_offsets_[s + 1]++;
        occ_slot_[o] = s;
      };
      each_occurrence(t, visit);
      for (int64_t s = first; s < n_total_; ++s) slot[uniq_rows_[s]] = -1;
    }
    row_offsets_[0] = 0;
    for (int64_t s = 0; s < n_total_; ++s) row_offsets_[s + 1] += row_offsets_[s];
    fill_.assign(row_offsets_.begin(), row_offsets_.begin() + n_total_);
    for (int64_t o = 0; o < n_occ; ++o) occ_order_[fill_[occ_slot_[o]]++] = o;
  }

  // Sums the grouped per-occurrence gradients `gm` (n_occ, d) and `gv`
  // (n_occ, dv) per row and updates each unique row once.
  void Apply(OpKernelContext* ctx, const Table* tables, int64_t d, int64_t dv,
             const float* gm, const float* gv, float lr, float eps) {
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
        UpdateRow(tb, row, d, dv, gmean.data(), gvar.data(), 1.0f, lr, eps);
      }
    };
    auto worker_threads = ctx->device()->tensorflow_cpu_worker_threads();
    const int64_t cost =
        (d + dv) * 30 * std::max<int64_t>(1, n_occ_ / std::max<int64_t>(1, n_total_));
    Shard(worker_threads->num_threads, worker_threads->workers, n_total_, cost, update);
  }

 private:
  int64_t n_occ_ = 0, n_total_ = 0;
  std::vector<int32_t> slots_[2];
  std::vector<int32_t> uniq_rows_;
  std::vector<int64_t> row_offsets_, fill_, occ_order_;
  std::vector<int32_t> occ_slot_;
  std::vector<int8_t> row_table_;
};

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

class RankingStepOp : public OpKernel {
 public:
  explicit RankingStepOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string energy;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("energy", &energy));
    energy_ = energy == "kl" ? Energy::kKL : Energy::kEL;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("spherical", &spherical_));
  }

  void Compute(OpKernelContext* ctx) override {
    // ---- Inputs ------------------------------------------------------------
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
    // ---- Variables (checked and locked while `variables` lives) -----------
    StepVariables variables(ctx, spherical_, /*scalars=*/11);
    if (!variables.ok()) return;
    const float lr = variables.learning_rate();
    const float margin = variables.margin();
    const float eps = variables.epsilon();
    const bool shared = variables.shared();
    const int64_t d = variables.d();
    const int64_t dv = variables.dv();
    const int64_t n_tables = shared ? 1 : 2;
    const Table tables[2] = {variables.table(0), variables.table(1)};

    // ---- Id range checks --------------------------------------------------
    static const char* kOp = "KerasGaussRankingStep";
    const int32_t* word = word_t.flat<int32_t>().data();
    const int32_t* context = context_t.flat<int32_t>().data();
    const int32_t* negatives = negatives_t.flat<int32_t>().data();
    const int64_t word_rows = tables[0].rows;
    const int64_t context_rows = tables[1].rows;
    OP_REQUIRES_OK(ctx, CheckIds(kOp, "word", word, batch, word_rows, "word"));
    OP_REQUIRES_OK(ctx, CheckIds(kOp, "context", context, batch, context_rows,
                                 shared ? "shared" : "context"));
    OP_REQUIRES_OK(ctx, CheckIds(kOp, "negatives", negatives, batch * k, context_rows,
                                 shared ? "shared" : "context"));

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
        std::vector<float> tmp(list * 2 * d), energies(list), coef(list);
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
            energies[j] = PairEnergy(energy, sph, d, mw, vw, ct.means + cid(j) * d,
                                     ct.variances + cid(j) * dv, tmp.data() + j * 2 * d);
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
            std::fill(gmc, gmc + d, 0.f);
            std::fill(gvc, gvc + dv, 0.f);
            AddPairGradients(energy, sph, d, s, mw, vw, ct.means + cid(j) * d,
                             ct.variances + cid(j) * dv, tmp.data() + j * 2 * d, gmw,
                             gvw, gmc, gvc);
          }
        }
      };
      const int64_t cost = list * d * 40 + 100;
      Shard(worker_threads->num_threads, worker_threads->workers, batch, cost, work);
    }

    // ---- Phases 2 and 3: group by row, AdaGrad + constraints per row -----
    // Occurrences [0, batch) are words; [batch, n_occ) contexts.
    rows_.Group(n_tables, tables, n_occ, [&](int64_t t, auto& visit) {
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
    });
    rows_.Apply(ctx, tables, d, dv, occ_mean_grad_.data(), occ_var_grad_.data(), lr, eps);

    double total = 0.0;
    for (int64_t b = 0; b < batch; ++b) total += example_loss_[b];
    loss_out->scalar<float>()() = static_cast<float>(total / batch);
  }

 private:
  Energy energy_;
  bool spherical_;
  mutex scratch_mu_;
  std::vector<float> occ_mean_grad_, occ_var_grad_, example_loss_;
  RowUpdater rows_;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussRankingStep").Device(DEVICE_CPU),
                        RankingStepOp);


// ---------------------------------------------------------------------------
// Pair ranking step: every candidate is its own (general, specific) pair, so
// both sides may change from candidate to candidate (the hierarchy model's
// corrupted and reversed edges). Candidate 0 of each row is the positive:
//   loss = mean_b sum_{j>0} max(0, margin - E(g_b0, s_b0) + E(g_bj, s_bj)),
// with the general side in the word table and the specific side in the
// context table (the same table, passed twice, for a hierarchy).

REGISTER_OP("KerasGaussPairRankingStep")
    .Input("word_means: resource")
    .Input("word_variances: resource")
    .Input("context_means: resource")
    .Input("context_variances: resource")
    .Input("word_means_accumulator: resource")
    .Input("word_variances_accumulator: resource")
    .Input("context_means_accumulator: resource")
    .Input("context_variances_accumulator: resource")
    .Input("general: int32")
    .Input("specific: int32")
    .Input("learning_rate: float")
    .Input("margin: float")
    .Input("epsilon: float")
    .Input("max_norm: float")
    .Input("min_variance: float")
    .Input("max_variance: float")
    .Output("loss: float")
    .Attr("energy: {'el', 'kl'} = 'kl'")
    .Attr("spherical: bool = false")
    .SetIsStateful()
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
Fused ranking step over (general, specific) pairs: general and specific are
(B, 1 + k) ids, column 0 the positive pair. The general side is scored from
the word table, the specific side from the context table (pass the same
variables twice for a shared table); for energy 'kl', E = -KL(specific ||
general). Returns the mean hinge loss before the update.
)doc");

class PairRankingStepOp : public OpKernel {
 public:
  explicit PairRankingStepOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string energy;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("energy", &energy));
    energy_ = energy == "kl" ? Energy::kKL : Energy::kEL;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("spherical", &spherical_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& general_t = ctx->input(8);
    const Tensor& specific_t = ctx->input(9);
    OP_REQUIRES(ctx, TensorShapeUtils::IsMatrix(general_t.shape()) &&
                         general_t.dim_size(1) >= 1,
                errors::InvalidArgument("`general` must have shape (B, 1 + k), got ",
                                        general_t.shape().DebugString()));
    OP_REQUIRES(ctx, specific_t.shape() == general_t.shape(),
                errors::InvalidArgument("`specific` must have the shape of `general` ",
                                        general_t.shape().DebugString(), ", got ",
                                        specific_t.shape().DebugString()));
    const int64_t batch = general_t.dim_size(0);
    const int64_t list = general_t.dim_size(1);
    StepVariables variables(ctx, spherical_, /*scalars=*/10);
    if (!variables.ok()) return;
    const float lr = variables.learning_rate();
    const float margin = variables.margin();
    const float eps = variables.epsilon();
    const bool shared = variables.shared();
    const int64_t d = variables.d();
    const int64_t dv = variables.dv();
    const int64_t n_tables = shared ? 1 : 2;
    const Table tables[2] = {variables.table(0), variables.table(1)};

    static const char* kOp = "KerasGaussPairRankingStep";
    const int32_t* general = general_t.flat<int32_t>().data();
    const int32_t* specific = specific_t.flat<int32_t>().data();
    const int64_t n_pairs = batch * list;
    OP_REQUIRES_OK(ctx, CheckIds(kOp, "general", general, n_pairs, tables[0].rows,
                                 shared ? "shared" : "word"));
    OP_REQUIRES_OK(ctx, CheckIds(kOp, "specific", specific, n_pairs, tables[1].rows,
                                 shared ? "shared" : "context"));

    Tensor* loss_out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &loss_out));
    if (batch == 0) {
      loss_out->scalar<float>()() = 0.f;
      return;
    }

    mutex_lock scratch_lock(scratch_mu_);
    // Occurrences: [0, n_pairs) general sides, [n_pairs, 2 n_pairs) specific.
    const int64_t n_occ = 2 * n_pairs;
    occ_mean_grad_.resize(n_occ * d);
    occ_var_grad_.resize(n_occ * dv);
    example_loss_.resize(batch);
    auto worker_threads = ctx->device()->tensorflow_cpu_worker_threads();
    const float scale = 1.0f / static_cast<float>(batch);

    // ---- Phase 1: energies, loss and per-occurrence gradients ------------
    {
      const Table& gt = tables[0];
      const Table& st = tables[shared ? 0 : 1];
      float* gm = occ_mean_grad_.data();
      float* gv = occ_var_grad_.data();
      float* losses = example_loss_.data();
      const bool sph = spherical_;
      const Energy energy = energy_;
      auto work = [&](int64_t begin, int64_t end) {
        std::vector<float> tmp(list * 2 * d), energies(list), coef(list);
        for (int64_t b = begin; b < end; ++b) {
          if (b + 2 < end) {
            for (int64_t j = 0; j < list; ++j) {
              const int64_t p = (b + 2) * list + j;
              PrefetchRow(gt.means + static_cast<int64_t>(general[p]) * d, d);
              PrefetchRow(gt.variances + static_cast<int64_t>(general[p]) * dv, dv);
              PrefetchRow(st.means + static_cast<int64_t>(specific[p]) * d, d);
              PrefetchRow(st.variances + static_cast<int64_t>(specific[p]) * dv, dv);
            }
          }
          auto rows = [&](int64_t j, const float** mg, const float** vg,
                          const float** ms, const float** vs) {
            const int64_t g = general[b * list + j], s = specific[b * list + j];
            *mg = gt.means + g * d;
            *vg = gt.variances + g * dv;
            *ms = st.means + s * d;
            *vs = st.variances + s * dv;
          };
          for (int64_t j = 0; j < list; ++j) {
            const float *mg, *vg, *ms, *vs;
            rows(j, &mg, &vg, &ms, &vs);
            energies[j] = PairEnergy(energy, sph, d, mg, vg, ms, vs, tmp.data() + j * 2 * d);
          }
          double loss = 0.0;
          float pos_coef = 0.f;
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
          for (int64_t j = 0; j < list; ++j) {
            const int64_t p = b * list + j;
            float* gmg = gm + p * d;
            float* gvg = gv + p * dv;
            float* gms = gm + (n_pairs + p) * d;
            float* gvs = gv + (n_pairs + p) * dv;
            std::fill(gmg, gmg + d, 0.f);
            std::fill(gvg, gvg + dv, 0.f);
            std::fill(gms, gms + d, 0.f);
            std::fill(gvs, gvs + dv, 0.f);
            if (coef[j] == 0.f) continue;
            const float *mg, *vg, *ms, *vs;
            rows(j, &mg, &vg, &ms, &vs);
            AddPairGradients(energy, sph, d, coef[j], mg, vg, ms, vs,
                             tmp.data() + j * 2 * d, gmg, gvg, gms, gvs);
          }
        }
      };
      const int64_t cost = list * d * 60 + 100;
      Shard(worker_threads->num_threads, worker_threads->workers, batch, cost, work);
    }

    // ---- Phases 2 and 3: group by row, AdaGrad + constraints per row -----
    rows_.Group(n_tables, tables, n_occ, [&](int64_t t, auto& visit) {
      if (t == 0) {
        for (int64_t p = 0; p < n_pairs; ++p) visit(p, general[p]);
      }
      if (t == 1 || shared) {
        for (int64_t p = 0; p < n_pairs; ++p) visit(n_pairs + p, specific[p]);
      }
    });
    rows_.Apply(ctx, tables, d, dv, occ_mean_grad_.data(), occ_var_grad_.data(), lr, eps);

    double total = 0.0;
    for (int64_t b = 0; b < batch; ++b) total += example_loss_[b];
    loss_out->scalar<float>()() = static_cast<float>(total / batch);
  }

 private:
  Energy energy_;
  bool spherical_;
  mutex scratch_mu_;
  std::vector<float> occ_mean_grad_, occ_var_grad_, example_loss_;
  RowUpdater rows_;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussPairRankingStep").Device(DEVICE_CPU),
                        PairRankingStepOp);

}  // namespace
}  // namespace tensorflow

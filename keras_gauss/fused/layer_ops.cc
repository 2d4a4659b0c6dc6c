// TensorFlow ops behind the layers' own ops (keras_gauss.kernels): the EL and
// KL energies with their gradient op; KerasGaussLookupEnergy, the same
// energies of gathered rows, whose gradient op sums them by table row;
// KerasGaussTableEnergy, the same again reading each unique row from the
// tables once (no gathered rows); GaussianEmbedding's row gather (its
// gradient, a tf.IndexedSlices, is registered in Python); and SparseAdagrad's
// row update on the variable and its accumulator in place. The math is in
// layer_kernels.h, shared with the JAX backend's XLA FFI handlers
// (jax_ops.cc). Work is split over TensorFlow's intra-op thread pool.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "gauss_math.h"
#include "layer_kernels.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/resource_var.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/util/work_sharder.h"

namespace tensorflow {
namespace {

using keras_gauss::Energy;
using keras_gauss::layers::Pairs;

// OK, or the error naming the first of the `n` ids outside [0, rows) (`op`:
// the op's name).
template <typename Index>
absl::Status IdsInRange(const char* op, const Index* ids, int64_t n, int64_t rows) {
  const int64_t bad = keras_gauss::layers::FirstBadId(ids, n, rows);
  if (bad < 0) return absl::OkStatus();
  return errors::InvalidArgument(op, ": id ", static_cast<int64_t>(ids[bad]), " outside [0, ",
                                 rows, ")");
}

// The op's CPU kernel `Kernel` for int32 and for int64 ids (`Tindices`).
#define KERAS_GAUSS_REGISTER_FOR_IDS(op, Kernel)                                           \
  REGISTER_KERNEL_BUILDER(                                                                 \
      Name(op).Device(DEVICE_CPU).TypeConstraint<int32_t>("Tindices"), Kernel<int32_t>); \
  REGISTER_KERNEL_BUILDER(                                                                 \
      Name(op).Device(DEVICE_CPU).TypeConstraint<int64_t>("Tindices"), Kernel<int64_t>)

// parallel_for over the op's intra-op thread pool.
struct ShardFor {
  OpKernelContext* ctx;
  int64_t threads() const {
    return std::max(1, ctx->device()->tensorflow_cpu_worker_threads()->num_threads);
  }
  template <typename F>
  void operator()(int64_t total, int64_t cost, const F& f) const {
    auto workers = ctx->device()->tensorflow_cpu_worker_threads();
    Shard(workers->num_threads, workers->workers, total, cost,
          [&f](int64_t begin, int64_t end) { f(begin, end); });
  }
};

// The four inputs (mean_a, var_a, mean_b, var_b) from input `first` on, as
// an (n, k) grid of pairs (layer_kernels.h's PairUp).
absl::Status ReadPairs(OpKernelContext* ctx, int first, Pairs* pairs) {
  int64_t dims[4][3];
  const float* data[4];
  for (int i = 0; i < 4; ++i) {
    const Tensor& t = ctx->input(first + i);
    if (t.dims() != 3) {
      return errors::InvalidArgument("KerasGaussEnergy: inputs must be (n, k, d), got ",
                                     t.shape().DebugString());
    }
    for (int j = 0; j < 3; ++j) dims[i][j] = t.dim_size(j);
    data[i] = t.flat<float>().data();
  }
  if (!keras_gauss::layers::PairUp(dims, data, pairs)) {
    return errors::InvalidArgument(
        "KerasGaussEnergy: shapes do not pair up: means ",
        ctx->input(first).shape().DebugString(), " and ",
        ctx->input(first + 2).shape().DebugString(), ", variances ",
        ctx->input(first + 1).shape().DebugString(), " and ",
        ctx->input(first + 3).shape().DebugString());
  }
  return absl::OkStatus();
}

Energy EnergyAttr(OpKernelConstruction* ctx) {
  std::string energy;
  const absl::Status status = ctx->GetAttr("energy", &energy);
  if (!status.ok()) ctx->CtxFailure(status);
  return energy == "kl" ? Energy::kKL : Energy::kEL;
}

// The (n, k) energies of an (n, k_a, d) / (n, k_b, d) grid (inputs 0 and 2),
// k_a or k_b 1 (broadcast).
// The grid's k from its sides' k_a and k_b (1: broadcast, or k).
shape_inference::DimensionHandle GridK(shape_inference::InferenceContext* c,
                                       shape_inference::DimensionHandle ka,
                                       shape_inference::DimensionHandle kb) {
  if (c->ValueKnown(ka) && c->Value(ka) != 1) return ka;
  if (c->ValueKnown(kb) && c->Value(kb) != 1) return kb;
  if (c->ValueKnown(ka) && c->ValueKnown(kb)) return ka;
  return c->UnknownDim();
}

absl::Status EnergyGridShape(shape_inference::InferenceContext* c) {
  auto k = GridK(c, c->Dim(c->input(0), 1), c->Dim(c->input(2), 1));
  c->set_output(0, c->Matrix(c->Dim(c->input(0), 0), k));
  return absl::OkStatus();
}

REGISTER_OP("KerasGaussEnergy")
    .Input("mean_a: float")
    .Input("var_a: float")
    .Input("mean_b: float")
    .Input("var_b: float")
    .Output("energies: float")
    .Attr("energy: {'el', 'kl'} = 'el'")
    .Attr("include_constant: bool = false")
    .SetShapeFn(EnergyGridShape)
    .Doc(R"doc(
Energies of an (n, k) grid of Gaussian pairs: mean_a (n, k_a, d), var_a
(n, k_a, 1 or d), mean_b and var_b likewise, k_a and k_b 1 (broadcast) or k.
'el': the log expected-likelihood kernel; 'kl': -KL(N_b || N_a) (a general).
)doc");

class EnergyOp : public OpKernel {
 public:
  explicit EnergyOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    energy_ = EnergyAttr(ctx);
    OP_REQUIRES_OK(ctx, ctx->GetAttr("include_constant", &include_constant_));
  }

  void Compute(OpKernelContext* ctx) override {
    Pairs p;
    OP_REQUIRES_OK(ctx, ReadPairs(ctx, 0, &p));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({p.n, p.k}), &out));
    keras_gauss::layers::EnergyForward(energy_, include_constant_, p.n, p.k, p.d, p.a, p.b,
                                       out->flat<float>().data(), ShardFor{ctx});
  }

 private:
  Energy energy_;
  bool include_constant_ = false;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussEnergy").Device(DEVICE_CPU), EnergyOp);

REGISTER_OP("KerasGaussEnergyGrad")
    .Input("grad: float")
    .Input("mean_a: float")
    .Input("var_a: float")
    .Input("mean_b: float")
    .Input("var_b: float")
    .Output("grad_mean_a: float")
    .Output("grad_var_a: float")
    .Output("grad_mean_b: float")
    .Output("grad_var_b: float")
    .Attr("energy: {'el', 'kl'} = 'el'")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      for (int i = 0; i < 4; ++i) c->set_output(i, c->input(i + 1));
      return absl::OkStatus();
    })
    .Doc(R"doc(
The gradient of KerasGaussEnergy: grad (n, k) is the upstream gradient of the
energies; the outputs are shaped like the four inputs.
)doc");

class EnergyGradOp : public OpKernel {
 public:
  explicit EnergyGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) { energy_ = EnergyAttr(ctx); }

  void Compute(OpKernelContext* ctx) override {
    Pairs p;
    OP_REQUIRES_OK(ctx, ReadPairs(ctx, 1, &p));
    const Tensor& grad = ctx->input(0);
    OP_REQUIRES(ctx, grad.shape() == TensorShape({p.n, p.k}),
                errors::InvalidArgument("KerasGaussEnergyGrad: grad must be (", p.n, ", ",
                                        p.k, "), got ", grad.shape().DebugString()));
    float* outs[4];
    for (int i = 0; i < 4; ++i) {
      Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(i, ctx->input(i + 1).shape(), &out));
      outs[i] = out->flat<float>().data();
    }
    keras_gauss::layers::EnergyBackward(energy_, p.n, p.k, p.d, p.a, p.b,
                                        grad.flat<float>().data(), outs[0], outs[1], outs[2],
                                        outs[3], ShardFor{ctx});
  }

 private:
  Energy energy_;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussEnergyGrad").Device(DEVICE_CPU), EnergyGradOp);

REGISTER_OP("KerasGaussLookupEnergy")
    .Input("mean_a: float")
    .Input("var_a: float")
    .Input("mean_b: float")
    .Input("var_b: float")
    .Input("mean_table_a: resource")
    .Input("var_table_a: resource")
    .Input("mean_table_b: resource")
    .Input("var_table_b: resource")
    .Input("ids_a: Tindices")
    .Input("ids_b: Tindices")
    .Output("energies: float")
    .Attr("energy: {'el', 'kl'} = 'el'")
    .Attr("include_constant: bool = false")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn(EnergyGridShape)
    .Doc(R"doc(
KerasGaussEnergy of rows gathered from tables: side a's rows are
mean_table_a[ids_a] and var_table_a[ids_a] (ids_a (n, k_a)), side b's
likewise. The value reads the rows; the tables and ids are there for the
gradient (KerasGaussLookupEnergyGrad), which goes to the tables' unique rows
(tf.IndexedSlices), not to the rows.
)doc");

// The value is KerasGaussEnergy's: the rows are its first four inputs.
REGISTER_KERNEL_BUILDER(Name("KerasGaussLookupEnergy").Device(DEVICE_CPU), EnergyOp);

REGISTER_OP("KerasGaussLookupEnergyGrad")
    .Input("grad: float")
    .Input("mean_a: float")
    .Input("var_a: float")
    .Input("mean_b: float")
    .Input("var_b: float")
    .Input("ids_a: Tindices")
    .Input("ids_b: Tindices")
    .Input("table_rows_a: int64")
    .Input("table_rows_b: int64")
    .Output("rows_a: Tindices")
    .Output("grad_mean_a: float")
    .Output("grad_var_a: float")
    .Output("rows_b: Tindices")
    .Output("grad_mean_b: float")
    .Output("grad_var_b: float")
    .Attr("energy: {'el', 'kl'} = 'el'")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      for (int side = 0; side < 2; ++side) {
        auto rows = c->UnknownDim();
        c->set_output(3 * side, c->Vector(rows));
        c->set_output(3 * side + 1, c->Matrix(rows, c->Dim(c->input(1 + 2 * side), 2)));
        c->set_output(3 * side + 2, c->Matrix(rows, c->Dim(c->input(2 + 2 * side), 2)));
      }
      return absl::OkStatus();
    })
    .Doc(R"doc(
The gradient of KerasGaussLookupEnergy, summed by table row: for each side,
its unique ids (in order of first appearance) and the gradients of
sum(grad * energies) with respect to those rows of its mean and variance
tables, each row's occurrences added in order of occurrence (the floats of
KerasGaussEnergyGrad's rows summed as KerasGaussSparseAdagrad sums them).
table_rows_a / _b: the tables' row counts (ids outside are an error).
)doc");

template <typename Index>
class LookupEnergyGradOp : public OpKernel {
 public:
  explicit LookupEnergyGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    energy_ = EnergyAttr(ctx);
  }

  void Compute(OpKernelContext* ctx) override {
    Pairs p;
    OP_REQUIRES_OK(ctx, ReadPairs(ctx, 1, &p));
    const Tensor& grad = ctx->input(0);
    OP_REQUIRES(ctx, grad.shape() == TensorShape({p.n, p.k}),
                errors::InvalidArgument("KerasGaussLookupEnergyGrad: grad must be (", p.n,
                                        ", ", p.k, "), got ", grad.shape().DebugString()));
    const keras_gauss::layers::Side* sides[2] = {&p.a, &p.b};
    for (int side = 0; side < 2; ++side) {
      const Tensor& ids = ctx->input(5 + side);
      const Tensor& rows = ctx->input(7 + side);
      OP_REQUIRES(ctx, ids.NumElements() == p.n * sides[side]->k,
                  errors::InvalidArgument("KerasGaussLookupEnergyGrad: ", p.n * sides[side]->k,
                                          " ids expected for side ", side, ", got ",
                                          ids.NumElements()));
      OP_REQUIRES(ctx, TensorShapeUtils::IsScalar(rows.shape()) && rows.scalar<int64_t>()() >= 0,
                  errors::InvalidArgument("KerasGaussLookupEnergyGrad: table_rows must be a "
                                          "scalar >= 0"));
      OP_REQUIRES_OK(ctx, IdsInRange("KerasGaussLookupEnergyGrad", ids.flat<Index>().data(),
                                     ids.NumElements(), rows.scalar<int64_t>()()));
    }
    mutex_lock scratch(scratch_mu_);
    float* outs[4];
    for (int side = 0; side < 2; ++side) {
      const Tensor& ids = ctx->input(5 + side);
      keras_gauss::layers::RowSlots& slots = slots_[side];
      slots.Assign(ids.flat<Index>().data(), ids.NumElements(),
                   ctx->input(7 + side).scalar<int64_t>()());
      const int64_t unique = slots.size();
      Tensor* rows = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(3 * side, TensorShape({unique}), &rows));
      Index* row_ids = rows->flat<Index>().data();
      for (int64_t s = 0; s < unique; ++s) row_ids[s] = static_cast<Index>(slots.row(s));
      for (int i = 0; i < 2; ++i) {
        Tensor* out = nullptr;
        const int64_t columns = i == 0 ? p.d : sides[side]->dv;
        OP_REQUIRES_OK(ctx, ctx->allocate_output(3 * side + 1 + i,
                                                 TensorShape({unique, columns}), &out));
        outs[2 * side + i] = out->flat<float>().data();
      }
    }
    keras_gauss::layers::EnergySlotGrad(energy_, p, grad.flat<float>().data(), slots_[0].map(),
                                        slots_[1].map(), outs[0], outs[1], outs[2], outs[3],
                                        ShardFor{ctx});
  }

 private:
  Energy energy_;
  mutex scratch_mu_;
  keras_gauss::layers::RowSlots slots_[2];
};

KERAS_GAUSS_REGISTER_FOR_IDS("KerasGaussLookupEnergyGrad", LookupEnergyGradOp);

// The four tables (mean_a, var_a, mean_b, var_b) from input `first` on,
// read-locked (in address order, each variable once) for the object's life,
// checked against the ids `ids_a` (n, k_a) of side a (tables 0 and 1) and
// `ids_b` (n, k_b) of side b: an id outside a table is an error that starts
// with that table's entry of `messages` (KerasGaussGather's message) when
// there is one.
class SharedTables {
 public:
  SharedTables() = default;
  SharedTables(const SharedTables&) = delete;
  SharedTables& operator=(const SharedTables&) = delete;
  ~SharedTables() {
    for (int i = locked_ - 1; i >= 0; --i) order_[i]->unlock_shared();
  }

  template <typename Index>
  absl::Status Read(OpKernelContext* ctx, const char* op, int first, const Tensor& ids_a,
                    const Tensor& ids_b, const std::vector<std::string>& messages) {
    if (!messages.empty() && messages.size() != 4) {
      return errors::InvalidArgument(op, ": messages must be empty or one per table, got ",
                                     messages.size());
    }
    for (int i = 0; i < 4; ++i) {
      TF_RETURN_IF_ERROR(LookupResource(ctx, HandleFromInput(ctx, first + i), &vars_[i]));
    }
    int count = 0;
    for (int i = 0; i < 4; ++i) {
      mutex* mu = vars_[i]->mu();
      if (std::find(order_, order_ + count, mu) == order_ + count) order_[count++] = mu;
    }
    std::sort(order_, order_ + count);
    for (; locked_ < count; ++locked_) order_[locked_]->lock_shared();
    const Tensor* ids[2] = {&ids_a, &ids_b};
    for (int i = 0; i < 4; ++i) {
      const Tensor& table = *vars_[i]->tensor();
      if (!vars_[i]->is_initialized || table.dtype() != DT_FLOAT ||
          !TensorShapeUtils::IsMatrix(table.shape())) {
        return errors::InvalidArgument(op, ": the tables must be initialized float32 "
                                       "matrices, got ", DataTypeString(table.dtype()), " ",
                                       table.shape().DebugString());
      }
      const Tensor& side_ids = *ids[i / 2];
      const absl::Status in_range = IdsInRange(op, side_ids.flat<Index>().data(),
                                               side_ids.NumElements(), table.dim_size(0));
      if (!in_range.ok() && !messages.empty() && !messages[i].empty()) {
        return errors::InvalidArgument(messages[i], " (", in_range.message(), ")");
      }
      TF_RETURN_IF_ERROR(in_range);
    }
    return absl::OkStatus();
  }

  const Tensor& table(int i) const { return *vars_[i]->tensor(); }

 private:
  core::RefCountPtr<Var> vars_[4];
  mutex* order_[4] = {};
  int locked_ = 0;
};

// OK when ids_a (n, k_a) and ids_b (n, k_b) are the ids of one grid of pairs.
absl::Status GridIds(const char* op, const Tensor& ids_a, const Tensor& ids_b) {
  if (ids_a.dims() != 2 || ids_b.dims() != 2 || ids_a.dim_size(0) != ids_b.dim_size(0)) {
    return errors::InvalidArgument(op, ": ids (n, k_a) and (n, k_b) expected, got ",
                                   ids_a.shape().DebugString(), " and ",
                                   ids_b.shape().DebugString());
  }
  return absl::OkStatus();
}

// The grid of pairs of slots_a (n, k_a) and slots_b (n, k_b) (int32: each
// occurrence's slot) on the unique rows of each side (`rows`: mean_a, var_a,
// mean_b, var_b, one row per slot, `sizes[side]` of them): occurrence o of a
// side reads its slot's row.
absl::Status SlotPairs(const char* op, const Tensor& slots_a, const Tensor& slots_b,
                       const Tensor* const rows[4], const int64_t sizes[2], Pairs* p) {
  int64_t dims[4][3];
  const float* data[4];
  const Tensor* slots[2] = {&slots_a, &slots_b};
  for (int i = 0; i < 4; ++i) {
    const Tensor& t = *rows[i];
    if (t.dims() != 2 || t.dim_size(0) != sizes[i / 2]) {
      return errors::InvalidArgument(op, ": ", sizes[i / 2], " rows expected for side ",
                                     i / 2, ", got ", t.shape().DebugString());
    }
    dims[i][0] = slots_a.dim_size(0);
    dims[i][1] = slots[i / 2]->dim_size(1);
    dims[i][2] = t.dim_size(1);
    data[i] = t.flat<float>().data();
  }
  if (!keras_gauss::layers::PairUp(dims, data, p)) {
    return errors::InvalidArgument(op, ": shapes do not pair up: ids ",
                                   slots_a.shape().DebugString(), " and ",
                                   slots_b.shape().DebugString(), ", rows ",
                                   rows[0]->shape().DebugString(), ", ",
                                   rows[1]->shape().DebugString(), ", ",
                                   rows[2]->shape().DebugString(), " and ",
                                   rows[3]->shape().DebugString());
  }
  p->a.slot = slots_a.flat<int32_t>().data();
  p->b.slot = slots_b.flat<int32_t>().data();
  return absl::OkStatus();
}

REGISTER_OP("KerasGaussTableEnergy")
    .Input("mean_table_a: resource")
    .Input("var_table_a: resource")
    .Input("mean_table_b: resource")
    .Input("var_table_b: resource")
    .Input("ids_a: Tindices")
    .Input("ids_b: Tindices")
    .Output("energies: float")
    .Output("mean_a: float")
    .Output("var_a: float")
    .Output("mean_b: float")
    .Output("var_b: float")
    .Output("rows_a: Tindices")
    .Output("rows_b: Tindices")
    .Output("slots_a: int32")
    .Output("slots_b: int32")
    .Attr("energy: {'el', 'kl'} = 'el'")
    .Attr("include_constant: bool = false")
    .Attr("Tindices: {int32, int64}")
    .Attr("messages: list(string) = []")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      shape_inference::ShapeHandle ids_a, ids_b;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(4), 2, &ids_a));
      TF_RETURN_IF_ERROR(c->WithRank(c->input(5), 2, &ids_b));
      c->set_output(0, c->Matrix(c->Dim(ids_a, 0), GridK(c, c->Dim(ids_a, 1), c->Dim(ids_b, 1))));
      shape_inference::DimensionHandle unique[2] = {c->UnknownDim(), c->UnknownDim()};
      for (int i = 0; i < 4; ++i) c->set_output(1 + i, c->Matrix(unique[i / 2], c->UnknownDim()));
      c->set_output(5, c->Vector(unique[0]));
      c->set_output(6, c->Vector(unique[1]));
      c->set_output(7, ids_a);
      c->set_output(8, ids_b);
      return absl::OkStatus();
    })
    .Doc(R"doc(
KerasGaussLookupEnergy reading the rows from the tables: the energies of the
(n, k) grid whose side a is rows ids_a (n, k_a) of mean_table_a and
var_table_a, side b likewise (k_a, k_b 1 or k). Each side's unique ids are
read from its tables once. For the gradient (KerasGaussTableEnergyGrad):
those rows (mean_a ... var_b), the unique ids (rows_a, rows_b, in order of
first appearance) and each id's index among them (slots_a, slots_b, shaped
as the ids). An id outside a table is an error that starts with that
table's entry of `messages` (mean_a, var_a, mean_b, var_b) when it is given.
)doc");

template <typename Index>
class TableEnergyOp : public OpKernel {
 public:
  explicit TableEnergyOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    energy_ = EnergyAttr(ctx);
    OP_REQUIRES_OK(ctx, ctx->GetAttr("include_constant", &include_constant_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("messages", &messages_));
  }

  void Compute(OpKernelContext* ctx) override {
    constexpr char kOp[] = "KerasGaussTableEnergy";
    const Tensor& ids_a = ctx->input(4);
    const Tensor& ids_b = ctx->input(5);
    OP_REQUIRES_OK(ctx, GridIds(kOp, ids_a, ids_b));
    const Tensor* ids[2] = {&ids_a, &ids_b};
    const ShardFor parallel_for{ctx};
    Tensor* rows[4];
    Tensor* slots[2];
    int64_t sizes[2];
    {
      mutex_lock scratch(scratch_mu_);
      SharedTables tables;
      OP_REQUIRES_OK(ctx, tables.Read<Index>(ctx, kOp, 0, ids_a, ids_b, messages_));
      for (int side = 0; side < 2; ++side) {
        OP_REQUIRES_OK(ctx, ctx->allocate_output(7 + side, ids[side]->shape(), &slots[side]));
      }
      // Each side's unique ids, in order of first appearance, and the slot
      // of each id (the sides at once).
      parallel_for(2, 1 << 20, [&](int64_t begin, int64_t end) {
        for (int64_t side = begin; side < end; ++side) {
          keras_gauss::layers::RowSlots& side_slots = slots_[side];
          const int64_t n = ids[side]->NumElements();
          side_slots.Assign(ids[side]->flat<Index>().data(), n,
                            tables.table(2 * side).dim_size(0));
          std::memcpy(slots[side]->flat<int32_t>().data(), side_slots.slots(),
                      sizeof(int32_t) * n);
        }
      });
      for (int side = 0; side < 2; ++side) {
        const keras_gauss::layers::RowSlots& side_slots = slots_[side];
        sizes[side] = side_slots.size();
        Tensor* unique = nullptr;
        OP_REQUIRES_OK(ctx, ctx->allocate_output(5 + side, TensorShape({sizes[side]}), &unique));
        Index* unique_ids = unique->flat<Index>().data();
        for (int64_t s = 0; s < sizes[side]; ++s) {
          unique_ids[s] = static_cast<Index>(side_slots.row(s));
        }
      }
      for (int i = 0; i < 4; ++i) {
        const Tensor& table = tables.table(i);
        const keras_gauss::layers::RowSlots& side_slots = slots_[i / 2];
        OP_REQUIRES_OK(ctx, ctx->allocate_output(
                                1 + i, TensorShape({sizes[i / 2], table.dim_size(1)}), &rows[i]));
        keras_gauss::layers::GatherRows(table.flat<float>().data(), table.dim_size(1),
                                        side_slots.rows(), sizes[i / 2],
                                        rows[i]->flat<float>().data(), parallel_for);
      }
    }
    Pairs p;
    OP_REQUIRES_OK(ctx, SlotPairs(kOp, *slots[0], *slots[1], rows, sizes, &p));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({p.n, p.k}), &out));
    keras_gauss::layers::EnergyForward(energy_, include_constant_, p.n, p.k, p.d, p.a, p.b,
                                       out->flat<float>().data(), parallel_for);
  }

 private:
  Energy energy_;
  bool include_constant_ = false;
  std::vector<std::string> messages_;
  mutex scratch_mu_;
  keras_gauss::layers::RowSlots slots_[2];
};

KERAS_GAUSS_REGISTER_FOR_IDS("KerasGaussTableEnergy", TableEnergyOp);

REGISTER_OP("KerasGaussTableEnergyGrad")
    .Input("grad: float")
    .Input("mean_a: float")
    .Input("var_a: float")
    .Input("mean_b: float")
    .Input("var_b: float")
    .Input("slots_a: int32")
    .Input("slots_b: int32")
    .Output("grad_mean_a: float")
    .Output("grad_var_a: float")
    .Output("grad_mean_b: float")
    .Output("grad_var_b: float")
    .Attr("energy: {'el', 'kl'} = 'el'")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      for (int i = 0; i < 4; ++i) c->set_output(i, c->input(1 + i));
      return absl::OkStatus();
    })
    .Doc(R"doc(
The gradient of KerasGaussTableEnergy, summed by table row: from its unique
rows (mean_a ... var_b) and slots, the gradients of sum(grad * energies)
with respect to those rows (shaped as them), each row's occurrences added in
order of occurrence (the floats of KerasGaussLookupEnergyGrad). Every slot
must occur.
)doc");

class TableEnergyGradOp : public OpKernel {
 public:
  explicit TableEnergyGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    energy_ = EnergyAttr(ctx);
  }

  void Compute(OpKernelContext* ctx) override {
    constexpr char kOp[] = "KerasGaussTableEnergyGrad";
    const Tensor& slots_a = ctx->input(5);
    const Tensor& slots_b = ctx->input(6);
    OP_REQUIRES_OK(ctx, GridIds(kOp, slots_a, slots_b));
    const Tensor* rows[4] = {&ctx->input(1), &ctx->input(2), &ctx->input(3), &ctx->input(4)};
    const int64_t sizes[2] = {rows[0]->dims() == 2 ? rows[0]->dim_size(0) : 0,
                              rows[2]->dims() == 2 ? rows[2]->dim_size(0) : 0};
    Pairs p;
    OP_REQUIRES_OK(ctx, SlotPairs(kOp, slots_a, slots_b, rows, sizes, &p));
    const Tensor& grad = ctx->input(0);
    OP_REQUIRES(ctx, grad.shape() == TensorShape({p.n, p.k}),
                errors::InvalidArgument(kOp, ": grad must be (", p.n, ", ", p.k, "), got ",
                                        grad.shape().DebugString()));
    // Each slot's occurrences (the slots in range, each occurring).
    const Tensor* slots[2] = {&slots_a, &slots_b};
    keras_gauss::layers::SlotLists lists[2];
    bool valid[2] = {false, false};
    ShardFor{ctx}(2, 1 << 20, [&](int64_t begin, int64_t end) {  // the sides at once
      for (int64_t side = begin; side < end; ++side) {
        valid[side] = lists[side].Assign(slots[side]->flat<int32_t>().data(),
                                         slots[side]->NumElements(), sizes[side]);
      }
    });
    for (int side = 0; side < 2; ++side) {
      OP_REQUIRES(ctx, valid[side],
                  errors::InvalidArgument(kOp, ": the slots of side ", side, " must lie in [0, ",
                                          sizes[side], ") and each occur"));
    }
    float* outs[4];
    for (int i = 0; i < 4; ++i) {
      Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(i, rows[i]->shape(), &out));
      outs[i] = out->flat<float>().data();
    }
    keras_gauss::layers::EnergySlotMajorGrad(energy_, p, grad.flat<float>().data(), lists[0],
                                             lists[1], outs[0], outs[1], outs[2], outs[3],
                                             ShardFor{ctx});
  }

 private:
  Energy energy_;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussTableEnergyGrad").Device(DEVICE_CPU), TableEnergyGradOp);

REGISTER_OP("KerasGaussGather")
    .Input("table: resource")
    .Input("ids: Tindices")
    .Output("rows: float")
    .Attr("Tindices: {int32, int64}")
    .Attr("message: string = ''")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      c->set_output(0, c->Matrix(c->NumElements(c->input(1)), c->UnknownDim()));
      return absl::OkStatus();
    })
    .Doc(R"doc(
The rows `ids` (any shape, flattened) of the float32 matrix variable `table`,
as an (n, columns) matrix. Its gradient is a tf.IndexedSlices, as
ResourceGather's. An id outside the table is an error that starts with
`message` (the caller's words, such as the layer's name) when it is given.
)doc");

template <typename Index>
class GatherOp : public OpKernel {
 public:
  explicit GatherOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("message", &message_));
  }

  void Compute(OpKernelContext* ctx) override {
    core::RefCountPtr<Var> var;
    OP_REQUIRES_OK(ctx, LookupResource(ctx, HandleFromInput(ctx, 0), &var));
    const Tensor& ids = ctx->input(1);
    const int64_t n = ids.NumElements();
    tf_shared_lock lock(*var->mu());
    const Tensor& table = *var->tensor();
    OP_REQUIRES(ctx, table.dtype() == DT_FLOAT && TensorShapeUtils::IsMatrix(table.shape()),
                errors::InvalidArgument("KerasGaussGather: the table must be a float32 "
                                        "matrix, got ", DataTypeString(table.dtype()), " ",
                                        table.shape().DebugString()));
    const int64_t rows = table.dim_size(0), c = table.dim_size(1);
    const Index* flat = ids.flat<Index>().data();
    const absl::Status in_range = IdsInRange("KerasGaussGather", flat, n, rows);
    OP_REQUIRES(ctx, in_range.ok() || message_.empty(),
                errors::InvalidArgument(message_, " (", in_range.message(), ")"));
    OP_REQUIRES_OK(ctx, in_range);
    // Rows no op reads (those of a KerasGaussTableEnergy, which reads the
    // table itself): the check above is all there is to do. The op cannot
    // be pruned: TensorFlow makes an op with a resource input stateful.
    if (!ctx->output_required(0)) return;
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n, c}), &out));
    keras_gauss::layers::GatherRows(table.flat<float>().data(), c, flat, n,
                                    out->flat<float>().data(), ShardFor{ctx});
  }

 private:
  std::string message_;
};

KERAS_GAUSS_REGISTER_FOR_IDS("KerasGaussGather", GatherOp);

REGISTER_OP("KerasGaussSparseAdagrad")
    .Input("variable: resource")
    .Input("accumulator: resource")
    .Input("indices: Tindices")
    .Input("values: float")
    .Input("learning_rate: float")
    .Input("epsilon: float")
    .Input("max_norm: float")
    .Input("min_value: float")
    .Input("max_value: float")
    .Attr("Tindices: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn([](shape_inference::InferenceContext* c) { return absl::OkStatus(); })
    .Doc(R"doc(
SparseAdagrad on the rows `indices` of `variable` (V, c) and `accumulator`:
the rows of `values` (n, c) of repeated ids summed, acc += g^2,
w -= learning_rate g / sqrt(acc + epsilon), then ||w|| <= max_norm (none when
<= 0) and min_value <= w <= max_value, in place, each touched row once.
)doc");

template <typename Index>
class SparseAdagradOp : public OpKernel {
 public:
  explicit SparseAdagradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(2);
    const Tensor& values = ctx->input(3);
    for (int i = 4; i < 9; ++i) {
      OP_REQUIRES(ctx, TensorShapeUtils::IsScalar(ctx->input(i).shape()),
                  errors::InvalidArgument("KerasGaussSparseAdagrad: input ", i,
                                          " must be a scalar"));
    }
    const float lr = ctx->input(4).scalar<float>()();
    const float eps = ctx->input(5).scalar<float>()();
    keras_gauss::layers::RowBounds bounds;
    bounds.max_norm = ctx->input(6).scalar<float>()();
    bounds.lo = ctx->input(7).scalar<float>()();
    bounds.hi = ctx->input(8).scalar<float>()();

    core::RefCountPtr<Var> vars[2];
    for (int i = 0; i < 2; ++i) {
      OP_REQUIRES_OK(ctx, LookupResource(ctx, HandleFromInput(ctx, i), &vars[i]));
      OP_REQUIRES(ctx, vars[i]->tensor()->dtype() == DT_FLOAT,
                  errors::InvalidArgument("KerasGaussSparseAdagrad: the variables must be "
                                          "float32"));
      OP_REQUIRES(ctx, vars[i]->is_initialized,
                  errors::FailedPrecondition("KerasGaussSparseAdagrad: a variable is not "
                                             "initialized"));
    }
    OP_REQUIRES(ctx, vars[0].get() != vars[1].get(),
                errors::InvalidArgument("KerasGaussSparseAdagrad: the variable and its "
                                        "accumulator must differ"));
    const TensorShape& shape = vars[0]->tensor()->shape();
    OP_REQUIRES(ctx, TensorShapeUtils::IsMatrix(shape) && vars[1]->tensor()->shape() == shape,
                errors::InvalidArgument("KerasGaussSparseAdagrad: variable and accumulator "
                                        "must be matrices of one shape, got ",
                                        shape.DebugString(), " and ",
                                        vars[1]->tensor()->shape().DebugString()));
    const int64_t rows = shape.dim_size(0), c = shape.dim_size(1);
    const int64_t n = indices.NumElements();
    OP_REQUIRES(ctx, TensorShapeUtils::IsVector(indices.shape()) &&
                         values.shape() == TensorShape({n, c}),
                errors::InvalidArgument("KerasGaussSparseAdagrad: indices (n,) and values (n, ",
                                        c, ") expected, got ", indices.shape().DebugString(),
                                        " and ", values.shape().DebugString()));
    const Index* ids = indices.flat<Index>().data();
    OP_REQUIRES_OK(ctx, IdsInRange("KerasGaussSparseAdagrad", ids, n, rows));
    if (n == 0) return;

    // Lock in address order; copy a buffer someone else still references
    // before writing to it (TensorFlow's EnsureSparseVariableAccess).
    Var* order[2] = {vars[0].get(), vars[1].get()};
    if (order[1]->mu() < order[0]->mu()) std::swap(order[0], order[1]);
    mutex_lock first(*order[0]->mu());
    mutex_lock second(*order[1]->mu());
    for (Var* v : order) {
      if (!v->tensor()->RefCountIsOne()) {
        Tensor copy;
        OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_FLOAT, v->tensor()->shape(), &copy));
        std::memcpy(copy.flat<float>().data(), v->tensor()->flat<float>().data(),
                    sizeof(float) * v->tensor()->NumElements());
        *v->tensor() = copy;
      }
      v->copy_on_read_mode.store(true);
    }
    mutex_lock scratch(scratch_mu_);
    slots_.Assign(ids, n, rows);
    keras_gauss::layers::AdagradSlots(slots_, vars[0]->tensor()->flat<float>().data(),
                                       vars[1]->tensor()->flat<float>().data(), c,
                                       values.flat<float>().data(), lr, eps, bounds,
                                       ShardFor{ctx});
  }

 private:
  mutex scratch_mu_;
  keras_gauss::layers::RowSlots slots_;
};

KERAS_GAUSS_REGISTER_FOR_IDS("KerasGaussSparseAdagrad", SparseAdagradOp);

}  // namespace
}  // namespace tensorflow

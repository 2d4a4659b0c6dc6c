// Fused skip-gram training of Gaussian word embeddings from token ids.
//
// KerasGaussSkipgramTrain takes a chunk of sentences (token ids and row
// splits) and does, in one kernel, what the tf.data pipeline
// (pipelines.skipgram) and the ranking step (kernels.cc) do together:
//
//   1. word2vec's subsampling of frequent words (keep[id] per occurrence);
//   2. (centre, context) pairs within `window` of each other in the kept
//      sequence of a sentence, with word2vec's reduced window (the reach of
//      each centre drawn from 1..window) when `dynamic_window`;
//   3. `negatives` contexts per pair drawn from the unigram^0.75
//      distribution by Walker's alias method (`negative_probs`,
//      `negative_alias`: O(1) per draw from two arrays of V entries, which
//      stay in cache where word2vec's 10^8-entry table would not);
//   4. the max-margin ranking step on minibatches of `batch_size` triples:
//      energies, hinge, closed-form gradients of the batch-mean loss summed
//      per row, AdaGrad and the row constraints (gauss_math.h), as
//      KerasGaussRankingStep does for the same triples, except that rows
//      whose summed gradient is zero (every hinge they are in is inactive)
//      are left alone instead of being projected again: rows start inside
//      the bounds and every update is projected, so they stay inside.
//
// Random numbers are counter-based (splitmix64's mixer on the seed, the
// sentence index and token positions), so the triples of a sentence do not
// depend on threads or on the order of work, and a pure TensorFlow
// implementation (keras_gauss.fused.skipgram) draws the same ones:
//
//   key(s)            = mix(seed + G * (s + 1))          s: sentence in the chunk
//   keep draw at p    = mix(key + G * (4p + 1))           p: position in the sentence
//   reach draw at p   = mix(key + G * (4p + 2))
//   negative n of (p, q) = mix(mix(key + G * (4p + 3)) + G * (q * negatives + n + 1))
//
// with p, q positions before subsampling. A token is kept when
// float(u >> 40) * 2^-24 < keep[id]; the reach is 1 + (u >> 33) % window; a
// negative is i = ((u >> 32) * V) >> 32 if float((u >> 8) & (2^24 - 1)) *
// 2^-24 < negative_probs[i], else negative_alias[i]. The triples come in
// sentence order, centres ascending, contexts ascending; with `shuffle`, the
// triples of each block of sentences (the whole chunk on one thread) are
// permuted first (see BlockTriples), as the tf.data pipeline shuffles its
// pairs.
//
// With num_threads > 1 the sentences are split into contiguous blocks of
// about equal numbers of tokens, 8 per thread, that the threads take in
// turn; each thread runs its own minibatches and updates the shared tables
// without locks (Hogwild, as word2vec and gensim do), so results then vary
// slightly from run to run. With one thread the result is deterministic and
// equals the pure TensorFlow implementation.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gauss_math.h"
#include "skipgram_core.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/platform/blocking_counter.h"
#include "tensorflow/core/platform/threadpool.h"

namespace tensorflow {
namespace {

using keras_gauss::AdviseHugePages;
using keras_gauss::BlockTriples;
using keras_gauss::CheckIds;
using keras_gauss::Energy;
using keras_gauss::Skipgram;
using keras_gauss::StepVariables;
using keras_gauss::Table;
using keras_gauss::TrainChunk;
using keras_gauss::Triples;

// Reads and checks tokens, row_splits, keep, negative_probs, negative_alias
// and seed (inputs first .. first + 5). `rows` bounds the token ids,
// `keep_rows` is the size keep must have (when not empty), `table_rows`
// bounds the negatives' ids.
absl::Status ReadSkipgram(OpKernelContext* ctx, int first, int64_t rows,
                          int64_t keep_rows, int64_t table_rows, const char* op,
                          Skipgram* sg, int64_t* sentences) {
  const Tensor& tokens = ctx->input(first);
  const Tensor& splits = ctx->input(first + 1);
  const Tensor& keep = ctx->input(first + 2);
  const Tensor& probs = ctx->input(first + 3);
  const Tensor& alias = ctx->input(first + 4);
  const Tensor& seed = ctx->input(first + 5);
  if (!TensorShapeUtils::IsVector(tokens.shape()))
    return errors::InvalidArgument(op, ": `tokens` must be a vector, got shape ",
                                   tokens.shape().DebugString());
  if (!TensorShapeUtils::IsVector(splits.shape()) || splits.dim_size(0) < 1)
    return errors::InvalidArgument(
        op, ": `row_splits` must be a non-empty vector (sentences + 1,), got shape ",
        splits.shape().DebugString());
  const int64_t n_tokens = tokens.dim_size(0);
  const int64_t n_splits = splits.dim_size(0);
  const int64_t* sp = splits.flat<int64_t>().data();
  if (sp[0] != 0 || sp[n_splits - 1] != n_tokens)
    return errors::InvalidArgument(op, ": `row_splits` must start at 0 and end at ",
                                   n_tokens, " (the number of tokens), got ", sp[0],
                                   " ... ", sp[n_splits - 1]);
  for (int64_t i = 1; i < n_splits; ++i) {
    if (sp[i] < sp[i - 1])
      return errors::InvalidArgument(op, ": `row_splits` must be non-decreasing (at ",
                                     i, ": ", sp[i - 1], " > ", sp[i], ")");
  }
  if (!TensorShapeUtils::IsVector(keep.shape()) ||
      (keep.dim_size(0) != 0 && keep.dim_size(0) != keep_rows))
    return errors::InvalidArgument(op, ": `keep` must be empty (no subsampling) or have ",
                                   keep_rows, " values (one per word), got shape ",
                                   keep.shape().DebugString());
  if (!TensorShapeUtils::IsVector(probs.shape()) || probs.dim_size(0) < 1 ||
      probs.dim_size(0) > table_rows || alias.shape() != probs.shape())
    return errors::InvalidArgument(
        op, ": `negative_probs` and `negative_alias` must be vectors of the same "
        "length, between 1 and ", table_rows, " (the context table's rows), got shapes ",
        probs.shape().DebugString(), " and ", alias.shape().DebugString());
  if (!TensorShapeUtils::IsScalar(seed.shape()))
    return errors::InvalidArgument(op, ": `seed` must be a scalar.");
  sg->tokens = tokens.flat<int32_t>().data();
  sg->splits = sp;
  sg->keep = keep.dim_size(0) ? keep.flat<float>().data() : nullptr;
  sg->probs = probs.flat<float>().data();
  sg->alias = alias.flat<int32_t>().data();
  sg->outcomes = static_cast<uint64_t>(probs.dim_size(0));
  sg->seed = static_cast<uint64_t>(seed.scalar<int64_t>()());
  *sentences = n_splits - 1;
  TF_RETURN_IF_ERROR(CheckIds(op, "tokens", sg->tokens, n_tokens, rows, "word"));
  return CheckIds(op, "negative_alias", sg->alias, alias.dim_size(0), table_rows,
                  "context");
}

void ReadWindowAttrs(OpKernelConstruction* ctx, Skipgram* sg) {
  int window, negatives;
  OP_REQUIRES_OK(ctx, ctx->GetAttr("window", &window));
  OP_REQUIRES_OK(ctx, ctx->GetAttr("dynamic_window", &sg->dynamic));
  OP_REQUIRES_OK(ctx, ctx->GetAttr("num_negatives", &negatives));
  sg->window = window;
  sg->negatives = negatives;
  OP_REQUIRES_OK(ctx, ctx->GetAttr("shuffle", &sg->shuffle));
}

// ---------------------------------------------------------------------------

REGISTER_OP("KerasGaussSkipgramTriples")
    .Input("tokens: int32")
    .Input("row_splits: int64")
    .Input("keep: float")
    .Input("negative_probs: float")
    .Input("negative_alias: int32")
    .Input("seed: int64")
    .Output("word: int32")
    .Output("context: int32")
    .Output("negatives: int32")
    .Attr("window: int >= 1")
    .Attr("dynamic_window: bool = true")
    .Attr("num_negatives: int >= 1 = 1")
    .Attr("shuffle: bool = false")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      int negatives;
      TF_RETURN_IF_ERROR(c->GetAttr("num_negatives", &negatives));
      c->set_output(0, c->Vector(c->UnknownDim()));
      c->set_output(1, c->Vector(c->UnknownDim()));
      c->set_output(2, c->Matrix(c->UnknownDim(), negatives));
      return absl::OkStatus();
    })
    .Doc(R"doc(
The (word, context, negatives) triples KerasGaussSkipgramTrain trains on,
in its order, for a chunk of sentences.
)doc");

class SkipgramTriplesOp : public OpKernel {
 public:
  explicit SkipgramTriplesOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ReadWindowAttrs(ctx, &spec_);
  }

  void Compute(OpKernelContext* ctx) override {
    Skipgram sg = spec_;
    int64_t sentences = 0;
    const int64_t big = std::numeric_limits<int32_t>::max();
    OP_REQUIRES_OK(ctx, ReadSkipgram(ctx, 0, big, ctx->input(2).dim_size(0), big,
                                     "KerasGaussSkipgramTriples", &sg, &sentences));
    Triples triples;
    std::vector<int64_t> order;
    BlockTriples(sg, 0, sentences, 0, &triples, &order);
    const int64_t count = triples.size();
    const int64_t k = sg.negatives;
    Tensor *words = nullptr, *contexts = nullptr, *negatives = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({count}), &words));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({count}), &contexts));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({count, k}), &negatives));
    int32_t* w = words->flat<int32_t>().data();
    int32_t* c = contexts->flat<int32_t>().data();
    int32_t* n = negatives->flat<int32_t>().data();
    for (int64_t i = 0; i < count; ++i) {
      const int64_t o = order[i];
      w[i] = triples.word[o];
      c[i] = triples.context[o];
      std::copy(triples.negatives.begin() + o * k, triples.negatives.begin() + (o + 1) * k,
                n + i * k);
    }
  }

 private:
  Skipgram spec_;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussSkipgramTriples").Device(DEVICE_CPU),
                        SkipgramTriplesOp);

// ---------------------------------------------------------------------------

REGISTER_OP("KerasGaussSkipgramTrain")
    .Input("word_means: resource")
    .Input("word_variances: resource")
    .Input("context_means: resource")
    .Input("context_variances: resource")
    .Input("word_means_accumulator: resource")
    .Input("word_variances_accumulator: resource")
    .Input("context_means_accumulator: resource")
    .Input("context_variances_accumulator: resource")
    .Input("tokens: int32")
    .Input("row_splits: int64")
    .Input("keep: float")
    .Input("negative_probs: float")
    .Input("negative_alias: int32")
    .Input("seed: int64")
    .Input("learning_rate: float")
    .Input("margin: float")
    .Input("epsilon: float")
    .Input("max_norm: float")
    .Input("min_variance: float")
    .Input("max_variance: float")
    .Output("loss: float")
    .Output("pairs: int64")
    .Attr("window: int >= 1")
    .Attr("dynamic_window: bool = true")
    .Attr("num_negatives: int >= 1 = 1")
    .Attr("shuffle: bool = false")
    .Attr("batch_size: int >= 1 = 1")
    .Attr("num_threads: int >= 0 = 0")
    .Attr("energy: {'el', 'kl'} = 'el'")
    .Attr("spherical: bool = false")
    .Attr("variance_learning_rate: float = -1.0")
    .SetIsStateful()
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      c->set_output(0, c->Scalar());
      c->set_output(1, c->Scalar());
      return absl::OkStatus();
    })
    .Doc(R"doc(
Skip-gram training of Gaussian embeddings on a chunk of sentences:
subsampling, (reduced) windows, negatives and minibatch ranking steps with
AdaGrad and the row constraints, in place. Returns the summed hinge loss and
the number of (word, context) pairs trained. num_threads = 0 uses the
intra-op thread pool's size. variance_learning_rate < 0: learning_rate.
)doc");

class SkipgramTrainOp : public OpKernel {
 public:
  explicit SkipgramTrainOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    ReadWindowAttrs(ctx, &spec_);
    std::string energy;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("energy", &energy));
    energy_ = energy == "kl" ? Energy::kKL : Energy::kEL;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("spherical", &spherical_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("batch_size", &batch_size_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_threads", &num_threads_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("variance_learning_rate", &var_lr_));
  }

  void Compute(OpKernelContext* ctx) override {
    static const char* kOp = "KerasGaussSkipgramTrain";
    StepVariables variables(ctx, spherical_, /*scalars=*/14);
    if (!variables.ok()) return;
    const float lr = variables.learning_rate();
    const float margin = variables.margin();
    const float eps = variables.epsilon();
    const Table tables[2] = {variables.table(0), variables.table(1)};
    for (const Table& tb : tables) AdviseHugePages(tb, variables.d(), variables.dv());
    // A token is a centre (word table) and a context (context table).
    const int64_t rows = std::min(tables[0].rows, tables[1].rows);
    Skipgram sg = spec_;
    int64_t sentences = 0;
    OP_REQUIRES_OK(ctx, ReadSkipgram(ctx, 8, rows, tables[0].rows, tables[1].rows, kOp,
                                     &sg, &sentences));

    auto worker_threads = ctx->device()->tensorflow_cpu_worker_threads();
    const int64_t n_threads =
        num_threads_ > 0 ? num_threads_ : worker_threads->num_threads;
    auto parallel = [&](int64_t n, const auto& fn) {
      BlockingCounter done(n - 1);
      for (int64_t t = 1; t < n; ++t) {
        worker_threads->workers->Schedule([&, t]() {
          fn(t);
          done.DecrementCount();
        });
      }
      fn(0);
      done.Wait();
    };
    double loss = 0.0;
    int64_t count = 0;
    TrainChunk(tables, variables.shared(), variables.d(), variables.dv(), energy_,
               spherical_, batch_size_, lr, margin, eps, sg, sentences, n_threads,
               parallel, &loss, &count, var_lr_);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<float>()() = static_cast<float>(loss);
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &out));
    out->scalar<int64_t>()() = count;
  }

 private:
  Skipgram spec_;
  Energy energy_;
  bool spherical_;
  int batch_size_;
  int num_threads_;
  float var_lr_;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussSkipgramTrain").Device(DEVICE_CPU),
                        SkipgramTrainOp);

}  // namespace
}  // namespace tensorflow

// XLA FFI handlers of the JAX backend's kernels (keras_gauss.kernels on JAX,
// CPU): the EL and KL energies and their gradient, GaussianEmbedding's row
// gather and its gradient (a scatter-add into a dense table), and
// SparseAdagrad's row update, from rows (GaussianModel's row gradients) or
// from a dense gradient (the rows that hold a nonzero value). The math is in
// layer_kernels.h, shared with the TensorFlow ops (layer_ops.cc). Built
// without TensorFlow against jaxlib's FFI headers
// (`jax.ffi.include_dir()`), loaded with ctypes and registered with
// `jax.ffi.register_ffi_target`. Work is split over XLA's intra-op pool.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "gauss_math.h"
#include "layer_kernels.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using tensorflow::keras_gauss::Energy;
using tensorflow::keras_gauss::layers::RowBounds;
using tensorflow::keras_gauss::layers::Pairs;
namespace kernels = tensorflow::keras_gauss::layers;

// parallel_for over XLA's intra-op thread pool: blocks handed out through an
// atomic counter; the calling thread works too and then waits for the blocks
// others took (never for a task that has not started, so a busy pool cannot
// deadlock it).
struct PoolFor {
  ffi::ThreadPool* pool;

  // The pool's threads and the calling one.
  int64_t threads() const { return std::max<int64_t>(1, pool->num_threads()); }

  template <typename F>
  void operator()(int64_t total, int64_t cost, const F& f) const {
    if (total <= 0) return;
    const int64_t threads = std::max<int64_t>(1, pool->num_threads());
    constexpr int64_t kBlockCost = 20000;
    const int64_t blocks = std::min<int64_t>(
        {total, std::max<int64_t>(1, total * std::max<int64_t>(cost, 1) / kBlockCost),
         4 * threads});
    if (blocks <= 1 || threads <= 1) {
      f(0, total);
      return;
    }
    struct State {
      std::atomic<int64_t> next{0}, done{0};
      std::mutex mu;
      std::condition_variable cv;
      int64_t blocks = 0, total = 0;
    };
    auto state = std::make_shared<State>();
    state->blocks = blocks;
    state->total = total;
    const F* fn = &f;
    auto work = [state, fn]() {
      for (;;) {
        const int64_t b = state->next.fetch_add(1);
        if (b >= state->blocks) return;
        (*fn)(state->total * b / state->blocks, state->total * (b + 1) / state->blocks);
        if (state->done.fetch_add(1) + 1 == state->blocks) {
          std::lock_guard<std::mutex> lock(state->mu);
          state->cv.notify_all();
        }
      }
    };
    for (int64_t t = 1; t < std::min(threads, blocks); ++t) pool->Schedule([work] { work(); });
    work();
    std::unique_lock<std::mutex> lock(state->mu);
    state->cv.wait(lock, [&] { return state->done.load() == state->blocks; });
  }
};

using F32 = ffi::Buffer<ffi::F32>;
using F32Out = ffi::ResultBuffer<ffi::F32>;

// The four inputs as an (n, k) grid of pairs (layer_kernels.h's PairUp).
ffi::Error ReadPairs(const F32& ma, const F32& va, const F32& mb, const F32& vb, Pairs* pairs) {
  int64_t dims[4][3];
  const float* data[4];
  const F32* inputs[4] = {&ma, &va, &mb, &vb};
  for (int i = 0; i < 4; ++i) {
    const auto shape = inputs[i]->dimensions();
    if (shape.size() != 3) {
      return ffi::Error::InvalidArgument("keras_gauss energy: inputs must be (n, k, d)");
    }
    for (int j = 0; j < 3; ++j) dims[i][j] = static_cast<int64_t>(shape[j]);
    data[i] = inputs[i]->typed_data();
  }
  if (!kernels::PairUp(dims, data, pairs)) {
    return ffi::Error::InvalidArgument("keras_gauss energy: shapes do not pair up");
  }
  return ffi::Error::Success();
}

ffi::Error EnergyImpl(ffi::ThreadPool pool, F32 ma, F32 va, F32 mb, F32 vb, F32Out out,
                      int32_t kind, bool include_constant) {
  Pairs p;
  if (auto error = ReadPairs(ma, va, mb, vb, &p); error.failure()) return error;
  if (static_cast<int64_t>(out->element_count()) != p.n * p.k) {
    return ffi::Error::InvalidArgument("keras_gauss energy: output must be (n, k)");
  }
  kernels::EnergyForward(tensorflow::keras_gauss::EnergyOfCode(kind), include_constant, p.n, p.k, p.d, p.a, p.b,
                         out->typed_data(), PoolFor{&pool});
  return ffi::Error::Success();
}

ffi::Error EnergyGradImpl(ffi::ThreadPool pool, F32 grad, F32 ma, F32 va, F32 mb, F32 vb,
                          F32Out gma, F32Out gva, F32Out gmb, F32Out gvb, int32_t kind) {
  Pairs p;
  if (auto error = ReadPairs(ma, va, mb, vb, &p); error.failure()) return error;
  if (static_cast<int64_t>(grad.element_count()) != p.n * p.k) {
    return ffi::Error::InvalidArgument("keras_gauss energy gradient: grad must be (n, k)");
  }
  kernels::EnergyBackward(tensorflow::keras_gauss::EnergyOfCode(kind), p.n, p.k, p.d, p.a, p.b, grad.typed_data(),
                          gma->typed_data(), gva->typed_data(), gmb->typed_data(),
                          gvb->typed_data(), PoolFor{&pool});
  return ffi::Error::Success();
}

// Calls f(typed ids) for int32 or int64 ids. An id outside [0, rows) is an
// error that starts with `message` (the caller's words) when it is given, as
// the TensorFlow gather's (layer_ops.cc).
template <typename F>
ffi::Error WithIds(const ffi::AnyBuffer& ids, int64_t rows, const char* what, const F& f,
                   std::string_view message = {}) {
  const int64_t n = static_cast<int64_t>(ids.element_count());
  auto run = [&](auto* typed) -> ffi::Error {
    const int64_t bad = kernels::FirstBadId(typed, n, rows);
    if (bad >= 0) {
      const std::string detail =
          std::string(what) + ": id " + std::to_string(static_cast<int64_t>(typed[bad])) +
          " (at flat position " + std::to_string(bad) + ") outside [0, " +
          std::to_string(rows) + ")";
      return ffi::Error::InvalidArgument(
          message.empty() ? detail : std::string(message) + " (" + detail + ")");
    }
    f(typed, n);
    return ffi::Error::Success();
  };
  if (ids.element_type() == ffi::DataType::S32) return run(ids.typed_data<int32_t>());
  if (ids.element_type() == ffi::DataType::S64) return run(ids.typed_data<int64_t>());
  return ffi::Error::InvalidArgument(std::string(what) + ": ids must be int32 or int64");
}

int64_t Columns(const F32& t) {
  const auto dims = t.dimensions();
  return dims.size() == 2 ? static_cast<int64_t>(dims[1]) : -1;
}

ffi::Error GatherImpl(ffi::ThreadPool pool, F32 table, ffi::AnyBuffer ids, F32Out rows,
                      std::string_view message) {
  const int64_t c = Columns(table);
  if (c < 0) return ffi::Error::InvalidArgument("keras_gauss gather: the table must be 2-d");
  const int64_t v = static_cast<int64_t>(table.dimensions()[0]);
  if (static_cast<int64_t>(rows->element_count()) !=
      static_cast<int64_t>(ids.element_count()) * c) {
    return ffi::Error::InvalidArgument("keras_gauss gather: output must be (n, columns)");
  }
  return WithIds(
      ids, v, "GaussianEmbedding lookup",
      [&](auto* typed, int64_t n) {
        kernels::GatherRows(table.typed_data(), c, typed, n, rows->typed_data(), PoolFor{&pool});
      },
      message);
}

ffi::Error ScatterAddImpl(ffi::ThreadPool pool, ffi::AnyBuffer ids, F32 values, F32Out dense) {
  const auto dims = dense->dimensions();
  if (dims.size() != 2) return ffi::Error::InvalidArgument("keras_gauss scatter: 2-d output");
  const int64_t v = dims[0], c = dims[1];
  if (static_cast<int64_t>(values.element_count()) !=
      static_cast<int64_t>(ids.element_count()) * c) {
    return ffi::Error::InvalidArgument("keras_gauss scatter: values must be (n, columns)");
  }
  return WithIds(ids, v, "GaussianEmbedding gradient", [&](auto* typed, int64_t n) {
    kernels::ScatterAddRows(typed, n, values.typed_data(), v, c, dense->typed_data(),
                            PoolFor{&pool});
  });
}

// The updated table and accumulator are written in place when XLA aliases
// them with the inputs (input_output_aliases); otherwise copied first.
ffi::Error PrepareUpdate(const F32& table, const F32& acc, F32Out& new_table, F32Out& new_acc,
                         const F32& lr, int64_t* rows, int64_t* c) {
  *c = Columns(table);
  if (*c < 0 || Columns(acc) != *c || acc.dimensions()[0] != table.dimensions()[0] ||
      new_table->element_count() != table.element_count() ||
      new_acc->element_count() != acc.element_count()) {
    return ffi::Error::InvalidArgument(
        "SparseAdagrad kernel: table and accumulator must be matrices of one shape");
  }
  if (lr.element_count() != 1) {
    return ffi::Error::InvalidArgument("SparseAdagrad kernel: the learning rate is a scalar");
  }
  *rows = static_cast<int64_t>(table.dimensions()[0]);
  if (new_table->typed_data() != table.typed_data()) {
    std::memcpy(new_table->typed_data(), table.typed_data(), table.size_bytes());
  }
  if (new_acc->typed_data() != acc.typed_data()) {
    std::memcpy(new_acc->typed_data(), acc.typed_data(), acc.size_bytes());
  }
  return ffi::Error::Success();
}

ffi::Error AdagradRowsImpl(ffi::ThreadPool pool, F32 table, F32 acc, ffi::AnyBuffer ids,
                           F32 values, F32 lr, F32Out new_table, F32Out new_acc, float epsilon,
                           float max_norm, float min_value, float max_value) {
  int64_t rows, c;
  if (auto error = PrepareUpdate(table, acc, new_table, new_acc, lr, &rows, &c);
      error.failure()) {
    return error;
  }
  if (static_cast<int64_t>(values.element_count()) !=
      static_cast<int64_t>(ids.element_count()) * c) {
    return ffi::Error::InvalidArgument("SparseAdagrad kernel: values must be (n, columns)");
  }
  const RowBounds bounds{max_norm, min_value, max_value};
  const float rate = lr.typed_data()[0];
  // One slot array per table size and thread, kept between calls.
  thread_local std::unordered_map<int64_t, kernels::RowSlots> slots_by_rows;
  kernels::RowSlots& slots = slots_by_rows[rows];
  return WithIds(ids, rows, "SparseAdagrad", [&](auto* typed, int64_t n) {
    slots.Assign(typed, n, rows);
    kernels::AdagradSlots(slots, new_table->typed_data(), new_acc->typed_data(), c,
                           values.typed_data(), rate, epsilon, bounds, PoolFor{&pool});
  });
}

ffi::Error AdagradDenseImpl(ffi::ThreadPool pool, F32 table, F32 acc, F32 grad, F32 lr,
                            F32Out new_table, F32Out new_acc, float epsilon, float max_norm,
                            float min_value, float max_value) {
  int64_t rows, c;
  if (auto error = PrepareUpdate(table, acc, new_table, new_acc, lr, &rows, &c);
      error.failure()) {
    return error;
  }
  if (grad.element_count() != table.element_count()) {
    return ffi::Error::InvalidArgument("SparseAdagrad kernel: the gradient must be table-shaped");
  }
  const RowBounds bounds{max_norm, min_value, max_value};
  kernels::AdagradDenseRows(new_table->typed_data(), new_acc->typed_data(), rows, c,
                            grad.typed_data(), lr.typed_data()[0], epsilon, bounds,
                            PoolFor{&pool});
  return ffi::Error::Success();
}

// The bindings: every handler runs on XLA's intra-op pool (`OnPool`); its
// float32 buffers counted (`Floats<n>` arguments, `Floats<n, true>`
// results); both AdaGrad updates take the bounds as attributes (`WithBounds`).
// A binding cannot be copied: each step makes the next one. In the macro a
// binding stands in parentheses, its commas inside them.
auto OnPool() { return ffi::Ffi::Bind().Ctx<ffi::ThreadPool>(); }

template <int N, bool Results = false, typename Binding>  // N >= 1
auto Floats(Binding&& binding) {
  auto next = [](auto&& b) {
    if constexpr (Results) return std::move(b).template Ret<F32>();
    else return std::move(b).template Arg<F32>();
  };
  if constexpr (N == 1) return next(std::move(binding));
  else return Floats<N - 1, Results>(next(std::move(binding)));
}

template <typename Binding>
auto WithBounds(Binding&& binding) {
  return std::move(binding)
      .template Attr<float>("epsilon")
      .template Attr<float>("max_norm")
      .template Attr<float>("min_value")
      .template Attr<float>("max_value");
}

}  // namespace

// The handlers (C symbols, registered by keras_gauss.kernels.jax_kernels).

// (mean_a, var_a, mean_b, var_b) -> energies
XLA_FFI_DEFINE_HANDLER_SYMBOL(KgEnergy, EnergyImpl,
                              (Floats<1, true>(Floats<4>(OnPool()))
                                   .Attr<int32_t>("kind")
                                   .Attr<bool>("include_constant")));

// (grad, mean_a, var_a, mean_b, var_b) -> their four gradients
XLA_FFI_DEFINE_HANDLER_SYMBOL(KgEnergyGrad, EnergyGradImpl,
                              (Floats<4, true>(Floats<5>(OnPool())).Attr<int32_t>("kind")));

// (table, ids) -> rows; `message` starts the error of an id outside the table
XLA_FFI_DEFINE_HANDLER_SYMBOL(
    KgGather, GatherImpl,
    (Floats<1, true>(Floats<1>(OnPool()).Arg<ffi::AnyBuffer>()).Attr<std::string_view>("message")));

// (ids, values) -> dense
XLA_FFI_DEFINE_HANDLER_SYMBOL(KgScatterAdd, ScatterAddImpl,
                              (Floats<1, true>(Floats<1>(OnPool().Arg<ffi::AnyBuffer>()))));

// (table, acc, ids, values, lr) -> (table, acc)
XLA_FFI_DEFINE_HANDLER_SYMBOL(
    KgAdagradRows, AdagradRowsImpl,
    (WithBounds(Floats<2, true>(Floats<2>(Floats<2>(OnPool()).Arg<ffi::AnyBuffer>())))));

// (table, acc, grad, lr) -> (table, acc)
XLA_FFI_DEFINE_HANDLER_SYMBOL(KgAdagradDense, AdagradDenseImpl,
                              (WithBounds(Floats<2, true>(Floats<4>(OnPool())))));

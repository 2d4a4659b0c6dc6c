// A standalone driver of the fused skip-gram kernel (skipgram_core.h) for
// cachegrind and timers: one epoch of a corpus dumped by
// `python benchmarks/skipgram_driver.py dump CORPUS FILE`, on one or more
// threads, with the tables either interleaved per word (the native
// library's layout) or as four separate (V, d) arrays per table (the
// TensorFlow op's layout on the Keras variables).
//
//   g++ -std=c++17 -O3 -fno-math-errno -fopenmp-simd -march=native -pthread \
//       -Ikeras_gauss/fused benchmarks/skipgram_driver.cc \
//       -o /tmp/skipgram_driver
//   /tmp/skipgram_driver FILE interleaved|separate [threads] [max_tokens]
//
// Prints the loss, pairs, the wall and CPU seconds of the epoch (setup excluded).

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gauss_math.h"
#include "skipgram_core.h"

using namespace tensorflow::keras_gauss;

template <typename T>
std::vector<T> Read(FILE* f) {
  int64_t n = 0;
  if (std::fread(&n, sizeof(n), 1, f) != 1) std::abort();
  std::vector<T> v(n);
  if (n && std::fread(v.data(), sizeof(T), n, f) != static_cast<size_t>(n)) std::abort();
  return v;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FILE interleaved|separate [threads] [max_tokens]\n",
                 argv[0]);
    return 2;
  }
  FILE* f = std::fopen(argv[1], "rb");
  if (!f) return 2;
  std::vector<int32_t> ids = Read<int32_t>(f);
  std::vector<int64_t> splits = Read<int64_t>(f);
  std::vector<float> probs = Read<float>(f);
  std::vector<int32_t> alias = Read<int32_t>(f);
  std::fclose(f);
  const bool interleaved = std::strcmp(argv[2], "interleaved") == 0;
  const int64_t threads = argc > 3 ? std::atoll(argv[3]) : 1;
  int64_t sentences = static_cast<int64_t>(splits.size()) - 1;
  if (argc > 4) {  // the first max_tokens tokens' sentences
    const int64_t max_tokens = std::atoll(argv[4]);
    while (sentences > 1 && splits[sentences - 1] >= max_tokens) --sentences;
  }
  const int64_t rows = static_cast<int64_t>(probs.size()), d = 50, dv = 50;
  const int64_t stride = 208;  // 2 (d + dv) rounded up to 16 floats
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uniform(-0.05f, 0.05f);
  std::vector<std::vector<float>> buffers;
  Table tables[2];
  for (int t = 0; t < 2; ++t) {
    Table& tb = tables[t];
    tb.rows = rows;
    tb.max_norm = 2.0f;
    tb.min_variance = 0.05f;
    tb.max_variance = 5.0f;
    if (interleaved) {
      buffers.emplace_back(rows * stride + 16, 0.f);
      float* base = buffers.back().data();
      base += (16 - (reinterpret_cast<uintptr_t>(base) / 4) % 16) % 16;
      tb.means = base;
      tb.variances = base + d;
      tb.mean_acc = base + 2 * d;
      tb.var_acc = base + 3 * d;
      tb.mean_stride = tb.var_stride = stride;
    } else {
      for (int k = 0; k < 4; ++k) buffers.emplace_back(rows * d, 0.f);
      float** slots[4] = {&tb.means, &tb.variances, &tb.mean_acc, &tb.var_acc};
      for (int k = 0; k < 4; ++k) *slots[k] = buffers[buffers.size() - 4 + k].data();
      tb.mean_stride = d;
      tb.var_stride = dv;
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < d; ++i) {
        tb.Mean(r)[i] = uniform(rng);
        tb.Var(r)[i] = 1.0f;
        tb.MeanAcc(r)[i] = 1e-6f;
        tb.VarAcc(r)[i] = 1e-6f;
      }
    }
  }
  Skipgram sg;
  sg.tokens = ids.data();
  sg.splits = splits.data();
  sg.probs = probs.data();
  sg.alias = alias.data();
  sg.outcomes = static_cast<uint64_t>(rows);
  sg.seed = 1;
  sg.window = 5;
  sg.dynamic = true;
  sg.negatives = 1;
  auto parallel = [](int64_t n, const auto& fn) {
    std::vector<std::thread> pool;
    for (int64_t t = 1; t < n; ++t) pool.emplace_back([&fn, t]() { fn(t); });
    fn(0);
    for (auto& th : pool) th.join();
  };
  double loss = 0.0;
  int64_t pairs = 0;
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  // Chunks of ~128k tokens, as the benchmark feeds the op.
  int64_t first = 0, index = 0;
  while (first < sentences) {
    int64_t last = first + 1;
    while (last < sentences && splits[last] - splits[first] < (1 << 17)) ++last;
    std::vector<int64_t> chunk(splits.begin() + first, splits.begin() + last + 1);
    for (auto& s : chunk) s -= splits[first];
    Skipgram part = sg;
    part.tokens = ids.data() + splits[first];
    part.splits = chunk.data();
    part.seed = sg.seed + index++;
    TrainChunk(tables, false, d, dv, Energy::kEL, false, 2048, 0.2f, 0.5f, 1e-7f, part,
               last - first, threads, parallel, &loss, &pairs);
    first = last;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  std::printf("%s threads %lld: loss %.6f pairs %lld seconds %.3f cpu %.3f\n", argv[2],
              static_cast<long long>(threads), loss / pairs, static_cast<long long>(pairs),
              seconds, cpu);
  return 0;
}

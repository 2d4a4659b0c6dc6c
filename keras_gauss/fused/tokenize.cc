// KerasGaussAsciiTokenIds: tokenize ASCII lines and look the tokens up in a
// vocabulary, in one pass, for the corpus trainer's first epoch (tf.strings'
// lower + three regex_replace + split + hash-table lookup cost about as much
// CPU as the training op itself on a 2-core machine).
//
// It reproduces pipelines.tokenize (whose rules are RE2 regular expressions
// over Unicode text) for lines made only of ASCII bytes other than NUL
// (tf.strings.lower ends a string at a NUL) and of U+FFFD (see Handled);
// every other line is
// reported in `fallback` and gets an empty row, for the caller to tokenize
// with tf.strings (pipelines.tokenize.token_ids does, and merges the rows).
// On ASCII text the rules are:
//
//   lowercase:          A-Z -> a-z;
//   strip_punctuation:  (1) every maximal run of characters that are not
//                       letters, digits, RE2 whitespace (\t \n \f \r space)
//                       or marks (' -) becomes a space, and so does every
//                       run of two or more marks; (2) marks at the start of
//                       the line or after whitespace are removed; (3) marks
//                       before whitespace or the end of the line are removed
//                       (each step on the previous step's output, as the
//                       three regex_replace calls run);
//   split:              on \t \n \v \f \r and space (tf.strings.split).
//
// Tokens not in the vocabulary are dropped, as pipelines.skipgram does.
//
// The vocabulary (`words`, id order) is hashed into an open-addressing table
// the first time and again whenever its content changes.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/platform/mutex.h"

namespace tensorflow {
namespace {

// FNV-1a, 64 bits.
inline uint64_t HashBytes(const char* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001B3ULL;
  }
  return h;
}

constexpr uint64_t kFnvBasis = 0xCBF29CE484222325ULL;

// Words -> ids, open addressing with linear probing (load <= 1/2).
class WordTable {
 public:
  explicit WordTable(const tstring* words, int64_t n) {
    offsets_.reserve(n + 1);
    offsets_.push_back(0);
    for (int64_t i = 0; i < n; ++i) {
      pool_.append(words[i].data(), words[i].size());
      offsets_.push_back(pool_.size());
    }
    size_t capacity = 16;
    while (capacity < 2 * static_cast<size_t>(n) + 2) capacity *= 2;
    mask_ = capacity - 1;
    slots_.assign(capacity, -1);
    for (int64_t i = 0; i < n; ++i) {
      const char* w = pool_.data() + offsets_[i];
      const size_t len = offsets_[i + 1] - offsets_[i];
      size_t s = HashBytes(w, len, kFnvBasis) & mask_;
      bool duplicate = false;
      while (slots_[s] >= 0) {
        if (Equal(slots_[s], w, len)) {
          duplicate = true;  // the first id wins, as in tf.lookup tables built once
          break;
        }
        s = (s + 1) & mask_;
      }
      if (!duplicate) slots_[s] = static_cast<int32_t>(i);
    }
  }

  // The id of `token`, or -1.
  int32_t Find(const char* token, size_t len) const {
    size_t s = HashBytes(token, len, kFnvBasis) & mask_;
    while (slots_[s] >= 0) {
      if (Equal(slots_[s], token, len)) return slots_[s];
      s = (s + 1) & mask_;
    }
    return -1;
  }

 private:
  bool Equal(int32_t id, const char* w, size_t len) const {
    const size_t begin = offsets_[id];
    return offsets_[id + 1] - begin == len && std::memcmp(pool_.data() + begin, w, len) == 0;
  }

  std::string pool_;
  std::vector<size_t> offsets_;
  std::vector<int32_t> slots_;
  size_t mask_ = 0;
};

enum CharClass : uint8_t { kWord, kSpace, kMark, kOther };

// RE2's \s: [\t\n\f\r ] (not \v).
inline bool IsRe2Space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

inline bool IsSplitSpace(char c) { return IsRe2Space(c) || c == '\v'; }

inline CharClass Classify(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return kWord;
  if (IsRe2Space(c)) return kSpace;
  if (c == '\'' || c == '-') return kMark;
  return kOther;
}

inline bool IsMark(char c) { return c == '\'' || c == '-'; }

// Whether the line is ASCII without NUL (tf.strings.lower ends a string at
// a NUL), except for U+FFFD (EF BF BD), the replacement character, which
// is neither a letter, a digit, whitespace nor a mark: its three bytes are
// "other" characters to the rules below, as the code point is to RE2, and
// lowercasing leaves it alone. (It is the commonest non-ASCII character of
// text that went through a lossy decoding.)
inline bool Handled(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(p[i]);
    if (c == 0) return false;
    if (c >= 0x80) {
      if (c == 0xEF && i + 2 < n && static_cast<unsigned char>(p[i + 1]) == 0xBF &&
          static_cast<unsigned char>(p[i + 2]) == 0xBD) {
        i += 2;
        continue;
      }
      return false;
    }
  }
  return true;
}

// pipelines.tokenize's punctuation rules on ASCII text (see the header).
void StripPunctuation(std::string* text, std::string* scratch) {
  std::string& a = *text;
  std::string& b = *scratch;
  // (1) runs of other characters, and runs of >= 2 marks, become a space.
  b.clear();
  for (size_t i = 0, n = a.size(); i < n;) {
    const CharClass k = Classify(a[i]);
    size_t j = i + 1;
    if (k == kOther) {
      while (j < n && Classify(a[j]) == kOther) ++j;
      b.push_back(' ');
    } else if (k == kMark) {
      while (j < n && IsMark(a[j])) ++j;
      if (j - i >= 2) {
        b.push_back(' ');
      } else {
        b.push_back(a[i]);
      }
    } else {
      b.push_back(a[i]);
    }
    i = j;
  }
  // (2) (^|\s)['-]+ -> \1
  a.clear();
  for (size_t i = 0, n = b.size(); i < n;) {
    if (i == 0 && IsMark(b[0])) {
      while (i < n && IsMark(b[i])) ++i;
      continue;
    }
    if (IsRe2Space(b[i]) && i + 1 < n && IsMark(b[i + 1])) {
      a.push_back(b[i]);
      i += 1;
      while (i < n && IsMark(b[i])) ++i;
      continue;
    }
    a.push_back(b[i]);
    ++i;
  }
  // (3) ['-]+(\s|$) -> \1
  b.clear();
  for (size_t i = 0, n = a.size(); i < n;) {
    if (IsMark(a[i])) {
      size_t j = i;
      while (j < n && IsMark(a[j])) ++j;
      if (j == n || IsRe2Space(a[j])) {
        i = j;  // the whitespace (if any) is copied next
        continue;
      }
      b.append(a, i, j - i);
      i = j;
      continue;
    }
    b.push_back(a[i]);
    ++i;
  }
  a.swap(b);
}

REGISTER_OP("KerasGaussAsciiTokenIds")
    .Input("lines: string")
    .Input("words: string")
    .Output("ids: int32")
    .Output("row_splits: int64")
    .Output("fallback: bool")
    .Attr("lowercase: bool = true")
    .Attr("strip_punctuation: bool = true")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      shape_inference::ShapeHandle lines;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 1, &lines));
      shape_inference::DimensionHandle splits;
      TF_RETURN_IF_ERROR(c->Add(c->Dim(lines, 0), 1, &splits));
      c->set_output(0, c->Vector(c->UnknownDim()));
      c->set_output(1, c->Vector(splits));
      c->set_output(2, c->Vector(c->Dim(lines, 0)));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Token ids of ASCII lines under pipelines.tokenize's rules (OOV dropped), as
flat ids and row splits; lines with other bytes (but U+FFFD) or NUL are
flagged in `fallback` and left empty.
)doc");

class AsciiTokenIdsOp : public OpKernel {
 public:
  explicit AsciiTokenIdsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("lowercase", &lowercase_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("strip_punctuation", &strip_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& lines = ctx->input(0);
    const Tensor& words = ctx->input(1);
    OP_REQUIRES(ctx, TensorShapeUtils::IsVector(lines.shape()),
                errors::InvalidArgument("KerasGaussAsciiTokenIds: `lines` must be a vector, got shape ",
                                        lines.shape().DebugString()));
    OP_REQUIRES(ctx, TensorShapeUtils::IsVector(words.shape()),
                errors::InvalidArgument("KerasGaussAsciiTokenIds: `words` must be a vector, got shape ",
                                        words.shape().DebugString()));
    OP_REQUIRES(ctx, words.NumElements() < (int64_t{1} << 31),
                errors::InvalidArgument("KerasGaussAsciiTokenIds: too many words for int32 ids"));
    std::shared_ptr<const WordTable> table = Table(words);

    const int64_t n = lines.dim_size(0);
    const auto text = lines.flat<tstring>();
    Tensor* splits_t = nullptr;
    Tensor* fallback_t = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n + 1}), &splits_t));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({n}), &fallback_t));
    auto splits = splits_t->flat<int64_t>();
    auto fallback = fallback_t->flat<bool>();
    std::vector<int32_t> ids;
    std::string buffer, scratch;
    splits(0) = 0;
    for (int64_t r = 0; r < n; ++r) {
      const tstring& line = text(r);
      const bool handled = Handled(line.data(), line.size());
      fallback(r) = !handled;
      if (handled) {
        buffer.assign(line.data(), line.size());
        if (lowercase_) {
          for (char& c : buffer) {
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
          }
        }
        if (strip_) StripPunctuation(&buffer, &scratch);
        for (size_t i = 0, m = buffer.size(); i < m;) {
          while (i < m && IsSplitSpace(buffer[i])) ++i;
          size_t j = i;
          while (j < m && !IsSplitSpace(buffer[j])) ++j;
          if (j > i) {
            const int32_t id = table->Find(buffer.data() + i, j - i);
            if (id >= 0) ids.push_back(id);
          }
          i = j;
        }
      }
      splits(r + 1) = static_cast<int64_t>(ids.size());
    }
    Tensor* ids_t = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(ids.size())}),
                                             &ids_t));
    if (!ids.empty()) {
      std::memcpy(ids_t->flat<int32_t>().data(), ids.data(), ids.size() * sizeof(int32_t));
    }
  }

 private:
  // The table of `words`. It is built again only when their content
  // changed: the kernel keeps a reference to the words it was built from, so
  // their buffer cannot be freed and reused, and the same buffer means the
  // same words; another buffer is compared word by word.
  std::shared_ptr<const WordTable> Table(const Tensor& words) {
    const auto w = words.flat<tstring>();
    const int64_t n = words.NumElements();
    mutex_lock lock(mu_);
    if (table_ != nullptr && n == words_.NumElements()) {
      const auto cached = words_.flat<tstring>();
      bool same = cached.data() == w.data();
      if (!same) {
        same = true;
        for (int64_t i = 0; i < n && same; ++i) same = cached(i) == w(i);
      }
      if (same) {
        words_ = words;
        return table_;
      }
    }
    table_ = std::make_shared<const WordTable>(w.data(), n);
    words_ = words;
    return table_;
  }

  bool lowercase_ = true;
  bool strip_ = true;
  mutex mu_;
  Tensor words_;
  std::shared_ptr<const WordTable> table_;
};

REGISTER_KERNEL_BUILDER(Name("KerasGaussAsciiTokenIds").Device(DEVICE_CPU), AsciiTokenIdsOp);

}  // namespace
}  // namespace tensorflow

// The energies' integer codes: the one encoding of every C++ file (layer_ops.cc,
// jax_ops.cc, native.cc, pairs.cc, scores.cc) and of Python, whose codes are
// the `code` of the descriptors in keras_gauss/energies/ (the test
// tests/keras_gauss/energies/test_energies.py reads this file and compares).
// A new energy takes the next code here and in its descriptor.

#ifndef KERAS_GAUSS_FUSED_ENERGIES_H_
#define KERAS_GAUSS_FUSED_ENERGIES_H_

#include <cstdint>

namespace tensorflow {
namespace keras_gauss {

enum class Energy : int32_t {
  kEL = 0,           // keras_gauss/energies/el.py
  kKL = 1,           // keras_gauss/energies/kl.py
  kContainment = 2,  // keras_gauss/energies/containment.py
};

// The energy of a code passed from Python.
inline Energy EnergyOfCode(int32_t code) { return static_cast<Energy>(code); }

}  // namespace keras_gauss
}  // namespace tensorflow

#endif  // KERAS_GAUSS_FUSED_ENERGIES_H_

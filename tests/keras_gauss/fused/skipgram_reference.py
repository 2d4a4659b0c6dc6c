"""Independent computations of what the native skip-gram trainer does: the
documented random draws in Python, and the training steps in `keras.ops` code
(`keras_gauss.ops` energies, gradients by TensorFlow, AdaGrad and the row
constraints in NumPy), one minibatch after the other."""

import numpy as np
import tensorflow as tf

from keras_gauss import ops as gauss_ops


def python_triples(tokens, splits, window, dynamic_window, negatives, keep, probs, alias,
                   seed, shuffle=False):
    """The `(word, context, negatives)` triples of a chunk by the formulas in
    `native.cc`'s header comment (one thread: the whole chunk one block)."""
    mask = (1 << 64) - 1
    golden = 0x9E3779B97F4A7C15

    def mix(z):
        z &= mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    out = []
    for s in range(len(splits) - 1):
        key = mix(seed + golden * (s + 1))
        sentence = tokens[splits[s]:splits[s + 1]]
        kept = [(p, int(t)) for p, t in enumerate(sentence)
                if keep is None or np.float32((mix(key + golden * (4 * p + 1)) >> 40) / 2**24)
                < keep[t]]
        for q, (p, word) in enumerate(kept):
            reach = window
            if dynamic_window:
                reach = 1 + (mix(key + golden * (4 * p + 2)) >> 33) % window
            base = mix(key + golden * (4 * p + 3))
            for j in range(max(0, q - reach), min(len(kept), q + reach + 1)):
                if j == q:
                    continue
                negs = []
                for m in range(negatives):
                    u = mix(base + golden * (kept[j][0] * negatives + m + 1))
                    i = ((u >> 32) * len(probs)) >> 32
                    negs.append(i if ((u >> 8) & 0xFFFFFF) / 2**24 < probs[i] else alias[i])
                out.append((word, kept[j][1], tuple(negs)))
    if shuffle:
        base = mix(seed ^ 0xD1B54A32D192ED03)
        keys = [(mix(base + golden * (i + 1)) >> 1, i) for i in range(len(out))]
        out = [out[i] for _, i in sorted(keys)]
    return out


_COMPILED = {}


def _loss_and_gradients(energy):
    """The hinge loss of a batch and its gradients with respect to the
    tables (dense), one traced function per energy (eager steps cost
    milliseconds each, and a reference run takes hundreds)."""
    if energy not in _COMPILED:
        energy_of = gauss_ops.el_energy if energy == "el" else gauss_ops.kl_energy

        @tf.function(reduce_retracing=True)
        def loss_and_gradients(tables, general, specific, margin):
            with tf.GradientTape() as tape:
                tape.watch(tables)
                four = tables * 2 if len(tables) == 2 else tables
                mean_g, var_g = tf.gather(four[0], general), tf.gather(four[1], general)
                mean_s, var_s = tf.gather(four[2], specific), tf.gather(four[3], specific)
                var_g, var_s = (tf.broadcast_to(v, tf.shape(mean_g)) for v in (var_g, var_s))
                energies = energy_of(mean_g, var_g, mean_s, var_s)
                loss = tf.reduce_mean(tf.reduce_sum(
                    tf.nn.relu(margin - energies[:, :1] + energies[:, 1:]), -1))
            return loss, [tf.convert_to_tensor(g) for g in tape.gradient(loss, tables)]

        _COMPILED[energy] = loss_and_gradients
    return _COMPILED[energy]


def pair_step(values, accs, general, specific, learning_rate, margin, max_norm,
              min_variance, max_variance, energy, epsilon=1e-7, variance_learning_rate=None):
    """One max-margin ranking step on lists of `(general, specific)` pairs,
    the first of each list the positive one: the mean hinge loss, its
    gradients, AdaGrad on every row of the batch, then the row constraints.

    Args:
        values: `[means, variances]` (one shared table) or twice that (the
            general side's table, then the specific side's), NumPy arrays.
        accs: their AdaGrad accumulators, alike.
        general, specific: `(batch, list)` ids.
        variance_learning_rate: the variances' rate (None: `learning_rate`).

    Returns:
        `(loss, values + accumulators after the step)`.
    """
    shared = len(values) == 2
    loss, grads = _loss_and_gradients(energy)(
        [tf.constant(v) for v in values], tf.constant(general), tf.constant(specific),
        tf.constant(margin, tf.float32))
    grads = [g.numpy() for g in grads]
    sides = [np.unique(np.concatenate([general.ravel(), specific.ravel()]))] if shared \
        else [np.unique(general), np.unique(specific)]
    new_values, new_accs = [v.copy() for v in values], [a.copy() for a in accs]
    rates = (learning_rate,
             learning_rate if variance_learning_rate is None else variance_learning_rate)
    for side, rows in enumerate(sides):
        for k, rate in zip((2 * side, 2 * side + 1), rates):  # AdaGrad on the batch's rows
            new_accs[k][rows] += grads[k][rows] ** 2
            new_values[k][rows] -= rate * grads[k][rows] / np.sqrt(new_accs[k][rows] + epsilon)
        means = new_values[2 * side]
        norms = np.linalg.norm(means[rows], axis=-1, keepdims=True)
        means[rows] *= np.minimum(1.0, max_norm / np.maximum(norms, 1e-30))
        new_values[2 * side + 1][rows] = np.clip(new_values[2 * side + 1][rows],
                                                 min_variance, max_variance)
    return float(loss), new_values + new_accs


def reference_training(values, accumulators, triples, batch_size, learning_rate, margin,
                       energy="el", **settings):
    """Training on `triples` in order: each `batch_size` of them one
    `pair_step`, the word on the general side of every candidate. Returns
    `(summed loss, tables, accumulators)`."""
    total, n = 0.0, len(values)
    for i in range(0, len(triples), batch_size):
        batch = triples[i:i + batch_size]
        word = np.array([t[0] for t in batch], "int32")
        candidates = np.array([(t[1], *t[2]) for t in batch], "int32")
        general = np.repeat(word[:, None], candidates.shape[1], 1)
        loss, after = pair_step(values, accumulators, general, candidates, learning_rate,
                                margin, energy=energy, **settings)
        values, accumulators = after[:n], after[n:]
        total += loss * len(batch)
    return total, values, accumulators

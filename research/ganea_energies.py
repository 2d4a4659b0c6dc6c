"""Research: which energy, loss and initialisation make Gaussian embeddings infer transitive edges.

Trains one shared Gaussian table (`keras_gauss.layers.GaussianEmbedding`,
`SparseAdagrad`, `make_dataset`) on the training edges of Ganea et al.'s
split (`--split ganea`) with an energy and a loss of this script, and prints
the validation F1 (threshold chosen on the same pairs) after each epoch.
Test pairs are never scored here: choose on validation only.

Energies (higher = more likely "specific is-a general"; variances are sigma^2):

* ``kl``: ``-KL(N_s || N_g)``, the paper's.
* ``gen`` (``beta``): ``-KL + beta * (log det S_g - log det S_s)``; beta 0.5
  leaves ``-1/2 [tr(S_g^-1 S_s) + maha - d]``, which does not grow with the
  size ratio of a nested pair.
* ``box`` (``k``): ``-sum_d relu(|mu_s - mu_g| + k sigma_s - k sigma_g)^2``,
  the k-sigma intervals nested in every dimension (transitive); ``slack``
  asks training for that much room inside (scoring uses none).

Losses: ``ranking`` (the paper's max-margin, ``margin``) or ``contrastive``:
positives pay ``relu(D - gamma)``, negatives ``relu(gamma + margin - D)``
with ``D = -E`` (density order embeddings' thresholded divergence without
its dead zone: there, negatives pay ``relu(margin - relu(D - gamma))``, flat
while ``D < gamma``).

    python research/ganea_energies.py --percent 25 --dim 10 --epochs 20 \\
        gen='{"energy": "gen", "beta": 0.5, "loss": "contrastive"}'
"""

import argparse
import json
import os
import sys
import time

import numpy as np

DEFAULTS = {"energy": "kl", "beta": 0.0, "k": 1.0, "slack": 0.0, "power": 2, "loss": "ranking", "margin": 1.0,
            "gamma": 0.0, "negatives": 5, "reversed": True, "lr": 0.3, "batch": 1024,
            "min_var": 0.05, "max_var": 5.0, "max_norm": 4.0, "init": "ones",
            "init_scale": 1.0, "score_betas": [], "sibling": 0.0}


def load_split(percent, seed, root, cache="/tmp/ganea_split_cache"):
    from keras_gauss.hierarchy import build_hierarchy
    from keras_gauss.hierarchy.split import drop_root, ganea_split

    os.makedirs(cache, exist_ok=True)
    hierarchy = build_hierarchy(root)
    hierarchy = drop_root(hierarchy, root or "entity.n.01")
    path = os.path.join(cache, f"{root or 'nouns'}-{percent:g}-{seed}.npz")
    if os.path.exists(path):
        data = dict(np.load(path))
    else:
        s = ganea_split(hierarchy, percent, seed=seed)
        data = {k: getattr(s, k) for k in ("train", "val", "val_neg")}
        np.savez(path, **data)
    return hierarchy, data


def energy_np(kind, m_s, v_s, m_g, v_g, beta=0.0, k=1.0, power=2):
    if kind == "box":
        viol = np.maximum(np.abs(m_s - m_g) + k * np.sqrt(v_s) - k * np.sqrt(v_g), 0.0)
        return -(viol ** power).sum(-1)
    kl = 0.5 * ((v_s + (m_s - m_g) ** 2) / v_g - 1.0 - np.log(v_s / v_g)).sum(-1)
    gen = (np.log(v_g) - np.log(v_s)).sum(-1)
    return -kl + (beta if kind == "gen" else 0.0) * gen


def scores(kind, means, variances, pairs, beta=0.0, k=1.0, power=2, chunk=200_000):
    out = np.empty(len(pairs))
    for i in range(0, len(pairs), chunk):
        s, g = pairs[i:i + chunk, 0], pairs[i:i + chunk, 1]
        out[i:i + chunk] = energy_np(kind, means[s], variances[s], means[g], variances[g],
                                     beta, k, power)
    return out


def val_f1(kind, means, variances, data, beta=0.0, k=1.0, power=2):
    from keras_gauss.metrics import best_f1

    pos = scores(kind, means, variances, data["val"], beta, k, power)
    neg = scores(kind, means, variances, data["val_neg"], beta, k, power)
    return best_f1(np.r_[np.ones(len(pos), bool), np.zeros(len(neg), bool)], np.r_[pos, neg])[0]


def build(num_nodes, cfg, dim, k_neg, init_var):
    import keras
    from keras import ops

    from keras_gauss.layers import GaussianEmbedding
    from keras_gauss.losses import MaxMarginRanking
    from keras_gauss.models import GaussianModel
    from keras_gauss.optimizers import SparseAdagrad

    table = GaussianEmbedding(num_nodes, dim, mean_initializer=keras.initializers.RandomUniform(
        -0.05, 0.05, seed=0), variance_initializer=keras.initializers.Constant(init_var)
        if init_var is not None else "ones", max_norm=cfg["max_norm"],
        min_variance=cfg["min_var"], max_variance=cfg["max_var"], name="nodes")

    class Energy(keras.layers.Layer):
        def call(self, m_g, v_g, m_s, v_s):
            if cfg["energy"] == "box":
                viol = ops.relu(ops.abs(m_s - m_g) + cfg["k"] * ops.sqrt(v_s)
                                - cfg["k"] * ops.sqrt(v_g) + cfg["slack"])
                return -ops.sum(viol * viol if cfg["power"] == 2 else viol, axis=-1)
            kl = 0.5 * ops.sum((v_s + ops.square(m_s - m_g)) / v_g - 1.0 - ops.log(v_s / v_g),
                               axis=-1)
            beta = cfg["beta"] if cfg["energy"] == "gen" else 0.0
            return -kl + beta * ops.sum(ops.log(v_g) - ops.log(v_s), axis=-1)

    general = keras.Input((), dtype="int32", name="general")
    specific = keras.Input((), dtype="int32", name="specific")
    neg_general = keras.Input((k_neg,), dtype="int32", name="neg_general")
    neg_specific = keras.Input((k_neg,), dtype="int32", name="neg_specific")
    g = ops.concatenate([ops.expand_dims(general, -1), neg_general], -1)
    s = ops.concatenate([ops.expand_dims(specific, -1), neg_specific], -1)
    energy = Energy()(*table(g), *table(s))
    model = GaussianModel({"general": general, "specific": specific,
                           "neg_general": neg_general, "neg_specific": neg_specific}, energy)
    if cfg["loss"] == "ranking":
        loss = MaxMarginRanking(cfg["margin"])
    else:
        gamma, margin = cfg["gamma"], cfg["margin"]

        def loss(y_true, y_pred):
            d = -y_pred
            pos = ops.cast(y_true > 0, "float32")
            return ops.sum(pos * ops.relu(d - gamma) + (1 - pos) * ops.relu(gamma + margin - d),
                           axis=-1)
    model.compile(optimizer=SparseAdagrad(cfg["lr"]), loss=loss)
    return model


def initial_variances(hierarchy, cfg, dim, known=None):
    """`"subtree"`: per node, (1 + descendants)^(2/d) * init_scale, scaled into the bounds;
    `"subtree_log"`: sigma from sigma_min to sigma_max * init_scale linear in log(1 +
    descendants), descendants counted in `known` (the closure of the training edges)."""
    if cfg["init"] == "ones":
        return None
    index = known if known is not None else hierarchy.index
    size = 1.0 + index.num_descendants.astype(np.float64)
    if cfg["init"] == "subtree_log":
        lo, hi = np.sqrt(cfg["min_var"]), np.sqrt(cfg["max_var"]) * cfg["init_scale"]
        sigma = lo + (hi - lo) * np.log(size) / np.log(size.max())
        return np.repeat((sigma ** 2)[:, None], dim, axis=1).astype(np.float32)
    var = cfg["init_scale"] * size ** (2.0 / dim)
    var = np.clip(var, cfg["min_var"], cfg["max_var"])
    return np.repeat(var[:, None], dim, axis=1).astype(np.float32)


def run(name, cfg, args, hierarchy, data):
    import keras

    from keras_gauss.hierarchy import closure_index, make_dataset

    keras.utils.set_random_seed(args.seed)
    train = data["train"]
    known = closure_index(train, hierarchy.num_nodes)
    k_neg = cfg["negatives"] + int(cfg["reversed"])
    init = initial_variances(hierarchy, cfg, args.dim, known)
    model = build(hierarchy.num_nodes, cfg, args.dim, k_neg, None)
    table = model.get_layer("nodes")
    if init is not None:
        table.variances.assign(init)
    history, best = [], (-1.0, 0)
    post = {b: -1.0 for b in cfg["score_betas"]}
    start = time.time()
    for epoch in range(args.epochs):
        ds = make_dataset(train, known=known, batch_size=cfg["batch"], negatives=cfg["negatives"],
                          reversed_negatives=cfg["reversed"], sibling_negatives=cfg["sibling"],
                          seed=args.seed, first_pass=epoch)
        model.fit(ds, epochs=1, verbose=0)
        means = table.means.numpy().astype(np.float64)
        variances = np.broadcast_to(table.variances.numpy(), means.shape).astype(np.float64)
        f1 = val_f1(cfg["energy"], means, variances, data, cfg["beta"], cfg["k"], cfg["power"])
        history.append(f1)
        if f1 > best[0]:
            best = (f1, epoch + 1)
        for b in post:
            post[b] = max(post[b], val_f1("gen", means, variances, data, b))
        if args.patience and epoch + 1 - best[1] >= args.patience:
            break
    shown = " ".join(f"{h:.3f}" for h in history[::max(1, len(history) // 10)])
    extra = " ".join(f"beta{b:g}:{v:.3f}" for b, v in post.items())
    line = (f"{name}: val_f1 {best[0]:.4f} @{best[1]}/{len(history)} [{shown}] {extra} "
            f"{time.time() - start:.0f} s load {os.getloadavg()[0]:.1f} | "
            f"{args.percent:g}% {args.dim}-d {args.root or 'nouns'} {json.dumps(cfg)}")
    return line


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("settings", nargs="+", help="NAME=JSON (see DEFAULTS)")
    parser.add_argument("--percent", type=float, default=25.0)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--patience", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", default=None)
    parser.add_argument("--log", default="ganea_results.log")
    args = parser.parse_args(argv)
    hierarchy, data = load_split(args.percent, args.seed, args.root)
    for item in args.settings:
        name, _, text = item.partition("=")
        cfg = {**DEFAULTS, **json.loads(text or "{}")}
        unknown = set(cfg) - set(DEFAULTS)
        if unknown:
            raise SystemExit(f"unknown settings {sorted(unknown)}")
        line = run(name, cfg, args, hierarchy, data)
        print(line, flush=True)
        with open(args.log, "a") as log:
            log.write("energies " + line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

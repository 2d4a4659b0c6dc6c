"""One process of a two-process JAX job (`--distribution data`) that trains
on its own shard, or the one-process reference fed the same global batches.

    KERAS_BACKEND=jax python shard_run.py OUT KIND DATA RUN PORT PID [resume]
    KERAS_BACKEND=jax python shard_run.py reference OUT KIND DATA [OUT KIND DATA ...]

`KIND` is `corpus` (`train_corpus` on the text file `DATA`) or `hierarchy`
(`train_hierarchy` on the edges file `DATA`). A process writes the tables
it ends with (`tables/<path>`, by a callback at the end of training, so the
process that does not write `RUN` reports them too; for `hierarchy`, which
takes no callbacks, process 0's from `RUN`) and its metrics
(`metrics`, JSON) to `OUT`. With `resume`, it continues the run in `RUN`.
With `fault_injection.KILL_AFTER` set it checkpoints after every step and
is killed at that checkpoint.

`reference`: one process, one device, trains the model of each `KIND` on
the global batches of its two-process job, built here from the two
processes' own streams (`shard_batches` / the hierarchy's shard of edges,
for `Distribution("data", 2, i)`), batch `k` of process 0 then of process
1; each as in a fresh process (`keras.backend.clear_session()`).
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_gauss.fast_exit import done  # noqa: E402
from keras_gauss.fast_exit import end_without_teardown  # noqa: E402

end_without_teardown()  # before JAX registers its own atexit functions

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)  # for fault_injection only: tests/keras_gauss/ would hide the package
from fault_injection import KILL_AFTER  # noqa: E402
from fault_injection import install  # noqa: E402

sys.path.remove(TESTS)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_gauss.distribution import Distribution  # noqa: E402
from keras_gauss.distribution import DistributionConfig  # noqa: E402
from keras_gauss.hierarchy.train import WordNetConfig  # noqa: E402
from keras_gauss.pipelines.train import CorpusConfig  # noqa: E402

CORPUS = CorpusConfig(dim=4, epochs=2, window=2, min_count=1, sample=0, batch_size=256,
                      seed=1, engine="keras")
HIERARCHY = WordNetConfig(dim=4, epochs=2, batch_size=16, negatives=2, val_size=0,
                          test_size=0, reconstruction_nodes=10, engine="keras")


class Tables(keras.callbacks.Callback):
    """Keeps the model's tables when training ends."""

    tables = None

    def on_train_end(self, logs=None):
        Tables.tables = {v.path: np.asarray(v.numpy()) for v in self.model.weights}


def run(kind, data, out_run, port, pid, resume):
    distribution = DistributionConfig("data", coordinator=f"127.0.0.1:{port}", num_processes=2,
                                      process_id=pid, timeout=120)
    every = 1e-9 if os.environ.get(KILL_AFTER) else 0
    if kind == "corpus":
        from keras_gauss.pipelines.train import train_corpus

        return train_corpus(CORPUS, data, out_run, verbose=0, callbacks=[Tables()],
                            checkpoint_every=every, resume=resume, distribution=distribution)
    from keras_gauss.hierarchy.train import train_hierarchy
    from keras_gauss.runs import load_run

    config = WordNetConfig(**{**HIERARCHY.__dict__, "edges": data})
    metrics = train_hierarchy(config, out_run, verbose=0, checkpoint_every=every,
                              resume=resume, distribution=distribution)
    # It takes no callbacks: process 0's tables are the run's.
    Tables.tables = {} if pid else {w.path: w.numpy() for w in load_run(out_run).model.weights}
    return metrics


def global_batches(parts):
    """Batch `k` of every process, concatenated in process order."""
    import tensorflow as tf

    return tf.data.Dataset.zip(tuple(parts)).map(
        lambda *batches: tf.nest.map_structure(lambda *t: tf.concat(t, 0), *batches))


def reference(kind, data):
    from keras_gauss.checkpoint import fit_by_epoch

    jobs = [Distribution("data", num_processes=2, process_id=i, devices=2) for i in (0, 1)]
    keras.utils.set_random_seed(CORPUS.seed if kind == "corpus" else HIERARCHY.seed)
    if kind == "corpus":
        from keras_gauss.pipelines.skipgram import epoch_size
        from keras_gauss.pipelines.sources import load_corpus
        from keras_gauss.pipelines.train import corpus_model
        from keras_gauss.pipelines.train import shard_batches
        from keras_gauss.pipelines.vocabulary import build_vocabulary

        config = CORPUS
        vocab = build_vocabulary(data, min_count=config.min_count)  # the whole corpus
        local = config.batch_size // 2
        steps = min(epoch_size(job.shard(load_corpus(data)), vocab, window=config.window,
                               dynamic_window=config.dynamic_window).pairs // local
                    for job in jobs)
        model = corpus_model(config, len(vocab))
        fit_by_epoch(model, lambda e: global_batches(
            shard_batches(config, data, vocab, job, e, steps) for job in jobs), config.epochs,
            [Tables()])
        return {"words": list(vocab.words), "steps": steps}
    import keras_gauss.hierarchy.data as data_module
    from keras_gauss.hierarchy.engines import hierarchy_model

    config = WordNetConfig(**{**HIERARCHY.__dict__, "edges": data}).resolved()
    hierarchy, _ = data_module.load_hierarchy(config)
    edges, known = data_module.training_edges(hierarchy, None)
    steps = min(data_module.shard_steps(len(edges), config.batch_size, job) for job in jobs)
    model = hierarchy_model(config, hierarchy.num_nodes,
                            config.negatives + int(config.reversed_negatives))
    from keras_gauss.hierarchy.native_training import initial_table

    start = initial_table(config, known)  # the run's start (KL: nested along the tree)
    if start is not None:
        table = model.get_layer("nodes")
        table.means.assign(start[0])
        table.variances.assign(start[1])
    fit_by_epoch(model, lambda e: global_batches(
        data_module.shard_edges(config, edges, known, job, e, steps) for job in jobs), config.epochs,
        [Tables()])
    return {"steps": steps}


def save(out, metrics):
    np.savez(out, metrics=np.array(json.dumps(metrics)),
             **{f"tables/{k}": v for k, v in Tables.tables.items()})


def main(out, kind, *args):
    if out == "reference":  # (OUT KIND DATA) triples: one process for them all
        triples = (kind, *args)
        for i in range(0, len(triples), 3):
            keras.backend.clear_session()  # the layer names of a fresh process
            save(triples[i], reference(*triples[i + 1:i + 3]))
        return
    data, out_run, port, pid, *flags = args
    save(out, run(kind, data, out_run, int(port), int(pid), "resume" in flags))


if __name__ == "__main__":
    install()
    main(*sys.argv[1:])
    done()

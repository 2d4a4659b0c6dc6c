"""The distribution's command-line flags (`--distribution`, `--model-shards`,
`--coordinator`, `--num-processes`, `--process-id`, `--distribution-timeout`)."""

from keras_gauss.distribution.distribution_lib import KINDS
from keras_gauss.distribution.distribution_lib import DistributionConfig
from keras_gauss.distribution.link import MAX_TIMEOUT
from keras_gauss.distribution.link import SECRET


def add_arguments(parser):
    """Adds the distribution flags to an `argparse` parser.

    Example:

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> from_arguments(parser.parse_args(["--distribution", "data"])).distribution
    'data'
    """
    defaults = DistributionConfig()
    group = parser.add_argument_group(
        "several devices and processes (KERAS_BACKEND=jax; see docs/scaling-out.md)")
    group.add_argument("--distribution", choices=KINDS, default=None,
                       help="data: DataParallel over every device of every process; model: "
                            "ModelParallel, the tables split by rows over --model-shards "
                            "devices (default: one device)")
    group.add_argument("--model-shards", type=int, default=defaults.model_shards,
                       help="devices each table is split over (--distribution model; "
                            "default: %(default)s)")
    group.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                       help="address of process 0 (default: KERAS_DISTRIBUTION_JOB_ADDRESSES); "
                            "on a network others reach, give every process the same secret "
                            f"in {SECRET}")
    group.add_argument("--num-processes", type=int, default=None,
                       help="processes of the job (default: KERAS_DISTRIBUTION_NUM_PROCESSES "
                            "or 1)")
    group.add_argument("--process-id", type=int, default=None,
                       help="this process, 0..N-1; 0 writes the run (default: "
                            "KERAS_DISTRIBUTION_PROCESS_ID or 0)")
    group.add_argument("--distribution-timeout", type=float, default=defaults.timeout,
                       help="seconds to wait for the coordinator and the other processes, "
                            "and to hear from a running one before stopping (default: "
                            f"%(default)s; at most {MAX_TIMEOUT:g})")


def from_arguments(args):
    """The `DistributionConfig` of parsed `add_arguments` flags.

    Example:

    >>> config = from_arguments(args)  # doctest: +SKIP
    """
    return DistributionConfig(args.distribution, args.model_shards, args.coordinator,
                              args.num_processes, args.process_id, args.distribution_timeout)

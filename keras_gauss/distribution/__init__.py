"""Training on several devices and processes.

- `distribution_lib`: the settings (`DistributionConfig`, `resolve`), the
  Keras distribution and mesh (`start_distribution` returns a
  `Distribution`: the scope to fit in, the chief, each process's part).
- `link`: where the processes of a job meet (`rendezvous`), and how the
  end of one becomes one line on every other (`Link`).
- `cli`: the command-line flags (`add_arguments`, `from_arguments`).

Example:

>>> job = start_distribution(DistributionConfig("data"))  # doctest: +SKIP
>>> with job.scope():  # doctest: +SKIP
...     model = build_model()
"""

from keras_gauss.distribution.cli import add_arguments
from keras_gauss.distribution.cli import from_arguments
from keras_gauss.distribution.distribution_lib import ENVIRONMENT
from keras_gauss.distribution.distribution_lib import KINDS
from keras_gauss.distribution.distribution_lib import Distribution
from keras_gauss.distribution.distribution_lib import DistributionConfig
from keras_gauss.distribution.distribution_lib import check_batch
from keras_gauss.distribution.distribution_lib import check_mesh
from keras_gauss.distribution.distribution_lib import resolve
from keras_gauss.distribution.distribution_lib import start_distribution
from keras_gauss.distribution.distribution_lib import table_layout_map
from keras_gauss.distribution.link import MAX_TIMEOUT
from keras_gauss.distribution.link import SECRET
from keras_gauss.distribution.link import DistributionError
from keras_gauss.distribution.link import check_timeout
from keras_gauss.distribution.link import job_crashed
from keras_gauss.distribution.link import job_failed
from keras_gauss.distribution.link import rendezvous
from keras_gauss.distribution.link import set_error_prefix
from keras_gauss.distribution.link import split_address

__all__ = [
    "ENVIRONMENT", "KINDS", "MAX_TIMEOUT", "SECRET", "Distribution", "DistributionConfig",
    "DistributionError", "add_arguments", "check_batch", "check_mesh", "check_timeout",
    "from_arguments", "job_crashed", "job_failed", "rendezvous", "resolve",
    "set_error_prefix", "split_address", "start_distribution", "table_layout_map",
]

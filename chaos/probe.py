"""`import chaos.probe` is the probe client of `chaos.worker.probe`, the very same module (one keep-alive
connection per thread, whichever name a worker used). Python 3.8 syntax, standard library only."""

import sys

from chaos.worker import probe

sys.modules[__name__] = probe

"""torch.distributed support for the ``neuron`` device: the ``neuron`` c10d backend.

``register()`` is called by the core at autoload; it is idempotent.  After it,
``dist.init_process_group(backend="neuron")`` (or ``"cpu:gloo,neuron:neuron"``)
works under torchrun, one process per logical NeuronCore (device = neuron:LOCAL_RANK).
See docs/distributed.md.
"""

from torch_neuronx.distributed.backend import NEURON, is_registered, register

__all__ = ["register", "is_registered", "NEURON"]

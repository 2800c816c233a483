"""`python -m torch_neuronx.testing.model_zoo`: the model-zoo sweep (see sweep.py)."""

import sys

from torch_neuronx.testing.model_zoo.sweep import main

sys.exit(main())

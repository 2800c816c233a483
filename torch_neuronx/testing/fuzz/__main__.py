"""``python -m torch_neuronx.testing.fuzz``: see :func:`.runner.main`."""

from .runner import main

raise SystemExit(main())

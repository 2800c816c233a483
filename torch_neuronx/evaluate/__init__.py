"""torch_neuronx.evaluate: the Trainium migration report (``torch-neuronx evaluate``).

One engine behind two entry points -- one script runner (:mod:`.runner`), one step tracker
(:mod:`.steps`), the collectors (:mod:`.collector`) and one report builder (:mod:`.report`,
sections from :mod:`.build`) --: the CLI subcommand (:mod:`.cli`, running an unmodified script
instrumented) and the Python API
(:func:`evaluate_model`: N steps on neuron eager, neuron compiled and a reference device,
compared step by step). :func:`project_model` and ``--fake`` trace one step with fake tensors to
project a model too large for this machine. The report's JSON schema is documented in
docs/evaluate.md (``SCHEMA_VERSION``).

Layer: tools and reports (the top): imports every layer below it.
"""

from __future__ import annotations

from .api import evaluate_model, project_model  # noqa: F401
from .build import SCHEMA, SCHEMA_VERSION, SECTIONS  # noqa: F401
from .steps import step  # noqa: F401

__all__ = ["evaluate_model", "project_model", "step", "SCHEMA", "SCHEMA_VERSION", "SECTIONS"]

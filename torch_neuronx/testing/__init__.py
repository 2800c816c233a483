"""Testing helpers for torch-neuronx: small deterministic models and synthetic data
(:mod:`torch_neuronx.testing.models`)."""

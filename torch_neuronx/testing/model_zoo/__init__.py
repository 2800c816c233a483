"""The model-zoo sweep: real architectures (Hugging Face transformers, built from shrunk
configs with random weights) trained a few steps on neuron against CPU, eager and under
``torch.compile(backend="neuron")``, with fallbacks and graph breaks recorded.

Modules: `zoo` (the model list and builders), `hf_models` (transformers' architectures),
`train_check` (the accuracy check of one model), `policy` (documented exclusions and known
failures), `report` (the table in docs/coverage.md), `sweep` (the CLI, one process per model).
"""

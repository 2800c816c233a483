"""What PyTorch's Inductor finds for the neuron device: a clear refusal.

Inductor looks up a PrivateUse1 device's code generators on the device module
(``torch.neuron.Scheduling``, ``PythonWrapperCodegen``, ``CppWrapperCodegen``,
``WrapperFxCodegen``, all four or none; see
torch/_inductor/codegen/common.py ``init_backend_registration``). Without them a plain
``torch.compile(model)`` on neuron tensors -- the default backend, Inductor -- failed deep in
its lowering or code generation (``KeyError: 'neuron'``, "Device neuron not supported")
without saying what to do. The emulated NeuronCore's compiler is the ``neuron`` backend
(Dynamo -> AOTAutograd -> Inductor's *CPU* code generator on device memory), so these
classes only refuse, at the first point Inductor asks about a graph's neuron device (whether
its code generator supports caching, before any lowering), naming the backend to use.
"""

from __future__ import annotations

MESSAGE = (
    "torch.compile's default backend, Inductor, cannot generate code for tensors on the "
    "'neuron' device. Compile with the neuron backend: torch.compile(model, "
    'backend="neuron"), or torch.compiler.set_default_backend("neuron") before '
    "torch.compile(model)."
)


class NeuronInductorUnsupported(RuntimeError):
    """Inductor was asked to generate code for a graph on the neuron device."""


class _Refusing(type):
    # Inductor reads `supports_caching` from the wrapper code generator of every device of a
    # graph before it lowers anything (compile_fx._compile_fx_inner): the earliest point
    @property
    def supports_caching(cls):
        raise NeuronInductorUnsupported(MESSAGE)


class Scheduling(metaclass=_Refusing):
    # Inductor also builds a device's scheduling with no scheduler to ask which backend
    # features the device's code generator has (codegen/common.py get_backend_features); its
    # decompositions branch on the answer (masked_scatter asks MASKED_SCATTER_WITH_INDEX).
    # The neuron backend traces with those decompositions on neuron tensors and generates
    # code with Inductor's CPU code generator, so the answer is the host's. Only building
    # one to schedule a graph (a scheduler given) is plain torch.compile, and refused.
    def __init__(self, scheduler=None, *args, **kwargs):
        if scheduler is not None or args or kwargs:
            raise NeuronInductorUnsupported(MESSAGE)

    @staticmethod
    def get_backend_features(device):
        from torch._inductor.codegen.common import get_backend_features

        return get_backend_features("cpu")


class PythonWrapperCodegen(metaclass=_Refusing):
    @classmethod
    def create(cls, *args, **kwargs):
        raise NeuronInductorUnsupported(MESSAGE)


class CppWrapperCodegen(PythonWrapperCodegen):
    pass


class WrapperFxCodegen(PythonWrapperCodegen):
    pass


#: the names Inductor looks up on torch.neuron (torch.utils.backend_registration)
CLASSES = {
    "Scheduling": Scheduling,
    "PythonWrapperCodegen": PythonWrapperCodegen,
    "CppWrapperCodegen": CppWrapperCodegen,
    "WrapperFxCodegen": WrapperFxCodegen,
}

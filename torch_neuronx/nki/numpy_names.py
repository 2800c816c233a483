"""NumPy spellings of NKI dtypes and operators (``np.float32``, ``np.exp``, ``np.add``).

Kernels written for the pre-0.2 ``neuronxcc.nki`` language pass NumPy dtypes and NumPy
functions where NKI 0.2+ takes ``nl.float32`` / ``nl.exp``. AWS removed them in NKI 0.2 (NKI
Beta 2 migration guide); this module only *names* them: the 0.2+ API turns one into an error
naming its ``nl.`` replacement, and the legacy layer (``torch_neuronx.nki.legacy``), which sets
``running.slot.legacy`` while its kernels run, translates it. No import of numpy here: an
object is recognised by its module and name, so the package does not need numpy to load.
"""

from __future__ import annotations

from . import running

# numpy function name -> NKI operator name (nki/ops.py OPS)
OP_NAMES = {
    "add": "add",
    "subtract": "subtract",
    "multiply": "multiply",
    "divide": "divide",
    "true_divide": "divide",
    "maximum": "maximum",
    "minimum": "minimum",
    "max": "maximum",
    "amax": "maximum",
    "min": "minimum",
    "amin": "minimum",
    "sum": "add",
    "power": "power",
    "fmod": "fmod",
    "mod": "mod",
    "remainder": "mod",
    "abs": "abs",
    "absolute": "abs",
    "negative": "negative",
    "square": "square",
    "sqrt": "sqrt",
    "reciprocal": "reciprocal",
    "exp": "exp",
    "log": "log",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arctan": "arctan",
    "tanh": "tanh",
    "sign": "sign",
    "ceil": "ceil",
    "floor": "floor",
    "trunc": "trunc",
    "equal": "equal",
    "not_equal": "not_equal",
    "less": "less",
    "less_equal": "less_equal",
    "greater": "greater",
    "greater_equal": "greater_equal",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "logical_xor": "logical_xor",
    "logical_not": "logical_not",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "invert": "invert",
    "bitwise_not": "invert",
    "left_shift": "left_shift",
    "right_shift": "right_shift",
}

# numpy dtype name -> NKI dtype name (nki/dtypes.py); ml_dtypes' bfloat16/float8 included
DTYPE_NAMES = {
    "bool": "bool_",
    "bool_": "bool_",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "float16": "float16",
    "float32": "float32",
    "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3": "float8_e4m3",
}


def legacy_active() -> bool:
    """True while a ``torch_neuronx.nki.legacy`` kernel runs on this thread."""
    return bool(getattr(running.slot, "legacy", False))


def _module(obj) -> str:
    m = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "") or ""
    return m


def is_numpy_function(obj) -> bool:
    return _module(obj).split(".")[0] == "numpy" and callable(obj) and not isinstance(obj, type)


def numpy_op_name(obj):
    """(numpy spelling, NKI operator name or None) of a NumPy function, or None."""
    if not is_numpy_function(obj):
        return None
    name = getattr(obj, "__name__", "")
    return f"np.{name}", OP_NAMES.get(name)


def numpy_dtype_name(obj):
    """(numpy spelling, NKI dtype name or None) of a NumPy dtype / scalar type, or None."""
    mod = _module(obj).split(".")[0]
    if isinstance(obj, type) and mod in ("numpy", "ml_dtypes"):
        name = obj.__name__
    elif mod in ("numpy", "ml_dtypes") and hasattr(obj, "name") and hasattr(obj, "itemsize"):
        name = str(obj.name)  # np.dtype(...) (module numpy, or numpy.dtypes)
    else:
        return None
    return f"np.{name}", DTYPE_NAMES.get(name)

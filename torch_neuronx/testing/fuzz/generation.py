"""Program generation: a seeded generator writes statements over named tensors, trying each
on CPU while it writes so that the program is valid where it means to be."""

from __future__ import annotations

import math
import random
import warnings

import torch

from .program import (
    FLOATS,
    INPUT_DTYPES,
    INPUT_LAYOUTS,
    INTS,
    WIDE,
    Program,
    Statement,
    namespace,
    storage_of,
)


def _dtype_name(dt: torch.dtype) -> str:
    return "torch." + str(dt).split(".")[1]


class _Gen:
    """Writes one program, trying each statement on CPU as it goes (``ns`` is the CPU state)."""

    def __init__(self, seed: int, length: int):
        self.rng = random.Random(seed)
        self.seed = seed
        self.length = length
        self.ns: dict = namespace("cpu")
        self.statements: list[Statement] = []
        self.approx_storages: set[int] = set()
        self.counter = 0

    # -- state helpers
    def names(self, pred=None) -> list[str]:
        out = []
        for k, v in self.ns.items():
            if isinstance(v, torch.Tensor) and (pred is None or pred(v, k)):
                out.append(k)
        return out

    def is_approx(self, name: str) -> bool:
        t = self.ns[name]
        return t.untyped_storage().data_ptr() in self.approx_storages and t.numel() > 0

    def exact_names(self, pred=None) -> list[str]:
        return self.names(lambda t, k: not self.is_approx(k) and (pred is None or pred(t, k)))

    def pick(self, names: list[str]) -> str | None:
        return self.rng.choice(names) if names else None

    def fresh(self) -> str:
        self.counter += 1
        return f"t{self.counter}"

    def scalar(self, t: torch.Tensor) -> str:
        r = self.rng
        if t.dtype == torch.bool:
            return r.choice(["True", "False"])
        if t.dtype.is_floating_point or t.dtype.is_complex:
            return r.choice(["0.5", "-1.25", "2", "3.0", "0.0", "-7"])
        if t.dtype == torch.uint8:
            return str(r.randint(0, 9))
        return str(r.randint(-4, 9))

    def _fills_from_alias(self, x: str, y: str) -> bool:
        """`x[...] = y` with `y` a 0-dim tensor sharing `x`'s memory: PyTorch's setitem fills
        from a 0-dim *CPU* value (reading it first) but copies from a device value, with the
        overlap check, which raises (on CUDA too). Not a difference the backend can remove."""
        v = self.ns.get(y)
        return (
            isinstance(v, torch.Tensor) and v.dim() == 0 and storage_of(v) == storage_of(self.ns[x])
        )

    def dim(self, t: torch.Tensor) -> int:
        return self.rng.randrange(-t.dim(), t.dim()) if t.dim() else 0

    # -- statements
    def input(self) -> str:
        r = self.rng
        dtypes, weights = zip(*INPUT_DTYPES, strict=True)
        dt = r.choices(dtypes, weights)[0]
        ndim = r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        shape = tuple(
            r.choice([1, 2, 3, 3, 4, 5, 0] if r.random() < 0.1 else [1, 2, 3, 4, 5])
            for _ in range(ndim)
        )
        g = f"torch.Generator().manual_seed({r.randrange(1 << 16)})"
        name = self.fresh()
        if dt.is_floating_point or dt.is_complex:
            src = f"torch.randn({shape}, generator={g}, dtype={_dtype_name(dt)})"
            if r.random() < 0.3 and not dt.is_complex:  # small integers: exact sums, ties
                src = f"torch.randint(-5, 6, {shape}, generator={g}).to({_dtype_name(dt)})"
        elif dt == torch.bool:
            src = f"torch.randint(0, 2, {shape}, generator={g}).bool()"
        else:
            lo, hi = (0, 10) if dt == torch.uint8 else (-8, 9)
            if dt == torch.int64 and r.random() < 0.2:  # values that need all 64 bits
                lo, hi = -(1 << 40), 1 << 40
            src = f"torch.randint({lo}, {hi}, {shape}, generator={g}, dtype={_dtype_name(dt)})"
        layouts, weights = zip(*INPUT_LAYOUTS, strict=True)
        layout = r.choices(layouts, weights)[0]
        if not _layout_changes(layout, shape):
            return f"{name} = {src}.to(dev)"  # `to` gives a dense tensor
        # the CPU tensor in `layout`, moved with its sizes, strides and storage offset
        return f"{name} = to_device_keeping_layout(apply_layout({src}, {layout!r}), dev)"

    def view(self) -> str | None:
        r = self.rng
        x = self.pick(self.names())
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        opts = [
            f"{x}.reshape(-1)",
            f"{x}.unsqueeze({r.randint(-t.dim() - 1, t.dim())})",
            f"{x}.flatten()",
        ]
        if t.dim():
            d = self.dim(t)
            opts += [f"{x}.squeeze({d})", f"{x}.flatten({d})", f"{x}.movedim({d}, {self.dim(t)})"]
            if t.shape[d] > 0:
                size = r.randint(1, t.shape[d])
                opts.append(f"{x}.unfold({d}, {size}, {r.randint(1, 2)})")
        if t.dim() >= 2:
            opts.append(f"{x}.diagonal({r.randint(-1, 1)}, {self.dim(t)}, {self.dim(t)})")
        numel = t.numel()
        divs = [k for k in range(1, numel + 1) if numel % k == 0] or [0]
        k = r.choice(divs)
        opts += [
            f"{x}.view({k}, -1)" if numel else f"{x}.view(-1)",
            f"{x}.view(-1, {k})" if numel else f"{x}.reshape(0)",
        ]
        if t.dim() < 4:
            shape = list(t.shape)
            i = r.randrange(len(shape) + 1)
            shape.insert(i, r.choice([1, 2, 3]))
            opts.append(f"{x}.expand({tuple(shape)})")
            if 1 in t.shape:
                s2 = [r.choice([2, 3]) if v == 1 else v for v in t.shape]
                opts.append(f"{x}.expand({tuple(s2)})")
        # reinterpreting bits as float64 is left out: the arbitrary float64 values it makes
        # (denormals, values beyond float32's range) are where the float32 policy differs by design
        same_size = {
            torch.float32: "torch.int32",
            torch.int32: "torch.float32",
            torch.int16: "torch.float16",
            torch.float16: "torch.bfloat16",
            torch.bfloat16: "torch.int16",
            torch.float64: "torch.int64",
            torch.uint8: "torch.int8",
            torch.int8: "torch.uint8",
        }
        if t.dtype in same_size and not self.is_approx(x) and (t.dim() == 0 or t.stride(-1) == 1):
            opts.append(f"{x}.view({same_size[t.dtype]})")
        if t.dtype.is_complex:
            opts += [f"{x}.real", f"{x}.imag", f"torch.view_as_real({x})"]
        storage = t.untyped_storage().nbytes() // max(t.element_size(), 1)
        if storage >= 2:
            a = r.randint(1, 3)
            b = r.randint(1, 3)
            s0, s1 = r.randint(0, 3), r.randint(0, 2)
            off = r.randint(0, max(0, storage - 1 - (a - 1) * s0 - (b - 1) * s1))
            opts.append(f"{x}.as_strided(({a}, {b}), ({s0}, {s1}), {off})")
        return f"{n} = {r.choice(opts)}"

    def transpose(self) -> str | None:
        r = self.rng
        x = self.pick(self.names(lambda t, k: t.dim() >= 1))
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        perm = list(range(t.dim()))
        r.shuffle(perm)
        opts = [f"{x}.permute({tuple(perm)})", f"{x}.transpose({self.dim(t)}, {self.dim(t)})"]
        if t.dim() <= 2:
            opts.append(f"{x}.t()")
        if t.dim() >= 2:
            opts += [f"{x}.mT", f"{x}.swapaxes({self.dim(t)}, {self.dim(t)})"]
        return f"{n} = {r.choice(opts)}"

    def _index_expr(self, t: torch.Tensor) -> str:
        r = self.rng
        parts = []
        for s in t.shape[: r.randint(1, t.dim())]:
            c = r.random()
            if c < 0.25 and s > 0:
                parts.append(str(r.randint(-s, s - 1)))
            elif c < 0.35:
                parts.append(":")
            elif c < 0.4:
                parts.append("None")
            else:
                a = r.choice(["", str(r.randint(-s - 1, s))])
                b = r.choice(["", str(r.randint(-s - 1, s + 1))])
                st = r.choice(["", "", "2", "3"])
                parts.append(f"{a}:{b}" + (f":{st}" if st else ""))
        if r.random() < 0.15:
            parts.insert(r.randrange(len(parts) + 1), "...")
        return ", ".join(parts)

    def slice(self) -> str | None:
        r = self.rng
        x = self.pick(self.names(lambda t, k: t.dim() >= 1))
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        d = self.dim(t)
        s = t.shape[d]
        opts = [f"{x}[{self._index_expr(t)}]"]
        if s > 0:
            start = r.randint(0, s - 1)
            opts += [
                f"{x}.narrow({d}, {start}, {r.randint(0, s - start)})",
                f"{x}.select({d}, {r.randint(-s, s - 1)})",
                f"{x}.split({r.randint(1, s)}, {d})[{r.randint(0, 1)}]",
                f"{x}.chunk({r.randint(1, 3)}, {d})[0]",
                f"{x}.unbind({d})[{r.randint(0, s - 1)}]",
            ]
        return f"{n} = {r.choice(opts)}"

    def _operand(self, t: torch.Tensor, exact: bool) -> str:
        """A broadcast partner for t: another tensor, a Python scalar, or a 0-dim tensor."""
        r = self.rng
        c = r.random()
        if c < 0.25:
            return self.scalar(t)
        if c < 0.35:
            dt = r.choice(["torch.float64", "torch.float32", "torch.int64", "torch.float16"])
            d = r.choice(["dev", "'cpu'"])
            return f"torch.tensor({self.scalar(t)}, dtype={dt}, device={d})"
        pool = self.exact_names() if exact else self.names()
        cands = [k for k in pool if _broadcastable(self.ns[k].shape, t.shape)]
        return r.choice(cands) if cands else self.scalar(t)

    def inplace(self) -> str | None:
        r = self.rng
        x = self.pick(self.names())
        if x is None:
            return None
        t = self.ns[x]
        exact = not (t.dtype.is_floating_point or t.dtype.is_complex)
        y = self._operand(t, exact)
        opts = [
            f"{x}.copy_({y})"
            if y[0].isalpha() and y in self.ns
            else f"{x}.fill_({self.scalar(t)})",
            f"{x}.zero_()",
        ]
        if t.dtype != torch.bool:
            opts += [f"{x}.add_({y})", f"{x}.mul_({y})", f"{x}.sub_({y})", f"{x}.neg_()"]
            if not t.dtype.is_complex:
                opts += [f"{x}.clamp_({self.scalar(t)}, {self.scalar(t)})", f"{x}.abs_()"]
        if t.dim() >= 1 and not self._fills_from_alias(x, y):
            opts.append(f"{x}[{self._index_expr(t)}] = {y}")
        if t.dtype.is_floating_point:
            opts += [
                f"{x}.div_({y})",
                f"{x}.addcmul_({y}, {y}, value=0.5)",
                f"{x}.lerp_({y}, 0.25)",
            ]
        if t.dtype in INTS or t.dtype == torch.bool:
            opts += [f"{x}.bitwise_and_({y})", f"{x}.bitwise_xor_({y})"]
        masks = self.exact_names(
            lambda u, k: u.dtype == torch.bool and _broadcastable(u.shape, t.shape)
        )
        if masks:
            opts.append(f"{x}.masked_fill_({r.choice(masks)}, {self.scalar(t)})")
        return r.choice(opts)

    def reduction(self) -> str | None:
        r = self.rng
        x = self.pick(self.names(lambda t, k: t.dtype != torch.bool or r.random() < 0.3))
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        d = self.dim(t)
        kd = r.choice(["True", "False"])
        approx = self.is_approx(x)
        opts = [f"{x}.sum()", f"{x}.sum({d}, keepdim={kd})"]
        if not approx:
            opts.append(f"{x}.count_nonzero({d})" if t.dim() else f"{x}.count_nonzero()")
        if not t.dtype.is_complex:
            opts += [f"{x}.amax({d}, keepdim={kd})", f"{x}.amin({d})", f"{x}.cumsum({d})"]
            if not approx:
                opts += [
                    f"{x}.argmax({d}, keepdim={kd})",
                    f"{x}.max({d}).values",
                    f"{x}.min({d}, keepdim={kd}).indices",
                    f"{x}.sort({d}, stable=True).values",
                    f"{x}.argsort({d}, stable=True)",
                    f"{x}.any({d})",
                    f"{x}.all()",
                ]
                if t.dim() and t.shape[d] > 0:
                    opts.append(f"{x}.topk({r.randint(1, t.shape[d])}, {d}).values")
        if t.dtype.is_floating_point:
            opts += [
                f"{x}.mean({d}, keepdim={kd})",
                f"{x}.var({d})",
                f"{x}.logsumexp({d})",
                f"{x}.norm()",
            ]
            opts.append(f"{x}.sum({d}, dtype=torch.float64)")
        if t.dtype in INTS or t.dtype == torch.bool:
            opts += [
                f"{x}.sum({d}, dtype=torch.int32)",
                f"{x}.prod({d})",
                f"{x}.sum(dtype=torch.float32)",
            ]
        return f"{n} = {r.choice(opts)}"

    def _index_tensor(self, size: int, unique: bool, cpu_ok: bool = True) -> str:
        r = self.rng
        if size == 0:
            return "torch.tensor([], dtype=torch.long, device=dev)"
        if unique:
            vals = r.sample(range(size), r.randint(1, size))
            vals = [v - size if r.random() < 0.3 else v for v in vals]
        else:
            vals = [r.randint(-size, size - 1) for _ in range(r.randint(1, 4))]
        # CPU indices on device tensors are allowed for advanced indexing (as on CUDA), not for
        # index_select / index_add_ / scatter_ and the like
        dev = r.choice(["dev", "dev", "'cpu'"]) if cpu_ok else "dev"
        return f"torch.tensor({vals}, device={dev})"

    def indexing(self) -> str | None:
        r = self.rng
        x = self.pick(self.names(lambda t, k: t.dim() >= 1))
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        d = self.dim(t) % t.dim()
        s = t.shape[d]
        idx = self._index_tensor(s, unique=False)
        opts = [
            f"{x}[{idx}]",
            f"{x}.index_select({d}, {idx.replace(', device=' + chr(39) + 'cpu' + chr(39), ', device=dev')})",
        ]
        if t.dim() >= 2:
            opts.append(f"{x}[:, {self._index_tensor(t.shape[1], unique=False)}]")
            opts.append(
                f"{x}[{self._index_tensor(t.shape[0], False)}, {self._index_tensor(t.shape[1], False)}[:1]]"
            )
        masks = self.exact_names(lambda u, k: u.dtype == torch.bool and u.shape == t.shape)
        if masks:
            opts += [f"{x}[{r.choice(masks)}]", f"{x}.masked_select({r.choice(masks)})"]
        if not self.is_approx(x) and not t.dtype.is_complex and t.dtype != torch.bool:
            opts += [
                f"{x}[{x} > {self.scalar(t)}]",
                f"({x} != 0).nonzero()",
                f"torch.where({x} > 0, {x}, {self.scalar(t)})",
            ]
        if t.numel():
            opts.append(
                f"{x}.take(torch.tensor({[r.randrange(t.numel()) for _ in range(3)]}, device=dev))"
            )
            g = [[r.randrange(s) for _ in range(2)] if s else [] for _ in range(1)]
            if t.dim() == 1 and s:
                opts.append(f"{x}.gather(0, torch.tensor({g[0]}, device=dev))")
        if t.dim() == 2 and t.shape[0] and t.shape[1]:
            rows = [[r.randrange(t.shape[1]) for _ in range(2)] for _ in range(t.shape[0])]
            opts.append(f"{x}.gather(1, torch.tensor({rows}, device=dev))")
            opts.append(f"torch.take_along_dim({x}, torch.tensor({rows}, device=dev), 1)")
        return f"{n} = {r.choice(opts)}"

    def index_put(self) -> str | None:
        r = self.rng
        x = self.pick(self.names(lambda t, k: t.dim() >= 1 and t.shape[0] > 0))
        if x is None:
            return None
        t = self.ns[x]
        s = t.shape[0]
        idx = self._index_tensor(s, unique=True)
        k = idx.split("]")[0].count(",") + 1 if "[]" not in idx else 0
        idx_dev = idx.replace("device='cpu'", "device=dev")  # index_fill_ & co: same device
        tail = tuple(t.shape[1:])
        srcs = self.names(
            lambda u, kk: (
                tuple(u.shape) == (k, *tail)
                and (not self.is_approx(kk) or t.dtype.is_floating_point)
            )
        )
        src = r.choice(srcs) if srcs else self.scalar(t)
        src_t = (
            src
            if src in self.ns
            else f"torch.full({(k, *tail)}, {src}, dtype={_dtype_name(t.dtype)}, device=dev)"
        )
        opts = [
            f"{x}[{idx}] = {src}" if not self._fills_from_alias(x, src) else f"{x}.neg_()",
            f"{x}.index_put_(({idx},), {src_t}, accumulate={r.choice(['True', 'False'])})",
            f"{x}.index_fill_(0, {idx_dev}, {self.scalar(t)})",
            f"{x}.index_copy_(0, {idx_dev}, {src_t})",
        ]
        if t.dtype != torch.bool:
            opts.append(
                f"{x}.index_add_(0, {idx_dev}, {src_t}, alpha={1 if not t.dtype.is_floating_point else 2})"
            )
        if t.dim() == 1:
            opts.append(f"{x}.scatter_(0, {idx_dev}, {src_t})")
            if t.dtype != torch.bool:
                opts.append(f"{x}.scatter_add_(0, {idx_dev}, {src_t})")
                opts.append(f"{x}.scatter_reduce_(0, {idx_dev}, {src_t}, reduce='amax')")
        masks = self.exact_names(lambda u, kk: u.dtype == torch.bool and u.shape == t.shape)
        if masks:
            opts.append(f"{x}[{r.choice(masks)}] = {self.scalar(t)}")
        return r.choice(opts)

    def conversion(self) -> str | None:
        r = self.rng
        x = self.pick(self.names())
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        targets = list(FLOATS) + [torch.complex64, torch.complex128]
        if not self.is_approx(x):
            targets += list(INTS) + [torch.bool]
        dt = _dtype_name(r.choice(targets))
        opts = [
            f"{x}.to({dt})",
            f"{x}.to({dt}, copy=True)",
            f"{x}.type({dt})",
            f"{x}.contiguous()",
            f"{x}.clone()",
        ]
        if not self.is_approx(x):
            opts += [f"{x}.long()", f"{x}.int()", f"{x}.bool()"]
        opts += [
            f"{x}.float()",
            f"{x}.double()",
            f"{x}.half()",
            f"{x}.cpu().to(dev, copy=True)",
            f"{x}.to({dt}).to({_dtype_name(t.dtype)})",
        ]
        if t.dim() == 4:
            opts.append(f"{x}.contiguous(memory_format=torch.channels_last)")
        return f"{n} = {r.choice(opts)}"

    def broadcast(self) -> str | None:
        r = self.rng
        x = self.pick(self.names())
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        exact_only = self.is_approx(x)
        y = self._operand(t, exact=False)
        opts = [f"{x} + {y}", f"{x} * {y}", f"{y} - {x}", f"torch.add({x}, {y}, alpha=2)"]
        if not t.dtype.is_complex:
            opts += [
                f"torch.maximum({x}, torch.as_tensor({y}, device=dev))",
                f"torch.clamp({x}, min={self.scalar(t)})",
            ]
            if not exact_only and not (y in self.ns and self.is_approx(y)):
                opts += [f"{x} < {y}", f"{x} == {y}", f"torch.where({x} > 0, {x}, {y})"]
        if t.dtype != torch.bool:
            opts += [f"{x} / {y}", f"{x}.abs()", f"-{x}", f"{x} ** 2"]
        if t.dtype.is_floating_point:
            opts += [
                f"{x}.exp()",
                f"{x}.sin()",
                f"{x}.sigmoid()",
                f"{x}.relu()",
                f"{x}.floor()",
                f"{x}.sqrt()",
                f"torch.lerp({x}, {x}, 0.5)",
            ]
        if t.dtype in INTS:
            # floor division and remainder by an integer scalar: against a float64 operand they
            # would run in float32 (policy), where a large int64 loses the digits they keep
            k = self.rng.choice(["3", "-2", "5"])
            opts += [f"{x} // {k}", f"{x} % {k}", f"{x} & {y}", f"{x} << 1", f"{x}.sign()"]
        if t.dtype == torch.bool:
            opts += [f"{x} | {y}", f"~{x}", f"{x}.logical_xor({y})"]
        return f"{n} = {r.choice(opts)}"

    def out(self) -> str | None:
        r = self.rng
        x = self.pick(self.names())
        if x is None:
            return None
        t = self.ns[x]
        approx = self.is_approx(x)
        y = self._operand(t, exact=False)
        # an out= argument that shares memory with an input is undefined behaviour (CPU only
        # catches some of it), so out= targets never alias the inputs
        used = {storage_of(self.ns[k]) for k in (x, y) if k in self.ns}
        z = self.pick(
            self.names(
                lambda u, k: (
                    (not approx or u.dtype.is_floating_point or u.dtype.is_complex)
                    and storage_of(u) not in used
                )
            )
        )
        if z is None:
            return None
        opts = [
            f"torch.add({x}, {y}, out={z})",
            f"torch.mul({x}, {y}, out={z})",
            f"torch.sum({x}, 0, out={z})" if t.dim() else f"torch.sum({x}, out={z})",
        ]
        if not t.dtype.is_complex:
            opts.append(f"torch.clamp({x}, 0, 3, out={z})")
            if not approx:  # floor is discrete: a float32-sized difference moves it by 1
                opts.append(f"torch.floor({x}, out={z})")
        opts.append(f"torch.abs({x}, out={z})")
        return r.choice(opts)

    def cat(self) -> str | None:
        r = self.rng
        x = self.pick(self.names(lambda t, k: t.dim() >= 1))
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        d = self.dim(t)
        others = self.names(
            lambda u, k: (
                u.dim() == t.dim()
                and all(
                    a == b
                    for i, (a, b) in enumerate(zip(u.shape, t.shape, strict=True))
                    if i != d % t.dim()
                )
            )
        )
        y = r.choice(others) if others else x
        same = self.names(lambda u, k: u.shape == t.shape)
        z = r.choice(same) if same else x
        return f"{n} = " + r.choice(
            [
                f"torch.cat([{x}, {y}], {d})",
                f"torch.stack([{x}, {z}], {d})",
                f"torch.cat([{x}, {y}, {x}], {d})",
            ]
        )

    def matmul(self) -> str | None:
        r = self.rng
        x = self.pick(
            self.names(
                lambda t, k: (
                    t.dim() >= 1
                    and t.dtype in (torch.float32, torch.float64, torch.int64, torch.bfloat16)
                )
            )
        )
        if x is None:
            return None
        t = self.ns[x]
        n = self.fresh()
        k = t.shape[-1]
        ys = self.names(
            lambda u, kk: (
                u.dim() >= 1
                and u.dtype == t.dtype
                and (u.shape[0] if u.dim() == 1 else u.shape[-2]) == k
            )
        )
        if ys:
            return f"{n} = {x} @ {r.choice(ys)}"
        return f"{n} = {x} @ {x}.mT" if t.dim() >= 2 else f"{n} = {x} @ {x}"

    def error(self) -> str | None:
        """Statements meant to raise (argument validation): neuron must raise the same type."""
        r = self.rng
        x = self.pick(self.names(lambda t, k: t.dim() >= 1))
        if x is None:
            return None
        t = self.ns[x]
        opts = [
            f"{x}.view({t.numel() + 1})",
            f"{x}[{t.shape[0]}]",
            f"{x}.expand({t.shape[0] + 1}, {t.shape[0] + 2})",
            f"torch.add({x}, 1.5, out=torch.empty(0, dtype=torch.int64, device=dev))",
            f"torch.floor({x}, out=torch.empty({tuple(t.shape)}, dtype=torch.int64, device=dev))",
            f"torch.lerp({x}, {x}.double(), 0.5)",
            f"{x}.index_select(0, torch.tensor([{t.shape[0]}], device=dev))",
            f"torch.cat([{x}, {x}.unsqueeze(0)])",
            f"{x}.sum({t.dim()})",
            f"{x} @ torch.ones({t.shape[-1] + 1}, device=dev, dtype={_dtype_name(t.dtype)})",
        ]
        return r.choice(opts)

    # -- driver
    def build(self) -> Program:
        kinds = [
            ("view", 8),
            ("transpose", 5),
            ("slice", 8),
            ("inplace", 10),
            ("reduction", 7),
            ("indexing", 7),
            ("index_put", 6),
            ("conversion", 5),
            ("broadcast", 10),
            ("out", 2),
            ("cat", 3),
            ("matmul", 2),
            ("error", 1),
            ("input", 2),
        ]
        names, weights = zip(*kinds, strict=True)
        for _ in range(self.rng.randint(2, 3)):
            self._add("input", self.input(), keep_error=False)
        while len(self.statements) < self.length:
            kind = self.rng.choices(names, weights)[0]
            for _attempt in range(6):
                code = getattr(self, kind)()
                if code is not None and self._add(
                    kind, code, keep_error=kind == "error" or self.rng.random() < 0.03
                ):
                    break
        approx = {k for k in self.names() if self.is_approx(k)}
        return Program(self.seed, self.statements, approx)

    def _add(self, kind: str, code: str, keep_error: bool) -> bool:
        before = {k: storage_of(v) for k, v in self.ns.items() if isinstance(v, torch.Tensor)}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(code, self.ns)
        except Exception:
            if keep_error:
                self.statements.append(Statement("error", code))
                return True
            return False
        if kind == "error":
            return False  # meant to raise but did not: not an error statement
        self.statements.append(Statement(kind, code))
        self._track_approx(kind, code, before)
        return True

    def _track_approx(self, kind: str, code: str, before: dict) -> None:
        """After a statement: storages written by 64-bit arithmetic, or from data that already
        came from it, become approximate (compared with tolerance). Data movement (views,
        copies, indexing, conversions) keeps exactness, so it marks only what it copies from
        approximate data."""
        arithmetic = kind in _ARITHMETIC_KINDS and not any(s in code for s in _MOVEMENT_CALLS)
        reads = [k for k in before if _mentions(code, k)]
        reads_approx = any(before[k] in self.approx_storages for k in reads)
        wide = (
            "float64" in code
            or "complex128" in code
            or any(k in self.ns and self.ns[k].dtype in WIDE for k in reads)
        )
        if not (reads_approx or (arithmetic and wide)):
            return
        for k, v in self.ns.items():
            if not isinstance(v, torch.Tensor):
                continue  # any dtype: integers computed from such data are not exact either
            new = k not in before or before[k] != storage_of(v)
            written = code.startswith((f"{k}.", f"{k}[")) or f"out={k})" in code
            if new or written:
                self.approx_storages.add(storage_of(v))


# Kinds whose statements compute values (the others only move or select them), and the calls
# that only move, select or compare data even inside those kinds: their 64-bit results keep
# every bit (docs/eager.md, "Dtype policy"), so they are compared exactly.
_ARITHMETIC_KINDS = ("inplace", "reduction", "broadcast", "out", "matmul", "index_put")
_MOVEMENT_CALLS = (
    ".copy_(",
    ".fill_(",
    ".zero_()",
    "masked_fill_",
    "index_fill_",
    "index_copy_",
    ".scatter_(",
    "] = ",
    "accumulate=False",
    "reduce='amax'",
    ".amax(",
    ".amin(",
    ".max(",
    ".min(",
    ".argmax(",
    ".sort(",
    ".argsort(",
    ".topk(",
    ".any(",
    ".all()",
    ".count_nonzero(",
    ".relu()",
    "torch.maximum(",
    "torch.clamp(",
    "torch.where(",
    " < ",
    " == ",
)


def _mentions(code: str, name: str) -> bool:
    import re

    return re.search(rf"\b{name}\b", code) is not None


def _layout_changes(layout: str, shape: tuple) -> bool:
    """Whether `apply_layout(x, layout)` gives a tensor of `shape` other strides or offset than
    a dense one (so that a drawn layout is a layout, and is counted as one)."""
    if layout == "contiguous" or 0 in shape or not shape:
        return False
    if layout == "permuted":
        return sum(n > 1 for n in shape) >= 2
    if layout == "channels_last":
        return len(shape) in (3, 4, 5) and shape[1] > 1 and math.prod(shape[2:]) > 1
    if layout == "expanded":
        return shape[0] > 1
    return True  # offset, sliced


def _broadcastable(a, b) -> bool:
    for x, y in zip(reversed(tuple(a)), reversed(tuple(b)), strict=False):
        if x != y and x != 1 and y != 1:
            return False
    return True


def generate(seed: int, length: int = 14) -> Program:
    return _Gen(seed, length).build()

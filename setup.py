"""Builds the C++ driver (torch_neuronx._C) at install time with torch.utils.cpp_extension.

Use: pip install --no-build-isolation -e .   (after pip install torch==2.13.0)

Build speed (issue 27): the objects are compiled without debug information unless
TORCH_NEURONX_DEBUG_BUILD=1 (`make build DEBUG=1`), in a fixed folder (build/ninja) so that a
rebuild compiles only the translation units whose source or headers changed (ninja runs cores + 2
compile jobs at once; MAX_JOBS overrides it).
"""

import glob
import os

# Importing torch must not autoload a previously installed torch_neuronx (whose driver is the
# very thing being rebuilt).
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths

DEBUG_BUILD = os.environ.get("TORCH_NEURONX_DEBUG_BUILD", "") not in ("", "0")

TORCH_INCLUDE = include_paths()[0]

here = os.path.dirname(os.path.abspath(__file__))
csrc = os.path.join("torch_neuronx", "csrc")
# One folder per layer (runtime/, eager/, distributed/); includes are written from csrc/.
sources = sorted(glob.glob(os.path.join(csrc, "**", "*.cpp"), recursive=True))


class BuildDriver(BuildExtension):
    """torch's BuildExtension with the two changes that keep the driver's build short."""

    def finalize_options(self):
        super().finalize_options()
        # pip's editable install (setuptools' editable_wheel) builds in a fresh temporary folder
        # each time, which would recompile every translation unit on every `make setup`. A fixed
        # folder keeps ninja's state (.ninja_log, the .d dependency files), so a rebuild compiles
        # only what changed; ninja also rebuilds what a changed compile command (DEBUG) affects.
        self.build_temp = os.path.join(here, "build", "ninja")

    def build_extensions(self):
        # Python's own build flags (sysconfig CFLAGS, the start of every compile command) carry
        # -g: debug information makes each translation unit ~1.4x slower to compile and the
        # objects ~30x larger (slower to link). It is kept only when asked for. (-O3 in the same
        # flags is overridden by our -O2, which comes later on the command line.)
        if not DEBUG_BUILD:
            for name in ("compiler_so", "compiler_so_cxx", "linker_so", "linker_so_cxx"):
                cmd = getattr(self.compiler, name, None)
                if cmd:
                    self.compiler.set_executable(name, [a for a in cmd if a != "-g"])
        super().build_extensions()


setup(
    ext_modules=[
        CppExtension(
            "torch_neuronx._C",
            sources,
            # Kineto's headers ship with torch but outside its default include paths; the
            # driver's torch.profiler session (runtime/device_trace.cpp) includes them.
            include_dirs=[os.path.join(here, csrc), os.path.join(TORCH_INCLUDE, "kineto")],
            extra_compile_args=["-O2", "-std=c++17", "-fvisibility=hidden"]
            + (["-g"] if DEBUG_BUILD else []),
        )
    ],
    cmdclass={"build_ext": BuildDriver.with_options(use_ninja=True)},
)

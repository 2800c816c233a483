"""Builds the C++ driver (torch_neuronx._C) at install time with torch.utils.cpp_extension.

Use: pip install --no-build-isolation -e .   (after pip install torch==2.13.0)
"""

import glob
import os

# Importing torch must not autoload a previously installed torch_neuronx (whose driver is the
# very thing being rebuilt).
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths

TORCH_INCLUDE = include_paths()[0]

here = os.path.dirname(os.path.abspath(__file__))
csrc = os.path.join("torch_neuronx", "csrc")
# One folder per layer (runtime/, eager/, distributed/); includes are written from csrc/.
sources = sorted(glob.glob(os.path.join(csrc, "**", "*.cpp"), recursive=True))

setup(
    ext_modules=[
        CppExtension(
            "torch_neuronx._C",
            sources,
            # Kineto's headers ship with torch but outside its default include paths; the
            # driver's torch.profiler session (runtime/device_trace.cpp) includes them.
            include_dirs=[os.path.join(here, csrc), os.path.join(TORCH_INCLUDE, "kineto")],
            extra_compile_args=["-O2", "-std=c++17", "-fvisibility=hidden"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)

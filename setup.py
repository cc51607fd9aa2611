"""The optional C extension (the record path of the hot operators and the NumPy tier,
streamrt/frontend/_native.c and _loops.c); the
rest of the package metadata is in pyproject.toml. Without a compiler the build of the
extension fails quietly and streamrt records in Python."""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("streamrt.frontend._native",
                             ["streamrt/frontend/_native.c", "streamrt/frontend/_loops.c"],
                             depends=["streamrt/frontend/_loops.h"],
                             optional=True, include_dirs=[numpy.get_include()],
                             extra_compile_args=["-O2"])])

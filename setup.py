"""The optional C extension (the record path of the hot operators, streamrt/frontend/_native.c); the
rest of the package metadata is in pyproject.toml. Without a compiler the build of the
extension fails quietly and streamrt records in Python."""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("streamrt.frontend._native", ["streamrt/frontend/_native.c"],
                             optional=True, include_dirs=[numpy.get_include()],
                             extra_compile_args=["-O2"])])

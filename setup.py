"""Build script for ember's optional C++ extension, ``ember.kernels._native``.

All package metadata lives in pyproject.toml; this file only describes the
pybind11 extension (C++17, OpenMP) and how to survive not being able to build it.

The extension is optional. If there is no C++ compiler, no pybind11, or the
compile fails, installation still succeeds with a warning and ember uses its
Numba kernels (``ember.kernels.native_ops.available()`` is then False and
``load_error()`` says why). Without OpenMP the extension is built single-threaded.

Environment switches:
  EMBER_SKIP_NATIVE=1      do not try to build the extension at all.
  EMBER_REQUIRE_NATIVE=1   make a failed build an error instead of a warning.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE_NAME = "ember.kernels._native"
NATIVE_SOURCES = [
    "csrc/module.cpp",
    "csrc/dispatch.cpp",
    "csrc/isa_baseline.cpp",
    "csrc/isa_avx2.cpp",
    "csrc/isa_avx512.cpp",
]
NATIVE_HEADERS = [
    "csrc/dispatch.hpp",
    "csrc/isa_common.hpp",
    "csrc/kernel_table.hpp",
    "csrc/kernels_impl.hpp",
    "csrc/simd_math.hpp",
]

# No -ffast-math: it would let the compiler assume no NaN/Inf and break NaN
# propagation. These three keep IEEE results but allow vectorising sqrt and
# selects, and fusing multiply-adds.
UNIX_FLAGS = [
    "-std=c++17",
    "-O3",
    "-g0",
    "-fvisibility=hidden",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-ffp-contract=fast",
]
MSVC_FLAGS = ["/std:c++17", "/O2", "/EHsc"]

PLAIN_PROBE = "int ember_probe() { return 0; }\n"
OPENMP_PROBE = r"""
#include <omp.h>
int ember_probe() {
    int n = 0;
#pragma omp parallel reduction(+ : n)
    n += omp_get_num_threads() > 0;
    return n;
}
"""


PYBIND11_MINIMUM = (2, 12)
PYBIND11_REQUIREMENT = "pybind11>=2.12"


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _flag_env(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed native build into a warning.

    It also probes which OpenMP flags (if any) the compiler accepts before
    compiling the real sources.
    """

    def run(self) -> None:
        if _flag_env("EMBER_SKIP_NATIVE"):
            self._warn("EMBER_SKIP_NATIVE is set; not building the C++ extension.")
            return
        try:
            super().run()
        except Exception as exc:  # no compiler at all surfaces here (e.g. on Windows)
            self._fail(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            self._configure(ext)
            super().build_extension(ext)
        except Exception as exc:
            self._fail(exc)

    def copy_extensions_to_source(self) -> None:
        # In-place/editable builds copy the library from build_lib next to the
        # sources; skip extensions whose optional build failed instead of
        # crashing on the missing file.
        all_extensions = self.extensions
        self.extensions = [e for e in all_extensions if os.path.exists(self._built_path(e))]
        try:
            super().copy_extensions_to_source()
        finally:
            self.extensions = all_extensions

    def get_outputs(self) -> list[str]:
        # Report only libraries that exist, so wheel and editable builds do not
        # look for a file that a failed optional build never produced.
        return [path for path in super().get_outputs() if os.path.exists(path)]

    def get_output_mapping(self) -> dict[str, str]:
        # {file in build_lib: in-place copy}; keep pairs whose build output exists.
        mapping = super().get_output_mapping()
        return {built: dst for built, dst in mapping.items() if os.path.exists(built)}

    def _built_path(self, ext: Extension) -> str:
        return os.path.join(self.build_lib, self.get_ext_filename(self.get_ext_fullname(ext.name)))

    # -- helpers --------------------------------------------------------------

    def _configure(self, ext: Extension) -> None:
        try:
            import pybind11
        except ImportError as exc:
            raise RuntimeError(f"pybind11 is not installed (pip install '{PYBIND11_REQUIREMENT}')") from exc
        if _version_tuple(pybind11.__version__) < PYBIND11_MINIMUM:
            # Older headers read NumPy 2's dtype structs wrongly: the module would
            # build and then crash, so fall back to Numba instead.
            raise RuntimeError(
                f"pybind11 {pybind11.__version__} is too old; NumPy 2 support needs '{PYBIND11_REQUIREMENT}'"
            )
        ext.include_dirs.append(pybind11.get_include())
        msvc = self.compiler.compiler_type == "msvc"
        ext.extra_compile_args = list(MSVC_FLAGS if msvc else UNIX_FLAGS)
        compile_omp, link_omp = self._openmp_flags(msvc)
        if compile_omp is None:
            self._warn(
                "the C++ compiler does not support OpenMP; building the native kernels single-threaded."
            )
            if not msvc:
                ext.extra_compile_args += ["-Wno-unknown-pragmas"]
        else:
            ext.extra_compile_args += compile_omp
            ext.extra_link_args = list(ext.extra_link_args) + link_omp

    def _openmp_flags(self, msvc: bool) -> tuple[list[str] | None, list[str]]:
        """First (compile, link) flag pair that builds and links OpenMP code.

        Raises:
            RuntimeError: if not even a plain C++ file compiles (no working compiler).
        """
        if not self._try_build(PLAIN_PROBE, [], []):
            command = (
                getattr(self.compiler, "compiler_so_cxx", None)
                or getattr(self.compiler, "compiler_so", None)
                or [self.compiler.compiler_type]
            )
            raise RuntimeError(f"no working C++ compiler (tried {command[0]!r})")
        if msvc:
            candidates = [(["/openmp"], [])]
        else:
            candidates = [(["-fopenmp"], ["-fopenmp"])]
            if sys.platform == "darwin":  # Apple clang + Homebrew libomp
                candidates.append((["-Xpreprocessor", "-fopenmp"], ["-lomp"]))
        for compile_flags, link_flags in candidates:
            if self._try_build(OPENMP_PROBE, compile_flags, link_flags):
                return compile_flags, link_flags
        return None, []

    def _try_build(self, source: str, compile_flags: list[str], link_flags: list[str]) -> bool:
        tmp = tempfile.mkdtemp(prefix="ember-probe-")
        try:
            src = os.path.join(tmp, "probe.cpp")
            with open(src, "w", encoding="utf-8") as f:
                f.write(source)
            objects = self.compiler.compile([src], output_dir=tmp, extra_postargs=compile_flags)
            self.compiler.link_shared_object(
                objects, os.path.join(tmp, "probe.so"), extra_postargs=link_flags
            )
            return True
        except Exception:
            return False
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _fail(self, exc: BaseException) -> None:
        if _flag_env("EMBER_REQUIRE_NATIVE"):
            raise exc
        self._warn(
            f"could not build the optional C++ extension {NATIVE_NAME} "
            f"({type(exc).__name__}: {exc}). ember will use its Numba kernels instead."
        )

    @staticmethod
    def _warn(message: str) -> None:
        print(f"WARNING (ember): {message}", file=sys.stderr)


setup(
    ext_modules=[
        Extension(
            NATIVE_NAME,
            sources=NATIVE_SOURCES,
            depends=NATIVE_HEADERS,
            include_dirs=["csrc"],
            language="c++",
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)

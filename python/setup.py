"""Builds the tabcl._tabcl extension against libtabcl from this checkout.

The extension links the static library (libtabcl.a), so the installed package
needs no libtabcl.so at run time, only the OpenCL loader (and CLBlast when the
library was built with it). Where the library comes from:

  TABCL_BUILD_DIR=<folder>   an existing CMake build of the checkout (absolute,
                             or relative to the checkout's root) that holds
                             libtabcl.a; tools/ci/run-tests.sh passes its own
  otherwise                  python/build/libtabcl, configured and built here
                             with CMake (the library target only)

TABCL_WERROR=1 makes the extension's warnings errors.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def cache_value(build, name):
    text = (build / "CMakeCache.txt").read_text(errors="replace")
    m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), text, re.M)
    return m.group(1).strip() if m else ""


def library_build():
    given = os.environ.get("TABCL_BUILD_DIR")
    if given:
        build = Path(given)
        if not build.is_absolute():
            build = ROOT / build
        if not (build / "libtabcl.a").is_file():
            sys.exit("setup.py: TABCL_BUILD_DIR=%s has no libtabcl.a; build the library there "
                     "first (cmake --build %s --target tabcl_static)" % (given, given))
        return build
    build = HERE / "build" / "libtabcl"
    subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build),
                           "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DTABCL_BUILD_TESTS=OFF",
                           "-DTABCL_BUILD_TOOLS=OFF", "-DTABCL_FAULT_INJECTION=OFF"])
    subprocess.check_call(["cmake", "--build", str(build), "--target", "tabcl_static",
                           "-j%d" % (os.cpu_count() or 1)])
    return build


class BuildWithLibrary(build_ext):
    def build_extensions(self):
        build = library_build()
        if cache_value(build, "TABCL_SANITIZE"):
            sys.exit("setup.py: %s is a sanitizer build (TABCL_SANITIZE=%s); its library cannot "
                     "be loaded into Python" % (build, cache_value(build, "TABCL_SANITIZE")))
        libs = ["OpenCL", "m", "pthread"]
        if cache_value(build, "TABCL_WITH_CLBLAST").upper() in ("ON", "1", "TRUE", "YES"):
            libs.insert(1, "clblast")
        for ext in self.extensions:
            ext.extra_objects.append(str(build / "libtabcl.a"))
            ext.libraries.extend(libs)
        super().build_extensions()


def version():
    header = (ROOT / "include" / "tabcl" / "tabcl.h").read_text()
    return re.search(r'#define TABCL_VERSION_STRING "([^"]+)"', header).group(1)


# The package's version file follows the C header's, so __version__ and
# tabcl_version_string() cannot drift apart.
(HERE / "src" / "tabcl" / "_version.py").write_text(
    '# Written by setup.py from include/tabcl/tabcl.h.\n__version__ = "%s"\n' % version())

# Warnings are errors where the project asks for it (TABCL_WERROR=1: CI), as
# the CMake option of the same name does for the library.
flags = ["-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
         "-Wno-cast-function-type"]
if os.environ.get("TABCL_WERROR") == "1":
    flags.append("-Werror")

ext = Extension(
    "tabcl._tabcl",
    sources=sorted(str(p.relative_to(HERE)) for p in (HERE / "ext").glob("*.c")),
    include_dirs=[str(ROOT / "include")],
    extra_compile_args=flags,
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildWithLibrary})

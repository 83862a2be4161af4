# Spack recipe for Optimas. Linted, not installed: Spack is neither a Debian package nor
# reachable from the machines this project is built on (docs/install.md says how it is checked:
# tests/scenario/spack_recipe.sh). To use it, copy it into a package repository of your own as
# packages/optimas/package.py (`spack repo create` makes one and says where its packages go),
# `spack repo add` that repository, then `spack install optimas +cuda`.
# The URLs are placeholders until the project has a public home; the dependencies are Spack's
# real package names, and packaging/spack/check_deps.py fails when CMakeLists.txt finds one that
# is not listed here.

from spack_repo.builtin.build_systems.cmake import CMakePackage, generator

from spack.package import *


class Optimas(CMakePackage):
    """Optimas profiles CUDA applications with Nsight Compute, distils the profile into
    evidence (roofline, PC-sampling stalls, counter selection), asks a model or its builtin
    rule-based optimizer for evidence-citing edits, and validates and measures each variant."""

    homepage = "https://github.com/optimas-project/optimas"
    git = "https://github.com/optimas-project/optimas.git"

    version("main", branch="main")
    version("0.1.0", tag="v0.1.0")

    variant(
        "cuda",
        default=False,
        description="Build liboptimas-trace.so, the CUPTI kernel tracer (needs CUDA's CUPTI)",
    )

    generator("ninja")

    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")

    depends_on("nlohmann-json@3.10:")
    depends_on("yaml-cpp")
    depends_on("fmt")
    depends_on("cli11")
    depends_on("openssl")
    depends_on("zlib-api")
    depends_on("eigen@3.3:")
    depends_on("curl")
    depends_on("sqlite")
    # The tuning stage's optimizer (Sbplx, src/tune/search.cpp).
    depends_on("nlopt")
    # The dashboard's web server (optimas serve), found through pkg-config; header-only.
    depends_on("cpp-httplib")
    depends_on("pkgconfig", type="build")

    # The tracer links CUPTI, which ships with the CUDA toolkit. nvcc and ncu are needed at run
    # time to profile, not to build: ncu is NVIDIA's and found on PATH (or --ncu).
    depends_on("cuda", when="+cuda")

    # The tests: GoogleTest (the fake model servers use cpp-httplib too).
    depends_on("googletest", type="test")
    # The scenario tests check JSON with Python (and validate against the schemas).
    depends_on("python", type="test")
    depends_on("py-jsonschema", type="test")

    def cmake_args(self):
        args = [
            self.define("OPTIMAS_BUILD_TESTS", self.run_tests),
            self.define("OPTIMAS_BUILD_BENCH", False),
        ]
        if self.spec.satisfies("+cuda"):
            args.append(self.define("CUDAToolkit_ROOT", self.spec["cuda"].prefix))
        else:
            # A CUDA toolkit outside Spack must not give ~cuda a tracer linked against it.
            args.append(self.define("CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit", True))
        return args

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_installed(self):
        optimas = Executable(self.prefix.bin.optimas)
        optimas("--version")
        if self.spec.satisfies("+cuda"):
            if not find(self.prefix, "liboptimas-trace.so"):
                raise InstallError("+cuda was asked for, but liboptimas-trace.so was not installed")

#!/usr/bin/env python3
"""Runs package.py against stand-ins for Spack's modules: the recipe imports, its directives
are the ones Spack has, and cmake_args() gives the CMake options for +cuda and ~cuda.

Spack is not installed where this project is built, so this is the nearest check of the recipe's
code (check_deps.py checks its dependencies). Usage: lint_recipe.py [package.py]; exit 0 or 1.
"""

import pathlib
import sys
import types

# Spack's directives and helpers that a CMakePackage recipe may use (spack.package's names).
K_DIRECTIVES = ["version", "variant", "depends_on", "conflicts", "requires", "provides", "patch", "resource",
                "maintainers", "license", "extends", "generator"]


class Spec:
    def __init__(self, variants, prefixes):
        self.variants, self.prefixes = variants, prefixes

    def satisfies(self, constraint):
        sign, name = constraint[0], constraint[1:]
        if sign not in "+~" or name not in self.variants:
            raise ValueError(f"satisfies({constraint!r}): not a variant of the recipe")
        return self.variants[name] == (sign == "+")

    def __contains__(self, constraint):
        return self.satisfies(constraint)

    def __getitem__(self, name):
        return types.SimpleNamespace(prefix=self.prefixes[name])


def fake_modules(calls):
    def directive(name):
        return lambda *args, **kwargs: calls.append((name, args, kwargs))

    package = types.ModuleType("spack.package")
    for name in K_DIRECTIVES:
        setattr(package, name, directive(name))
    package.run_after = lambda *a, **k: (lambda f: f)
    package.run_before = package.run_after
    package.on_package_attributes = package.run_after
    package.when = package.run_after
    package.Executable = lambda path: (lambda *args, **kwargs: None)
    package.find = lambda *args, **kwargs: []
    package.InstallError = type("InstallError", (Exception,), {})
    package.__all__ = [n for n in vars(package) if not n.startswith("_")]

    class CMakePackage:
        run_tests = False

        @staticmethod
        def define(name, value):
            kind = "BOOL" if isinstance(value, bool) else "STRING"
            value = ("ON" if value else "OFF") if isinstance(value, bool) else str(value)
            return f"-D{name}:{kind}={value}"

    cmake = types.ModuleType("spack_repo.builtin.build_systems.cmake")
    cmake.CMakePackage, cmake.generator = CMakePackage, directive("generator")
    modules = {"spack": types.ModuleType("spack"), "spack.package": package}
    for name in ["spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems"]:
        modules[name] = types.ModuleType(name)
    modules[cmake.__name__] = cmake
    return modules


def lint(path):
    calls = []
    sys.modules.update(fake_modules(calls))
    namespace = {"__name__": "optimas_recipe"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    recipe = namespace.get("Optimas")
    problems = []
    if recipe is None:
        return ["package.py defines no class Optimas"]
    variants = {args[0]: kwargs.get("default", False) for name, args, kwargs in calls if name == "variant"}
    if "cuda" not in variants:
        problems.append("no variant cuda")
    if not any(name == "version" for name, _, _ in calls):
        problems.append("no version()")
    if not (recipe.__doc__ or "").strip():
        problems.append("no docstring (spack info prints it)")
    for cuda in (True, False):
        pkg = recipe.__new__(recipe)
        pkg.spec = Spec({**variants, "cuda": cuda}, {"cuda": "/opt/spack/cuda-12.4"})
        args = pkg.cmake_args()
        want = "-DCUDAToolkit_ROOT:STRING=/opt/spack/cuda-12.4" if cuda else \
            "-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit:BOOL=ON"
        if want not in args:
            problems.append(f"cmake_args() for {'+' if cuda else '~'}cuda lacks {want}: {args}")
        if "-DOPTIMAS_BUILD_TESTS:BOOL=OFF" not in args:
            problems.append(f"cmake_args() builds the tests without --test: {args}")
    return problems


def main():
    path = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "package.py")
    problems = lint(path.resolve())
    for p in problems:
        print(f"{path.name}: {p}", file=sys.stderr)
    if not problems:
        print(f"{path.name}: imports, declares its directives and gives the CMake options for +cuda and ~cuda")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

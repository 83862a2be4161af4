#!/usr/bin/env python3
"""Fails when the Spack recipe and the CMake build disagree on dependencies.

Reads every find_package() and pkg_check_modules() of the build (CMakeLists.txt, src/, tests/,
bench/, tests/fuzz/, cmake/*.cmake; not examples/, which are programs optimas optimizes) and
every depends_on() of packaging/spack/package.py, and checks:
  - each CMake dependency has a Spack name in K_SPACK_NAMES below, and the recipe depends on it;
  - a minimum version in CMake (find_package(X 3.10), cmake_minimum_required) is the recipe's;
  - an optional dependency (found without REQUIRED) is conditional in the recipe (when=...), and
    one found only for the tests is type="test";
  - the recipe depends on nothing CMake does not find, except K_NOT_FROM_CMAKE.
Usage: check_deps.py [--root REPO] [--recipe package.py]. Exit 0 when they agree, 1 otherwise.
"""

import argparse
import ast
import pathlib
import re
import sys

# CMake package (find_package name, or pkg-config module) -> Spack package. None: nothing to
# depend on (part of the C library or of CMake itself).
K_SPACK_NAMES = {
    "nlohmann_json": "nlohmann-json",
    "yaml-cpp": "yaml-cpp",
    "fmt": "fmt",
    "CLI11": "cli11",
    "OpenSSL": "openssl",
    "ZLIB": "zlib-api",
    "Eigen3": "eigen",
    "CURL": "curl",
    "SQLite3": "sqlite",
    "NLopt": "nlopt",
    "cpp-httplib": "cpp-httplib",
    "GTest": "googletest",
    "CUDAToolkit": "cuda",
    "PkgConfig": "pkgconfig",
    "Threads": None,
}

# Dependencies the recipe has for reasons CMake does not show.
K_NOT_FROM_CMAKE = {
    "cxx": "the C++ compiler (Spack's language virtual)",
    "cmake": "the build system (its version: cmake_minimum_required)",
    "ninja": "generator('ninja')",
    "python": "the scenario tests check JSON with python3",
    "py-jsonschema": "the scenario tests validate against docs/*.schema.json",
}

K_BUILD_FILES = ["CMakeLists.txt", "src/CMakeLists.txt", "tests/CMakeLists.txt", "bench/CMakeLists.txt",
                 "tests/fuzz/CMakeLists.txt"]


def strip_comments(text):
    """The CMake code without comments and with quoted strings emptied (a message may name a
    package); line breaks are kept, so that line numbers stay right."""
    out, in_string, in_comment, escaped = [], False, False, False
    for c in text:
        if c == "\n":
            in_comment = False
            out.append(c)
        elif in_comment:
            continue
        elif in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
                out.append(c)
        elif c == "#":
            in_comment = True
        else:
            in_string = c == '"'
            out.append(c)
    return "".join(out)


def cmake_dependencies(root):
    """{name: {"version": str or None, "required": bool, "test_only": bool, "where": [file:line]}}"""
    files = [root / f for f in K_BUILD_FILES if (root / f).exists()] + sorted((root / "cmake").glob("*.cmake"))
    deps = {}
    minimum = None
    for path in files:
        rel = path.relative_to(root).as_posix()
        text = strip_comments(path.read_text())
        for m in re.finditer(r"\b(find_package|pkg_check_modules|cmake_minimum_required)\s*\(([^)]*)\)", text):
            line = text.count("\n", 0, m.start()) + 1
            words = m.group(2).split()
            if m.group(1) == "cmake_minimum_required":
                if "VERSION" in words:
                    minimum = words[words.index("VERSION") + 1].split("...")[0]
                continue
            if m.group(1) == "find_package":
                name = words[0]
                version = words[1] if len(words) > 1 and re.fullmatch(r"[0-9][0-9.]*", words[1]) else None
            else:  # pkg_check_modules(PREFIX [REQUIRED] [QUIET] [IMPORTED_TARGET] module...)
                modules = [w for w in words[1:] if w not in ("REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL")]
                name, version = re.split(r"[<>=]", modules[0])[0], None
            d = deps.setdefault(name, {"version": None, "required": False, "test_only": True, "where": []})
            d["version"] = d["version"] or version
            d["required"] = d["required"] or "REQUIRED" in words
            d["test_only"] = d["test_only"] and rel.startswith("tests/")
            d["where"].append(f"{rel}:{line}")
    return deps, minimum


def recipe_dependencies(recipe):
    """{spack name: [{"spec": str, "type": str or tuple, "when": str or None, "line": int}]}"""
    tree = ast.parse(recipe.read_text(), filename=str(recipe))
    deps = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "depends_on"):
            continue
        spec = ast.literal_eval(node.args[0])
        kw = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        name = re.split(r"[@+~%^ =]", spec, maxsplit=1)[0]
        deps.setdefault(name, []).append(
            {"spec": spec, "type": kw.get("type", ("build", "link")), "when": kw.get("when"), "line": node.lineno})
    return deps


def check(root, recipe):
    cmake, minimum = cmake_dependencies(root)
    spack = recipe_dependencies(recipe)
    problems = []
    wanted = set()
    for name, d in sorted(cmake.items()):
        where = ", ".join(d["where"])
        if name not in K_SPACK_NAMES:
            problems.append(f"{where}: CMake finds {name}, which check_deps.py does not know: add its Spack "
                            f"package to K_SPACK_NAMES and a depends_on() to {recipe.name}")
            continue
        sname = K_SPACK_NAMES[name]
        if sname is None:
            continue
        wanted.add(sname)
        if sname not in spack:
            problems.append(f"{where}: CMake finds {name}, but {recipe.name} has no depends_on(\"{sname}\")")
            continue
        entries = spack[sname]
        if d["version"] and not any(e["spec"].startswith(f"{sname}@{d['version']}:") for e in entries):
            problems.append(f"{where}: CMake wants {name} {d['version']} or newer; {recipe.name}:{entries[0]['line']} "
                            f"should say depends_on(\"{sname}@{d['version']}:\")")
        if not d["required"] and not all(e["when"] for e in entries):
            problems.append(f"{where}: {name} is optional in CMake; {recipe.name}:{entries[0]['line']} should make it "
                            f"conditional (when=\"+variant\")")
        types = [e["type"] if isinstance(e["type"], tuple) else (e["type"],) for e in entries]
        if d["test_only"] and any(t != ("test",) for t in types):
            problems.append(f"{where}: only the tests use {name}; {recipe.name}:{entries[0]['line']} should say "
                            f"type=\"test\"")
        if not d["test_only"] and all(t == ("test",) for t in types):
            problems.append(f"{where}: the build uses {name}; {recipe.name}:{entries[0]['line']} has it for tests only")
    for sname, entries in sorted(spack.items()):
        if sname not in wanted and sname not in K_NOT_FROM_CMAKE:
            problems.append(f"{recipe.name}:{entries[0]['line']}: depends_on(\"{entries[0]['spec']}\"), which no "
                            f"CMake file finds (remove it, or say why in K_NOT_FROM_CMAKE)")
    if minimum and not any(e["spec"].startswith(f"cmake@{minimum}:") for e in spack.get("cmake", [])):
        problems.append(f"CMakeLists.txt: cmake_minimum_required({minimum}); {recipe.name} should say "
                        f"depends_on(\"cmake@{minimum}:\", type=\"build\")")
    return problems, cmake


def main():
    here = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=here.parent.parent)
    parser.add_argument("--recipe", type=pathlib.Path, default=here / "package.py")
    args = parser.parse_args()
    problems, cmake = check(args.root.resolve(), args.recipe.resolve())
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"{args.recipe.name} depends on all {len(cmake)} packages the CMake build finds")
    return 0


if __name__ == "__main__":
    sys.exit(main())

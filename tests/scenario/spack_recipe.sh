# packaging/spack/package.py: it compiles as Python, and its dependencies are the CMake build's
# (packaging/spack/check_deps.py), and its code runs against stand-ins for Spack's modules
# (packaging/spack/lint_recipe.py). Spack itself cannot be installed here (no network, no Debian
# package), so the recipe is linted, not built. The checker is shown to fail on a dependency
# added to CMake only, one removed from the recipe, a lowered minimum version and a test-only
# package made a run-time one.
source "$(dirname "$0")/lib.sh"

SPACK_DIR="$OPTIMAS_SOURCE_DIR/packaging/spack"
CHECK="$SPACK_DIR/check_deps.py"
command -v python3 >/dev/null || skip "python3 is not installed"

# Compiled into $WORK, so that no __pycache__ is left in the source tree.
for f in package.py check_deps.py; do
  python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
    "$SPACK_DIR/$f" "$WORK/$f.pyc" || fail "$f does not compile"
done
grep -q '^class Optimas(CMakePackage):' "$SPACK_DIR/package.py" || fail "package.py defines no Optimas(CMakePackage)"

out=$(python3 -B "$CHECK" 2>&1) || fail "the recipe and CMakeLists.txt disagree:"$'\n'"$out"
echo "$out"

# A copy of the build's CMake files and the recipe, to break one at a time.
copy() {
  rm -rf "$WORK/tree"
  mkdir -p "$WORK/tree"
  (cd "$OPTIMAS_SOURCE_DIR" && cp --parents CMakeLists.txt src/CMakeLists.txt tests/CMakeLists.txt \
    bench/CMakeLists.txt tests/fuzz/CMakeLists.txt cmake/*.cmake packaging/spack/package.py "$WORK/tree/")
}
# must_fail PATTERN: the checker fails on the copy and its message matches.
must_fail() {
  local rc=0 msg
  msg=$(python3 -B "$CHECK" --root "$WORK/tree" --recipe "$WORK/tree/packaging/spack/package.py" 2>&1) || rc=$?
  [ "$rc" -eq 1 ] || fail "the checker passed (exit $rc) a broken copy; expected /$1/:"$'\n'"$msg"
  grep -qE -- "$1" <<< "$msg" || fail "expected /$1/ from the checker, got:"$'\n'"$msg"
}

copy
python3 -B "$CHECK" --root "$WORK/tree" --recipe "$WORK/tree/packaging/spack/package.py" >/dev/null \
  || fail "the unbroken copy does not pass"

copy
echo 'find_package(Boost 1.80 REQUIRED)' >> "$WORK/tree/src/CMakeLists.txt"
must_fail '^src/CMakeLists.txt:[0-9]+: CMake finds Boost, which check_deps.py does not know'

copy
sed -i '/depends_on("sqlite")/d' "$WORK/tree/packaging/spack/package.py"
must_fail 'CMake finds SQLite3, but package.py has no depends_on\("sqlite"\)'

copy
sed -i 's/depends_on("nlohmann-json@3.10:")/depends_on("nlohmann-json@3.2:")/' "$WORK/tree/packaging/spack/package.py"
must_fail 'CMake wants nlohmann_json 3.10 or newer'

copy
sed -i 's/depends_on("googletest", type="test")/depends_on("googletest")/' "$WORK/tree/packaging/spack/package.py"
must_fail 'only the tests use GTest; package.py:[0-9]+ should say type="test"'

copy
sed -i 's/depends_on("cuda", when="+cuda")/depends_on("cuda")/' "$WORK/tree/packaging/spack/package.py"
must_fail 'CUDAToolkit is optional in CMake'

copy
sed -i 's/^    depends_on("curl")$/    depends_on("curl")\n    depends_on("boost")/' "$WORK/tree/packaging/spack/package.py"
must_fail 'depends_on\("boost"\), which no CMake file finds'

copy
sed -i 's/cmake_minimum_required(VERSION 3.25)/cmake_minimum_required(VERSION 3.27)/' "$WORK/tree/CMakeLists.txt"
must_fail 'cmake_minimum_required\(3.27\)'

# The recipe's code, run against stand-ins for Spack's modules (packaging/spack/lint_recipe.py).
out=$(python3 -B "$SPACK_DIR/lint_recipe.py" 2>&1) || fail "lint_recipe.py:"$'\n'"$out"
echo "$out"
copy
sed -i 's/CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit/CMAKE_DISABLE_FIND_PACKAGE_CUDA/' "$WORK/tree/packaging/spack/package.py"
rc=0; msg=$(python3 -B "$SPACK_DIR/lint_recipe.py" "$WORK/tree/packaging/spack/package.py" 2>&1) || rc=$?
[ "$rc" -eq 1 ] && grep -q 'for ~cuda lacks -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit' <<< "$msg" \
  || fail "lint_recipe.py passed a ~cuda build that may find a system CUDA (exit $rc):"$'\n'"$msg"

# A package named only in a message or a comment is not a dependency.
copy
printf '# find_package(Boost REQUIRED)\nmessage(STATUS "no find_package(Qt6) here")\n' >> "$WORK/tree/CMakeLists.txt"
python3 -B "$CHECK" --root "$WORK/tree" --recipe "$WORK/tree/packaging/spack/package.py" >/dev/null \
  || fail "a comment or a message was read as a dependency"

pass "the Spack recipe compiles and lists the CMake build's dependencies (linted; Spack is not installed here)"

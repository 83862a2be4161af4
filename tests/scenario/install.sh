# cmake --install from the build tree into a temporary prefix: the installed optimas runs from
# outside the source tree (its data is compiled in; it finds the installed tracer by itself),
# the prefix can be moved, and a CMake project finds it with find_package(optimas).
# The build tree is ctest's own, already built: a second build from here would race the tests
# running beside this one, so this installs what is there.
source "$(dirname "$0")/lib.sh"

: "${OPTIMAS_BUILD_DIR:?set OPTIMAS_BUILD_DIR to the build tree (ctest does)}"
command -v cmake >/dev/null || skip "cmake is not on PATH"
unset OPTIMAS_TRACER # the lookup under test

PREFIX="$WORK/prefix"
cmake --install "$OPTIMAS_BUILD_DIR" --prefix "$PREFIX" > "$WORK/install.log" 2>&1 \
  || fail "cmake --install failed: $(cat "$WORK/install.log")"
[ -x "$PREFIX/bin/optimas" ] || fail "no bin/optimas under the prefix: $(find "$PREFIX" | head -30)"
CONFIG=$(find "$PREFIX" -name optimasConfig.cmake)
[ -n "$CONFIG" ] || fail "no optimasConfig.cmake under the prefix"
[ -f "$(dirname "$CONFIG")/optimasConfigVersion.cmake" ] || fail "no optimasConfigVersion.cmake beside $CONFIG"
for schema in diagnostics.schema.json reply.schema.json; do
  [ -f "$PREFIX/share/optimas/schemas/$schema" ] || fail "share/optimas/schemas/$schema is not installed"
done
TRACER=$(find "$PREFIX" -name liboptimas-trace.so)
BUILT_TRACER=$(find "$OPTIMAS_BUILD_DIR/src" -maxdepth 1 -name liboptimas-trace.so)
if [ -n "$BUILT_TRACER" ]; then
  [ -n "$TRACER" ] || fail "the tracer was built ($BUILT_TRACER) but not installed"
else
  [ -z "$TRACER" ] || fail "a tracer was installed that was not built: $TRACER"
fi

# The version the package says is the one the binary says.
VERSION=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$(dirname "$CONFIG")/optimasConfigVersion.cmake")
[ -n "$VERSION" ] || fail "no PACKAGE_VERSION in optimasConfigVersion.cmake"

# run_installed DIR: the installed binary, run in an empty folder outside the source tree.
run_installed() {
  local bin=$1/bin/optimas
  mkdir -p "$WORK/elsewhere" && cd "$WORK/elsewhere"
  [ "$("$bin" --version)" = "$VERSION" ] || fail "optimas --version says $("$bin" --version 2>&1), the package $VERSION"
  "$bin" -q analyze "$OPTIMAS_TEST_DATA/h200/stream" --json > "$WORK/installed.json" \
    || fail "the installed optimas cannot analyze a recorded profile"
  cmp -s "$WORK/installed.json" "$WORK/built.json" || fail "the installed optimas analyzes differently from the built one"
  "$bin" -q profile --import "$OPTIMAS_TEST_DATA/h200/stream" --json > "$WORK/profile.json" \
    || fail "the installed optimas cannot import a recorded profile"
  json_check "$WORK/profile.json" 'd["schema"] == "optimas.profile/1" and len(d["launches"]) > 0'
  if [ -n "$TRACER" ]; then
    # It finds the installed tracer, not the build tree's.
    local moved_tracer
    moved_tracer=$(find "$1" -name liboptimas-trace.so)
    "$bin" profile "$OPTIMAS_SOURCE_DIR/examples/stream" --dry-run > "$WORK/dry.txt" 2>&1 || fail "profile --dry-run: $(cat "$WORK/dry.txt")"
    grep -qF "CUDA_INJECTION64_PATH=$moved_tracer " "$WORK/dry.txt" \
      || fail "the installed optimas does not use the installed tracer $moved_tracer: $(cat "$WORK/dry.txt")"
  fi
  [ -z "$(ls -A "$WORK/elsewhere")" ] || fail "reading a profile wrote into the working folder: $(ls -A "$WORK/elsewhere")"
  cd "$WORK"
}
"$OPTIMAS" -q analyze "$OPTIMAS_TEST_DATA/h200/stream" --json > "$WORK/built.json"
run_installed "$PREFIX"
# The installed files name no path of the build or source tree.
if command -v readelf >/dev/null; then
  readelf -d "$PREFIX/bin/optimas" | grep -E 'RPATH|RUNPATH' | grep -qF "$OPTIMAS_BUILD_DIR" \
    && fail "the installed optimas keeps the build tree in its run path"
fi
grep -rqF "$OPTIMAS_BUILD_DIR" "$(dirname "$CONFIG")" && fail "the package config names the build tree"

# Relocatable: a moved prefix still works, and find_package follows it.
mv "$PREFIX" "$WORK/moved"
PREFIX="$WORK/moved"
run_installed "$PREFIX"

# A CMake project that uses the package.
mkdir -p "$WORK/consumer"
cat > "$WORK/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer LANGUAGES NONE)
if(WANT_TRACE)
  find_package(optimas ${WANT_VERSION} REQUIRED COMPONENTS trace)
else()
  find_package(optimas ${WANT_VERSION} REQUIRED)
endif()
if(NOT TARGET optimas::optimas)
  message(FATAL_ERROR "no imported target optimas::optimas")
endif()
get_target_property(kind optimas::optimas TYPE)
get_target_property(imported optimas::optimas IMPORTED)
file(WRITE ${CMAKE_BINARY_DIR}/found.txt
  "kind=${kind}\nimported=${imported}\nexe=${optimas_EXECUTABLE}\ntracer=${optimas_TRACER}\n"
  "trace_found=${optimas_trace_FOUND}\nschemas=${optimas_SCHEMA_DIR}\nversion=${optimas_VERSION}\n")
# The imported target as a command: CMake puts the installed path in its place.
add_custom_command(OUTPUT version.txt COMMAND optimas::optimas --version > version.txt VERBATIM)
add_custom_target(run_optimas ALL DEPENDS version.txt)
CMAKE
consume() { # consume BUILD-DIR CMAKE-ARGS...: configure and build the consumer against $PREFIX
  local dir=$1
  shift
  cmake -S "$WORK/consumer" -B "$dir" -DCMAKE_PREFIX_PATH="$PREFIX" "$@" > "$dir.log" 2>&1
}
consume "$WORK/c1" -DWANT_VERSION="$VERSION" || fail "find_package(optimas $VERSION) failed: $(cat "$WORK/c1.log")"
cmake --build "$WORK/c1" > "$WORK/c1-build.log" 2>&1 || fail "the consumer's build failed: $(cat "$WORK/c1-build.log")"
found=$(cat "$WORK/c1/found.txt")
grep -qx 'kind=EXECUTABLE' <<< "$found" || fail "optimas::optimas is not an executable: $found"
grep -qx 'imported=TRUE' <<< "$found" || fail "optimas::optimas is not imported: $found"
grep -qx "exe=$PREFIX/bin/optimas" <<< "$found" || fail "optimas_EXECUTABLE is not the installed one: $found"
grep -qx "schemas=$PREFIX/share/optimas/schemas" <<< "$found" || fail "optimas_SCHEMA_DIR: $found"
grep -qx "version=$VERSION" <<< "$found" || fail "optimas_VERSION: $found"
[ "$(cat "$WORK/c1/version.txt")" = "$VERSION" ] || fail "running optimas::optimas gave: $(cat "$WORK/c1/version.txt")"
if [ -n "$TRACER" ]; then
  grep -qx "tracer=$(find "$PREFIX" -name liboptimas-trace.so)" <<< "$found" || fail "optimas_TRACER: $found"
  grep -qx 'trace_found=TRUE' <<< "$found" || fail "the trace component is not found: $found"
  consume "$WORK/c2" -DWANT_VERSION="$VERSION" -DWANT_TRACE=ON \
    || fail "find_package(optimas COMPONENTS trace) failed: $(cat "$WORK/c2.log")"
else
  grep -qx 'tracer=' <<< "$found" || fail "optimas_TRACER is set without a tracer: $found"
  grep -qx 'trace_found=FALSE' <<< "$found" || fail "the trace component is found without a tracer: $found"
  consume "$WORK/c2" -DWANT_VERSION="$VERSION" -DWANT_TRACE=ON \
    && fail "find_package(optimas COMPONENTS trace) succeeded without a tracer"
fi
# A version the package does not offer is refused (0.x: another minor version is another tool).
MAJOR_MINOR=${VERSION%.*}
NEXT_MINOR="${MAJOR_MINOR%%.*}.$(( ${MAJOR_MINOR#*.} + 1 ))"
consume "$WORK/c3" -DWANT_VERSION="$NEXT_MINOR" && fail "find_package(optimas $NEXT_MINOR) accepted version $VERSION"
grep -qF "version: $VERSION" "$WORK/c3.log" || fail "the refusal does not say the version offered: $(cat "$WORK/c3.log")"

pass "installed into a prefix (optimas $VERSION${TRACER:+, tracer}), moved it, and found it with find_package"
